import t from 'tap';
import type { Namespace, Pod, PodList, Status } from '../../../src/api/types.js';
import type { Table } from '../../../src/server/table.js';
import { build, FakeHost, makePod } from './fixtures/fake-host.js';

// kubectl get pods (kubectl-contract §2), byte for byte.
const tableAccept = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';
const protobufAccept = 'application/vnd.kubernetes.protobuf,application/json';

function fixture(): FakeHost {
  // 12 minutes prints as `12m` for the whole minute, so the wall clock cannot make this flaky.
  const twelveMinAgo = new Date(Date.now() - 12 * 60_000 - 20_000).toISOString().replace(/\.\d+Z$/, 'Z');
  return new FakeHost([
    makePod({ name: 'web-node1', labels: { app: 'web', tier: 'fe' }, created: twelveMinAgo }),
    makePod({ name: 'api', labels: { app: 'api' }, podIP: '10.0.0.7' }),
    makePod({ name: 'db', namespace: 'data', labels: { app: 'db' }, phase: 'Pending' }),
  ]);
}
const names = (body: PodList) => body.items.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`);

t.test('list all namespaces and one namespace', async (t) => {
  const app = build(fixture());
  const all = await app.inject('/api/v1/pods');
  t.equal(all.statusCode, 200);
  t.equal(all.headers['content-type'], 'application/json');
  t.match(all.json(), { kind: 'PodList', apiVersion: 'v1', metadata: {} });
  t.same(names(all.json<PodList>()), ['default/web-node1', 'default/api', 'data/db']);
  const ns = await app.inject('/api/v1/namespaces/data/pods?limit=500');
  t.same(names(ns.json<PodList>()), ['data/db'], 'limit accepted and ignored');
  const empty = await app.inject('/api/v1/namespaces/nobody/pods');
  t.same(empty.json<PodList>().items, []);
});

t.test("kubectl get's Accept header gets a meta.k8s.io/v1 Table", async (t) => {
  const res = await build(fixture()).inject({ url: '/api/v1/namespaces/default/pods?limit=500', headers: { accept: tableAccept } });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/json');
  const table = res.json<Table>();
  t.equal(table.kind, 'Table');
  t.equal(table.apiVersion, 'meta.k8s.io/v1');
  t.same(table.metadata, { resourceVersion: '' });
  t.same(
    table.columnDefinitions.map((c) => c.name.toUpperCase()),
    ['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE', 'IP', 'NODE'],
  );
  t.same(table.rows[0]?.cells, ['web-node1', '1/1', 'Running', 0, '12m', '<none>', 'node1']);
  t.same(table.rows[1]?.cells.slice(0, 4), ['api', '1/1', 'Running', 0]);
  t.equal(table.rows[1]?.cells[5], '10.0.0.7');
  t.match(table.rows[0]?.object, { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: { name: 'web-node1', namespace: 'default' } });
});

t.test('plain PodList for other Accept headers', async (t) => {
  const app = build(fixture());
  for (const accept of ['application/json', 'application/json, */*', protobufAccept, '*/*']) {
    const res = await app.inject({ url: '/api/v1/pods', headers: { accept } });
    t.equal(res.json<PodList>().kind, 'PodList', accept);
    t.equal(res.headers['content-type'], 'application/json', accept);
  }
  const beta = await app.inject({ url: '/api/v1/pods', headers: { accept: 'application/json;as=Table;v=v1beta1;g=meta.k8s.io' } });
  t.equal(beta.json<Table>().apiVersion, 'meta.k8s.io/v1beta1');
});

t.test('labelSelector', async (t) => {
  const app = build(fixture());
  const q = async (sel: string) => names((await app.inject(`/api/v1/pods?labelSelector=${encodeURIComponent(sel)}`)).json<PodList>());
  t.same(await q('app=web'), ['default/web-node1']);
  t.same(await q('app==api'), ['default/api']);
  t.same(await q('app!=web'), ['default/api', 'data/db']);
  t.same(await q('app!=web,app!=db'), ['default/api']);
  t.same(await q('tier'), ['default/web-node1']);
  t.same(await q('!tier'), ['default/api', 'data/db']);
});

t.test('fieldSelector', async (t) => {
  const app = build(fixture());
  const q = async (sel: string) => names((await app.inject(`/api/v1/pods?fieldSelector=${encodeURIComponent(sel)}`)).json<PodList>());
  t.same(await q('metadata.name=api'), ['default/api']);
  t.same(await q('metadata.namespace=data'), ['data/db']);
  t.same(await q('spec.nodeName=node1'), ['default/web-node1', 'default/api', 'data/db']);
  t.same(await q('spec.nodeName=other'), []);
  t.same(await q('status.phase=Pending'), ['data/db']);
  t.same(await q('status.phase!=Pending,metadata.name!=api'), ['default/web-node1']);
});

t.test('bad selectors: 400 Status, host untouched', async (t) => {
  const host = fixture();
  const app = build(host);
  const cases: Array<[string, RegExp]> = [
    ['fieldSelector=spec.foo%3Dbar', /^field label not supported: spec\.foo$/],
    ['fieldSelector=metadata.name', /invalid selector/],
    ['labelSelector=a%20in%20(x,y)', /set-based/],
    ['labelSelector=Bad%20Key%3Dx', /unable to parse requirement/],
  ];
  for (const [query, message] of cases) {
    const res = await app.inject(`/api/v1/namespaces/default/pods?${query}`);
    t.equal(res.statusCode, 400, query);
    t.equal(res.headers['content-type'], 'application/json');
    t.match(res.json<Status>(), { kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'BadRequest', code: 400, message }, query);
  }
  t.same(host.calls, []);
});

t.test('watch=true is refused with the apiserver 405', async (t) => {
  const res = await build(fixture()).inject('/api/v1/pods?watch=true');
  t.equal(res.statusCode, 405);
  t.match(res.json(), { reason: 'MethodNotAllowed', message: 'watch is not supported on resources of kind "pods"' });
});

t.test('GET a pod and its status subresource', async (t) => {
  const host = fixture();
  const app = build(host);
  for (const url of ['/api/v1/namespaces/default/pods/api', '/api/v1/namespaces/default/pods/api/status']) {
    const res = await app.inject({ url, headers: { accept: 'application/json' } });
    t.equal(res.statusCode, 200, url);
    const pod = res.json<Pod>();
    t.equal(pod.kind, 'Pod');
    t.equal(pod.apiVersion, 'v1');
    t.same(pod.metadata, host.pods[1]?.metadata);
    t.same(pod.status, host.pods[1]?.status);
  }
  const proto = await app.inject({ url: '/api/v1/namespaces/default/pods/api', headers: { accept: protobufAccept } });
  t.equal(proto.headers['content-type'], 'application/json', 'protobuf Accept still gets JSON');
  t.equal(proto.json<Pod>().kind, 'Pod');
  const table = await app.inject({ url: '/api/v1/namespaces/default/pods/api', headers: { accept: tableAccept } });
  t.same(table.json<Table>().rows.map((r) => r.cells[0]), ['api'], 'kubectl get pod NAME gets a one-row Table');
});

t.test('missing pod: NotFound Status, then the namespace GET kubectl sends succeeds', async (t) => {
  const host = fixture();
  const app = build(host);
  const res = await app.inject('/api/v1/namespaces/default/pods/nopod');
  t.equal(res.statusCode, 404);
  t.equal(res.headers['content-type'], 'application/json');
  t.same(res.json(), {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: 'pods "nopod" not found',
    reason: 'NotFound',
    details: { name: 'nopod', kind: 'pods' },
    code: 404,
  });
  t.same(host.calls, ['getPodByName default/nopod']);
  const wrongNs = await app.inject('/api/v1/namespaces/data/pods/api/status');
  t.equal(wrongNs.statusCode, 404);

  const ns = await app.inject('/api/v1/namespaces/default');
  t.equal(ns.statusCode, 200);
  const body = ns.json<Namespace>();
  t.match(body, { kind: 'Namespace', apiVersion: 'v1', metadata: { name: 'default' }, status: { phase: 'Active' } });
  t.equal((await app.inject('/api/v1/namespaces/anything-valid')).statusCode, 200, 'every valid name exists');
});
