import t from 'tap';
import type { Node } from 'kubernetes-types/core/v1.js';
import type { Namespace, PodList } from '../../../src/api/types.js';
import type { Table } from '../../../src/server/table.js';
import { nodeRowCells, nodeRoles } from '../../../src/server/table.js';
import { build, FakeHost, makePod } from './fixtures/fake-host.js';

const tableAccept = 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json';

t.test('nodes: list, get, status; Table with the apiserver columns', async (t) => {
  const host = new FakeHost();
  const app = build(host);
  const list = await app.inject('/api/v1/nodes');
  t.equal(list.statusCode, 200);
  const body = list.json<{ kind: string; metadata: { resourceVersion: string }; items: Node[] }>();
  t.equal(body.kind, 'NodeList');
  t.same(body.items.map((n) => n.metadata?.name), ['node1']);
  t.equal(body.items[0]?.metadata?.resourceVersion, body.metadata.resourceVersion);
  for (const url of ['/api/v1/nodes/node1', '/api/v1/nodes/node1/status']) {
    const one = await app.inject(url);
    t.equal(one.statusCode, 200, url);
    t.match(one.json<Node>(), { kind: 'Node', apiVersion: 'v1', metadata: { name: 'node1', uid: 'node-uid-1' }, status: { nodeInfo: { kubeletVersion: 'v1.30.2-nodelet' } } });
  }
  const table = (await app.inject({ url: '/api/v1/nodes', headers: { accept: tableAccept } })).json<Table>();
  t.same(
    table.columnDefinitions.map((c) => `${c.name.toUpperCase()}${c.priority ? '*' : ''}`),
    ['NAME', 'STATUS', 'ROLES', 'AGE', 'VERSION', 'INTERNAL-IP*', 'EXTERNAL-IP*', 'OS-IMAGE*', 'KERNEL-VERSION*', 'CONTAINER-RUNTIME*'],
  );
  t.match(table.rows[0]?.cells, ['node1', 'Ready', '<none>', /^\d+d$/, 'v1.30.2-nodelet', '10.0.0.1', '<none>', 'Debian GNU/Linux 12 (bookworm)', '6.1.0', 'docker://20.10.24']);
  t.equal(table.metadata.resourceVersion, body.metadata.resourceVersion);
});

t.test('nodes: another name is a 404; selectors; an unreadable node is a 503 Status', async (t) => {
  const host = new FakeHost();
  const app = build(host);
  const other = await app.inject('/api/v1/nodes/node2');
  t.equal(other.statusCode, 404);
  t.match(other.json(), { kind: 'Status', reason: 'NotFound', message: 'nodes "node2" not found', details: { name: 'node2', kind: 'nodes' } });
  const names = async (q: string) => (await app.inject(`/api/v1/nodes?${q}`)).json<{ items: Node[] }>().items.map((n) => n.metadata?.name);
  t.same(await names('labelSelector=kubernetes.io%2Fhostname%3Dnode1'), ['node1']);
  t.same(await names('labelSelector=kubernetes.io%2Fhostname%3Dother'), []);
  t.same(await names('fieldSelector=metadata.name%3Dnode1'), ['node1']);
  t.same(await names('fieldSelector=spec.unschedulable%3Dtrue'), []);
  t.equal((await app.inject('/api/v1/nodes?fieldSelector=status.phase%3Dx')).statusCode, 400);
  host.node = Object.assign(new Error('docker down'), {});
  const down = await app.inject('/api/v1/nodes');
  t.equal(down.statusCode, 503);
  t.match(down.json(), { kind: 'Status', reason: 'ServiceUnavailable', message: /docker down/ });
});

t.test('node rows: NotReady, SchedulingDisabled, roles, unknown fields', async (t) => {
  const now = new Date('2026-01-02T00:00:00Z');
  const node: Node = {
    metadata: { name: 'n', creationTimestamp: '2026-01-01T00:00:00Z', labels: { 'node-role.kubernetes.io/control-plane': '', 'node-role.kubernetes.io/edge': 'x', 'kubernetes.io/role': 'worker' } },
    spec: { unschedulable: true },
    status: { conditions: [{ type: 'Ready', status: 'False' }], addresses: [{ type: 'ExternalIP', address: '1.2.3.4' }] },
  };
  t.same(nodeRoles(node), ['control-plane', 'edge', 'worker']);
  t.same(nodeRowCells(node, now), ['n', 'NotReady,SchedulingDisabled', 'control-plane,edge,worker', '24h', '', '<none>', '1.2.3.4', '<unknown>', '<unknown>', '<unknown>']);
  t.equal(nodeRowCells({ metadata: { name: 'x' } }, now)[1], 'Unknown', 'no Ready condition');
});

t.test('namespaces: the ones holding pods plus the system four, sorted; Table', async (t) => {
  const host = new FakeHost([makePod({ name: 'a', namespace: 'demo' }), makePod({ name: 'b', namespace: 'default' })]);
  const app = build(host);
  const list = (await app.inject('/api/v1/namespaces')).json<{ kind: string; metadata: { resourceVersion: string }; items: Namespace[] }>();
  t.equal(list.kind, 'NamespaceList');
  t.same(list.items.map((n) => n.metadata?.name), ['default', 'demo', 'kube-node-lease', 'kube-public', 'kube-system']);
  t.ok(list.items.every((n) => n.status?.phase === 'Active' && n.metadata?.creationTimestamp));
  t.match(list.metadata.resourceVersion, /^\d+$/);
  const table = (await app.inject({ url: '/api/v1/namespaces', headers: { accept: tableAccept } })).json<Table>();
  t.same(table.columnDefinitions.map((c) => c.name), ['Name', 'Status', 'Age']);
  t.match(table.rows[1]?.cells, ['demo', 'Active', /^\d+s$/]);
  const sel = (await app.inject('/api/v1/namespaces?fieldSelector=metadata.name%3Dkube-system')).json<{ items: Namespace[] }>();
  t.same(sel.items.map((n) => n.metadata?.name), ['kube-system']);
  const byLabel = (await app.inject('/api/v1/namespaces?labelSelector=kubernetes.io%2Fmetadata.name%3Ddemo')).json<{ items: Namespace[] }>();
  t.same(byLabel.items.map((n) => n.metadata?.name), ['demo']);
  const watch = await app.inject('/api/v1/namespaces?watch=true');
  t.equal(watch.statusCode, 405);
  t.match(watch.json(), { reason: 'MethodNotAllowed', message: 'watch is not supported on resources of kind "namespaces"' });
  const one = (await app.inject({ url: '/api/v1/namespaces/demo', headers: { accept: tableAccept } })).json<Table>();
  t.same(one.rows.map((r) => r.cells[0]), ['demo']);
});

t.test("kubectl describe node's pod request: spec.nodeName and phase inequalities", async (t) => {
  const host = new FakeHost([makePod({ name: 'a' }), makePod({ name: 'b', phase: 'Failed' }), makePod({ name: 'c', nodeName: 'elsewhere' })]);
  const res = await build(host).inject('/api/v1/pods?fieldSelector=spec.nodeName%3Dnode1%2Cstatus.phase%21%3DFailed%2Cstatus.phase%21%3DSucceeded&limit=500');
  t.equal(res.statusCode, 200);
  t.same(res.json<PodList>().items.map((p) => p.metadata?.name), ['a']);
});
