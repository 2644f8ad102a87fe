import t from 'tap';
import type { APIResourceList } from '../../../src/api/types.js';
import type { NodeMetrics, PodMetrics, Summary } from '../../../src/stats/types.js';
import { build, FakeHost, json } from '../server/fixtures/fake-host.js';

const summary: Summary = {
  node: { nodeName: 'node1', startTime: '2026-11-28T00:00:00Z', cpu: { time: '2026-11-29T10:00:10Z', usageCoreNanoSeconds: 5 } },
  pods: [
    {
      podRef: { name: 'web', namespace: 'ns1', uid: 'u1' },
      startTime: '2026-11-29T09:00:00Z',
      containers: [{ name: 'app', startTime: '2026-11-29T09:00:01Z', cpu: { time: '2026-11-29T10:00:10Z', usageNanoCores: 3_000_000, usageCoreNanoSeconds: 9 } }],
    },
  ],
};

function podMetrics(name: string, namespace: string, labels?: Record<string, string>): PodMetrics {
  return {
    kind: 'PodMetrics',
    apiVersion: 'metrics.k8s.io/v1beta1',
    metadata: { name, namespace, creationTimestamp: '2026-11-29T10:00:12Z', ...(labels ? { labels } : {}) },
    timestamp: '2026-11-29T10:00:10Z',
    window: '10s',
    containers: [{ name: 'app', usage: { cpu: '3m', memory: '2048Ki' } }],
  };
}

const nodeMetrics: NodeMetrics = {
  kind: 'NodeMetrics',
  apiVersion: 'metrics.k8s.io/v1beta1',
  metadata: { name: 'node1', creationTimestamp: '2026-11-29T10:00:12Z' },
  timestamp: '2026-11-29T10:00:10Z',
  window: '10s',
  usage: { cpu: '1500m', memory: '6Gi' },
};

function host(): FakeHost {
  const h = new FakeHost();
  h.summary = summary;
  h.podMetrics = [podMetrics('web', 'ns1', { app: 'web' }), podMetrics('db', 'ns1', { app: 'db' }), podMetrics('web', 'ns2')];
  h.nodeMetrics = nodeMetrics;
  h.resourceMetrics = '# TYPE resource_scrape_error gauge\nresource_scrape_error 0\n';
  return h;
}

t.test('/stats/summary: GET, POST (with or without a form body), only_cpu_and_memory accepted', async (t) => {
  const app = build(host());
  for (const req of [
    { method: 'GET' as const, url: '/stats/summary' },
    { method: 'GET' as const, url: '/stats/summary?only_cpu_and_memory=true' },
    { method: 'POST' as const, url: '/stats/summary' },
    { method: 'POST' as const, url: '/stats/summary', payload: 'only_cpu_and_memory=true', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
    { method: 'POST' as const, url: '/stats/summary', payload: '{}', headers: { 'content-type': 'application/json' } },
  ]) {
    const res = await app.inject(req);
    t.equal(res.statusCode, 200, `${req.method} ${req.url}`);
    t.equal(res.headers['content-type'], 'application/json');
    t.same(json(res), summary);
  }
  const head = await app.inject({ method: 'HEAD', url: '/stats/summary' });
  t.equal(head.statusCode, 200);
});

t.test('/stats/summary: only_cpu_and_memory=true once, in the query or a form body, asks for the short form', async (t) => {
  const h = host();
  const app = build(h);
  const form = { 'content-type': 'application/x-www-form-urlencoded' };
  const cases = [
    { req: { method: 'GET' as const, url: '/stats/summary?only_cpu_and_memory=true' }, short: true },
    { req: { method: 'POST' as const, url: '/stats/summary', payload: 'only_cpu_and_memory=true', headers: form }, short: true },
    { req: { method: 'GET' as const, url: '/stats/summary?only_cpu_and_memory=True' }, short: false },
    { req: { method: 'GET' as const, url: '/stats/summary?only_cpu_and_memory=1' }, short: false },
    { req: { method: 'GET' as const, url: '/stats/summary?only_cpu_and_memory=true&only_cpu_and_memory=true' }, short: false },
    { req: { method: 'POST' as const, url: '/stats/summary?only_cpu_and_memory=true', payload: 'only_cpu_and_memory=true', headers: form }, short: false },
    { req: { method: 'GET' as const, url: '/stats/summary' }, short: false },
  ];
  for (const { req, short } of cases) {
    h.calls.length = 0;
    const res = await app.inject(req);
    t.equal(res.statusCode, 200);
    t.same(h.calls, [short ? 'getStatsSummary onlyCpuAndMemory' : 'getStatsSummary'], `${req.method} ${req.url} ${req.payload ?? ''}: ${short ? 'short' : 'full'} form (Go's Form holds one value, "true")`);
  }
});

t.test('/stats/summary: other methods are 405 with Allow', async (t) => {
  const res = await build(host()).inject({ method: 'PUT', url: '/stats/summary' });
  t.equal(res.statusCode, 405);
  t.equal(res.headers.allow, 'GET, HEAD, POST');
  t.equal(json(res).reason, 'MethodNotAllowed');
});

t.test('/stats/summary: a failed sampler is the kubelet\'s plain-text 500', async (t) => {
  const h = host();
  h.summary = new Error('failed to get stats summary: docker down');
  const res = await build(h).inject('/stats/summary');
  t.equal(res.statusCode, 500);
  t.equal(res.headers['content-type'], 'text/plain; charset=utf-8');
  t.equal(res.body, 'Internal Error: failed to get stats summary: docker down\n');
});

t.test('a host without the stats capability: every stats route is a 501 NotImplemented Status, never empty data', async (t) => {
  const h = host();
  h.stats = undefined;
  const app = build(h);
  for (const req of [
    { method: 'GET' as const, url: '/stats/summary' },
    { method: 'POST' as const, url: '/stats/summary' },
    { method: 'GET' as const, url: '/metrics/resource' },
    { method: 'GET' as const, url: '/apis/metrics.k8s.io/v1beta1/pods' },
    { method: 'GET' as const, url: '/apis/metrics.k8s.io/v1beta1/namespaces/ns1/pods' },
    { method: 'GET' as const, url: '/apis/metrics.k8s.io/v1beta1/namespaces/ns1/pods/web' },
    { method: 'GET' as const, url: '/apis/metrics.k8s.io/v1beta1/nodes' },
    { method: 'GET' as const, url: '/apis/metrics.k8s.io/v1beta1/nodes/node1' },
  ]) {
    const res = await app.inject(req);
    t.equal(res.statusCode, 501, `${req.method} ${req.url}`);
    t.match(json(res), { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'NotImplemented', code: 501 }, `${req.method} ${req.url}`);
  }
  t.notOk(h.calls.some((c) => /^get(StatsSummary|ResourceMetrics|PodMetrics|NodeMetrics)/.test(c)), 'no stats method is called');
  // The capability's discovery document stays: kubectl top then reports the 501 rather than a missing API.
  t.equal((await app.inject('/apis/metrics.k8s.io/v1beta1')).statusCode, 200);
});

t.test('/metrics/resource: Prometheus text from the host, GET only', async (t) => {
  const app = build(host());
  const res = await app.inject('/metrics/resource');
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
  t.equal(res.body, '# TYPE resource_scrape_error gauge\nresource_scrape_error 0\n');
  t.equal((await app.inject({ method: 'POST', url: '/metrics/resource' })).statusCode, 405);
});

t.test('/apis/metrics.k8s.io/v1beta1: nodes and pods', async (t) => {
  const res = await build(host()).inject('/apis/metrics.k8s.io/v1beta1');
  t.equal(res.statusCode, 200);
  const list = res.json<APIResourceList>();
  t.match(list, { kind: 'APIResourceList', groupVersion: 'metrics.k8s.io/v1beta1' });
  t.same(
    list.resources.map((r) => [r.name, r.kind, r.namespaced, r.verbs]),
    [
      ['nodes', 'NodeMetrics', false, ['get', 'list']],
      ['pods', 'PodMetrics', true, ['get', 'list']],
    ],
  );
});

t.test('PodMetricsList: all namespaces, one namespace, selectors', async (t) => {
  const h = host();
  const app = build(h);
  const names = async (url: string) => {
    const res = await app.inject(url);
    t.equal(res.statusCode, 200, url);
    const body = json(res) as { kind: string; apiVersion: string; items: PodMetrics[] };
    t.equal(body.kind, 'PodMetricsList');
    t.equal(body.apiVersion, 'metrics.k8s.io/v1beta1');
    return body.items.map((m) => `${m.metadata.namespace}/${m.metadata.name}`);
  };
  t.same(await names('/apis/metrics.k8s.io/v1beta1/pods'), ['ns1/web', 'ns1/db', 'ns2/web']);
  t.same(await names('/apis/metrics.k8s.io/v1beta1/namespaces/ns1/pods'), ['ns1/web', 'ns1/db']);
  t.ok(h.calls.includes('getPodMetrics ns1'), 'the namespace is passed to the host');
  t.same(await names('/apis/metrics.k8s.io/v1beta1/namespaces/ns1/pods?labelSelector=app%3Ddb'), ['ns1/db']);
  t.same(await names('/apis/metrics.k8s.io/v1beta1/pods?fieldSelector=metadata.namespace%3Dns2'), ['ns2/web']);
  t.same(await names('/apis/metrics.k8s.io/v1beta1/pods?fieldSelector=metadata.name!%3Dweb'), ['ns1/db']);
  const bad = await app.inject('/apis/metrics.k8s.io/v1beta1/pods?fieldSelector=spec.nodeName%3Dx');
  t.equal(bad.statusCode, 400);
  const watch = await app.inject('/apis/metrics.k8s.io/v1beta1/pods?watch=true');
  t.equal(watch.statusCode, 405);
});

t.test('PodMetrics by name, and the metrics-server NotFound', async (t) => {
  const app = build(host());
  const res = await app.inject('/apis/metrics.k8s.io/v1beta1/namespaces/ns1/pods/db');
  t.equal(res.statusCode, 200);
  t.same(json(res), podMetrics('db', 'ns1', { app: 'db' }));
  const missing = await app.inject('/apis/metrics.k8s.io/v1beta1/namespaces/ns2/pods/db');
  t.equal(missing.statusCode, 404);
  t.match(json(missing), {
    kind: 'Status',
    reason: 'NotFound',
    message: 'podmetrics.metrics.k8s.io "db" not found',
    details: { name: 'db', kind: 'podmetrics', group: 'metrics.k8s.io' },
  });
  const invalid = await app.inject('/apis/metrics.k8s.io/v1beta1/namespaces/NS/pods/db');
  t.equal(invalid.statusCode, 400, 'path parameters are checked like everywhere else');
});

t.test('NodeMetrics: list and get; absent before a rate exists', async (t) => {
  const h = host();
  const app = build(h);
  const list = json(await app.inject('/apis/metrics.k8s.io/v1beta1/nodes')) as { kind: string; items: NodeMetrics[] };
  t.equal(list.kind, 'NodeMetricsList');
  t.same(list.items, [nodeMetrics]);
  t.same(json(await app.inject('/apis/metrics.k8s.io/v1beta1/nodes/node1')), nodeMetrics);
  const other = await app.inject('/apis/metrics.k8s.io/v1beta1/nodes/node2');
  t.equal(other.statusCode, 404);
  t.equal(json(other).message, 'nodemetrics.metrics.k8s.io "node2" not found');
  h.nodeMetrics = undefined;
  t.same((json(await app.inject('/apis/metrics.k8s.io/v1beta1/nodes')) as { items: unknown[] }).items, []);
  t.equal((await app.inject('/apis/metrics.k8s.io/v1beta1/nodes/node1')).statusCode, 404);
});
