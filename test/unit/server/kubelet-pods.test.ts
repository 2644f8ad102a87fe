import t from 'tap';
import type { PodList } from '../../../src/api/types.js';
import { build, FakeHost, makePod } from './fixtures/fake-host.js';

const pods = () => [makePod({ name: 'web', podIP: '10.0.0.2' }), makePod({ name: 'db', namespace: 'data' })];

t.test('GET /pods: v1 PodList of managed pods', async (t) => {
  const host = new FakeHost(pods());
  const res = await build(host).inject('/pods');
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/json');
  const body = res.json<PodList>();
  t.equal(body.kind, 'PodList');
  t.equal(body.apiVersion, 'v1');
  t.same(body.metadata, {});
  t.same(body.items, host.pods);
  t.same(host.calls, ['getPods']);
});

t.test('other methods on /pods: 405 with Allow: GET, before any body parsing', async (t) => {
  const host = new FakeHost(pods());
  const app = build(host);
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const) {
    const res = await app.inject({ method, url: '/pods', headers: { 'content-type': 'application/json' }, payload: '{not json' });
    t.equal(res.statusCode, 405, method);
    t.match(res.headers.allow, /\bGET\b/, `${method} Allow`);
    t.match(res.json(), { kind: 'Status', status: 'Failure', reason: 'MethodNotAllowed', code: 405 });
  }
  t.same(host.calls, []);
});

t.test('GET /runningpods/ (and without the slash) reads the runtime', async (t) => {
  const host = new FakeHost(pods());
  host.running = [makePod({ name: 'from-docker' })];
  const app = build(host);
  for (const url of ['/runningpods/', '/runningpods']) {
    const res = await app.inject(url);
    t.equal(res.statusCode, 200, url);
    t.same(res.json<PodList>().items.map((p) => p.metadata?.name), ['from-docker']);
    t.equal(res.json<PodList>().kind, 'PodList');
  }
  t.same(host.calls, ['getRunningPods', 'getRunningPods']);
});

t.test('runtime failure on /runningpods/: 500 InternalError Status', async (t) => {
  const host = new FakeHost();
  host.running = new Error('Cannot connect to the Docker daemon');
  const res = await build(host).inject('/runningpods/');
  t.equal(res.statusCode, 500);
  t.equal(res.headers['content-type'], 'application/json');
  t.match(res.json(), { kind: 'Status', status: 'Failure', reason: 'InternalError', code: 500, message: /Docker daemon/ });
});

t.test('GET /podInfo: the PodStatus as JSON', async (t) => {
  const host = new FakeHost(pods());
  const res = await build(host).inject('/podInfo?podID=web&podNamespace=default');
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/json');
  t.same(res.json(), host.pods[0]?.status);
  t.same(host.calls, ['getPodByName default/web', 'getPodStatus uid-default-web']);
});

t.test('GET /api/v1beta1/podInfo: a versioned PodStatusResult', async (t) => {
  const host = new FakeHost(pods());
  const res = await build(host).inject('/api/v1beta1/podInfo?podID=db&podNamespace=data');
  t.equal(res.statusCode, 200);
  t.same(res.json(), {
    kind: 'PodStatusResult',
    apiVersion: 'v1',
    metadata: { name: 'db', namespace: 'data', uid: 'uid-data-db' },
    status: host.pods[1]?.status,
  });
});

t.test('podInfo errors are the seed plain text', async (t) => {
  const host = new FakeHost(pods());
  const app = build(host);
  const cases: Array<[string, number, string]> = [
    ['/podInfo', 400, "Missing 'podID=' query entry.\n"],
    ['/podInfo?podNamespace=default', 400, "Missing 'podID=' query entry.\n"],
    ['/podInfo?podID=web', 400, "Missing 'podNamespace=' query entry.\n"],
    ['/podInfo?podID=nope&podNamespace=default', 404, 'Pod does not exist\n'],
    ['/podInfo?podID=web&podNamespace=other', 404, 'Pod does not exist\n'],
    ['/api/v1beta1/podInfo?podID=web', 400, "Missing 'podNamespace=' query entry.\n"],
    ['/api/v1beta1/podInfo?podID=nope&podNamespace=default', 404, 'Pod does not exist\n'],
  ];
  for (const [url, code, body] of cases) {
    const res = await app.inject(url);
    t.equal(res.statusCode, code, url);
    t.equal(res.body, body, url);
    t.equal(res.headers['content-type'], 'text/plain; charset=utf-8', url);
  }
});

t.test('podInfo with invalid names: 400 text, no lookup', async (t) => {
  const host = new FakeHost(pods());
  const app = build(host);
  for (const q of ['podID=../etc&podNamespace=default', 'podID=web&podNamespace=UPPER', `podID=web&podNamespace=${'a'.repeat(64)}`]) {
    const res = await app.inject(`/podInfo?${q}`);
    t.equal(res.statusCode, 400, q);
    t.match(res.body, /^Invalid 'pod(ID|Namespace)=' query entry: /, q);
  }
  t.same(host.calls, []);
});
