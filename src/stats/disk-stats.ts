import type { Pod } from '../api/types.js';
import { Coalescer } from '../async/coalescer.js';
import type { Logger } from '../logging/index.js';
import type { RuntimePod } from '../runtime/types.js';
import { diskUsage as walkDiskUsage, type DiskUsage } from './disk-usage.js';
import { statfsFigures, type FsFigures } from './host.js';
import { forEachLimited, targetsOf } from './sampler.js';

/** What one container takes on disk: its writable layer and its log files. */
export interface ContainerDisk {
  readonly rootfsBytes: number;
  readonly logsBytes: number;
  readonly logsInodes: number;
}

/** A local volume: what its tree holds, and the filesystem it is on. */
export interface VolumeDisk {
  readonly name: string;
  readonly usedBytes: number;
  readonly inodesUsed: number;
  readonly fs?: FsFigures;
}

export interface PodDisk {
  /** When this pod's figures were read. */
  readonly time: Date;
  /** By container ID (the running container of each name, as the summary lists them). */
  readonly containers: ReadonlyMap<string, ContainerDisk>;
  /** Local ephemeral volumes in spec order. */
  readonly volumes: readonly VolumeDisk[];
}

export interface DiskSnapshot {
  /** When the last refresh started; undefined before the first one ended. */
  readonly takenAt?: Date;
  /** By pod UID. */
  readonly pods: ReadonlyMap<string, PodDisk>;
  /** What the engine's images take (imagefs `usedBytes`); undefined when unknown. */
  readonly imagesBytes?: number;
}

export interface DiskStatsOptions {
  /** The PLEG's newest snapshot (which pods and containers run now). */
  readonly pods: () => readonly RuntimePod[];
  /** The pod's spec, for its volumes. */
  readonly podSpec: (uid: string) => Pod | undefined;
  /** The host directory of a volume counted in ephemeral storage; undefined for any other. */
  readonly localVolumeDir: (pod: Pod, name: string) => string | undefined;
  /** The engine's sizes per container ID (`DockerRuntime.containerDiskUsage`). */
  readonly containerDiskUsage: (ids: readonly string[]) => Promise<ReadonlyMap<string, { rootfsBytes: bigint; logsBytes: bigint; logsInodes: bigint }>>;
  /** The engine's images' total size; omitted, imagefs has no `usedBytes`. */
  readonly imagesBytes?: () => Promise<number>;
  readonly log: Logger;
  /** Time between the starts of two refreshes (the kubelet's `volumeStatsAggPeriod`, 1 minute). */
  readonly periodMs?: number;
  /** Volume walks in flight at once, so a node of many volumes does not load the disk all at once. */
  readonly walkConcurrency?: number;
  readonly diskUsage?: (dir: string) => Promise<DiskUsage>;
  readonly statfs?: (dir: string) => Promise<FsFigures>;
}

/**
 * The disk side of the summary, refreshed in the background like the kubelet's volume stats
 * (pkg/kubelet/server/stats/fs_resource_analyzer.go caches each pod's volume figures and
 * recomputes them every `volumeStatsAggPeriod`) so no request walks a tree or calls the engine:
 * each running container's writable layer and logs, each local volume's tree (`diskUsage`, at most
 * `walkConcurrency` walks at once), and the images' size. A pod gone from the PLEG is dropped;
 * a part that cannot be read keeps the pod's previous figures for it.
 */
export class DiskStatsCache {
  readonly #o: DiskStatsOptions;
  #snapshot: DiskSnapshot = { pods: new Map() };
  readonly #refresh = new Coalescer(() => this.#round());
  #timer: NodeJS.Timeout | undefined;
  #stopped = true;
  #generation = 0;

  constructor(opts: DiskStatsOptions) {
    this.#o = opts;
  }

  snapshot(): DiskSnapshot {
    return this.#snapshot;
  }

  /** Refreshes at once, then every period. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    const generation = ++this.#generation;
    const period = this.#o.periodMs ?? 60_000;
    const tick = () => {
      const started = Date.now();
      void this.refreshNow().finally(() => {
        if (this.#stopped || generation !== this.#generation) return;
        this.#timer = setTimeout(tick, Math.max(0, period - (Date.now() - started)));
        this.#timer.unref();
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#refresh.idle();
  }

  /** Runs a refresh; resolves once one that started after this call has finished. */
  refreshNow(): Promise<void> {
    return this.#refresh.run();
  }

  async #round(): Promise<void> {
    const takenAt = new Date();
    const walk = this.#o.diskUsage ?? walkDiskUsage;
    const fsOf = this.#o.statfs ?? statfsFigures;
    const byPod = new Map<string, string[]>();
    for (const t of targetsOf(this.#o.pods())) {
      const ids = byPod.get(t.podUID) ?? [];
      if (!t.sandbox) ids.push(t.id);
      byPod.set(t.podUID, ids);
    }
    const before = this.#snapshot.pods;
    const pods = new Map<string, PodDisk>();
    // Each pod's local volumes, in spec order, holding their previous figures until walked again
    // (none for a volume never walked yet); the walks of every pod share one limit.
    const walks: { uid: string; index: number; name: string; dir: string }[] = [];
    const volumes = new Map<string, (VolumeDisk | undefined)[]>();
    for (const uid of byPod.keys()) {
      const pod = this.#o.podSpec(uid);
      const list: (VolumeDisk | undefined)[] = [];
      for (const v of pod?.spec?.volumes ?? []) {
        const dir = pod ? this.#o.localVolumeDir(pod, v.name) : undefined;
        if (dir === undefined) continue;
        walks.push({ uid, index: list.length, name: v.name, dir });
        list.push(before.get(uid)?.volumes.find((x) => x.name === v.name));
      }
      volumes.set(uid, list);
    }
    const [, containerSizes, imagesBytes] = await Promise.all([
      forEachLimited(walks, this.#o.walkConcurrency ?? 2, async (w) => {
        try {
          const [du, fs] = await Promise.all([walk(w.dir), fsOf(w.dir).catch(() => undefined)]);
          const list = volumes.get(w.uid);
          if (list) list[w.index] = { name: w.name, usedBytes: Number(du.bytes), inodesUsed: Number(du.inodes), ...(fs ? { fs } : {}) };
        } catch (err) {
          this.#o.log.debug({ podUID: w.uid, volume: w.name, err }, 'Reading volume disk usage failed');
        }
      }),
      this.#containerSizes(byPod),
      this.#o.imagesBytes?.().catch((err: unknown) => {
        this.#o.log.debug({ err }, 'Reading the images\' size failed');
        return this.#snapshot.imagesBytes;
      }),
    ]);
    const time = new Date();
    for (const [uid, ids] of byPod) {
      const containers = new Map<string, ContainerDisk>();
      for (const id of ids) {
        const size = containerSizes.get(id) ?? before.get(uid)?.containers.get(id);
        if (size) containers.set(id, size);
      }
      pods.set(uid, { time, containers, volumes: (volumes.get(uid) ?? []).filter((v): v is VolumeDisk => v !== undefined) });
    }
    this.#snapshot = { takenAt, pods, ...(imagesBytes !== undefined ? { imagesBytes } : {}) };
  }

  /** One engine call per pod, pods one after another: a node full of pods does not burst the engine. */
  async #containerSizes(byPod: ReadonlyMap<string, readonly string[]>): Promise<Map<string, ContainerDisk>> {
    const out = new Map<string, ContainerDisk>();
    for (const [uid, ids] of byPod) {
      if (ids.length === 0) continue;
      try {
        for (const [id, s] of await this.#o.containerDiskUsage(ids)) {
          out.set(id, { rootfsBytes: Number(s.rootfsBytes), logsBytes: Number(s.logsBytes), logsInodes: Number(s.logsInodes) });
        }
      } catch (err) {
        this.#o.log.debug({ podUID: uid, err }, 'Reading container disk usage failed');
      }
    }
    return out;
  }
}
