/** A cumulative CPU counter read at a point in time. */
export interface CpuReading {
  readonly timestamp: Date;
  readonly cpuUsageCoreNanoSeconds: number;
}

/**
 * CPU rate in nanocores between two readings, as the kubelet's CRI stats provider computes
 * `usageNanoCores` from its cached previous reading: undefined when time did not advance or the
 * counter went backwards (a new instance under the same ID would be the only cause).
 */
export function usageNanoCores(previous: CpuReading | undefined, latest: CpuReading): number | undefined {
  if (!previous) return undefined;
  const elapsedNs = (latest.timestamp.getTime() - previous.timestamp.getTime()) * 1e6;
  const usedNs = latest.cpuUsageCoreNanoSeconds - previous.cpuUsageCoreNanoSeconds;
  if (elapsedNs <= 0 || usedNs < 0) return undefined;
  return Math.round((usedNs / elapsedNs) * 1e9);
}
