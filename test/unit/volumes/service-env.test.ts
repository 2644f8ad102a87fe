import t from 'tap';
import type { Container, Pod, Service, ServicePort } from 'kubernetes-types/core/v1.js';
import { resolveEnv } from '../../../src/volumes/env.js';
import { serviceEnvironment } from '../../../src/volumes/service-env.js';
import type { PodObjectSource } from '../../../src/volumes/source.js';

const svc = (namespace: string, name: string, clusterIP: string, ports: ServicePort[]): Service => ({
  metadata: { name, namespace },
  spec: { clusterIP, ports },
});
const kubernetes = svc('default', 'kubernetes', '10.96.0.1', [{ name: 'https', port: 443, protocol: 'TCP' }]);
const foo = svc('ns', 'fooservice', '10.0.0.7', [{ port: 8765, protocol: 'TCP' }, { name: 'metrics-port', port: 9090, protocol: 'UDP' }]);

t.test("envvars.FromServices, name for name", async (t) => {
  t.same(Object.fromEntries(serviceEnvironment([foo], 'ns', true)), {
    FOOSERVICE_SERVICE_HOST: '10.0.0.7',
    FOOSERVICE_SERVICE_PORT: '8765',
    FOOSERVICE_SERVICE_PORT_METRICS_PORT: '9090',
    FOOSERVICE_PORT: 'tcp://10.0.0.7:8765',
    FOOSERVICE_PORT_8765_TCP: 'tcp://10.0.0.7:8765',
    FOOSERVICE_PORT_8765_TCP_PROTO: 'tcp',
    FOOSERVICE_PORT_8765_TCP_PORT: '8765',
    FOOSERVICE_PORT_8765_TCP_ADDR: '10.0.0.7',
    FOOSERVICE_PORT_9090_UDP: 'udp://10.0.0.7:9090',
    FOOSERVICE_PORT_9090_UDP_PROTO: 'udp',
    FOOSERVICE_PORT_9090_UDP_PORT: '9090',
    FOOSERVICE_PORT_9090_UDP_ADDR: '10.0.0.7',
  });
  t.equal(serviceEnvironment([svc('ns', 'six', 'fd00::1', [{ port: 80 }])], 'ns', true).get('SIX_PORT'), 'tcp://[fd00::1]:80', 'IPv6 in brackets');
});

t.test('which services: kubernetes always, the namespace\'s with enableServiceLinks, never headless or another namespace\'s', async (t) => {
  const other = svc('elsewhere', 'other', '10.0.0.9', [{ port: 1 }]);
  const headless = svc('ns', 'headless', 'None', [{ port: 1 }]);
  const keys = (services: Service[], links: boolean) => [...serviceEnvironment(services, 'ns', links).keys()].filter((k) => k.endsWith('_SERVICE_HOST')).sort();
  t.same(keys([kubernetes, foo, other, headless], true), ['FOOSERVICE_SERVICE_HOST', 'KUBERNETES_SERVICE_HOST']);
  t.same(keys([kubernetes, foo], false), ['KUBERNETES_SERVICE_HOST'], 'enableServiceLinks: false keeps only kubernetes');
  const own = svc('ns', 'kubernetes', '10.1.1.1', [{ port: 1 }]);
  t.equal(serviceEnvironment([kubernetes, own], 'ns', true).get('KUBERNETES_SERVICE_HOST'), '10.1.1.1', "the namespace's own service of that name wins");
});

t.test('resolveEnv: service variables fill in after the container\'s env and feed $(VAR) expansion', async (t) => {
  const objects: PodObjectSource = {
    getConfigMap: async () => undefined,
    getSecret: async () => undefined,
    requestServiceAccountToken: () => Promise.reject(new Error('unused')),
    listServices: async (ns) => (ns === 'ns' ? [foo, kubernetes] : []),
  };
  const container: Container = { name: 'c', env: [{ name: 'URL', value: 'http://$(FOOSERVICE_SERVICE_HOST):$(FOOSERVICE_SERVICE_PORT)' }, { name: 'KUBERNETES_SERVICE_HOST', value: 'mine' }] };
  const pod: Pod = { metadata: { name: 'p', namespace: 'ns' }, spec: { containers: [container] } };
  const info = { hostIPs: [], podIPs: [], allocatable: { cpuMilli: 0n, memoryBytes: 0n, ephemeralStorageBytes: 0n } };
  const env = await resolveEnv(pod, container, { info, objects });
  t.equal(env.get('URL'), 'http://10.0.0.7:8765');
  t.equal(env.get('KUBERNETES_SERVICE_HOST'), 'mine', "the container's definition wins");
  t.equal(env.get('KUBERNETES_SERVICE_PORT'), '443');
  t.same([...env.keys()].slice(0, 2), ['URL', 'KUBERNETES_SERVICE_HOST'], 'service variables come last');
  const failing = { ...objects, listServices: () => Promise.reject(new Error('apiserver down')) };
  await t.rejects(resolveEnv(pod, container, { info, objects: failing }), { message: 'failed to list services when setting up env vars' });
});
