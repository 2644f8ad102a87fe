import { lstat, readdir, statfs } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type Docker from 'dockerode';
import { statusCodeOf } from './client.js';

/**
 * What the engine's images and containers take on disk, for image GC, eviction and the summary
 * API, read on this host (the engine is local): the filesystem of its data root, as cri-dockerd's
 * `core/imagefs_linux.go` (`imageFsInfo`) statfs's it, and each container's writable layer (the
 * `WritableLayer` of its `core/stats_linux.go` `getContainerStats`) and log files.
 */

export class EngineDiskUsage {
  readonly #docker: Docker;
  /** The engine's data root, asked once (`imageFsRoot`). */
  #dataRoot: Promise<string> | undefined;

  constructor(docker: Docker) {
    this.#docker = docker;
  }

  /**
   * The filesystem of the engine's data root (`/info` `DockerRootDir`, statfs'd here: a local
   * engine), as the kubelet's `ImageFsStats`.
   */
  async imageFsStats(): Promise<{ capacityBytes: number; availableBytes: number }> {
    const st = await statfs(await this.imageFsRoot());
    return { capacityBytes: st.blocks * st.bsize, availableBytes: st.bavail * st.bsize };
  }

  /** The engine's data root (`DockerRootDir`, Podman's `GraphRoot`), asked once and remembered. */
  async imageFsRoot(): Promise<string> {
    this.#dataRoot ??= (async () => {
      const info = (await this.#docker.info()) as { DockerRootDir?: string; Store?: { GraphRoot?: string } };
      const root = info.DockerRootDir ?? info.Store?.GraphRoot;
      if (!root) throw new Error('the engine reports no data root (DockerRootDir)');
      return root;
    })();
    // A failed answer is asked again next time.
    return this.#dataRoot.catch((err: unknown) => {
      this.#dataRoot = undefined;
      throw err;
    });
  }

  /**
   * What each container takes on disk (the kubelet's `rootfs` and `logs` stats, which cri-dockerd
   * reads the same way): its writable layer (`SizeRw` of an inspection with sizes) and its log
   * files (`LogPath` and the rotated `LogPath.N` beside it), bytes allocated and inodes. A
   * container gone meanwhile is left out.
   */
  async containerDiskUsage(ids: readonly string[]): Promise<Map<string, { rootfsBytes: bigint; logsBytes: bigint; logsInodes: bigint }>> {
    const out = new Map<string, { rootfsBytes: bigint; logsBytes: bigint; logsInodes: bigint }>();
    await Promise.all(ids.map(async (id) => {
      // `size` is the Engine API's query parameter (GET /containers/{id}/json?size=1); dockerode passes options through.
      const withSize: Docker.ContainerInspectOptions & { size: boolean } = { size: true };
      const info = await this.#docker.getContainer(id).inspect(withSize).catch((err: unknown) => {
        if (statusCodeOf(err) === 404) return undefined;
        throw err;
      });
      if (!info) return;
      let logsBytes = 0n;
      let logsInodes = 0n;
      if (info.LogPath) {
        const dir = dirname(info.LogPath);
        const base = basename(info.LogPath);
        const names = await readdir(dir).catch(() => [] as string[]);
        for (const name of names) {
          if (name !== base && !name.startsWith(`${base}.`)) continue;
          const st = await lstat(join(dir, name), { bigint: true }).catch(() => undefined);
          if (!st) continue;
          logsBytes += st.blocks * 512n;
          logsInodes++;
        }
      }
      const sizeRw = (info as { SizeRw?: number }).SizeRw;
      out.set(id, { rootfsBytes: BigInt(Math.max(0, sizeRw ?? 0)), logsBytes, logsInodes });
    }));
    return out;
  }
}
