import { readPressure, type PressureReading } from './psi.js';
import type { ReadText } from './node.js';

/**
 * One cgroup's usage, read from its files as cadvisor reads them for the kubelet
 * (pkg/kubelet/stats/helper.go `cadvisorInfoToCPUandMemoryStats`, cadvisor's libcontainer
 * handler over runc's `fs` and `fs2` stats):
 *
 * - v1: `cpuacct.usage` (ns); `memory.usage_in_bytes`, `memory.limit_in_bytes`, `memory.stat`'s
 *   `total_inactive_file` (working set = usage − inactive file), `total_rss`, `total_pgfault`,
 *   `total_pgmajfault`; `pids.current`. No PSI on v1 (cadvisor has none there).
 * - v2: `cpu.stat` `usage_usec`; `memory.current`, `memory.max`, `memory.stat`'s `inactive_file`,
 *   `anon`, `pgfault`, `pgmajfault`; `pids.current`; `cpu.pressure`, `memory.pressure`, `io.pressure`.
 */
export interface CgroupReading {
  readonly timestamp: Date;
  readonly cpuUsageCoreNanoSeconds: number;
  readonly memoryUsageBytes: number;
  readonly memoryWorkingSetBytes: number;
  /** The memory limit; undefined when unlimited (cadvisor's `isMemoryUnlimited`: above 2^62). */
  readonly memoryLimitBytes?: number;
  readonly memoryRssBytes?: number;
  readonly pageFaults?: number;
  readonly majorPageFaults?: number;
  readonly processes?: number;
  readonly psi?: PressureReading;
}

/** Where one cgroup's files are: v1 a directory per controller, v2 the same directory for every controller. */
export interface CgroupLocation {
  readonly version: 1 | 2;
  readonly dir: (controller: 'cpuacct' | 'memory' | 'pids') => string;
}

/** Values above this are "no limit" (v1 writes 2^63 rounded down to a page). */
const UNLIMITED = 2 ** 62;

/** `key value` lines (memory.stat, cpu.stat) as numbers. */
export function parseFlatKeyed(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(\S+)\s+(\d+)$/.exec(line.trim());
    if (m) out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

const single = (text: string, file: string): number => {
  const v = Number(text.trim());
  if (text.trim() === '' || !Number.isFinite(v)) throw new Error(`unexpected content in ${file}: ${JSON.stringify(text.slice(0, 40))}`);
  return v;
};

const optional = <T>(p: Promise<T>): Promise<T | undefined> => p.catch(() => undefined);

/**
 * Reads the cgroup; rejects when its CPU or memory files cannot be read (a cgroup gone, a
 * controller not mounted), so the caller falls back to the sum of the containers.
 */
export async function readCgroupStats(loc: CgroupLocation, read: ReadText, now: () => Date = () => new Date()): Promise<CgroupReading> {
  const timestamp = now();
  const join = (dir: string, file: string) => `${dir}/${file}`;
  if (loc.version === 1) {
    const cpuFile = join(loc.dir('cpuacct'), 'cpuacct.usage');
    const usageFile = join(loc.dir('memory'), 'memory.usage_in_bytes');
    const [cpu, usage, stat, limit, pids] = await Promise.all([
      read(cpuFile),
      read(usageFile),
      read(join(loc.dir('memory'), 'memory.stat')),
      optional(read(join(loc.dir('memory'), 'memory.limit_in_bytes'))),
      optional(read(join(loc.dir('pids'), 'pids.current'))),
    ]);
    return memoryAndCpu(timestamp, single(cpu, cpuFile), single(usage, usageFile), parseFlatKeyed(stat), limit, pids, { inactive: 'total_inactive_file', rss: 'total_rss', faults: 'total_pgfault', major: 'total_pgmajfault' });
  }
  const dir = loc.dir('memory');
  const cpuStatFile = join(dir, 'cpu.stat');
  const usageFile = join(dir, 'memory.current');
  const [cpuStat, usage, stat, limit, pids, psi] = await Promise.all([
    read(cpuStatFile),
    read(usageFile),
    read(join(dir, 'memory.stat')),
    optional(read(join(dir, 'memory.max'))),
    optional(read(join(dir, 'pids.current'))),
    readPressure(read, (r) => join(dir, `${r}.pressure`)),
  ]);
  const usec = parseFlatKeyed(cpuStat).get('usage_usec');
  if (usec === undefined) throw new Error(`no usage_usec in ${cpuStatFile}`);
  const reading = memoryAndCpu(timestamp, usec * 1000, single(usage, usageFile), parseFlatKeyed(stat), limit, pids, { inactive: 'inactive_file', rss: 'anon', faults: 'pgfault', major: 'pgmajfault' });
  return Object.keys(psi).length ? { ...reading, psi } : reading;
}

function memoryAndCpu(
  timestamp: Date,
  cpuNs: number,
  usage: number,
  stat: Map<string, number>,
  limitText: string | undefined,
  pidsText: string | undefined,
  keys: { inactive: string; rss: string; faults: string; major: string },
): CgroupReading {
  // cadvisor's setMemoryStats: the working set is usage less inactive file pages, never below zero.
  const inactive = stat.get(keys.inactive) ?? 0;
  const limit = limitText === undefined || limitText.trim() === 'max' ? undefined : Number(limitText.trim());
  const processes = pidsText === undefined ? undefined : Number(pidsText.trim());
  const rss = stat.get(keys.rss);
  const faults = stat.get(keys.faults);
  const major = stat.get(keys.major);
  return {
    timestamp,
    cpuUsageCoreNanoSeconds: cpuNs,
    memoryUsageBytes: usage,
    memoryWorkingSetBytes: usage > inactive ? usage - inactive : 0,
    ...(limit !== undefined && Number.isFinite(limit) && limit <= UNLIMITED ? { memoryLimitBytes: limit } : {}),
    ...(rss !== undefined ? { memoryRssBytes: rss } : {}),
    ...(faults !== undefined ? { pageFaults: faults } : {}),
    ...(major !== undefined ? { majorPageFaults: major } : {}),
    ...(processes !== undefined && Number.isFinite(processes) ? { processes } : {}),
  };
}
