import { rfc3339 } from '../api/time.js';
import type { CPUStats, MemoryStats, NodeSample, NodeStats, StatsSnapshot, Summary } from './types.js';
import { podUsages, type Usage } from './usage.js';

/**
 * The kubelet's `/stats/summary` body from a sampler snapshot. Only CPU and memory exist, so
 * `only_cpu_and_memory=true` and the full form are the same document.
 */
export function buildSummary(nodeName: string, snap: StatsSnapshot, fallbackBootTime: Date): Summary {
  const node: NodeStats = { nodeName, startTime: rfc3339(snap.node?.bootTime ?? fallbackBootTime) };
  if (snap.node) Object.assign(node, nodeCPUAndMemory(snap.node));
  return {
    node,
    pods: podUsages(snap).map((p) => ({
      podRef: p.ref,
      startTime: rfc3339(p.startTime),
      containers: p.containers.map((c) => ({ name: c.name, startTime: rfc3339(c.startTime), cpu: cpuStats(c.usage), memory: memoryStats(c.usage) })),
      cpu: cpuStats(p.total),
      memory: memoryStats(p.total),
    })),
  };
}

export function cpuStats(u: Usage): CPUStats {
  return {
    time: rfc3339(u.time),
    ...(u.usageNanoCores !== undefined ? { usageNanoCores: u.usageNanoCores } : {}),
    usageCoreNanoSeconds: u.cpuUsageCoreNanoSeconds,
  };
}

export function memoryStats(u: Usage): MemoryStats {
  return {
    time: rfc3339(u.time),
    usageBytes: u.memoryUsageBytes,
    workingSetBytes: u.memoryWorkingSetBytes,
    ...(u.memoryRssBytes !== undefined ? { rssBytes: u.memoryRssBytes } : {}),
    ...(u.pageFaults !== undefined ? { pageFaults: u.pageFaults } : {}),
    ...(u.majorPageFaults !== undefined ? { majorPageFaults: u.majorPageFaults } : {}),
  };
}

function nodeCPUAndMemory(n: NodeSample): Pick<NodeStats, 'cpu' | 'memory'> {
  const time = rfc3339(n.timestamp);
  return {
    cpu: { time, ...(n.usageNanoCores !== undefined ? { usageNanoCores: n.usageNanoCores } : {}), usageCoreNanoSeconds: n.cpuUsageCoreNanoSeconds },
    memory: {
      time,
      availableBytes: n.memoryAvailableBytes,
      usageBytes: n.memoryUsageBytes,
      workingSetBytes: n.memoryWorkingSetBytes,
      ...(n.memoryRssBytes !== undefined ? { rssBytes: n.memoryRssBytes } : {}),
    },
  };
}
