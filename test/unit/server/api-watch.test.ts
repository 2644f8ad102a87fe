import type { AddressInfo } from 'node:net';
import t from 'tap';
import { pino } from 'pino';
import type { Pod, PodList, Status } from '../../../src/api/types.js';
import { buildServer } from '../../../src/server/index.js';
import type { Table } from '../../../src/server/table.js';
import { openWatch } from '../../helpers/watch-client.js';
import { FakeHost, makePod } from './fixtures/fake-host.js';

const tableAccept = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

async function serve(t: { teardown(fn: () => unknown): void }, host: FakeHost, bookmarkIntervalMs?: number, limits: { maxWatches?: number; maxWatchesPerUser?: number } = {}) {
  const app = buildServer({ host, logger: pino({ level: 'silent' }), version: { gitVersion: 'v1.30.2-nodelet' }, ...(bookmarkIntervalMs ? { bookmarkIntervalMs } : {}), ...limits });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

function fixture(): FakeHost {
  return new FakeHost([makePod({ name: 'web', labels: { app: 'web' } }), makePod({ name: 'db', namespace: 'data', labels: { app: 'db' }, phase: 'Pending' })]);
}

/** Changes a pod the way a status update does, and tells the feed. */
function setPhase(host: FakeHost, name: string, phase: string): void {
  const pod = host.pods.find((p) => p.metadata?.name === name) as { -readonly [K in keyof Pod]: Pod[K] };
  pod.status = { ...pod.status, phase };
  host.notify(pod.metadata?.uid);
}

t.test('list, then watch from its version: the changes after it, as JSON lines', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host);
  const list = (await (await fetch(`${url}/api/v1/pods`)).json()) as PodList;
  const w = await openWatch<Pod>(`${url}/api/v1/pods?watch=true&resourceVersion=${list.metadata?.resourceVersion}`);
  t.equal(w.status, 200);
  t.equal(w.headers['content-type'], 'application/json');
  t.equal(w.headers['transfer-encoding'], 'chunked');
  t.equal(w.events.length, 0, 'nothing before the first change');
  setPhase(host, 'web', 'Failed');
  const ev = await w.waitFor('web MODIFIED', (e) => e.type === 'MODIFIED');
  t.equal(ev.object.kind, 'Pod');
  t.equal(ev.object.status?.phase, 'Failed');
  t.ok(Number(ev.object.metadata?.resourceVersion) > Number(list.metadata?.resourceVersion));
  host.pods = host.pods.filter((p) => p.metadata?.name !== 'db');
  host.notify();
  const del = await w.waitFor('db DELETED', (e) => e.type === 'DELETED');
  t.equal(del.object.metadata?.name, 'db');
  w.close();
});

t.test('one namespace, label and field selectors; a pod leaving the selection is DELETED', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host);
  const ns = await openWatch<Pod>(`${url}/api/v1/namespaces/data/pods?watch=1`);
  const sel = await openWatch<Pod>(`${url}/api/v1/pods?watch=1&labelSelector=app%3Dweb&fieldSelector=status.phase%3DRunning`);
  await ns.waitFor('initial db', (e) => e.type === 'ADDED' && e.object.metadata?.name === 'db');
  await sel.waitFor('initial web', (e) => e.type === 'ADDED' && e.object.metadata?.name === 'web');
  t.same(ns.events.map((e) => e.object.metadata?.name), ['db'], 'the namespace watch starts with its own pods only');
  t.same(sel.events.map((e) => e.object.metadata?.name), ['web']);
  setPhase(host, 'web', 'Failed');
  setPhase(host, 'db', 'Running');
  const gone = await sel.waitFor('web leaves the selection', (e) => e.type === 'DELETED', 20_000, 1);
  t.equal(gone.object.status?.phase, 'Running', 'DELETED carries the last state that matched');
  await ns.waitFor('db MODIFIED', (e) => e.type === 'MODIFIED');
  t.notOk(ns.events.some((e) => e.object.metadata?.name === 'web'), 'no event of another namespace');
  ns.close();
  sel.close();
});

t.test('as=Table: one-row Tables, column definitions only on the first', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host);
  const list = (await (await fetch(`${url}/api/v1/pods`, { headers: { accept: tableAccept } })).json()) as Table;
  t.match(list.metadata.resourceVersion, /^\d+$/);
  const w = await openWatch<Table>(`${url}/api/v1/pods?watch=true&resourceVersion=${list.metadata.resourceVersion}`, { accept: tableAccept });
  setPhase(host, 'web', 'Failed');
  await w.waitFor('the first event', () => w.events.length >= 1);
  setPhase(host, 'web', 'Succeeded');
  await w.waitFor('the second event', () => w.events.length >= 2);
  const [first, second] = w.events;
  t.equal(first?.object.kind, 'Table');
  t.equal(first?.object.apiVersion, 'meta.k8s.io/v1');
  t.same(first?.object.columnDefinitions.map((c) => c.name), ['Name', 'Ready', 'Status', 'Restarts', 'Age', 'IP', 'Node']);
  t.equal(first?.object.rows.length, 1);
  t.same(first?.object.rows[0]?.cells.slice(0, 3), ['web', '1/1', 'Failed']);
  t.match(first?.object.rows[0]?.object, { kind: 'PartialObjectMetadata', metadata: { name: 'web', resourceVersion: first?.object.metadata.resourceVersion } });
  t.same(second?.object.columnDefinitions, [], 'later events leave the columns to the first');
  t.same(second?.object.rows[0]?.cells.slice(0, 3), ['web', '1/1', 'Succeeded']);
  t.ok(Number(second?.object.metadata.resourceVersion) > Number(first?.object.metadata.resourceVersion));
  w.close();
});

t.test('a version older than the history: 410 Expired Status before anything streams; a relist recovers', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host);
  const w = await openWatch(`${url}/api/v1/pods?watch=true&resourceVersion=1`);
  t.equal(w.status, 410);
  await w.ended;
  t.same(JSON.parse(w.body) as Status, {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: `too old resource version: 1 (${host.watch.pods.hub.oldestResumable})`,
    reason: 'Expired',
    code: 410,
  });
  const list = (await (await fetch(`${url}/api/v1/pods`)).json()) as PodList;
  const again = await openWatch(`${url}/api/v1/pods?watch=true&resourceVersion=${list.metadata?.resourceVersion}`);
  t.equal(again.status, 200, 'the list version is always resumable');
  again.close();
  const future = await openWatch(`${url}/api/v1/pods?watch=true&resourceVersion=${Number(list.metadata?.resourceVersion) + 10}`);
  t.equal(future.status, 504);
  await future.ended;
  t.match(JSON.parse(future.body), { reason: 'Timeout', code: 504, details: { causes: [{ reason: 'ResourceVersionTooLarge' }], retryAfterSeconds: 1 } });
});

t.test('timeoutSeconds ends the watch with a clean end of the chunked body', async (t) => {
  const { url } = await serve(t, fixture());
  const started = Date.now();
  const w = await openWatch(`${url}/api/v1/pods?watch=true&timeoutSeconds=1`);
  t.equal(await w.ended, 'end');
  const took = Date.now() - started;
  t.ok(took >= 900 && took < 5000, `ended after ${took} ms`);
  t.equal(w.events.length, 2, 'the initial state came first');
});

t.test('timeoutSeconds 0 and beyond a timer\'s range keep the watch open (the default, and the 1 h cap)', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host);
  // 4294968 s is past setTimeout's 2^31 - 1 ms, which Node turns into 1 ms: the watch ended at once.
  for (const timeout of ['0', '4294968', '999999999']) {
    const w = await openWatch<Pod>(`${url}/api/v1/pods?watch=true&timeoutSeconds=${timeout}&resourceVersion=${host.watch.pods.hub.resourceVersion}`);
    t.equal(w.status, 200);
    setPhase(host, 'web', `P${timeout}`);
    const ev = await w.waitFor(`timeoutSeconds=${timeout}: a change after the start arrives`, (e) => e.type === 'MODIFIED');
    t.equal(ev.object.status?.phase, `P${timeout}`);
    w.close();
  }
});

t.test('at most --max-watches-per-user per user and --max-watches on the node: 429, Retry-After, Connection: close', async (t) => {
  const { url } = await serve(t, fixture(), undefined, { maxWatches: 4, maxWatchesPerUser: 3 });
  // Every request here is anonymous: one user, system:anonymous.
  const open = await Promise.all([1, 2, 3].map(() => openWatch(`${url}/api/v1/pods?watch=true`)));
  t.same(open.map((w) => w.status), [200, 200, 200]);
  const fourth = await openWatch(`${url}/api/v1/events?watch=true`);
  t.equal(fourth.status, 429, 'a 4th watch (any kind) of the same user');
  t.equal(fourth.headers['retry-after'], '10');
  t.equal(fourth.headers.connection, 'close', 'the refused client does not keep its connection');
  await fourth.ended;
  t.match(JSON.parse(fourth.body), { kind: 'Status', reason: 'TooManyRequests', code: 429, message: 'too many watches open for user "system:anonymous" (limit 3); retry later', details: { retryAfterSeconds: 10 } });
  const list = await fetch(`${url}/api/v1/pods`);
  t.equal(list.status, 200, 'lists are not watches');
  open[0]?.close();
  await open[0]?.ended;
  // The server sees the close a moment after ours: until then the place is still taken (429).
  let again = await openWatch(`${url}/api/v1/pods?watch=true`);
  while (again.status === 429) {
    await again.ended;
    again = await openWatch(`${url}/api/v1/pods?watch=true`);
  }
  t.equal(again.status, 200, 'a closed watch frees its place');
  again.close();
  for (const w of open) w.close();
});

t.test('bookmarks arrive for watchers that allowed them, with the current version', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host, 50);
  const rv = host.watch.pods.hub.resourceVersion;
  const w = await openWatch(`${url}/api/v1/pods?watch=true&allowWatchBookmarks=true&resourceVersion=${rv}`);
  const plain = await openWatch(`${url}/api/v1/pods?watch=true&resourceVersion=${rv}`);
  const b = await w.waitFor('a bookmark', (e) => e.type === 'BOOKMARK');
  t.same(b.object, { kind: 'Pod', apiVersion: 'v1', metadata: { resourceVersion: host.watch.pods.hub.resourceVersion } });
  setPhase(host, 'web', 'Failed');
  await plain.waitFor('the change', (e) => e.type === 'MODIFIED');
  t.notOk(plain.events.some((e) => e.type === 'BOOKMARK'), 'no bookmarks unless asked');
  w.close();
  plain.close();
});

t.test('a streaming list (sendInitialEvents) ends its initial events with an annotated bookmark', async (t) => {
  const { url } = await serve(t, fixture());
  const w = await openWatch(`${url}/api/v1/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`);
  const b = await w.waitFor('initial-events-end', (e) => e.type === 'BOOKMARK');
  t.same(w.events.map((e) => e.type), ['ADDED', 'ADDED', 'BOOKMARK']);
  t.same(b.object.metadata?.annotations, { 'k8s.io/initial-events-end': 'true' });
  w.close();
});

t.test('closing the server ends open watches cleanly', async (t) => {
  const host = fixture();
  const { app, url } = await serve(t, host);
  const a = await openWatch(`${url}/api/v1/pods?watch=true`);
  const b = await openWatch(`${url}/api/v1/events?watch=true`);
  await a.waitFor('initial state', () => a.events.length === 2);
  await app.close();
  t.equal(await a.ended, 'end', 'pods watch: chunked body ended, not reset');
  t.equal(await b.ended, 'end', 'events watch too');
  t.equal(host.watch.pods.hub.watcherCount, 0);
});

t.test('a client that stops reading is cut off, not buffered without limit', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host);
  const w = await openWatch<Pod>(`${url}/api/v1/pods?watch=true&resourceVersion=${host.watch.pods.hub.resourceVersion}`);
  w.res?.pause();
  t.equal(host.watch.pods.hub.watcherCount, 1);
  const big = 'x'.repeat(256 * 1024);
  const web = host.pods[0] as { -readonly [K in keyof Pod]: Pod[K] };
  let n = 0;
  // Each change is 256 KiB on the wire; the socket and stream buffers fill, then the queue (100 here).
  while (host.watch.pods.hub.watcherCount > 0 && n < 2000) {
    web.metadata = { ...web.metadata, annotations: { big: `${big}${n++}` } };
    host.watch.pods.sync();
  }
  t.equal(host.watch.pods.hub.watcherCount, 0, `the watcher was closed after ${n} changes`);
  t.ok(n < 2000);
  w.res?.resume();
  t.equal(await w.ended, 'end', 'its stream ends; the client resumes from its last version');
  t.ok(w.events.length < n, `it got ${w.events.length} of ${n} events`);
  const last = w.events.at(-1)?.object.metadata?.resourceVersion;
  const resumed = await openWatch(`${url}/api/v1/pods?watch=true&resourceVersion=${last}`);
  t.equal(resumed.status, 200, 'resuming from the last version it saw works');
  await resumed.waitFor('the missed changes', () => resumed.events.length >= 1);
  resumed.close();
});

t.test('events and the node are watchable too', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host);
  const events = await openWatch(`${url}/api/v1/namespaces/default/events?watch=true&fieldSelector=involvedObject.name%3Dweb`);
  host.recorder.record({ kind: 'Pod', metadata: { name: 'other', namespace: 'default' } }, 'Normal', 'Started', 'other');
  host.recorder.record({ kind: 'Pod', metadata: { name: 'web', namespace: 'default' } }, 'Warning', 'BackOff', 'Back-off restarting failed container');
  const ev = await events.waitFor('web event', (e) => e.type === 'ADDED');
  t.match(ev.object, { kind: 'Event', reason: 'BackOff', involvedObject: { name: 'web' } });
  t.equal(events.events.length, 1, 'the field selector applies');
  const nodes = await openWatch(`${url}/api/v1/nodes?watch=true`);
  const n = await nodes.waitFor('the node', (e) => e.type === 'ADDED');
  t.match(n.object, { kind: 'Node', metadata: { name: 'node1' } });
  host.node = { ...(host.node as object), spec: { unschedulable: true } };
  await host.getNode();
  const m = await nodes.waitFor('node MODIFIED', (e) => e.type === 'MODIFIED');
  t.match(m.object, { spec: { unschedulable: true } });
  events.close();
  nodes.close();
});
