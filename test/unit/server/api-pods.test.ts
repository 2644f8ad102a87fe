import t from 'tap';
import type { Namespace, Pod, PodList, Status } from '../../../src/api/types.js';
import type { Table } from '../../../src/server/table.js';
import { build, FakeHost, makePod } from './fixtures/fake-host.js';

// kubectl get pods, byte for byte.
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
  const host = fixture();
  const res = await build(host).inject({ url: '/api/v1/namespaces/default/pods?limit=500', headers: { accept: tableAccept } });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/json');
  const table = res.json<Table>();
  t.equal(table.kind, 'Table');
  t.equal(table.apiVersion, 'meta.k8s.io/v1');
  t.same(table.metadata, { resourceVersion: host.watch.pods.hub.resourceVersion }, 'the version `kubectl get -w` watches from');
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

t.test('lists carry the resourceVersion a watch starts from; items their own', async (t) => {
  const host = fixture();
  const app = build(host);
  const list = (await app.inject('/api/v1/pods')).json<PodList>();
  const rv = Number(list.metadata?.resourceVersion);
  t.ok(Number.isSafeInteger(rv) && rv > 0, `list resourceVersion ${rv}`);
  const itemRVs = list.items.map((p) => Number(p.metadata?.resourceVersion));
  t.ok(itemRVs.every((r) => r > 0 && r <= rv), 'every item is at or before the list version');
  t.equal(new Set(itemRVs).size, itemRVs.length, 'each pod has its own version');
  const again = (await app.inject('/api/v1/pods')).json<PodList>();
  t.equal(again.metadata?.resourceVersion, list.metadata?.resourceVersion, 'nothing changed, same version');
  host.pods[1] = { ...host.pods[1], status: { ...host.pods[1]?.status, phase: 'Failed' } };
  const after = (await app.inject('/api/v1/pods')).json<PodList>();
  t.ok(Number(after.metadata?.resourceVersion) > rv, 'a change moves the version');
  t.equal(after.items[1]?.metadata?.resourceVersion, after.metadata?.resourceVersion, 'the changed pod carries the new version');
  t.equal(after.items[0]?.metadata?.resourceVersion, list.items[0]?.metadata?.resourceVersion, 'the others keep theirs');
});

t.test('watch parameters are validated before anything streams: 400 Status', async (t) => {
  const app = build(fixture());
  for (const q of ['watch=maybe', 'watch=true&timeoutSeconds=-1', 'watch=true&timeoutSeconds=soon', 'watch=true&resourceVersion=abc', 'watch=true&allowWatchBookmarks=yes']) {
    const res = await app.inject(`/api/v1/pods?${q}`);
    t.equal(res.statusCode, 400, q);
    t.match(res.json(), { kind: 'Status', reason: 'BadRequest', code: 400 }, q);
  }
  const initial = await app.inject('/api/v1/pods?watch=true&sendInitialEvents=true');
  t.equal(initial.statusCode, 422, 'sendInitialEvents without bookmarks is the apiserver 422');
  t.match(initial.json(), { reason: 'Invalid', code: 422 });
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
    t.same(pod.metadata, { ...host.pods[1]?.metadata, resourceVersion: pod.metadata?.resourceVersion });
    t.match(pod.metadata?.resourceVersion, /^\d+$/);
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

t.test('DELETE a pod: the graceful-delete answer (200, the terminating Pod); grace from the body or the query', async (t) => {
  const host = fixture();
  const app = build(host);
  const res = await app.inject({
    method: 'DELETE',
    url: '/api/v1/namespaces/default/pods/api',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 5, propagationPolicy: 'Background' }),
  });
  t.equal(res.statusCode, 200);
  const pod = res.json<Pod>();
  t.equal(pod.kind, 'Pod');
  t.equal(pod.metadata?.name, 'api');
  t.equal(pod.metadata?.uid, 'uid-default-api', 'kubectl waits on this UID');
  t.equal(pod.metadata?.deletionGracePeriodSeconds, 5);
  t.match(pod.metadata?.deletionTimestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  t.match(pod.metadata?.resourceVersion, /^\d+$/);
  const q = await app.inject({ method: 'DELETE', url: '/api/v1/namespaces/default/pods/web-node1?gracePeriodSeconds=-3' });
  t.equal(q.statusCode, 200);
  const plain = await app.inject({ method: 'DELETE', url: '/api/v1/namespaces/data/pods/db' });
  t.equal(plain.statusCode, 200, 'no body is fine');
  t.same(host.deleted, ['default/api 5', 'default/web-node1 1', 'data/db default'], 'a negative grace period is the shortest one');
});

t.test('DELETE: dry run, preconditions, bad options, unknown pods and apiserver pods', async (t) => {
  const host = fixture();
  host.pods.push({ ...makePod({ name: 'from-api' }), metadata: { ...makePod({ name: 'from-api' }).metadata, annotations: { 'kubernetes.io/config.source': 'api' } } });
  const app = build(host);
  const del = (url: string, body?: unknown) =>
    app.inject({ method: 'DELETE', url, ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) } : {}) });
  const dry = await del('/api/v1/namespaces/default/pods/api?dryRun=All');
  t.equal(dry.statusCode, 200);
  t.equal(dry.json<Pod>().metadata?.deletionTimestamp, undefined, 'a dry run deletes nothing');
  t.same(host.deleted, []);
  const uid = await del('/api/v1/namespaces/default/pods/api', { preconditions: { uid: 'someone-else' } });
  t.equal(uid.statusCode, 409);
  t.match(uid.json(), { reason: 'Conflict', code: 409, message: /Precondition failed: UID in precondition: someone-else, UID in object meta: uid-default-api/ });
  const rv = await del('/api/v1/namespaces/default/pods/api', { preconditions: { resourceVersion: '1' } });
  t.equal(rv.statusCode, 409);
  for (const [url, body, code] of [
    ['/api/v1/namespaces/default/pods/api?gracePeriodSeconds=soon', undefined, 400],
    ['/api/v1/namespaces/default/pods/api', { gracePeriodSeconds: 1.5 }, 400],
    ['/api/v1/namespaces/default/pods/api', { kind: 'Pod' }, 400],
    ['/api/v1/namespaces/default/pods/api', [1], 400],
    ['/api/v1/namespaces/default/pods/api?dryRun=Some', undefined, 422],
    ['/api/v1/namespaces/default/pods/api', { propagationPolicy: 'Sideways' }, 422],
  ] as const) {
    const res = await del(url, body);
    t.equal(res.statusCode, code, `${url} ${JSON.stringify(body)}`);
    t.match(res.json(), { kind: 'Status', code });
  }
  t.same(host.deleted, [], 'nothing was deleted by a refused request');
  const missing = await del('/api/v1/namespaces/default/pods/nopod');
  t.equal(missing.statusCode, 404);
  t.match(missing.json(), { reason: 'NotFound', message: 'pods "nopod" not found' });
  const api = await del('/api/v1/namespaces/default/pods/from-api');
  t.equal(api.statusCode, 405);
  t.match(api.json(), { kind: 'Status', reason: 'MethodNotAllowed', code: 405, message: /comes from the API server: delete it there/ });
});
