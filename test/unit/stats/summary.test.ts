import t from 'tap';
import type { ContainerStatsSample } from '../../../src/runtime/types.js';
import { buildNodeMetrics, buildPodMetrics, metricsList } from '../../../src/stats/metrics-api.js';
import { renderResourceMetrics } from '../../../src/stats/resource-metrics.js';
import { buildSummary } from '../../../src/stats/summary.js';
import type { SampledContainer, StatsSnapshot, StatsTarget } from '../../../src/stats/types.js';

const t0 = Date.parse('2026-11-29T10:00:00Z');
const at = (s: number) => new Date(t0 + s * 1000);
const boot = new Date('2026-11-28T00:00:00Z');

function sample(s: number, cpu: number, ws: number, extra: Partial<ContainerStatsSample> = {}): ContainerStatsSample {
  return { timestamp: at(s), cpuUsageCoreNanoSeconds: cpu, memoryUsageBytes: ws + 4096, memoryWorkingSetBytes: ws, ...extra };
}

function sampled(target: Partial<StatsTarget> & { id: string; name: string }, latest: ContainerStatsSample, previous?: ContainerStatsSample, rate?: number): SampledContainer {
  const full: StatsTarget = { podUID: 'uid-web', podName: 'web', namespace: 'ns1', podStartTime: at(-100), sandbox: false, startTime: at(-90), ...target };
  return { target: full, latest, ...(previous ? { previous } : {}), ...(rate !== undefined ? { usageNanoCores: rate } : {}) };
}

// Pod ns1/web: sandbox + app (burner) + side, sampled twice 10 s apart; pod ns1/new: sampled once.
const snap: StatsSnapshot = {
  takenAt: at(10),
  containers: [
    sampled({ id: 'sb', name: '', sandbox: true, startTime: at(-100) }, sample(10, 2_000, 200_000, { memoryRssBytes: 100 }), sample(0, 1_000, 200_000), 100),
    sampled({ id: 'c2', name: 'side' }, sample(10, 5_000_000, 1_048_576, { memoryRssBytes: 10, pageFaults: 7, majorPageFaults: 1 }), sample(0, 4_000_000, 1_048_576), 100_000),
    sampled({ id: 'c1', name: 'app' }, sample(10, 11e9, 2_097_152, { memoryRssBytes: 20 }), sample(0, 1e9, 2_097_152), 1e9),
    sampled({ id: 'n1', name: 'app', podUID: 'uid-new', podName: 'new', startTime: at(5) }, sample(9, 3_000, 606_208)),
  ],
  node: {
    timestamp: at(10),
    bootTime: boot,
    cpuUsageCoreNanoSeconds: 99e9,
    usageNanoCores: 1_500_000_000,
    windowMs: 10_000,
    memoryUsageBytes: 8e9,
    memoryWorkingSetBytes: 6e9,
    memoryAvailableBytes: 18e9,
    memoryRssBytes: 1e9,
  },
};

t.test('Summary: pods by namespace/name, containers by name, sandbox only in pod totals', async (t) => {
  const s = buildSummary('node1', snap, new Date(0));
  t.same(s.node, {
    nodeName: 'node1',
    startTime: '2026-11-28T00:00:00Z',
    cpu: { time: '2026-11-29T10:00:10Z', usageNanoCores: 1_500_000_000, usageCoreNanoSeconds: 99e9 },
    memory: { time: '2026-11-29T10:00:10Z', availableBytes: 18e9, usageBytes: 8e9, workingSetBytes: 6e9, rssBytes: 1e9 },
  });
  t.same(
    s.pods.map((p) => p.podRef),
    [
      { name: 'new', namespace: 'ns1', uid: 'uid-new' },
      { name: 'web', namespace: 'ns1', uid: 'uid-web' },
    ],
  );
  const web = s.pods[1];
  t.equal(web?.startTime, '2026-11-29T09:58:20Z', 'the sandbox creation time');
  t.same(web?.containers.map((c) => c.name), ['app', 'side']);
  t.same(web?.containers[0], {
    name: 'app',
    startTime: '2026-11-29T09:58:30Z',
    cpu: { time: '2026-11-29T10:00:10Z', usageNanoCores: 1e9, usageCoreNanoSeconds: 11e9 },
    memory: { time: '2026-11-29T10:00:10Z', usageBytes: 2_097_152 + 4096, workingSetBytes: 2_097_152, rssBytes: 20 },
  });
  t.same(web?.containers[1]?.memory, { time: '2026-11-29T10:00:10Z', usageBytes: 1_048_576 + 4096, workingSetBytes: 1_048_576, rssBytes: 10, pageFaults: 7, majorPageFaults: 1 });
  t.same(web?.cpu, { time: '2026-11-29T10:00:10Z', usageNanoCores: 1e9 + 100_000 + 100, usageCoreNanoSeconds: 11e9 + 5_000_000 + 2_000 });
  t.same(web?.memory, {
    time: '2026-11-29T10:00:10Z',
    usageBytes: 2_097_152 + 1_048_576 + 200_000 + 3 * 4096,
    workingSetBytes: 2_097_152 + 1_048_576 + 200_000,
    rssBytes: 130,
  }, 'page faults only where every part has them');
  const fresh = s.pods[0];
  t.same(fresh?.containers[0]?.cpu, { time: '2026-11-29T10:00:09Z', usageCoreNanoSeconds: 3_000 }, 'no rate after one sample');
  t.notOk(fresh?.cpu && 'usageNanoCores' in fresh.cpu);
});

t.test('Summary before the first round: the node alone, with the fallback boot time', async (t) => {
  t.same(buildSummary('node1', { containers: [] }, boot), { node: { nodeName: 'node1', startTime: '2026-11-28T00:00:00Z' }, pods: [] });
});

t.test('PodMetrics: rated containers only, metrics-server quantities and window', async (t) => {
  const now = new Date('2026-11-29T10:00:12Z');
  const items = buildPodMetrics(snap, now, (uid) => (uid === 'uid-web' ? { app: 'web' } : undefined));
  t.same(items, [
    {
      kind: 'PodMetrics',
      apiVersion: 'metrics.k8s.io/v1beta1',
      metadata: { name: 'web', namespace: 'ns1', creationTimestamp: '2026-11-29T10:00:12Z', labels: { app: 'web' } },
      timestamp: '2026-11-29T10:00:10Z',
      window: '10s',
      containers: [
        { name: 'app', usage: { cpu: '1', memory: '2Mi' } },
        { name: 'side', usage: { cpu: '100u', memory: '1Mi' } },
      ],
    },
  ]);
  t.same(buildPodMetrics(snap, now).map((m) => m.metadata.labels), [undefined], 'no labels without a lookup');
  t.same(metricsList('PodMetricsList', []), { kind: 'PodMetricsList', apiVersion: 'metrics.k8s.io/v1beta1', metadata: {}, items: [] });
});

t.test('NodeMetrics once the node has a rate', async (t) => {
  const now = new Date('2026-11-29T10:00:12Z');
  t.same(buildNodeMetrics('node1', snap, now), {
    kind: 'NodeMetrics',
    apiVersion: 'metrics.k8s.io/v1beta1',
    metadata: { name: 'node1', creationTimestamp: '2026-11-29T10:00:12Z' },
    timestamp: '2026-11-29T10:00:10Z',
    window: '10s',
    usage: { cpu: '1500m', memory: '5859375Ki' },
  });
  t.equal(buildNodeMetrics('node1', { containers: [] }, now), undefined);
  const once = { timestamp: at(0), bootTime: boot, cpuUsageCoreNanoSeconds: 1, memoryUsageBytes: 1, memoryWorkingSetBytes: 1, memoryAvailableBytes: 1 };
  t.equal(buildNodeMetrics('node1', { containers: [], node: once }, now), undefined, 'one node reading: no rate yet');
});

t.test('/metrics/resource text: upstream names, sorted labels, timestamps, error gauges', async (t) => {
  const text = renderResourceMetrics(snap);
  const ms = t0 + 10_000;
  for (const line of [
    '# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds',
    '# TYPE container_cpu_usage_seconds_total counter',
    `container_cpu_usage_seconds_total{container="app",namespace="ns1",pod="web"} 11 ${ms}`,
    `container_cpu_usage_seconds_total{container="side",namespace="ns1",pod="web"} 0.005 ${ms}`,
    `container_cpu_usage_seconds_total{container="app",namespace="ns1",pod="new"} 0.000003 ${t0 + 9000}`,
    '# TYPE container_memory_working_set_bytes gauge',
    `container_memory_working_set_bytes{container="app",namespace="ns1",pod="web"} 2097152 ${ms}`,
    `container_start_time_seconds{container="app",namespace="ns1",pod="web"} ${(t0 - 90_000) / 1000}`,
    `node_cpu_usage_seconds_total 99 ${ms}`,
    `node_memory_working_set_bytes 6000000000 ${ms}`,
    `pod_cpu_usage_seconds_total{namespace="ns1",pod="web"} ${(11e9 + 5_000_000 + 2_000) / 1e9} ${ms}`,
    `pod_memory_working_set_bytes{namespace="ns1",pod="web"} ${2_097_152 + 1_048_576 + 200_000} ${ms}`,
    '# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise',
    'resource_scrape_error 0',
    'scrape_error 0',
  ]) {
    t.ok(text.split('\n').includes(line), line);
  }
  t.notOk(/container="",/.test(text), 'the sandbox is never a container series');
  const names = [...text.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]);
  t.same(names, [...names].sort(), 'families sorted by name');
  t.ok(text.endsWith('\n'));
});

t.test('/metrics/resource after a failed round: only the error gauges, at 1', async (t) => {
  const text = renderResourceMetrics({ ...snap, failure: 'docker down' });
  t.same(
    text.split('\n').filter((l) => l && !l.startsWith('#')),
    ['resource_scrape_error 1', 'scrape_error 1'],
  );
  t.match(text, /# HELP scrape_error \[ALPHA\] \(Deprecated since 1\.29\.0\)/);
});

t.test('label values are escaped', async (t) => {
  const odd = sampled({ id: 'x', name: 'app', namespace: 'a"b', podName: 'p\\q\nr' }, sample(1, 1, 1));
  const text = renderResourceMetrics({ containers: [odd] });
  t.match(text, /container_cpu_usage_seconds_total\{container="app",namespace="a\\"b",pod="p\\\\q\\nr"\} 1e-9 /);
});
