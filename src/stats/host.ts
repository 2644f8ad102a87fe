import { readFile, statfs } from 'node:fs/promises';
import { parsePidReadings } from './eviction-readings.js';
import type { ReadText } from './node.js';
import { readPressure, type PressureReading } from './psi.js';

/** A filesystem as statfs(2) sees it: the figures of the kubelet's node `fs` and `imageFs` (cadvisor's `FsInfo`). */
export interface FsFigures {
  readonly capacityBytes: number;
  readonly availableBytes: number;
  /** Blocks not free, as cadvisor's `Usage`: (blocks − bfree) × bsize. */
  readonly usedBytes: number;
  readonly inodes: number;
  readonly inodesFree: number;
}

/** The node-wide readings besides CPU and memory, taken each sampling round. */
export interface HostReading {
  readonly timestamp: Date;
  /** statfs of `--root-dir` (nodefs). */
  readonly fs?: FsFigures;
  /** statfs of the engine's data root; undefined for a remote engine. */
  readonly imageFs?: FsFigures;
  /** pkg/kubelet/stats/pidlimit/pidlimit_linux.go: min(pid_max, threads-max) and the tasks now. */
  readonly rlimit?: { readonly maxpid: number; readonly curproc: number };
  readonly psi?: PressureReading;
}

export interface HostReaderOptions {
  readonly rootDir: string;
  /** The engine's data root; undefined when not observable (a remote engine). */
  readonly imageFsRoot: () => Promise<string | undefined>;
  readonly readText?: ReadText;
  readonly statfs?: (path: string) => Promise<FsFigures>;
  readonly now?: () => Date;
}

export async function statfsFigures(path: string): Promise<FsFigures> {
  const st = await statfs(path, { bigint: true });
  return {
    capacityBytes: Number(st.blocks * st.bsize),
    availableBytes: Number(st.bavail * st.bsize),
    usedBytes: Number((st.blocks - st.bfree) * st.bsize),
    inodes: Number(st.files),
    inodesFree: Number(st.ffree),
  };
}

/** A reader of `HostReading`; each part that cannot be read is left out, never failing the whole. */
export function hostReader(o: HostReaderOptions): () => Promise<HostReading> {
  const read = o.readText ?? ((path: string) => readFile(path, 'utf8'));
  const fsOf = o.statfs ?? statfsFigures;
  const now = o.now ?? (() => new Date());
  const optional = <T>(p: Promise<T>): Promise<T | undefined> => p.catch(() => undefined);
  return async () => {
    const timestamp = now();
    const [fs, imageFs, rlimit, psi] = await Promise.all([
      optional(fsOf(o.rootDir)),
      optional(o.imageFsRoot().then((root) => (root === undefined ? undefined : fsOf(root)))),
      optional(Promise.all([read('/proc/sys/kernel/pid_max'), read('/proc/sys/kernel/threads-max'), read('/proc/loadavg')]).then(([a, b, c]) => {
        // The same reading as the eviction manager's pid.available; curproc is loadavg's task count.
        const pid = parsePidReadings(a, b, c);
        const tasks = /^\S+\s+\S+\s+\S+\s+\d+\/(\d+)\s/.exec(c)?.[1];
        return { maxpid: Number(pid.capacity), curproc: Number(tasks) };
      })),
      // The root cgroup's pressure is the kernel's system-wide figures, which /proc/pressure/*
      // gives on cgroup v1 and v2 alike (where the kernel has PSI).
      readPressure(read, (r) => `/proc/pressure/${r}`),
    ]);
    return {
      timestamp,
      ...(fs ? { fs } : {}),
      ...(imageFs ? { imageFs } : {}),
      ...(rlimit ? { rlimit } : {}),
      ...(Object.keys(psi).length ? { psi } : {}),
    };
  };
}
