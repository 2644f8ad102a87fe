import type { PressureReading } from './psi.js';
import type { PodCgroupSample, PodReference, SampledContainer, StatsSnapshot } from './types.js';

/**
 * The snapshot grouped by pod, with full-precision times: the one shape the Summary, the
 * Prometheus `/metrics/resource` text and the `metrics.k8s.io` objects are all rendered from.
 */

export interface Usage {
  time: Date;
  cpuUsageCoreNanoSeconds: number;
  usageNanoCores?: number;
  /** Milliseconds the rate covers. */
  windowMs?: number;
  memoryUsageBytes: number;
  memoryWorkingSetBytes: number;
  memoryRssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  /** The cgroup's memory limit less its working set, where it has a limit. */
  memoryAvailableBytes?: number;
  /** Pressure of the cgroup (v2), or of the node. */
  psi?: PressureReading;
}

export interface ContainerUsage {
  /** The container instance's ID (the runtime's). */
  id: string;
  name: string;
  startTime: Date;
  usage: Usage;
}

export interface PodUsage {
  ref: PodReference;
  startTime: Date;
  /** App containers, by name; the sandbox is only in `total`. */
  containers: ContainerUsage[];
  /**
   * The pod cgroup's figures where the pod has one (sandbox, containers and overhead), else the
   * sandbox and containers summed: the CRI stats provider's `addPodCPUMemoryStats`.
   */
  total: Usage;
  /** Processes in the pod's cgroup (`pids.current`), where it has one. */
  processes?: number;
}

/** A pod cgroup's reading as a usage (cadvisorInfoToCPUandMemoryStats in pkg/kubelet/stats/helper.go). */
export function usageOfCgroup(c: PodCgroupSample): Usage {
  const r = c.latest;
  return {
    time: r.timestamp,
    cpuUsageCoreNanoSeconds: r.cpuUsageCoreNanoSeconds,
    ...(c.usageNanoCores !== undefined ? { usageNanoCores: c.usageNanoCores, windowMs: c.windowMs ?? 0 } : {}),
    memoryUsageBytes: r.memoryUsageBytes,
    memoryWorkingSetBytes: r.memoryWorkingSetBytes,
    ...(r.memoryRssBytes !== undefined ? { memoryRssBytes: r.memoryRssBytes } : {}),
    ...(r.pageFaults !== undefined ? { pageFaults: r.pageFaults } : {}),
    ...(r.majorPageFaults !== undefined ? { majorPageFaults: r.majorPageFaults } : {}),
    ...(r.memoryLimitBytes !== undefined ? { memoryAvailableBytes: Math.max(0, r.memoryLimitBytes - r.memoryWorkingSetBytes) } : {}),
    ...(r.psi ? { psi: r.psi } : {}),
  };
}

export function usageOf(c: SampledContainer): Usage {
  const s = c.latest;
  return {
    time: s.timestamp,
    cpuUsageCoreNanoSeconds: s.cpuUsageCoreNanoSeconds,
    ...(c.usageNanoCores !== undefined && c.previous ? { usageNanoCores: c.usageNanoCores, windowMs: s.timestamp.getTime() - c.previous.timestamp.getTime() } : {}),
    memoryUsageBytes: s.memoryUsageBytes,
    memoryWorkingSetBytes: s.memoryWorkingSetBytes,
    ...(s.memoryRssBytes !== undefined ? { memoryRssBytes: s.memoryRssBytes } : {}),
    ...(s.pageFaults !== undefined ? { pageFaults: s.pageFaults } : {}),
    ...(s.majorPageFaults !== undefined ? { majorPageFaults: s.majorPageFaults } : {}),
  };
}

type Summed = 'cpuUsageCoreNanoSeconds' | 'usageNanoCores' | 'memoryUsageBytes' | 'memoryWorkingSetBytes' | 'memoryRssBytes' | 'pageFaults' | 'majorPageFaults';

/** Sums usages; an optional field is kept only when every part has it (a partial sum misleads). */
export function sumUsage(parts: readonly Usage[]): Usage {
  const sum = (k: Summed): number | undefined => {
    let total = 0;
    for (const p of parts) {
      const v = p[k];
      if (v === undefined) return undefined;
      total += v;
    }
    return total;
  };
  const out: Usage = {
    time: new Date(Math.max(...parts.map((p) => p.time.getTime()))),
    cpuUsageCoreNanoSeconds: sum('cpuUsageCoreNanoSeconds') ?? 0,
    memoryUsageBytes: sum('memoryUsageBytes') ?? 0,
    memoryWorkingSetBytes: sum('memoryWorkingSetBytes') ?? 0,
  };
  for (const k of ['usageNanoCores', 'memoryRssBytes', 'pageFaults', 'majorPageFaults'] as const) {
    const v = sum(k);
    if (v !== undefined) out[k] = v;
  }
  if (out.usageNanoCores !== undefined) out.windowMs = Math.max(...parts.map((p) => p.windowMs ?? 0));
  return out;
}

/** Pods ordered by namespace and name, containers by name. */
export function podUsages(snap: StatsSnapshot): PodUsage[] {
  const byPod = new Map<string, SampledContainer[]>();
  for (const c of snap.containers) {
    const list = byPod.get(c.target.podUID);
    if (list) list.push(c);
    else byPod.set(c.target.podUID, [c]);
  }
  const pods: PodUsage[] = [];
  for (const [uid, members] of byPod) {
    const first = members[0];
    if (!first) continue;
    const cgroup = snap.podCgroups?.get(uid);
    const containers = members
      .filter((m) => !m.target.sandbox)
      .map((m) => {
        const psi = snap.containerPressure?.get(m.target.id);
        return { id: m.target.id, name: m.target.name, startTime: m.target.startTime, usage: psi ? { ...usageOf(m), psi } : usageOf(m) };
      })
      .sort((a, b) => a.name.localeCompare(b.name));
    pods.push({
      ref: { name: first.target.podName, namespace: first.target.namespace, uid },
      startTime: first.target.podStartTime,
      containers,
      total: cgroup ? usageOfCgroup(cgroup) : sumUsage(members.map(usageOf)),
      ...(cgroup?.latest.processes !== undefined ? { processes: cgroup.latest.processes } : {}),
    });
  }
  return pods.sort((a, b) => a.ref.namespace.localeCompare(b.ref.namespace) || a.ref.name.localeCompare(b.ref.name));
}
