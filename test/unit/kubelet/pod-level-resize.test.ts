import t from 'tap';
import type { Container, Pod, PodStatus } from '../../../src/api/types.js';
import { effectiveLimits, withPodLevelLimits } from '../../../src/api/pod-requests.js';
import { AllocationManager } from '../../../src/kubelet/allocation.js';
import { resizeDecision } from '../../../src/kubelet/resize-decision.js';
import { Backoff } from '../../../src/kubelet/backoff.js';
import { computePodActions } from '../../../src/kubelet/pod-actions.js';
import { containerResizeAction, planPodResize, podLevelResizeInProgress } from '../../../src/kubelet/resize.js';
import { applyPodResize, type ResizeExecutor } from '../../../src/kubelet/resize-apply.js';
import { withPodLevelStatus } from '../../../src/kubelet/resize-status.js';
import { podRequests } from '../../../src/kubelet/resource-fit.js';
import { containerResourceConfig } from '../../../src/runtime/docker/container-config.js';
import { hashContainer } from '../../../src/runtime/hash.js';
import type { RuntimeContainer, RuntimeContainerResources, RuntimePod } from '../../../src/runtime/types.js';

const MiB = 1024 * 1024;
type PodResources = NonNullable<Pod['spec']>['resources'];
const plr = (cpu: string, memory: string): PodResources => ({ requests: { cpu, memory }, limits: { cpu, memory } });
const bare = (name: string, extra: Partial<Container> = {}): Container => ({ name, image: 'img', ...extra });
const pod = (containers: Container[], resources?: PodResources): Pod => ({ metadata: { name: 'p', namespace: 'ns', uid: 'u1', generation: 2 }, spec: { containers, ...(resources ? { resources } : {}) } });
const running = (c: Container, resources: RuntimeContainerResources): RuntimeContainer => ({
  id: `${c.name}-0`, name: c.name, attempt: 0, restartCount: 0, hash: hashContainer(c), image: 'img', imageID: 'sha256:1', state: 'running', createdAt: new Date(0), resources,
});
const rpod = (containers: RuntimeContainer[]): RuntimePod => ({ uid: 'u1', name: 'p', namespace: 'ns', sandboxes: [{ id: 'sb', attempt: 0, ready: true, createdAt: new Date(0), ips: [] }], containers });
const held = (cpuMilli: number, memMiB: number): RuntimeContainerResources => ({ cpuRequestMilli: cpuMilli, cpuLimitMilli: cpuMilli, memoryLimitBytes: memMiB * MiB });

function recorder(usage = 0): { calls: string[]; applied: string[]; exec: ResizeExecutor } {
  const calls: string[] = [];
  const applied: string[] = [];
  return {
    calls,
    applied,
    exec: {
      updateContainer: async (_id, name, r) => void calls.push(`container ${name} ${JSON.stringify(r)}`),
      setPodCgroup: async (fields) => void calls.push(`pod ${fields.join(',')}`),
      podMemoryUsage: async () => usage,
      podLevelApplied: (resource) => void applied.push(resource),
    },
  };
}

t.test('a container without a limit of its own runs with the pod-level one (GetLimits)', async (t) => {
  t.same(effectiveLimits(plr('200m', '256Mi'), bare('c')), { cpu: '200m', memory: '256Mi' });
  t.same(effectiveLimits(plr('200m', '256Mi'), bare('c', { resources: { limits: { cpu: '100m' } } })), { cpu: '100m', memory: '256Mi' }, 'its own limit wins');
  t.same(effectiveLimits(undefined, bare('c', { resources: { limits: { cpu: '100m' } } })), { cpu: '100m' }, 'no pod-level limits: its own');
  t.same(effectiveLimits({ limits: {} }, bare('c')), undefined, 'no pod-level limits: nothing to lend');
  const c = bare('c');
  t.equal(withPodLevelLimits(pod([c]), c), c, 'no pod-level resources: the same container');
  // The engine gets the pod-level limit, and shares from it (no request of its own).
  t.same(containerResourceConfig(withPodLevelLimits(pod([c], plr('200m', '256Mi')), c)), { Memory: 256 * MiB, NanoCpus: 200_000_000, CpuShares: 204 });
});

t.test('a pod-level limit change resizes a container without its own limit, under its resize policy', async (t) => {
  const c = bare('c');
  const now = running(c, held(200, 256));
  t.same(containerResizeAction(c, now, plr('200m', '256Mi')), { kind: 'none' }, 'as created');
  t.match(containerResizeAction(c, now, plr('300m', '256Mi')), { kind: 'update', cpu: 'grow' });
  const restartCpu = bare('c', { resizePolicy: [{ resourceName: 'cpu', restartPolicy: 'RestartContainer' }] });
  t.same(containerResizeAction(restartCpu, now, plr('300m', '256Mi')), { kind: 'restart', message: 'Container c resize requires restart' });
  const actions = computePodActions(pod([restartCpu], plr('300m', '256Mi')), rpod([now]), new Backoff(), 0, undefined, { resize: true });
  t.same(actions.start.map((s) => [s.container.name, s.reason]), [['c', 'resize']], 'computePodActions restarts it');
  const own = bare('c', { resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } } });
  t.same(containerResizeAction(own, running(own, held(100, 64)), plr('300m', '256Mi')), { kind: 'none' }, 'a container with its own limits is not touched');
});

t.test('a pod-level-only resize: the pod cgroup in the kubelet order, then recorded as actuated', async (t) => {
  const own = bare('c', { resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } } });
  const rp = rpod([running(own, held(100, 64))]);
  const before = plr('200m', '256Mi');
  t.equal(planPodResize(pod([own], before), rp, -1, before), undefined, 'as actuated: nothing to do');
  t.equal(planPodResize(pod([own], plr('300m', '512Mi')), rp, -1, undefined), undefined, 'nothing recorded: nothing in progress');
  const up = pod([own], plr('300m', '512Mi'));
  const upPlan = planPodResize(up, rp, -1, before);
  t.ok(upPlan?.podLevel);
  t.same([upPlan?.podCgroupBefore.memoryLimit, upPlan?.podCgroupAfter.memoryLimit], [256n * BigInt(MiB), 512n * BigInt(MiB)]);
  const r1 = recorder();
  if (upPlan) await applyPodResize(up, upPlan, r1.exec);
  t.same(r1.calls, ['pod memoryLimit', 'pod cpuPeriod,cpuQuota', 'pod cpuShares'], 'growing: limits before requests');
  t.same(r1.applied, ['memory', 'cpu']);

  const down = pod([own], plr('150m', '128Mi'));
  const downPlan = planPodResize(down, rp, -1, before);
  const r2 = recorder(64 * MiB);
  if (downPlan) await applyPodResize(down, downPlan, r2.exec);
  t.same(r2.calls, ['pod memoryLimit', 'pod cpuShares', 'pod cpuPeriod,cpuQuota'], 'shrinking: requests before limits');
});

t.test('containers following the pod-level limit: the pod cgroup grows first and shrinks last', async (t) => {
  const c = bare('c');
  const rp = rpod([running(c, held(200, 256))]);
  const up = pod([c], plr('200m', '512Mi'));
  const plan = planPodResize(up, rp, -1, plr('200m', '256Mi'));
  const r = recorder();
  if (plan) await applyPodResize(up, plan, r.exec);
  t.same(r.calls, ['pod memoryLimit', 'container c {"limits":{"cpu":"200m","memory":"512Mi"},"requests":{"cpu":"200m","memory":"512Mi"}}']);
  const down = pod([c], plr('200m', '128Mi'));
  const downPlan = planPodResize(down, rp, -1, plr('200m', '256Mi'));
  const r2 = recorder(200 * MiB);
  await t.rejects(downPlan ? applyPodResize(down, downPlan, r2.exec) : Promise.resolve(), { message: /^cannot decrease memory limits: attempting to set pod memory limit \(134217728\) below current usage \(209715200\)$/ });
  t.same(r2.calls, [], 'nothing written');
  const r3 = recorder(10 * MiB);
  if (downPlan) await applyPodResize(down, downPlan, r3.exec);
  t.same(r3.calls, ['container c {"limits":{"cpu":"200m","memory":"128Mi"},"requests":{"cpu":"200m","memory":"128Mi"}}', 'pod memoryLimit']);
});

t.test('in progress while the allocated pod-level cpu or memory differs from the actuated', async (t) => {
  t.notOk(podLevelResizeInProgress(pod([bare('c')], plr('1', '1Gi')), undefined));
  t.notOk(podLevelResizeInProgress(pod([bare('c')], plr('1', '1Gi')), plr('1000m', '1024Mi')), 'the same amounts');
  t.ok(podLevelResizeInProgress(pod([bare('c')], plr('1', '1Gi')), plr('1', '2Gi')));
  t.ok(podLevelResizeInProgress(pod([bare('c')], plr('1', '1Gi')), {}), 'added');
});

t.test('the allocation holds pod-level resources; decisions count them', async (t) => {
  const m = new AllocationManager();
  const admitted = pod([bare('c')], plr('200m', '256Mi'));
  m.setAllocated(admitted);
  t.same(m.actuatedPodLevel('u1'), plr('200m', '256Mi'), 'at admission the cgroup gets the allocation');
  const resized = pod([bare('c')], plr('400m', '256Mi'));
  const allocated = m.allocatedPod(resized);
  t.same(allocated.spec?.resources, plr('200m', '256Mi'), 'the pod runs with its allocation until the resize is admitted');
  const allocatable = { cpu: '2', memory: '4Gi', pods: '110' };
  t.same(resizeDecision({ desired: resized, allocated, others: [], allocatable }), { kind: 'admit' });
  t.same(resizeDecision({ desired: admitted, allocated: m.allocatedPod(admitted), others: [], allocatable }), { kind: 'unchanged' });
  t.match(resizeDecision({ desired: pod([bare('c')], plr('3', '256Mi')), allocated, others: [], allocatable }), { kind: 'pending', reason: 'Infeasible', message: 'Node didn\'t have enough capacity: cpu, requested: 3000, capacity: 2000' });
  const other = pod([bare('o')], plr('1500m', '1Gi'));
  t.match(resizeDecision({ desired: pod([bare('c')], plr('1', '256Mi')), allocated, others: [{ ...other, metadata: { uid: 'u2', name: 'o' } }], allocatable }), { kind: 'pending', reason: 'Deferred' });
  t.match(resizeDecision({ desired: pod([bare('c')], { requests: { cpu: '200m', memory: '256Mi' }, limits: { memory: '256Mi' } }), allocated, others: [], allocatable }), { kind: 'pending', reason: 'Infeasible', message: 'pod-level removing the cpu limit in place is not supported' });
  t.match(resizeDecision({ desired: pod([bare('c')], { requests: { cpu: '200m', memory: '256Mi' }, limits: { cpu: '400m', memory: '256Mi' } }), allocated, others: [], allocatable }), { kind: 'pending', reason: 'Infeasible', message: 'Pod QOS Class may not change as a result of resizing' });

  m.setAllocated(resized);
  t.same(m.allocatedPod(admitted).spec?.resources, plr('400m', '256Mi'), 'admitted: the new allocation');
  t.same(m.actuatedPodLevel('u1'), plr('200m', '256Mi'), 'not yet in the cgroup');
  m.recordActuatedPodLevel(m.allocatedPod(resized), 'memory');
  t.same(m.actuatedPodLevel('u1'), plr('200m', '256Mi'), 'memory did not change');
  m.recordActuatedPodLevel(m.allocatedPod(resized), 'cpu');
  t.same(m.actuatedPodLevel('u1'), plr('400m', '256Mi'));
});

t.test('pod-level resources survive a restart of nodelet (the checkpoint)', async (t) => {
  const dir = t.testdir();
  const m = new AllocationManager({ rootDir: dir });
  m.setAllocated(pod([bare('c')], plr('200m', '256Mi')));
  m.setAllocated(pod([bare('c')], plr('400m', '256Mi')));
  await m.flush();
  const again = new AllocationManager({ rootDir: dir });
  t.same(again.allocatedPod(pod([bare('c')], plr('1', '1Gi'))).spec?.resources, plr('400m', '256Mi'));
  t.same(again.actuatedPodLevel('u1'), plr('200m', '256Mi'));
});

t.test('pod status: allocatedResources and resources as the pod cgroup holds them', async (t) => {
  const status: PodStatus = { phase: 'Running' };
  const p = pod([bare('c')], plr('200m', '256Mi'));
  const s = withPodLevelStatus(status, p, plr('200m', '256Mi'), podRequests);
  t.same(s.allocatedResources, { cpu: '200m', memory: '256Mi' });
  t.same(s.resources, plr('200m', '256Mi'));
  const mid = withPodLevelStatus(status, pod([bare('c')], plr('400m', '512Mi')), plr('200m', '256Mi'), podRequests);
  t.same(mid.allocatedResources, { cpu: '400m', memory: '512Mi' }, 'the allocation');
  t.same(mid.resources, { limits: { cpu: '200m', memory: '256Mi' }, requests: { cpu: '200m', memory: '256Mi' } }, 'what the cgroup still holds');
  const noPLR = withPodLevelStatus(status, pod([bare('c', { resources: { requests: { cpu: '500m', memory: '64Mi' } } })]), {}, podRequests);
  t.same(noPLR.allocatedResources, { cpu: '500m', memory: '64Mi' }, 'the containers\' sum without pod-level resources');
  t.same(noPLR.resources, { requests: { cpu: '500m', memory: '64Mi' } }, 'no limits in a cgroup without them');
  const subUnit = withPodLevelStatus(status, pod([bare('c')], { requests: { cpu: '4m', memory: '10m' } }), {}, podRequests);
  t.same(subUnit.allocatedResources, { cpu: '4m', memory: '10m' }, 'pod-level requests as the spec has them, a sub-byte memory request too (the e2e spec\'s "no container requests and limits")');
});

t.test('a checkpoint from before pod-level allocation: the spec\'s pod-level resources are adopted', async (t) => {
  const dir = t.testdir({ allocated_pods_state: JSON.stringify({ version: 1, pods: { u1: { containers: { c: {} } } } }) });
  const m = new AllocationManager({ rootDir: dir });
  const p = pod([bare('c')], plr('200m', '256Mi'));
  t.equal(m.actuatedPodLevel('u1'), undefined, 'nothing recorded');
  m.adoptPodLevel(p);
  t.same(m.actuatedPodLevel('u1'), plr('200m', '256Mi'));
  m.adoptPodLevel(pod([bare('c')], plr('1', '1Gi')));
  t.same(m.allocatedPod(pod([bare('c')], plr('1', '1Gi'))).spec?.resources, plr('200m', '256Mi'), 'once: a later change is a resize');
  // The adoption's checkpoint write is still in flight: it must end before the test's directory is
  // removed (its temporary file made that removal fail with ENOTEMPTY under load).
  await m.flush();
});
