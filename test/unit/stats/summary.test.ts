import t from 'tap';
import type { ContainerStatsSample } from '../../../src/runtime/types.js';
import { buildNodeMetrics, buildPodMetrics, metricsList } from '../../../src/stats/metrics-api.js';
import { renderResourceMetrics } from '../../../src/stats/resource-metrics.js';
import { buildSummary } from '../../../src/stats/summary.js';
import type { DiskSnapshot } from '../../../src/stats/disk-stats.js';
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

const psi = (n: number) => ({ some: { avg10: n, avg60: n / 2, avg300: n / 4, total: n * 1000 }, full: { avg10: 0, avg60: 0, avg300: 0, total: n } });
const nodefs = { capacityBytes: 100e9, availableBytes: 40e9, usedBytes: 55e9, inodes: 6e6, inodesFree: 5e6 };
const imagefs = { capacityBytes: 200e9, availableBytes: 150e9, usedBytes: 50e9, inodes: 12e6, inodesFree: 11e6 };

// The same snapshot with what a cgroup v2 node with pod cgroups adds, and a disk refresh.
const full: StatsSnapshot = {
  ...snap,
  host: { timestamp: at(10), fs: nodefs, imageFs: imagefs, rlimit: { maxpid: 4194304, curproc: 321 }, psi: { cpu: psi(1), memory: psi(2), io: psi(3) } },
  podCgroups: new Map([
    ['uid-web', {
      latest: { timestamp: at(10), cpuUsageCoreNanoSeconds: 12e9, memoryUsageBytes: 5e6, memoryWorkingSetBytes: 4e6, memoryLimitBytes: 64e6, memoryRssBytes: 3e6, pageFaults: 10, majorPageFaults: 1, processes: 5, psi: { cpu: psi(4), io: psi(5) } },
      usageNanoCores: 1_200_000_000,
      windowMs: 10_000,
    }],
  ]),
  containerPressure: new Map([['c1', { memory: psi(6), io: psi(7) }]]),
};
const disk: DiskSnapshot = {
  takenAt: at(8),
  imagesBytes: 30e9,
  pods: new Map([
    ['uid-web', {
      time: at(9),
      containers: new Map([
        ['c1', { rootfsBytes: 4096, logsBytes: 8192, logsInodes: 2 }],
        ['c2', { rootfsBytes: 0, logsBytes: 4096, logsInodes: 1 }],
      ]),
      volumes: [{ name: 'scratch', usedBytes: 5 * 1048576 + 8192, inodesUsed: 3, fs: nodefs }],
    }],
  ]),
};

t.test('Summary, full form: node fs, imageFs, rlimit and PSI; the pod cgroup, volumes, ephemeral storage, processes; rootfs and logs', async (t) => {
  const s = buildSummary('node1', full, boot, { disk });
  const time = '2026-11-29T10:00:10Z';
  t.same(s.node.cpu?.psi, psi(1));
  t.same(s.node.memory?.psi, psi(2));
  t.same(s.node.io, { time, psi: psi(3) });
  t.same(s.node.fs, { time, availableBytes: 40e9, capacityBytes: 100e9, inodesFree: 5e6, inodes: 6e6, usedBytes: 55e9, inodesUsed: 1e6 });
  t.same(s.node.runtime, { imageFs: { time, availableBytes: 150e9, capacityBytes: 200e9, inodesFree: 11e6, inodes: 12e6, usedBytes: 30e9 } }, 'imageFs usedBytes: the images, not the whole filesystem');
  t.same(s.node.rlimit, { time, maxpid: 4194304, curproc: 321 });

  const web = s.pods.find((p) => p.podRef.name === 'web');
  t.same(web?.cpu, { time, usageNanoCores: 1_200_000_000, usageCoreNanoSeconds: 12e9, psi: psi(4) }, 'the pod cgroup, not the sum of containers');
  t.same(web?.memory, { time, availableBytes: 60e6, usageBytes: 5e6, workingSetBytes: 4e6, rssBytes: 3e6, pageFaults: 10, majorPageFaults: 1 }, 'availableBytes: limit less working set');
  t.same(web?.io, { time, psi: psi(5) });
  t.same(web?.process_stats, { process_count: 5 });
  const diskTime = '2026-11-29T10:00:09Z';
  t.same(web?.volume, [{ time: diskTime, availableBytes: 40e9, capacityBytes: 100e9, inodesFree: 5e6, inodes: 6e6, usedBytes: 5 * 1048576 + 8192, inodesUsed: 3, name: 'scratch' }]);
  t.same(web?.['ephemeral-storage'], {
    time: diskTime,
    availableBytes: 40e9,
    capacityBytes: 100e9,
    inodesFree: 5e6,
    inodes: 6e6,
    usedBytes: 4096 + 8192 + 0 + 4096 + 5 * 1048576 + 8192,
    inodesUsed: 2 + 1 + 3,
  }, 'rootfs + logs of each container + the volumes, on nodefs\'s figures');
  const app = web?.containers.find((c) => c.name === 'app');
  t.same(app?.rootfs, { time: diskTime, availableBytes: 150e9, capacityBytes: 200e9, inodesFree: 11e6, inodes: 12e6, usedBytes: 4096, inodesUsed: 0 });
  t.same(app?.logs, { time: diskTime, availableBytes: 150e9, capacityBytes: 200e9, inodesFree: 11e6, inodes: 12e6, usedBytes: 8192, inodesUsed: 2 });
  t.same(app?.memory?.psi, psi(6));
  t.notOk(app?.cpu?.psi, 'a resource without a pressure reading has none');
  t.same(app?.io, { time, psi: psi(7) });
  t.same(app?.cpu?.usageNanoCores, 1e9, 'containers keep the rate metrics-server reads');
  const side = web?.containers.find((c) => c.name === 'side');
  t.notOk(side?.io, 'no pressure for that container');

  const fresh = s.pods.find((p) => p.podRef.name === 'new');
  t.same(fresh?.cpu, { time: '2026-11-29T10:00:09Z', usageCoreNanoSeconds: 3_000 }, 'no pod cgroup: the containers summed');
  t.notOk(fresh?.['ephemeral-storage'] ?? fresh?.volume ?? fresh?.process_stats ?? fresh?.io, 'nothing on disk or processes known for it yet');
});

t.test('Summary, only_cpu_and_memory: cpu and memory (with their PSI) only', async (t) => {
  const s = buildSummary('node1', full, boot, { disk, onlyCpuAndMemory: true });
  t.same(Object.keys(s.node).sort(), ['cpu', 'memory', 'nodeName', 'startTime']);
  t.same(s.node.cpu?.psi, psi(1));
  for (const p of s.pods) {
    t.same(Object.keys(p).sort(), ['containers', 'cpu', 'memory', 'podRef', 'startTime'], `${p.podRef.name}: no disks, IO or processes`);
    for (const c of p.containers) t.same(Object.keys(c).sort(), ['cpu', 'memory', 'name', 'startTime']);
  }
  t.same(s.pods.find((p) => p.podRef.name === 'web')?.memory?.workingSetBytes, 4e6, 'the pod cgroup still gives the pod\'s figures');
});

t.test('Summary: a node without PSI, a remote engine (no imagefs) and a disk snapshot without the images\' size', async (t) => {
  const s = buildSummary('node1', { ...snap, host: { timestamp: at(10), fs: nodefs } }, boot, { disk: { pods: new Map() } });
  t.notOk(s.node.cpu?.psi ?? s.node.io ?? s.node.runtime ?? s.node.rlimit);
  t.ok(s.node.fs);
  t.same(s.pods.map((p) => 'ephemeral-storage' in p), [false, false], 'pods the disk refresh has not seen have no storage figures');
});
