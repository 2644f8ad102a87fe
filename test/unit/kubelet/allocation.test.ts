import t from 'tap';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Container, Pod } from '../../../src/api/types.js';
import { AllocationManager } from '../../../src/kubelet/allocation.js';
import { ALLOCATED_PODS_STATE_FILE } from '../../../src/kubelet/allocation-state.js';
import { resizeDecision, unsupportedResize } from '../../../src/kubelet/resize-decision.js';

const ctr = (name: string, requests: Record<string, string>, limits: Record<string, string> = {}, extra: Partial<Container> = {}): Container => ({ name, image: 'img', resources: { requests, limits }, ...extra });
const pod = (uid: string, containers: Container[], extra: Partial<Pod> = {}): Pod => ({ metadata: { name: uid, namespace: 'ns', uid, generation: 2 }, spec: { containers }, ...extra });
const allocatable = { cpu: '2', memory: '4Gi', pods: '110' };

t.test('the allocation is what the node runs; a changed spec is measured against it, and it survives a restart', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'alloc-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const m = new AllocationManager({ rootDir: dir });
  const admitted = pod('u1', [ctr('a', { cpu: '100m' }, { cpu: '200m' })], { spec: { containers: [ctr('a', { cpu: '100m' }, { cpu: '200m' })], initContainers: [ctr('side', { cpu: '50m' }, {}, { restartPolicy: 'Always' }), ctr('init', { cpu: '1' })] } });
  m.setAllocated(admitted);
  const resized: Pod = { ...admitted, spec: { ...admitted.spec, containers: [ctr('a', { cpu: '500m' }, { cpu: '1' })], initContainers: [ctr('side', { cpu: '80m' }, {}, { restartPolicy: 'Always' }), ctr('init', { cpu: '2' })] } };
  const allocated = m.allocatedPod(resized);
  t.same(allocated.spec?.containers[0]?.resources, { requests: { cpu: '100m' }, limits: { cpu: '200m' } }, 'the regular container keeps its allocation');
  t.same(allocated.spec?.initContainers?.[0]?.resources, { requests: { cpu: '50m' }, limits: {} }, 'so does a sidecar');
  t.same(allocated.spec?.initContainers?.[1]?.resources, { requests: { cpu: '1' }, limits: {} }, 'and a run-to-completion init container (InPlacePodVerticalScalingInitContainers)');
  t.equal(m.allocatedPod(admitted), admitted, 'nothing differs: the same object');
  await m.flush();
  const file = JSON.parse(await readFile(join(dir, ALLOCATED_PODS_STATE_FILE), 'utf8')) as { pods: Record<string, unknown> };
  t.ok(file.pods.u1, 'checkpointed under the root dir');
  const again = new AllocationManager({ rootDir: dir });
  t.same(again.allocatedPod(resized).spec?.containers[0]?.resources, { requests: { cpu: '100m' }, limits: { cpu: '200m' } }, 'a restarted manager reads it back');
  again.removeOrphans(new Set(['other']));
  await again.flush();
  t.notOk(new AllocationManager({ rootDir: dir }).isAllocated('u1'), 'orphans are forgotten, on disk too');
});

t.test('a damaged checkpoint is logged and ignored, never a crash', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'alloc-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, ALLOCATED_PODS_STATE_FILE), '{"version":1,"pods":{"u":{"containers":{"a":{"limits":{"cpu":5}}}}}}');
  const warnings: string[] = [];
  const m = new AllocationManager({ rootDir: dir, log: { warn: (_o, msg) => warnings.push(msg) } });
  t.notOk(m.isAllocated('u'));
  t.match(warnings, [/damaged/]);
});

t.test('resize decisions: unchanged, admitted, Deferred beside other pods, Infeasible beyond the node', async (t) => {
  const allocated = pod('u1', [ctr('a', { cpu: '500m', memory: '1Gi' }, { cpu: '500m', memory: '1Gi' })]);
  const other = pod('u2', [ctr('b', { cpu: '1', memory: '2Gi' })]);
  const decide = (desired: Pod, others: Pod[] = [other]) => resizeDecision({ desired, allocated, others, allocatable });
  t.same(decide(allocated), { kind: 'unchanged' });
  t.same(decide(pod('u1', [ctr('a', { cpu: '1', memory: '1Gi' }, { cpu: '1', memory: '1Gi' })])), { kind: 'admit' }, '1 + 1 cpu fits in 2');
  t.same(decide(pod('u1', [ctr('a', { cpu: '1500m', memory: '1Gi' }, { cpu: '1500m', memory: '1Gi' })])), {
    kind: 'pending',
    reason: 'Deferred',
    message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000",
  }, 'fits the node, not beside the other pod: deferred with the admission message');
  t.same(decide(pod('u1', [ctr('a', { cpu: '1500m', memory: '1Gi' }, { cpu: '1500m', memory: '1Gi' })]), []), { kind: 'admit' }, 'once the other pod is gone it fits');
  t.same(decide(pod('u1', [ctr('a', { cpu: '3', memory: '1Gi' }, { cpu: '3', memory: '1Gi' })])), {
    kind: 'pending',
    reason: 'Infeasible',
    message: "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000",
  });
  t.same(decide(pod('u1', [ctr('a', { cpu: '3', memory: '5Gi' }, { cpu: '3', memory: '5Gi' })])), {
    kind: 'pending',
    reason: 'Infeasible',
    message: "Node didn't have enough capacity: memory, requested: 5368709120, capacity: 4294967296",
  }, 'memory is named first, as the kubelet does');
  const staticPod = (p: Pod): Pod => ({ ...p, metadata: { ...p.metadata, annotations: { 'kubernetes.io/config.source': 'file' } } });
  t.same(decide(staticPod(pod('u1', [ctr('a', { cpu: '1', memory: '1Gi' }, { cpu: '1', memory: '1Gi' })]))), { kind: 'pending', reason: 'Infeasible', message: 'In-place resize of static-pods is not supported' });
  t.match(resizeDecision({ desired: pod('u1', [ctr('a', { cpu: '1', memory: '1Gi' }, { cpu: '1', memory: '1Gi' })]), allocated, others: [], allocatable, runtimeRefusal: 'no update here' }), { kind: 'pending', reason: 'Infeasible', message: 'no update here' }, 'a runtime without the update');
});

t.test('what nodelet refuses to resize in place, with the reason', async (t) => {
  const was = pod('u1', [ctr('a', { cpu: '500m', memory: '1Gi' }, { cpu: '500m', memory: '1Gi' })]);
  t.equal(unsupportedResize(pod('u1', [ctr('a', { cpu: '500m', memory: '1Gi' }, { cpu: '500m' })]), was), 'container "a": removing the memory limit in place is not supported');
  t.equal(unsupportedResize(pod('u1', [ctr('a', { cpu: '500m', memory: '1Gi' }, { cpu: '500m', memory: '1Gi', 'ephemeral-storage': '1Gi' })]), was), 'container "a": limits of ephemeral-storage cannot be resized in place, only cpu and memory');
  t.equal(unsupportedResize(pod('u1', [ctr('a', { cpu: '200m', memory: '1Gi' }, { cpu: '500m', memory: '1Gi' })]), was), 'Pod QOS Class may not change as a result of resizing', 'Guaranteed to Burstable');
  t.equal(unsupportedResize(pod('u1', [ctr('a', { cpu: '1', memory: '2Gi' }, { cpu: '1', memory: '2Gi' })]), was), undefined, 'Guaranteed stays Guaranteed');
  t.equal(unsupportedResize(pod('u1', [ctr('a', { cpu: '500m', memory: '1024Mi' }, { cpu: '0.5', memory: '1Gi' })]), was), undefined, 'the same amounts spelled otherwise');
});

t.test('a pod allocated before init containers were resizable: they are adopted with their spec, once', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'alloc-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const init = ctr('init', { cpu: '100m' }, { cpu: '100m' });
  const main = ctr('a', { cpu: '200m' }, { cpu: '200m' });
  // A checkpoint from before: the regular container only.
  await writeFile(join(dir, ALLOCATED_PODS_STATE_FILE), JSON.stringify({ version: 1, pods: { u1: { containers: { a: { requests: { cpu: '200m' }, limits: { cpu: '200m' } } } } } }));
  const m = new AllocationManager({ rootDir: dir });
  const admitted = pod('u1', [main], { spec: { containers: [main], initContainers: [init] } });
  m.adoptContainers(admitted);
  t.same(m.get('u1')?.containers.init, { requests: { cpu: '100m' }, limits: { cpu: '100m' } }, 'recorded with the spec it was created with');
  const resized = pod('u1', [main], { spec: { containers: [main], initContainers: [ctr('init', { cpu: '300m' }, { cpu: '300m' })] } });
  m.adoptContainers(resized);
  t.same(m.get('u1')?.containers.init, { requests: { cpu: '100m' }, limits: { cpu: '100m' } }, 'a second call changes nothing');
  t.same(m.allocatedPod(resized).spec?.initContainers?.[0]?.resources, { requests: { cpu: '100m' }, limits: { cpu: '100m' } }, 'a later change of its spec is a resize, measured against the allocation');
  t.same(resizeDecision({ desired: resized, allocated: m.allocatedPod(resized), others: [], allocatable }), { kind: 'admit' });
  m.adoptContainers(pod('nobody', [main]));
  t.notOk(m.isAllocated('nobody'), 'a pod not allocated is left alone');
  await m.flush();
  t.ok(new AllocationManager({ rootDir: dir }).get('u1')?.containers.init, 'checkpointed');
});

t.test('init containers in resize decisions: their requests, their QoS and their refusals count', async (t) => {
  const guaranteed = (name: string, cpu: string, memory: string, extra: Partial<Container> = {}) => ctr(name, { cpu, memory }, { cpu, memory }, extra);
  const withInit = (init: Container, main = guaranteed('a', '500m', '256Mi')): Pod => pod('u1', [main], { spec: { containers: [main], initContainers: [init] } });
  const allocated = withInit(guaranteed('init', '500m', '256Mi'));
  const decide = (desired: Pod, others: Pod[] = []) => resizeDecision({ desired, allocated, others, allocatable });
  t.same(decide(allocated), { kind: 'unchanged' });
  t.same(decide(withInit(guaranteed('init', '1', '512Mi'))), { kind: 'admit' }, 'a run-to-completion init container grows');
  t.same(decide(withInit(guaranteed('init', '1500m', '512Mi')), [pod('u2', [ctr('b', { cpu: '1' })])]), {
    kind: 'pending',
    reason: 'Deferred',
    message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000",
  }, 'the pod\'s requests are raised to the init container\'s: deferred beside another pod');
  t.same(decide(withInit(guaranteed('init', '3', '512Mi'))), { kind: 'pending', reason: 'Infeasible', message: "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000" });
  t.same(decide(withInit(ctr('init', { cpu: '250m', memory: '256Mi' }, { cpu: '500m', memory: '256Mi' }))), {
    kind: 'pending',
    reason: 'Infeasible',
    message: 'Pod QOS Class may not change as a result of resizing',
  }, 'an init container that would make the pod Burstable');
  t.equal(unsupportedResize(withInit(ctr('init', { cpu: '500m', memory: '256Mi' }, { cpu: '500m' })), allocated), 'container "init": removing the memory limit in place is not supported');
});

t.test('the memory request a container runs with survives a restart, is kept by a new allocation, and a bad one is refused', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'alloc-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const m = new AllocationManager({ rootDir: dir });
  m.setAllocated(pod('u1', [ctr('a', { memory: '20Mi' }, { memory: '45Mi' })]));
  m.setActuatedMemoryRequest('u1', 'a', 20 * 1024 * 1024);
  m.setAllocated(pod('u1', [ctr('a', { memory: '40Mi' }, { memory: '45Mi' })]));
  t.equal(m.actuatedMemoryRequest('u1', 'a'), 20 * 1024 * 1024, 'a new allocation keeps it');
  m.setActuatedMemoryRequest('u2', 'a', 1);
  t.equal(m.actuatedMemoryRequest('u2', 'a'), undefined, 'nothing for a pod without an allocation');
  await m.flush();
  const again = new AllocationManager({ rootDir: dir });
  t.equal(again.actuatedMemoryRequest('u1', 'a'), 20 * 1024 * 1024, 'read back after a restart');
  again.setActuatedMemoryRequest('u1', 'a', undefined);
  await again.flush();
  t.equal(new AllocationManager({ rootDir: dir }).actuatedMemoryRequest('u1', 'a'), undefined, 'cleared on disk too');
  t.notMatch(await readFile(join(dir, ALLOCATED_PODS_STATE_FILE), 'utf8'), /actuatedMemoryRequests/, 'an empty record is not written');
  await writeFile(join(dir, ALLOCATED_PODS_STATE_FILE), '{"version":1,"pods":{"u":{"containers":{},"actuatedMemoryRequests":{"a":"20Mi"}}}}');
  t.notOk(new AllocationManager({ rootDir: dir, log: { warn: () => undefined } }).isAllocated('u'), 'a request that is not a byte count: the checkpoint is refused');
});

t.test('a burst of changes is checkpointed in two writes, and the file ends with every change', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'alloc-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const m = new AllocationManager({ rootDir: join(dir, 'made-on-first-write') });
  for (let i = 0; i < 30; i++) m.setAllocated(pod(`u${i}`, [ctr('a', { cpu: '100m' })]));
  t.equal(m.writes, 1, 'the changes of one turn join the one queued write');
  await m.flush();
  const onDisk = async () => Object.keys((JSON.parse(await readFile(join(dir, 'made-on-first-write', ALLOCATED_PODS_STATE_FILE), 'utf8')) as { pods: Record<string, unknown> }).pods);
  t.equal((await onDisk()).length, 30);
  // A change while a write is in flight is written after it, by one more write.
  m.removePod('u0');
  await Promise.resolve();
  m.removePod('u1');
  m.setActuatedMemoryRequest('u2', 'a', 1 << 20);
  await m.flush();
  t.ok(m.writes <= 3, `${m.writes} writes for 33 changes`);
  t.same((await onDisk()).sort(), Array.from({ length: 28 }, (_, i) => `u${i + 2}`).sort());
  t.equal(new AllocationManager({ rootDir: join(dir, 'made-on-first-write') }).actuatedMemoryRequest('u2', 'a'), 1 << 20);
});
