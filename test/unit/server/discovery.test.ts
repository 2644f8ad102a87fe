import t from 'tap';
import type { APIResourceList } from '../../../src/api/types.js';
import { build } from './fixtures/fake-host.js';

// What kubectl 1.33 sends for /api and /apis.
const aggregatedAccept =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';

t.test('/version: version.Info from the version passed in', async (t) => {
  const res = await build().inject('/version');
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/json');
  const goArch = process.arch === 'x64' ? 'amd64' : process.arch;
  t.same(res.json(), {
    major: '1',
    minor: '30',
    gitVersion: 'v1.30.2-nodelet',
    gitCommit: '',
    gitTreeState: '',
    buildDate: '',
    goVersion: '',
    compiler: 'nodelet',
    platform: `${process.platform}/${goArch}`,
  });
});

t.test('/api: legacy APIVersions even when aggregated discovery is asked for', async (t) => {
  const res = await build().inject({ url: '/api?timeout=32s', headers: { accept: aggregatedAccept, host: 'node1.example:10250' } });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/json');
  t.same(res.json(), {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: 'node1.example:10250' }],
  });
});

t.test('/apis: an APIGroupList with metrics.k8s.io v1beta1 only (what kubectl top looks for)', async (t) => {
  const res = await build().inject({ url: '/apis?timeout=32s', headers: { accept: aggregatedAccept } });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/json');
  const v1beta1 = { groupVersion: 'metrics.k8s.io/v1beta1', version: 'v1beta1' };
  t.same(res.json(), { kind: 'APIGroupList', apiVersion: 'v1', groups: [{ name: 'metrics.k8s.io', versions: [v1beta1], preferredVersion: v1beta1 }] });
});

t.test('/api/v1: the resources kubectl resolves', async (t) => {
  const res = await build().inject({ url: '/api/v1?timeout=32s', headers: { accept: 'application/json, */*' } });
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/json');
  const list = res.json<APIResourceList>();
  t.equal(list.kind, 'APIResourceList');
  t.equal(list.groupVersion, 'v1');
  const byName = new Map(list.resources.map((r) => [r.name, r]));
  t.same(
    [...byName.keys()].sort(),
    ['events', 'namespaces', 'nodes', 'nodes/status', 'pods', 'pods/attach', 'pods/exec', 'pods/log', 'pods/portforward', 'pods/status'],
  );
  t.same(byName.get('pods'), { name: 'pods', namespaced: true, kind: 'Pod', singularName: 'pod', verbs: ['delete', 'get', 'list', 'watch'], shortNames: ['po'], categories: ['all'] });
  t.same(byName.get('events'), { name: 'events', namespaced: true, kind: 'Event', singularName: 'event', verbs: ['list', 'watch'], shortNames: ['ev'] });
  t.same(byName.get('namespaces'), { name: 'namespaces', namespaced: false, kind: 'Namespace', singularName: 'namespace', verbs: ['get', 'list'], shortNames: ['ns'] });
  t.same(byName.get('nodes'), { name: 'nodes', namespaced: false, kind: 'Node', singularName: 'node', verbs: ['get', 'list', 'watch'], shortNames: ['no'] });
  t.match(byName.get('nodes/status'), { namespaced: false, kind: 'Node', verbs: ['get'] });
  t.match(byName.get('pods/status'), { namespaced: true, kind: 'Pod', verbs: ['get'] });
  t.match(byName.get('pods/exec'), { namespaced: true, verbs: ['create', 'get'] });
});
