import type { StatsSnapshot } from './types.js';
import { podUsages } from './usage.js';

/**
 * `/metrics/resource` in Prometheus text format 0.0.4, with the names, help texts, labels and
 * sample timestamps of the kubelet's resource metrics collector
 * (pkg/kubelet/metrics/collectors/resource_metrics.go). Rendered per scrape from the sampler's
 * snapshot: families with no samples are left out and samples are sorted, as client_golang's
 * registry does. CPU counters are core-seconds; a failed snapshot yields only the error gauges.
 */

export const resourceMetricsContentType = 'text/plain; version=0.0.4; charset=utf-8';

interface Family {
  help: string;
  type: 'counter' | 'gauge';
  samples: Array<{ labels: string; value: number; timestampMs?: number }>;
}

const families = {
  container_cpu_usage_seconds_total: { help: '[STABLE] Cumulative cpu time consumed by the container in core-seconds', type: 'counter' },
  container_memory_working_set_bytes: { help: '[STABLE] Current working set of the container in bytes', type: 'gauge' },
  container_start_time_seconds: { help: '[STABLE] Start time of the container since unix epoch in seconds', type: 'gauge' },
  node_cpu_usage_seconds_total: { help: '[STABLE] Cumulative cpu time consumed by the node in core-seconds', type: 'counter' },
  node_memory_working_set_bytes: { help: '[STABLE] Current working set of the node in bytes', type: 'gauge' },
  pod_cpu_usage_seconds_total: { help: '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', type: 'counter' },
  pod_memory_working_set_bytes: { help: '[STABLE] Current working set of the pod in bytes', type: 'gauge' },
  resource_scrape_error: { help: '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise', type: 'gauge' },
  scrape_error: { help: '[ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise', type: 'gauge' },
} as const satisfies Record<string, Omit<Family, 'samples'>>;

type Name = keyof typeof families;

export function renderResourceMetrics(snap: StatsSnapshot): string {
  const out = new Map<Name, Family['samples']>();
  const add = (name: Name, labels: Record<string, string>, value: number, time?: Date) => {
    const list = out.get(name) ?? [];
    out.set(name, list);
    list.push({ labels: formatLabels(labels), value, ...(time ? { timestampMs: time.getTime() } : {}) });
  };
  const failed = snap.failure !== undefined;
  add('scrape_error', {}, failed ? 1 : 0);
  add('resource_scrape_error', {}, failed ? 1 : 0);
  if (!failed) {
    if (snap.node) {
      add('node_cpu_usage_seconds_total', {}, snap.node.cpuUsageCoreNanoSeconds / 1e9, snap.node.timestamp);
      add('node_memory_working_set_bytes', {}, snap.node.memoryWorkingSetBytes, snap.node.timestamp);
    }
    for (const pod of podUsages(snap)) {
      const { name: podName, namespace } = pod.ref;
      for (const c of pod.containers) {
        const labels = { container: c.name, namespace, pod: podName };
        // No timestamp on the start time, as upstream.
        if (c.startTime.getTime() > 0) add('container_start_time_seconds', labels, c.startTime.getTime() / 1000);
        add('container_cpu_usage_seconds_total', labels, c.usage.cpuUsageCoreNanoSeconds / 1e9, c.usage.time);
        add('container_memory_working_set_bytes', labels, c.usage.memoryWorkingSetBytes, c.usage.time);
      }
      add('pod_cpu_usage_seconds_total', { namespace, pod: podName }, pod.total.cpuUsageCoreNanoSeconds / 1e9, pod.total.time);
      add('pod_memory_working_set_bytes', { namespace, pod: podName }, pod.total.memoryWorkingSetBytes, pod.total.time);
    }
  }
  const lines: string[] = [];
  for (const name of [...out.keys()].sort()) {
    const f = families[name];
    lines.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`);
    const samples = [...(out.get(name) ?? [])].sort((a, b) => (a.labels < b.labels ? -1 : a.labels > b.labels ? 1 : 0));
    for (const s of samples) lines.push(`${name}${s.labels} ${formatValue(s.value)}${s.timestampMs !== undefined ? ` ${s.timestampMs}` : ''}`);
  }
  return lines.join('\n') + '\n';
}

/** Labels sorted by name (client_golang sorts label pairs), values escaped per the text format. */
function formatLabels(labels: Record<string, string>): string {
  const pairs = Object.keys(labels)
    .sort()
    .map((k) => `${k}="${(labels[k] ?? '').replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
  return pairs.length ? `{${pairs.join(',')}}` : '';
}

function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}
