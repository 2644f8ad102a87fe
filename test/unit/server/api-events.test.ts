import t from 'tap';
import type { EventList } from '../../../src/api/types.js';
import { build, FakeHost, makePod } from './fixtures/fake-host.js';

function fixture(): FakeHost {
  const host = new FakeHost([makePod({ name: 'mypod', namespace: 'ns1' })]);
  const pod = (name: string, namespace: string) => ({ kind: 'Pod', metadata: { name, namespace, uid: `uid-${namespace}-${name}` } });
  host.recorder.record(pod('mypod', 'ns1'), 'Normal', 'Pulled', 'Container image "nginx" already present on machine');
  host.recorder.record(pod('mypod', 'ns1'), 'Warning', 'BackOff', 'Back-off restarting failed container');
  host.recorder.record(pod('other', 'ns1'), 'Normal', 'Started', 'Started container app');
  host.recorder.record(pod('mypod', 'ns2'), 'Normal', 'Started', 'Started container app');
  return host;
}
const reasons = (l: EventList) => l.items.map((e) => `${e.involvedObject.namespace}/${e.involvedObject.name}:${e.reason}`);

t.test("kubectl describe's events request", async (t) => {
  const host = fixture();
  // Exactly as kubectl describe encodes it.
  const url =
    '/api/v1/namespaces/ns1/events?fieldSelector=involvedObject.name%3Dmypod%2CinvolvedObject.namespace%3Dns1%2CinvolvedObject.uid%3Duid-ns1-mypod&limit=500';
  const res = await build(host).inject({ url, headers: { accept: 'application/vnd.kubernetes.protobuf,application/json' } });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/json');
  const list = res.json<EventList>();
  t.equal(list.kind, 'EventList');
  t.equal(list.apiVersion, 'v1');
  t.same(list.metadata, { resourceVersion: host.watch.events.hub.resourceVersion });
  t.same(reasons(list), ['ns1/mypod:Pulled', 'ns1/mypod:BackOff']);
  t.ok(list.items.every((e) => Number(e.metadata.resourceVersion) > 0), 'each event carries its version');
  t.same(host.calls, ['getEvents ns1 involvedObject.name=mypod,involvedObject.namespace=ns1,involvedObject.uid=uid-ns1-mypod']);
});

t.test('all namespaces, one namespace, no selector', async (t) => {
  const app = build(fixture());
  t.same(reasons((await app.inject('/api/v1/events')).json<EventList>()), [
    'ns1/mypod:Pulled',
    'ns1/mypod:BackOff',
    'ns1/other:Started',
    'ns2/mypod:Started',
  ]);
  t.same(reasons((await app.inject('/api/v1/namespaces/ns2/events')).json<EventList>()), ['ns2/mypod:Started']);
  t.same(reasons((await app.inject('/api/v1/events?fieldSelector=involvedObject.name%3Dmypod')).json<EventList>()), [
    'ns1/mypod:Pulled',
    'ns1/mypod:BackOff',
    'ns2/mypod:Started',
  ]);
  t.same(reasons((await app.inject('/api/v1/events?fieldSelector=type%3DWarning')).json<EventList>()), ['ns1/mypod:BackOff']);
  t.same((await app.inject('/api/v1/namespaces/empty/events')).json<EventList>().items, []);
});

t.test('contradictory equalities select nothing', async (t) => {
  const res = await build(fixture()).inject('/api/v1/events?fieldSelector=involvedObject.name%3Da,involvedObject.name%3Db');
  t.equal(res.statusCode, 200);
  t.same(res.json<EventList>().items, []);
});

t.test('unsupported fields or operators: 400 Status, no lookup', async (t) => {
  const host = fixture();
  const app = build(host);
  const bad = await app.inject('/api/v1/namespaces/ns1/events?fieldSelector=involvedObject.name%3Dx,spec.foo%3Dy');
  t.equal(bad.statusCode, 400);
  t.match(bad.json(), { kind: 'Status', reason: 'BadRequest', code: 400, message: 'field label not supported: spec.foo' });
  const neq = await app.inject('/api/v1/events?fieldSelector=involvedObject.name!%3Dx');
  t.equal(neq.statusCode, 400);
  t.match(neq.json(), { reason: 'BadRequest', message: /"!=" is not supported/ });
  const watch = await app.inject('/api/v1/events?watch=1&fieldSelector=spec.foo%3Dy');
  t.equal(watch.statusCode, 400, 'a watch with a bad selector is refused before it streams');
  t.same(host.calls, []);
});

t.test('kubectl get events: a Table with the apiserver columns', async (t) => {
  const host = fixture();
  const res = await build(host).inject({ url: '/api/v1/namespaces/ns1/events', headers: { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' } });
  t.equal(res.statusCode, 200);
  const table = res.json<{ kind: string; metadata: { resourceVersion: string }; columnDefinitions: { name: string; priority: number }[]; rows: { cells: unknown[] }[] }>();
  t.equal(table.kind, 'Table');
  t.equal(table.metadata.resourceVersion, host.watch.events.hub.resourceVersion);
  t.same(
    table.columnDefinitions.filter((c) => c.priority === 0).map((c) => c.name.toUpperCase()),
    ['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'],
  );
  t.same(
    table.columnDefinitions.filter((c) => c.priority === 1).map((c) => c.name.toUpperCase()),
    ['SUBOBJECT', 'SOURCE', 'FIRST SEEN', 'COUNT', 'NAME'],
  );
  t.equal(table.rows.length, 3);
  t.match(table.rows[1]?.cells, [/^\d+s$/, 'Warning', 'BackOff', 'pod/mypod', '', 'kubelet, node1', 'Back-off restarting failed container', /^\d+s$/, 1, /^mypod\./]);
});
