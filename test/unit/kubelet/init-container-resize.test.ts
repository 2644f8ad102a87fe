import t from 'tap';
import type { Container, Pod, PodStatus } from '../../../src/api/types.js';
import { AllocationManager } from '../../../src/kubelet/allocation.js';
import { Backoff } from '../../../src/kubelet/backoff.js';
import { computePodActions } from '../../../src/kubelet/pod-actions.js';
import { planPodResize } from '../../../src/kubelet/resize.js';
import { applyPodResize, type ResizeExecutor } from '../../../src/kubelet/resize-apply.js';
import { ResizeManager } from '../../../src/kubelet/resize-manager.js';
import { withResizeStatus } from '../../../src/kubelet/resize-status.js';
import { hashContainer } from '../../../src/runtime/hash.js';
import type { RuntimeContainer, RuntimeContainerResources, RuntimePod } from '../../../src/runtime/types.js';

/**
 * InPlacePodVerticalScalingInitContainers (GA in 1.37): a run-to-completion init container is
 * resizable as a regular container is — allocated, decided, planned, applied and reported — the
 * shape of the e2e spec "should support resizing a non-sidecar init container"
 * (test/e2e/common/node/pod_resize.go): a Guaranteed pod whose init container never exits.
 */

const MiB = 1024 * 1024;
const ctr = (name: string, cpu: string, memory: string, extra: Partial<Container> = {}): Container => ({ name, image: 'img', resources: { requests: { cpu, memory }, limits: { cpu, memory } }, ...extra });
const pod = (init: Container, main: Container, generation = 1): Pod => ({ metadata: { name: 'p', namespace: 'ns', uid: 'u1', generation }, spec: { initContainers: [init], containers: [main] } });
const held = (cpuMilli: number, memMiB: number): RuntimeContainerResources => ({ cpuRequestMilli: cpuMilli, cpuLimitMilli: cpuMilli, memoryLimitBytes: memMiB * MiB });
const running = (c: Container, resources: RuntimeContainerResources, attempt = 0): RuntimeContainer => ({
  id: `${c.name}-${attempt}`, name: c.name, attempt, restartCount: attempt, hash: hashContainer(c), image: 'img', imageID: 'sha256:1', state: 'running', createdAt: new Date(0), resources,
});
const exited = (c: Container): RuntimeContainer => ({ ...running(c, held(0, 0)), state: 'exited', exitCode: 0, finishedAt: new Date(0) });
const rpod = (containers: RuntimeContainer[]): RuntimePod => ({ uid: 'u1', name: 'p', namespace: 'ns', sandboxes: [{ id: 'sb', attempt: 0, ready: true, createdAt: new Date(0), ips: [] }], containers });

const main = ctr('main', '100m', '64Mi');
const small = ctr('init', '100m', '64Mi');
const big = ctr('init', '200m', '128Mi');

t.test('a running init container: no kill for a resize in place; a RestartContainer policy restarts it', async (t) => {
  const rp = rpod([running(small, held(100, 64))]);
  const inPlace = computePodActions(pod(big, main), rp, new Backoff(), 0, undefined, { resize: true });
  t.same([inPlace.kill, inPlace.start, inPlace.remove], [[], [], []], 'updated in place by the sync, nothing started or killed; the main container waits');
  const restarting = { ...big, resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] };
  const restart = computePodActions(pod(restarting, main), rp, new Backoff(), 0, undefined, { resize: true });
  t.same(restart.kill.map((k) => [k.name, k.message]), [['init', 'Container init resize requires restart']], 'the kubelet\'s computePodResizeAction');
  t.same(restart.start.map((s) => [s.container.name, s.attempt, s.reason]), [['init', 1, 'resize']]);
  const off = computePodActions(pod(restarting, main), rp, new Backoff(), 0, undefined, { resize: false });
  t.same([off.kill, off.start], [[], []], 'not resizable (a static pod): nothing restarted for resources');
});

t.test('planning: the running init container is updated, the pod cgroup follows its need; an exited one is left alone', async (t) => {
  const plan = planPodResize(pod(big, main), rpod([running(small, held(100, 64))]));
  t.ok(plan, 'a plan');
  t.same(plan?.memory.map((u) => [u.name, u.id]), [['init', 'init-0']]);
  t.same(plan?.cpu.map((u) => u.name), ['init']);
  t.equal(plan?.podCgroupBefore.memoryLimit, BigInt(64 * MiB), 'before: the larger of the init container and the containers, as they run');
  t.equal(plan?.podCgroupAfter.memoryLimit, BigInt(128 * MiB), 'after: the init container\'s new need');
  t.equal(plan?.podCgroupBefore.cpuQuota, 10_000);
  t.equal(plan?.podCgroupAfter.cpuQuota, 20_000);
  t.equal(planPodResize(pod(big, main), rpod([exited(small), running(main, held(100, 64))])), undefined, 'an exited init container keeps its allocation for its record, nothing to update');
  t.equal(planPodResize(pod(small, main), rpod([running(small, held(100, 64))])), undefined, 'running with its allocation: nothing to do');

  const calls: string[] = [];
  const exec: ResizeExecutor = {
    updateContainer: async (_id, name, r) => void calls.push(`container ${name} ${JSON.stringify(r.limits)}`),
    setPodCgroup: async (fields) => void calls.push(`pod ${fields.join(',')}`),
    podMemoryUsage: async () => 0,
  };
  if (plan) await applyPodResize(pod(big, main), plan, exec);
  t.same(calls, [
    'pod memoryLimit',
    'container init {"cpu":"100m","memory":"128Mi"}',
    'pod cpuPeriod,cpuQuota',
    'pod cpuShares',
    'container init {"cpu":"200m","memory":"128Mi"}',
  ], 'growing: the pod cgroup before the init container, memory then cpu');
});

t.test('status: an init container reports resources and allocatedResources, running or exited', async (t) => {
  const status = (state: NonNullable<PodStatus['initContainerStatuses']>[number]['state']): PodStatus => ({
    initContainerStatuses: [{ name: 'init', image: 'img', imageID: '', ready: false, restartCount: 0, state }],
    containerStatuses: [{ name: 'main', image: 'img', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'PodInitializing' } } }],
  });
  const lagging = withResizeStatus(status({ running: { startedAt: 'x' } }), pod(big, main), rpod([running(small, held(100, 64))]));
  const s = lagging.initContainerStatuses?.[0];
  t.same(s?.resources, { limits: { cpu: '100m', memory: '64Mi' }, requests: { cpu: '100m', memory: '128Mi' } }, 'what runs until the update lands (the memory request is never in a cgroup)');
  t.same(s?.allocatedResources, { cpu: '200m', memory: '128Mi' }, 'the allocated requests');
  const done = withResizeStatus(status({ running: { startedAt: 'x' } }), pod(big, main), rpod([running(small, held(200, 128))]));
  t.same(done.initContainerStatuses?.[0]?.resources, big.resources, 'once applied: the spec\'s, as the e2e spec waits for');
  const finished = withResizeStatus(status({ terminated: { exitCode: 0, reason: 'Completed' } }), pod(big, main), rpod([exited(small)]));
  t.same(finished.initContainerStatuses?.[0]?.resources, big.resources, 'an exited one: its allocation');
  t.same(finished.containerStatuses?.[0]?.resources, main.resources, 'the regular container as before');
});

t.test('resize manager: admitted, in progress until the init container runs with it, then completed', async (t) => {
  const events: string[] = [];
  const updates: string[] = [];
  const cgroup: string[] = [];
  const m = new ResizeManager({
    allocation: new AllocationManager(),
    runtime: {
      updateContainerResources: async (id: string, c: Container) => void updates.push(`${id} ${JSON.stringify(c.resources?.limits)}`),
      containerStats: async () => ({ timestamp: new Date(), cpuUsageCoreNanoSeconds: 0, memoryUsageBytes: 10 * MiB, memoryWorkingSetBytes: 0 }),
    },
    podCgroups: { resizePod: async (_p, fields) => void cgroup.push(fields.join(',')) },
    record: (_pod, type, reason) => events.push(`${type} ${reason}`),
    log: { info: () => undefined, warn: () => undefined },
  });
  const allocatable = { cpu: '2', memory: '1Gi', pods: '10' };
  m.allocate(pod(small, main, 1), [], allocatable);
  const desired = pod(big, main, 2);
  const allocated = m.allocate(desired, [], allocatable);
  t.same(allocated.spec?.initContainers?.[0]?.resources, big.resources, 'the new resources are allocated');
  const before = rpod([running(small, held(100, 64))]);
  m.observe(desired, allocated, before);
  const conditions = (rp: RuntimePod) => (m.status(desired, rp, { conditions: [] }).conditions ?? []).map((c) => c.type);
  t.same(conditions(before), ['PodResizeInProgress'], 'in progress while the init container runs with the old values');
  t.equal(await m.apply(allocated, before), 'applied');
  t.same(updates, ['init-0 {"cpu":"100m","memory":"128Mi"}', 'init-0 {"cpu":"200m","memory":"128Mi"}']);
  t.same(cgroup, ['memoryLimit', 'cpuPeriod,cpuQuota', 'cpuShares']);
  const after = rpod([running(small, held(200, 128))]);
  m.observe(desired, allocated, after);
  t.same(conditions(after), []);
  t.same(events, ['Normal ResizeStarted', 'Normal ResizeCompleted']);
  t.same(m.status(desired, after, { initContainerStatuses: [{ name: 'init', image: 'img', imageID: '', ready: false, restartCount: 0, state: { running: { startedAt: 'x' } } }] }).initContainerStatuses?.[0]?.resources, big.resources);
});
