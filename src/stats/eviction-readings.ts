import { readFile, stat, statfs } from 'node:fs/promises';
import type { Pod } from '../api/types.js';
import type { FsReading, NodeReadings, PodUsage, UsageNeeds } from '../eviction/types.js';
import type { RuntimePod } from '../runtime/types.js';
import { diskUsage } from './disk-usage.js';
import type { ReadText } from './node.js';
import { parseMeminfo } from './node.js';
import type { StatsSnapshot } from './types.js';

/**
 * The eviction manager's inputs on this host: what the kubelet's summary provider gives its
 * `makeSignalObservations` (pkg/kubelet/eviction/helpers.go) and its rankers, read directly.
 *
 * - `memory.available`: /proc/meminfo's total less the working set (the root cgroup's usage less
 *   inactive file pages, `parseMeminfo`).
 * - nodefs: statfs of `--root-dir` (pod volumes, termination logs); imagefs: statfs of the engine's
 *   data root (images, writable layers, the engine's log files). A dedicated imagefs is one on
 *   another device than nodefs; a remote engine's imagefs is not observed.
 * - `pid.available`: `min(kernel.pid_max, kernel.threads-max)` less the tasks now (the kubelet's
 *   `rlimit` stats: `MaxPID`, `NumOfRunningProcesses` from sysinfo, which /proc/loadavg's 4th
 *   field also counts).
 * - Per pod, on demand: memory working sets from the stats sampler (sampled afresh), each
 *   container's writable layer and logs from the engine, each local volume by a walk
 *   (`diskUsage`), processes from the pod's cgroup where it has one.
 */
export interface EvictionReadingsOptions {
  readonly rootDir: string;
  /** The engine's data root; undefined when the engine is not local (imagefs unobserved). */
  readonly imageFsRoot: () => Promise<string | undefined>;
  /** A fresh stats round and its snapshot (the sampler's `sampleNow` and `snapshot`). */
  readonly sampleNow: () => Promise<void>;
  readonly snapshot: () => StatsSnapshot;
  /** The PLEG's view of the pod: its containers (dead ones too, whose layers and logs still count). */
  readonly runtimePod: (uid: string) => RuntimePod | undefined;
  /** The engine's sizes per container ID (`containerDiskUsage`). */
  readonly containerDiskUsage: (ids: readonly string[]) => Promise<ReadonlyMap<string, { rootfsBytes: bigint; logsBytes: bigint; logsInodes: bigint }>>;
  /** The host directory of a pod's volume counted in ephemeral storage (an emptyDir not in memory); undefined for any other. */
  readonly localVolumeDir: (pod: Pod, name: string) => string | undefined;
  /** Processes in the pod's cgroup (`pids.current`); undefined without one. */
  readonly podProcesses?: (uid: string) => Promise<bigint | undefined>;
  readonly readText?: ReadText;
  readonly now?: () => number;
}

export interface EvictionReadings {
  readNode(): Promise<NodeReadings>;
  podUsage(pods: readonly Pod[], needs: UsageNeeds): Promise<ReadonlyMap<string, PodUsage>>;
}

async function fsReading(path: string): Promise<FsReading> {
  const st = await statfs(path, { bigint: true });
  return { capacityBytes: st.blocks * st.bsize, availableBytes: st.bavail * st.bsize, inodes: st.files, inodesFree: st.ffree };
}

/** `min(pid_max, threads-max)` and the tasks now (the 4th field of /proc/loadavg, `running/total`). */
export function parsePidReadings(pidMax: string, threadsMax: string, loadavg: string): { available: bigint; capacity: bigint } {
  const max = [pidMax, threadsMax].map((t) => BigInt(t.trim()));
  const capacity = (max[0] as bigint) < (max[1] as bigint) ? (max[0] as bigint) : (max[1] as bigint);
  const tasks = /^\S+\s+\S+\s+\S+\s+\d+\/(\d+)\s/.exec(loadavg)?.[1];
  if (tasks === undefined) throw new Error('unexpected /proc/loadavg format');
  const used = BigInt(tasks);
  return { capacity, available: capacity > used ? capacity - used : 0n };
}

export function evictionReadings(o: EvictionReadingsOptions): EvictionReadings {
  const read = o.readText ?? ((path: string) => readFile(path, 'utf8'));
  const now = o.now ?? Date.now;
  /** Whether the engine's data root is on another device than the root dir (asked each time: mounts change). */
  const imageFs = async (): Promise<{ reading?: FsReading; dedicated: boolean }> => {
    const root = await o.imageFsRoot().catch(() => undefined);
    if (root === undefined) return { dedicated: false };
    const [reading, a, b] = await Promise.all([fsReading(root), stat(root, { bigint: true }), stat(o.rootDir, { bigint: true })]);
    return { reading, dedicated: a.dev !== b.dev };
  };
  const optional = <T>(p: Promise<T>): Promise<T | undefined> => p.catch(() => undefined);

  return {
    async readNode() {
      const time = now();
      const [meminfo, nodefs, image, pid] = await Promise.all([
        optional(read('/proc/meminfo').then(parseMeminfo)),
        optional(fsReading(o.rootDir)),
        imageFs().catch(() => ({ dedicated: false }) as { reading?: FsReading; dedicated: boolean }),
        optional(Promise.all([read('/proc/sys/kernel/pid_max'), read('/proc/sys/kernel/threads-max'), read('/proc/loadavg')]).then(([a, b, c]) => parsePidReadings(a, b, c))),
      ]);
      const memory = meminfo ? { availableBytes: BigInt(meminfo.memoryAvailableBytes), capacityBytes: BigInt(meminfo.memoryAvailableBytes + meminfo.memoryWorkingSetBytes) } : undefined;
      return {
        time,
        ...(memory ? { memory } : {}),
        ...(nodefs ? { nodefs } : {}),
        ...(image.reading ? { imagefs: image.reading } : {}),
        dedicatedImageFs: image.dedicated,
        ...(pid ? { pid } : {}),
      };
    },

    async podUsage(pods, needs) {
      if (needs.memory) await o.sampleNow();
      const snap = needs.memory ? o.snapshot() : undefined;
      const out = new Map<string, PodUsage>();
      await Promise.all(pods.map(async (pod) => {
        const uid = pod.metadata?.uid ?? '';
        const usage: { -readonly [K in keyof PodUsage]: PodUsage[K] } = {};
        if (snap) {
          const perContainer = new Map<string, bigint>();
          let total = 0n;
          for (const c of snap.containers) {
            if (c.target.podUID !== uid) continue;
            const ws = BigInt(Math.round(c.latest.memoryWorkingSetBytes));
            total += ws;
            if (!c.target.sandbox) perContainer.set(c.target.name, (perContainer.get(c.target.name) ?? 0n) + ws);
          }
          usage.memoryWorkingSetBytes = total;
          usage.containerMemoryBytes = perContainer;
        }
        if (needs.disk || needs.inodes) {
          const containers = o.runtimePod(uid)?.containers ?? [];
          const sizes = await o.containerDiskUsage(containers.map((c) => c.id));
          const bytes = new Map<string, bigint>();
          const logs = new Map<string, bigint>();
          let inodes = 0n;
          for (const c of containers) {
            const size = sizes.get(c.id);
            if (!size) continue;
            bytes.set(c.name, (bytes.get(c.name) ?? 0n) + size.rootfsBytes + size.logsBytes);
            logs.set(c.name, (logs.get(c.name) ?? 0n) + size.logsBytes);
            inodes += size.logsInodes;
          }
          const volumes = new Map<string, bigint>();
          for (const v of pod.spec?.volumes ?? []) {
            const dir = o.localVolumeDir(pod, v.name);
            if (dir === undefined) continue;
            const du = await diskUsage(dir);
            volumes.set(v.name, du.bytes);
            inodes += du.inodes;
          }
          usage.containerBytes = bytes;
          usage.containerLogBytes = logs;
          usage.volumeBytes = volumes;
          usage.inodes = inodes;
        }
        if (needs.pids && o.podProcesses) {
          const processes = await o.podProcesses(uid).catch(() => undefined);
          if (processes !== undefined) usage.processes = processes;
        }
        out.set(uid, usage);
      }));
      return out;
    },
  };
}
