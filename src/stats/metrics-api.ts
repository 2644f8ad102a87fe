import { rfc3339 } from '../api/time.js';
import { formatBytes, formatNanoCores, formatWindow } from './quantity.js';
import { metricsGroupVersion, type MetricsList, type NodeMetrics, type PodMetrics, type StatsSnapshot } from './types.js';
import { podUsages } from './usage.js';

/**
 * `metrics.k8s.io/v1beta1` objects as metrics-server builds them from two scrapes: CPU is the
 * rate over the window, memory the working set. A pod or node without a rate yet (one sample)
 * is left out, as metrics-server leaves out what it cannot compute.
 */

/** Every pod with at least one container rate; `labelsOf` adds the pod's labels (for `-l`). */
export function buildPodMetrics(snap: StatsSnapshot, now: Date, labelsOf: (uid: string) => Record<string, string> | undefined = () => undefined): PodMetrics[] {
  const out: PodMetrics[] = [];
  for (const pod of podUsages(snap)) {
    const rated = pod.containers.filter((c) => c.usage.usageNanoCores !== undefined);
    if (rated.length === 0) continue;
    const labels = labelsOf(pod.ref.uid);
    out.push({
      kind: 'PodMetrics',
      apiVersion: metricsGroupVersion,
      metadata: { name: pod.ref.name, namespace: pod.ref.namespace, creationTimestamp: rfc3339(now), ...(labels ? { labels } : {}) },
      timestamp: rfc3339(new Date(Math.max(...rated.map((c) => c.usage.time.getTime())))),
      window: formatWindow(Math.max(...rated.map((c) => c.usage.windowMs ?? 0))),
      containers: rated.map((c) => ({
        name: c.name,
        usage: { cpu: formatNanoCores(c.usage.usageNanoCores ?? 0), memory: formatBytes(c.usage.memoryWorkingSetBytes) },
      })),
    });
  }
  return out;
}

export function buildNodeMetrics(nodeName: string, snap: StatsSnapshot, now: Date): NodeMetrics | undefined {
  const n = snap.node;
  if (n?.usageNanoCores === undefined) return undefined;
  return {
    kind: 'NodeMetrics',
    apiVersion: metricsGroupVersion,
    metadata: { name: nodeName, creationTimestamp: rfc3339(now) },
    timestamp: rfc3339(n.timestamp),
    window: formatWindow(n.windowMs ?? 0),
    usage: { cpu: formatNanoCores(n.usageNanoCores), memory: formatBytes(n.memoryWorkingSetBytes) },
  };
}

export function metricsList<T>(kind: 'PodMetricsList' | 'NodeMetricsList', items: T[]): MetricsList<T> {
  return { kind, apiVersion: metricsGroupVersion, metadata: {}, items };
}
