import t from 'tap';
import Docker from 'dockerode';
import { dockerEndpointOf, observeDockerRequests } from '../../../src/runtime/docker/client.js';
import { requestKind } from '../../../src/apiserver/client.js';

t.test('dockerEndpointOf: version, query and object names dropped', async (t) => {
  const id = 'a'.repeat(64);
  t.equal(dockerEndpointOf(`/v1.41/containers/${id}/json?size=1`), '/containers/{id}/json');
  t.equal(dockerEndpointOf('/v1.41/containers/json?all=true&filters=%7B%7D'), '/containers/json');
  t.equal(dockerEndpointOf('/containers/create?name=k8s_POD_x'), '/containers/create');
  t.equal(dockerEndpointOf(`/containers/${id}/start`), '/containers/{id}/start');
  t.equal(dockerEndpointOf(`/containers/${id}`), '/containers/{id}', 'DELETE of a container');
  t.equal(dockerEndpointOf('/v1.41/images/docker.io/library/busybox:1.36/json'), '/images/{name}/json', 'image names hold slashes');
  t.equal(dockerEndpointOf('/images/create?fromImage=busybox'), '/images/create');
  t.equal(dockerEndpointOf('/images/busybox:1.36'), '/images/{name}', 'DELETE of an image');
  t.equal(dockerEndpointOf('/exec/abc/start'), '/exec/{id}/start');
  t.equal(dockerEndpointOf('/events?filters=x'), '/events');
  t.equal(dockerEndpointOf('/_ping'), '/_ping');
});

t.test('observeDockerRequests sees every request dockerode sends', async (t) => {
  const docker = new Docker({ socketPath: '/nonexistent/docker.sock' });
  const seen: string[] = [];
  observeDockerRequests(docker, (method, endpoint) => seen.push(`${method} ${endpoint}`));
  await docker.getContainer('b'.repeat(64)).inspect().catch(() => undefined);
  await docker.listContainers({ all: true }).catch(() => undefined);
  t.same(seen, ['GET /containers/{id}/json', 'GET /containers/json']);
});

t.test('requestKind: the apiserver verb and resource', async (t) => {
  t.same(requestKind('PATCH', '/api/v1/namespaces/default/pods/p1/status'), { verb: 'PATCH', resource: 'pods/status' });
  t.same(requestKind('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn&watch=1&resourceVersion=5'), { verb: 'WATCH', resource: 'pods' });
  t.same(requestKind('GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn'), { verb: 'LIST', resource: 'pods' });
  t.same(requestKind('POST', '/api/v1/namespaces/default/events'), { verb: 'POST', resource: 'events' });
  t.same(requestKind('GET', '/api/v1/namespaces/default/secrets/s1'), { verb: 'GET', resource: 'secrets' });
  t.same(requestKind('PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1'), { verb: 'PUT', resource: 'leases' });
  t.same(requestKind('PATCH', '/api/v1/nodes/n1/status'), { verb: 'PATCH', resource: 'nodes/status' });
  t.same(requestKind('POST', '/apis/authentication.k8s.io/v1/tokenreviews'), { verb: 'POST', resource: 'tokenreviews' });
});
