import t from 'tap';
import type { Container, Pod, PodStatus } from '../../../src/api/types.js';
import { AllocationManager } from '../../../src/kubelet/allocation.js';
import { ResizeManager } from '../../../src/kubelet/resize-manager.js';
import { hashContainer, legacyHashContainer } from '../../../src/runtime/hash.js';
import { UpdateUnsupportedError } from '../../../src/runtime/update-unsupported.js';
import type { RuntimeContainer, RuntimeContainerResources, RuntimePod } from '../../../src/runtime/types.js';

const MiB = 1024 * 1024;
const ctr = (cpu: string, memory: string): Container => ({ name: 'a', image: 'img', resources: { requests: { cpu, memory }, limits: { cpu, memory } } });
const pod = (c: Container, generation: number): Pod => ({ metadata: { name: 'p', namespace: 'ns', uid: 'u1', generation }, spec: { containers: [c] } });
const running = (c: Container, resources: RuntimeContainerResources): RuntimeContainer => ({ id: 'c1', name: 'a', attempt: 0, restartCount: 0, hash: hashContainer(c), image: 'img', imageID: '', state: 'running', createdAt: new Date(0), resources });
const rpod = (c: RuntimeContainer): RuntimePod => ({ uid: 'u1', name: 'p', namespace: 'ns', sandboxes: [], containers: [c] });
const allocatable = { cpu: '2', memory: '1Gi', pods: '10' };

function setup(fail?: string | Error) {
  const events: string[] = [];
  const updates: string[] = [];
  const m = new ResizeManager({
    allocation: new AllocationManager(),
    runtime: {
      updateContainerResources: async (id: string, c: Container) => {
        if (fail) throw typeof fail === 'string' ? new Error(fail) : fail;
        updates.push(`${id} ${JSON.stringify(c.resources)}`);
      },
      containerStats: async () => ({ timestamp: new Date(), cpuUsageCoreNanoSeconds: 0, memoryUsageBytes: 10 * MiB, memoryWorkingSetBytes: 0 }),
    },
    record: (_pod, type, reason) => events.push(`${type} ${reason}`),
    log: { info: () => undefined, warn: () => undefined },
    now: () => new Date('2026-01-01T00:00:00Z'),
  });
  return { m, events, updates };
}
const conditions = (m: ResizeManager, p: Pod, rp?: RuntimePod) => (m.status(p, rp, { conditions: [] } as PodStatus).conditions ?? []).map((c) => [c.type, c.reason ?? '', c.observedGeneration]);

t.test('admitted: in progress, applied, then completed once the runtime reports the new values', async (t) => {
  const { m, events, updates } = setup();
  const small = ctr('100m', '64Mi');
  m.allocate(pod(small, 1), [], allocatable);
  const big = pod(ctr('200m', '96Mi'), 2);
  const allocated = m.allocate(big, [], allocatable);
  t.equal(allocated, big, 'the new resources are allocated');
  t.same(events, ['Normal ResizeStarted']);
  const old = rpod(running(small, { cpuRequestMilli: 100, cpuLimitMilli: 100, memoryLimitBytes: 64 * MiB }));
  m.observe(big, allocated, old);
  t.same(conditions(m, big, old), [['PodResizeInProgress', '', 2]]);
  t.equal(await m.apply(allocated, old), 'applied');
  t.same(updates, [
    'c1 {"limits":{"cpu":"100m","memory":"96Mi"},"requests":{"cpu":"100m","memory":"96Mi"}}',
    'c1 {"limits":{"cpu":"200m","memory":"96Mi"},"requests":{"cpu":"200m","memory":"96Mi"}}',
  ]);
  const now = rpod(running(small, { cpuRequestMilli: 200, cpuLimitMilli: 200, memoryLimitBytes: 96 * MiB }));
  m.observe(big, allocated, now);
  t.same(conditions(m, big, now), []);
  t.same(events, ['Normal ResizeStarted', 'Normal ResizeCompleted']);
});

t.test('deferred, with one event per change; a failed update is an Error condition and a ResizeError event', async (t) => {
  const { m, events } = setup('engine says no');
  const small = ctr('500m', '64Mi');
  m.allocate(pod(small, 1), [], allocatable);
  const other: Pod = { metadata: { uid: 'u2', name: 'o', namespace: 'ns' }, spec: { containers: [{ ...ctr('1', '64Mi'), name: 'b' }] } };
  const big = pod(ctr('1500m', '64Mi'), 2);
  t.same(m.allocate(big, [other], allocatable).spec?.containers[0]?.resources, small.resources, 'the pod keeps its allocation');
  m.allocate(big, [other], allocatable);
  t.same(conditions(m, big), [['PodResizePending', 'Deferred', 2]]);
  t.same(events, ['Warning ResizeDeferred'], 'once, not at every sync');
  t.same(m.deferred(), ['u1']);
  const allocated = m.allocate(big, [], allocatable);
  t.same(conditions(m, big), [['PodResizeInProgress', '', 2]], 'admitted once the other pod is gone');
  const rp = rpod(running(small, { cpuRequestMilli: 500, cpuLimitMilli: 500, memoryLimitBytes: 64 * MiB }));
  t.equal(await m.apply(allocated, rp), 'error');
  t.same(conditions(m, big), [['PodResizeInProgress', 'Error', 2]]);
  t.equal(await m.apply(allocated, rp), 'none', 'held before the next attempt');
  t.same(events, ['Warning ResizeDeferred', 'Normal ResizeStarted', 'Warning ResizeError']);
});

t.test('a container with the legacy hash is recognised, before and after a resize', async (t) => {
  const { m } = setup();
  const small = ctr('100m', '64Mi');
  const p = pod(small, 1);
  m.allocate(p, [], allocatable);
  const instance = { ...running(small, { cpuRequestMilli: 100, cpuLimitMilli: 100, memoryLimitBytes: 64 * MiB }), hash: legacyHashContainer(small) };
  t.ok(m.sameSpec('u1')(small, instance));
  t.ok(m.sameSpec('u1')(ctr('200m', '96Mi'), instance), 'the resources it was recognised with were recorded');
  t.notOk(m.sameSpec('u1')({ ...ctr('200m', '96Mi'), image: 'other' }, instance));
});

t.test('an engine without the update: the resize stays in progress with the error, later ones are Infeasible', async (t) => {
  const { m, events } = setup(new UpdateUnsupportedError('no update on this engine'));
  const small = ctr('100m', '64Mi');
  m.allocate(pod(small, 1), [], allocatable);
  const big = pod(ctr('200m', '64Mi'), 2);
  const allocated = m.allocate(big, [], allocatable);
  const rp = rpod(running(small, { cpuRequestMilli: 100, cpuLimitMilli: 100, memoryLimitBytes: 64 * MiB }));
  t.equal(await m.apply(allocated, rp), 'error');
  m.observe(big, allocated, rp);
  t.same(conditions(m, big), [['PodResizeInProgress', 'Error', 2]], 'never reported as completed');
  const bigger = pod(ctr('300m', '64Mi'), 3);
  m.allocate(bigger, [], allocatable);
  t.match(m.status(bigger, rp, {}).conditions, [{ type: 'PodResizePending', reason: 'Infeasible', message: 'no update on this engine' }]);
  t.equal(await m.apply(allocated, rp), 'none', 'not tried again');
  t.same(events, ['Normal ResizeStarted', 'Warning ResizeError', 'Warning ResizeInfeasible']);
});

t.test('pod-level: a resize below the usage is an Error; a new one is applied at once, not after the back-off', async (t) => {
  const cgroup: string[] = [];
  const events: string[] = [];
  const m = new ResizeManager({
    allocation: new AllocationManager(),
    runtime: {
      updateContainerResources: async () => undefined,
      containerStats: async () => ({ timestamp: new Date(), cpuUsageCoreNanoSeconds: 0, memoryUsageBytes: 10 * MiB, memoryWorkingSetBytes: 0 }),
    },
    podCgroups: { resizePod: async (p, fields) => void cgroup.push(`${JSON.stringify(p.spec?.resources?.limits)} ${fields.join(',')}`) },
    record: (_pod, type, reason) => events.push(`${type} ${reason}`),
    log: { info: () => undefined, warn: () => undefined },
  });
  const follower: Container = { name: 'a', image: 'img' };
  const plrPod = (memory: string, generation: number): Pod => ({ metadata: { name: 'p', namespace: 'ns', uid: 'u1', generation }, spec: { containers: [follower], resources: { requests: { memory }, limits: { memory } } } });
  m.allocate(plrPod('64Mi', 1), [], allocatable);
  const rp = rpod(running(follower, { cpuRequestMilli: 2, cpuLimitMilli: 0, memoryLimitBytes: 64 * MiB }));
  const tiny = m.allocate(plrPod('1Mi', 2), [], allocatable);
  m.observe(plrPod('1Mi', 2), tiny, rp);
  t.equal(await m.apply(tiny, rp), 'error');
  t.match(conditions(m, tiny, rp), [['PodResizeInProgress', 'Error', 2]]);
  t.match((m.status(tiny, rp, { conditions: [] } as PodStatus).conditions ?? [])[0]?.message, /^cannot decrease memory limits: attempting to set pod memory limit \(1048576\) below current usage \(10485760\)$/);
  t.same(cgroup, [], 'nothing written');
  const back = m.allocate(plrPod('128Mi', 3), [], allocatable);
  t.equal(await m.apply(back, rp), 'applied', 'not held back by the failed attempt');
  t.same(cgroup, ['{"memory":"128Mi"} memoryLimit'], 'the pod cgroup grows before the container');
  t.same(m.allocation.actuatedPodLevel('u1'), { limits: { memory: '128Mi' }, requests: { memory: '128Mi' } }, 'recorded as actuated');
  const now = rpod(running(follower, { cpuRequestMilli: 2, cpuLimitMilli: 0, memoryLimitBytes: 128 * MiB }));
  m.observe(plrPod('128Mi', 3), back, now);
  t.same(conditions(m, back, now), []);
  t.same(events, ['Normal ResizeStarted', 'Warning ResizeError', 'Normal ResizeStarted', 'Normal ResizeCompleted']);
});

t.test('a memory request resize is remembered against what runs: applied in place, cleared by the update or a start', async (t) => {
  const { m, events, updates } = setup();
  const burstable = (memRequest: string): Container => ({ name: 'a', image: 'img', resources: { requests: { cpu: '20m', memory: memRequest }, limits: { cpu: '30m', memory: '45Mi' } } });
  const cgroup = { cpuRequestMilli: 20, cpuLimitMilli: 30, memoryLimitBytes: 45 * MiB };
  const before = pod(burstable('20Mi'), 1);
  m.allocate(before, [], allocatable);
  t.equal(m.actuatedMemoryRequest('u1')('a'), undefined, 'admitted: runs with its allocation');
  const after = pod(burstable('40Mi'), 2);
  const allocated = m.allocate(after, [], allocatable);
  t.equal(m.actuatedMemoryRequest('u1')('a'), 20 * MiB, 'the request it runs with is kept');
  const rp = rpod(running(burstable('20Mi'), cgroup));
  m.observe(after, allocated, rp);
  t.same(conditions(m, after, rp), [['PodResizeInProgress', '', 2]], 'in progress although no cgroup value differs');
  t.equal(await m.apply(allocated, rp), 'applied');
  t.same(updates, ['c1 {"limits":{"cpu":"30m","memory":"45Mi"},"requests":{"cpu":"20m","memory":"40Mi"}}']);
  t.equal(m.actuatedMemoryRequest('u1')('a'), undefined, 'the update actuated it');
  m.observe(after, allocated, rp);
  t.same(conditions(m, after, rp), []);
  t.same(events, ['Normal ResizeStarted', 'Normal ResizeCompleted']);

  // Resized again, and back before anything was applied: no change is left.
  m.allocate(pod(burstable('30Mi'), 3), [], allocatable);
  t.equal(m.actuatedMemoryRequest('u1')('a'), 40 * MiB);
  m.allocate(pod(burstable('40Mi'), 4), [], allocatable);
  t.equal(m.actuatedMemoryRequest('u1')('a'), undefined, 'resized back to what runs');
  // A container started from the allocation runs with it.
  m.allocate(pod(burstable('10Mi'), 5), [], allocatable);
  t.equal(m.actuatedMemoryRequest('u1')('a'), 40 * MiB);
  m.containerStarted(pod(burstable('10Mi'), 5), 'a');
  t.equal(m.actuatedMemoryRequest('u1')('a'), undefined, 'a start actuates the allocation');
});
