import { readFile } from 'node:fs/promises';

/**
 * Node-wide CPU and memory from /proc, standing in for the root cgroup the kubelet reads through
 * cadvisor. Values are the raw counters; the sampler turns two CPU readings into a rate.
 */

/** `USER_HZ`: /proc/stat counts in ticks of 1/100 s on every Linux architecture nodelet targets. */
const TICK_NS = 10_000_000;

export interface NodeReading {
  timestamp: Date;
  bootTime: Date;
  /** Busy CPU time of all cores (everything but idle and iowait), like the root cgroup's cpuacct. */
  cpuUsageCoreNanoSeconds: number;
  memoryUsageBytes: number;
  memoryWorkingSetBytes: number;
  memoryAvailableBytes: number;
  memoryRssBytes?: number;
}

export type ReadText = (path: string) => Promise<string>;

/** `readFile` as text: the readers' default. */
export const readText: ReadText = (path) => readFile(path, 'utf8');

/** Reads /proc/stat and /proc/meminfo; rejects where they do not exist (not Linux). */
export async function readNodeStats(read: ReadText = readText, now: () => Date = () => new Date()): Promise<NodeReading> {
  const [stat, meminfo] = await Promise.all([read('/proc/stat'), read('/proc/meminfo')]);
  return { timestamp: now(), ...parseProcStat(stat), ...parseMeminfo(meminfo) };
}

export function parseProcStat(text: string): { cpuUsageCoreNanoSeconds: number; bootTime: Date } {
  const cpu = /^cpu\s+(.*)$/m.exec(text)?.[1]?.trim().split(/\s+/).map(Number);
  const btime = /^btime\s+(\d+)$/m.exec(text)?.[1];
  if (!cpu || cpu.length < 4 || cpu.some((n) => !Number.isFinite(n)) || !btime) throw new Error('unexpected /proc/stat format');
  // user nice system idle iowait irq softirq steal [guest guest_nice]; guest time is already
  // inside user/nice, so it is not added again.
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = cpu;
  return { cpuUsageCoreNanoSeconds: (user + nice + system + irq + softirq + steal) * TICK_NS, bootTime: new Date(Number(btime) * 1000) };
}

export function parseMeminfo(text: string): Pick<NodeReading, 'memoryUsageBytes' | 'memoryWorkingSetBytes' | 'memoryAvailableBytes' | 'memoryRssBytes'> {
  const kib = new Map<string, number>();
  for (const m of text.matchAll(/^([^:\s]+):\s+(\d+)(?: kB)?$/gm)) kib.set(m[1] ?? '', Number(m[2]) * 1024);
  const total = kib.get('MemTotal');
  const free = kib.get('MemFree');
  if (total === undefined || free === undefined) throw new Error('unexpected /proc/meminfo format');
  // The root cgroup's usage is everything not free; its working set drops inactive file pages.
  const usage = total - free;
  const workingSet = Math.max(0, usage - (kib.get('Inactive(file)') ?? 0));
  const rss = kib.get('AnonPages');
  return {
    memoryUsageBytes: usage,
    memoryWorkingSetBytes: workingSet,
    // The kubelet's memory.available signal: capacity minus working set.
    memoryAvailableBytes: total - workingSet,
    ...(rss !== undefined ? { memoryRssBytes: rss } : {}),
  };
}
