import t from 'tap';
import type { Container, Pod } from '../../../src/api/types.js';
import { admissionRefusal } from '../../../src/kubelet/admission.js';
import { podRequests, resourceFitRefusal } from '../../../src/kubelet/resource-fit.js';

const NODE = { cpu: '2', memory: '4Gi', pods: '3', 'ephemeral-storage': '10Gi' };

type Res = NonNullable<Container['resources']>;
const ctr = (name: string, resources: Res = {}, restartPolicy?: string): Container => ({ name, image: 'busybox', resources, ...(restartPolicy ? { restartPolicy } : {}) });
const pod = (uid: string, containers: Container[], initContainers: Container[] = [], extra: Partial<NonNullable<Pod['spec']>> = {}): Pod => ({
  metadata: { uid, name: uid, namespace: 'default' },
  spec: { containers, ...(initContainers.length ? { initContainers } : {}), ...extra },
});
const req = (requests: Record<string, string>, limits?: Record<string, string>): Res => ({ requests, ...(limits ? { limits } : {}) });
const asObject = (m: Map<string, bigint>) => Object.fromEntries([...m].map(([k, v]) => [k, String(v)]));

t.test('pod requests as the scheduler counts them: sum, init peak with the sidecars before it, overhead, limits as requests', async (t) => {
  t.same(asObject(podRequests(pod('a', [ctr('x', req({ cpu: '100m', memory: '1Mi' })), ctr('y', req({ cpu: '0.25' }))]))), { cpu: '350', memory: String(1 << 20) });
  t.same(asObject(podRequests(pod('b', [ctr('x', { limits: { cpu: '1', memory: '64Mi' } })]))), { cpu: '1000', memory: String(64 << 20) }, 'a limit without a request is the request');
  t.same(asObject(podRequests(pod('c', [ctr('x', req({ cpu: '1m' }))], [ctr('i', req({ cpu: '1500m' }))]))), { cpu: '1500' }, 'an init container alone, larger than the regular ones');
  // Sidecar s (200m) runs beside everything after it: init i2 needs 300m + 200m, the regular ones 100m + 200m.
  const sidecars = pod('d', [ctr('x', req({ cpu: '100m' }))], [ctr('i1', req({ cpu: '400m' })), ctr('s', req({ cpu: '200m' }), 'Always'), ctr('i2', req({ cpu: '300m' }))]);
  t.same(asObject(podRequests(sidecars)), { cpu: '500' });
  t.same(asObject(podRequests(pod('e', [ctr('x', req({ cpu: '100m' }))], [], { overhead: { cpu: '50m' } }))), { cpu: '150' }, 'overhead');
  t.same(asObject(podRequests(pod('f', [ctr('x', req({ cpu: '1n', memory: '1' }))]))), { cpu: '1', memory: '1' }, 'rounded up: MilliValue and Value');
});

t.test('pod-level requests replace the containers\' sum for cpu and memory (PodRequests with PodLevelResources)', async (t) => {
  const containers = [ctr('x', req({ cpu: '100m', memory: '16Mi', 'ephemeral-storage': '1Mi' })), ctr('y', req({ cpu: '200m' }))];
  t.same(asObject(podRequests(pod('p', containers, [], { resources: { requests: { cpu: '1' } } }))), { cpu: '1000', memory: String(16 << 20), 'ephemeral-storage': String(1 << 20) }, 'cpu from the pod, the rest from the containers');
  t.same(asObject(podRequests(pod('q', containers, [], { resources: { limits: { memory: '1Gi' } }, overhead: { memory: '1Mi' } }))), { cpu: '300', memory: String((1 << 30) + (1 << 20)), 'ephemeral-storage': String(1 << 20) }, 'a pod-level limit without a request is the request; overhead on top');
  const refusal = resourceFitRefusal(pod('r', [ctr('x', req({ cpu: '100m' }))], [], { resources: { requests: { cpu: '3' } } }), [], NODE);
  t.equal(refusal?.reason, 'OutOfcpu', 'admission counts the pod-level request');
});

t.test('OutOfcpu, OutOfmemory, OutOfephemeral-storage with the kubelet\'s message, counting the pods admitted before', async (t) => {
  const big = pod('big', [ctr('x', req({ cpu: '1000000000000' }))]);
  t.same(resourceFitRefusal(big, [], NODE), { reason: 'OutOfcpu', message: "Node didn't have enough resource: cpu, requested: 1000000000000000, used: 0, capacity: 2000" });
  const half = pod('half', [ctr('x', req({ cpu: '1', memory: '3Gi' }))]);
  t.equal(resourceFitRefusal(half, [], NODE), undefined, 'fits an empty node');
  t.equal(resourceFitRefusal(pod('h2', [ctr('x', req({ cpu: '1' }))]), [half], NODE), undefined, 'exactly fills the cpu left');
  t.same(resourceFitRefusal(pod('h3', [ctr('x', req({ cpu: '1001m' }))]), [half], NODE)?.message, "Node didn't have enough resource: cpu, requested: 1001, used: 1000, capacity: 2000");
  t.same(resourceFitRefusal(pod('m', [ctr('x', req({ memory: '2Gi' }))]), [half], NODE), { reason: 'OutOfmemory', message: `Node didn't have enough resource: memory, requested: ${2 * 2 ** 30}, used: ${3 * 2 ** 30}, capacity: ${4 * 2 ** 30}` });
  t.equal(resourceFitRefusal(pod('e', [ctr('x', req({ 'ephemeral-storage': '11Gi' }))]), [], NODE)?.reason, 'OutOfephemeral-storage');
  t.equal(resourceFitRefusal(pod('cm', [ctr('x', req({ cpu: '3', memory: '5Gi' }))]), [], NODE)?.reason, 'OutOfcpu', 'cpu is checked before memory');
});

t.test('OutOfpods first, whatever the pod requests', async (t) => {
  const others = ['a', 'b', 'c'].map((u) => pod(u, [ctr('x')]));
  t.same(resourceFitRefusal(pod('d', [ctr('x', req({ cpu: '3' }))]), others, NODE), { reason: 'OutOfpods', message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3" });
  t.equal(resourceFitRefusal(pod('d', [ctr('x')]), others.slice(1), NODE), undefined, 'the third pod fits');
});

t.test('other resources: a missing extended resource is dropped, a missing hugepages size is OutOf it', async (t) => {
  t.equal(resourceFitRefusal(pod('x', [ctr('x', req({ 'example.com/dongle': '1' }))]), [], NODE), undefined, 'no such device plugin on the node: left out');
  t.same(resourceFitRefusal(pod('x', [ctr('x', req({ 'example.com/dongle': '3' }))]), [], { ...NODE, 'example.com/dongle': '2' }), {
    reason: 'OutOfexample.com/dongle',
    message: "Node didn't have enough resource: example.com/dongle, requested: 3, used: 0, capacity: 2",
  });
  t.equal(resourceFitRefusal(pod('x', [ctr('x', req({ 'hugepages-2Mi': '2Mi' }))]), [], NODE)?.reason, 'OutOfhugepages-2Mi');
});

t.test('admission: resources after the OS and sysctl checks, before host ports; without allocatable, not checked', async (t) => {
  const big = pod('big', [ctr('x', req({ cpu: '100' }))]);
  t.equal(admissionRefusal(big, [], NODE)?.reason, 'OutOfcpu');
  t.equal(admissionRefusal(big, []), undefined, 'no node built yet');
  const windows = { ...big, spec: { ...big.spec!, os: { name: 'windows' } } };
  t.equal(admissionRefusal(windows, [], NODE)?.reason, 'PodOSNotSupported');
});
