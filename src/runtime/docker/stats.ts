import type Docker from 'dockerode';
import type { ContainerStatsSample } from '../types.js';

/**
 * The part of Docker's `GET /containers/{id}/stats` answer nodelet reads. cgroup v1 engines fill
 * the hierarchical `total_*` keys; cgroup v2 engines report `inactive_file`, `anon`, `pgfault`
 * and `pgmajfault` without the prefix. Everything is optional: a stopped container answers with
 * empty objects.
 */
export interface DockerStats {
  read?: string;
  cpu_stats?: { cpu_usage?: { total_usage?: number } };
  memory_stats?: { usage?: number; stats?: Readonly<Record<string, number | undefined>> };
}

/** Reads one sample; `one-shot` skips the second read Docker otherwise waits ~1 s for (API ≥ 1.41). */
export async function containerStats(docker: Docker, id: string): Promise<ContainerStatsSample> {
  const raw: DockerStats = await docker.getContainer(id).stats({ stream: false, 'one-shot': true });
  return sampleFromDockerStats(raw, id);
}

/** Docker's stats answer as a sample; throws when the container is not running (no memory figures). */
export function sampleFromDockerStats(raw: DockerStats, id = ''): ContainerStatsSample {
  const usage = raw.memory_stats?.usage;
  const cpu = raw.cpu_stats?.cpu_usage?.total_usage;
  if (usage === undefined || cpu === undefined) throw new Error(`no stats for container ${id}: it is not running`);
  const stats = raw.memory_stats?.stats ?? {};
  // v1 has both plain and `total_` keys; the `total_` ones include child cgroups, as cadvisor reads.
  const pick = (v1: string, v2: string): number | undefined => stats[v1] ?? stats[v2];
  const inactiveFile = pick('total_inactive_file', 'inactive_file') ?? 0;
  const rss = pick('total_rss', 'anon');
  const pageFaults = pick('total_pgfault', 'pgfault');
  const majorPageFaults = pick('total_pgmajfault', 'pgmajfault');
  const read = raw.read ? Date.parse(raw.read) : NaN;
  return {
    // Docker's read time is when the counters were taken; year-1 or missing means "not read".
    timestamp: Number.isFinite(read) && read > 0 ? new Date(read) : new Date(),
    cpuUsageCoreNanoSeconds: cpu,
    memoryUsageBytes: usage,
    // cadvisor: working set = usage - inactive file, never below zero.
    memoryWorkingSetBytes: Math.max(0, usage - inactiveFile),
    ...(rss !== undefined ? { memoryRssBytes: rss } : {}),
    ...(pageFaults !== undefined ? { pageFaults } : {}),
    ...(majorPageFaults !== undefined ? { majorPageFaults } : {}),
  };
}
