import t from 'tap';
import type { Container, Pod, PodStatus } from '../../../src/api/types.js';
import { Backoff } from '../../../src/kubelet/backoff.js';
import { computePodActions } from '../../../src/kubelet/pod-actions.js';
import { containerResizeAction, formatBytes, formatMilli, planPodResize } from '../../../src/kubelet/resize.js';
import { applyPodResize, type ResizeExecutor } from '../../../src/kubelet/resize-apply.js';
import { podResizeMessage, withResizeStatus } from '../../../src/kubelet/resize-status.js';
import { hashContainer } from '../../../src/runtime/hash.js';
import type { RuntimeContainer, RuntimeContainerResources, RuntimePod } from '../../../src/runtime/types.js';

const MiB = 1024 * 1024;
const ctr = (name: string, cpu: string, memory: string, extra: Partial<Container> = {}): Container => ({ name, image: 'img', resources: { requests: { cpu, memory }, limits: { cpu, memory } }, ...extra });
const pod = (containers: Container[], initContainers?: Container[]): Pod => ({ metadata: { name: 'p', namespace: 'ns', uid: 'u1', generation: 3 }, spec: { containers, ...(initContainers ? { initContainers } : {}) } });
const running = (c: Container, resources: RuntimeContainerResources, attempt = 0): RuntimeContainer => ({
  id: `${c.name}-${attempt}`, name: c.name, attempt, restartCount: attempt, hash: hashContainer(c), image: 'img', imageID: 'sha256:1', state: 'running', createdAt: new Date(0), resources,
});
const rpod = (containers: RuntimeContainer[]): RuntimePod => ({ uid: 'u1', name: 'p', namespace: 'ns', sandboxes: [{ id: 'sb', attempt: 0, ready: true, createdAt: new Date(0), ips: [] }], containers });
const held = (cpuMilli: number, memMiB: number): RuntimeContainerResources => ({ cpuRequestMilli: cpuMilli, cpuLimitMilli: cpuMilli, memoryLimitBytes: memMiB * MiB });

t.test('a running container resizes in place unless its policy says RestartContainer for a resource that changes', async (t) => {
  const c = ctr('a', '500m', '256Mi');
  t.same(containerResizeAction(c, running(c, held(500, 256))), { kind: 'none' }, 'as allocated');
  t.match(containerResizeAction(c, running(c, held(250, 128))), { kind: 'update', cpu: 'grow', memory: 'grow' });
  t.match(containerResizeAction(c, running(c, held(1000, 512))), { kind: 'update', cpu: 'shrink', memory: 'shrink' });
  const restartOnMemory = ctr('a', '500m', '256Mi', { resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] });
  t.match(containerResizeAction(restartOnMemory, running(c, held(250, 256))), { kind: 'update', cpu: 'grow' }, 'only cpu changes: in place');
  t.notMatch(containerResizeAction(restartOnMemory, running(c, held(250, 256))), { memory: String });
  t.same(containerResizeAction(restartOnMemory, running(c, held(500, 128))), { kind: 'restart', message: 'Container a resize requires restart' });
  t.same(containerResizeAction(c, { ...running(c, held(1, 1)), state: 'exited' }), { kind: 'none' }, 'a stopped container has nothing to resize');
  const { resources: _r, ...unread } = running(c, held(1, 1));
  t.same(containerResizeAction(c, unread), { kind: 'none' }, 'resources the runtime did not report: nothing to act on');
  const tiny = ctr('a', '1m', '256Mi');
  t.same(containerResizeAction(tiny, running(tiny, { cpuRequestMilli: 2, cpuLimitMilli: 10, memoryLimitBytes: 256 * MiB })), { kind: 'none' }, 'below the shares floor and the smallest quota, amounts count as equal');
});

t.test('computePodActions restarts only the container whose resize needs it, restart count +1', async (t) => {
  const a = ctr('a', '500m', '256Mi', { resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] });
  const b = ctr('b', '500m', '256Mi');
  const rp = rpod([running(a, held(500, 128)), running(b, held(250, 256))]);
  const actions = computePodActions(pod([a, b]), rp, new Backoff(), 0, undefined, { resize: true });
  t.same(actions.kill.map((k) => [k.name, k.message]), [['a', 'Container a resize requires restart']]);
  t.same(actions.start.map((s) => [s.container.name, s.attempt, s.reason]), [['a', 1, 'resize']]);
  const off = computePodActions(pod([a, b]), rp, new Backoff(), 0, undefined, { resize: false });
  t.same([off.kill, off.start], [[], []], 'not resizable (a static pod): nothing is restarted for resources');
  const sidecar = ctr('side', '100m', '64Mi', { restartPolicy: 'Always', resizePolicy: [{ resourceName: 'cpu', restartPolicy: 'RestartContainer' }] });
  const withSidecar = computePodActions(pod([b], [sidecar]), rpod([running(sidecar, held(50, 64)), running(b, held(500, 256))]), new Backoff(), 0, undefined, { resize: true });
  t.same(withSidecar.start.map((s) => [s.container.name, s.attempt, s.reason]), [['side', 1, 'resize']], 'a sidecar after initialisation too');
});

t.test('planning orders decreases before increases and computes the pod cgroup before and after', async (t) => {
  const grow = ctr('grow', '1', '512Mi');
  const shrink = ctr('shrink', '250m', '128Mi');
  const same = ctr('same', '100m', '64Mi');
  const plan = planPodResize(pod([grow, shrink, same]), rpod([running(grow, held(500, 256)), running(shrink, held(500, 256)), running(same, held(100, 64))]));
  t.ok(plan);
  t.same(plan?.memory.map((u) => u.name), ['shrink', 'grow']);
  t.same(plan?.cpu.map((u) => u.name), ['shrink', 'grow']);
  t.equal(plan?.podCgroupBefore.memoryLimit, BigInt(576 * MiB), 'the sum of what runs');
  t.equal(plan?.podCgroupAfter.memoryLimit, BigInt(704 * MiB));
  t.equal(plan?.podCgroupBefore.cpuQuota, 110_000);
  t.equal(plan?.podCgroupAfter.cpuQuota, 135_000);
  t.equal(planPodResize(pod([same]), rpod([running(same, held(100, 64))])), undefined, 'nothing to do');
});

/** An executor that records its calls in order. */
function recorder(usage = 0): { calls: string[]; exec: ResizeExecutor } {
  const calls: string[] = [];
  return {
    calls,
    exec: {
      updateContainer: async (_id, name, r) => void calls.push(`container ${name} ${JSON.stringify(r)}`),
      setPodCgroup: async (fields) => void calls.push(`pod ${fields.join(',')}`),
      podMemoryUsage: async () => usage,
    },
  };
}

t.test('growing: the pod cgroup first, limits before requests; shrinking: containers first, requests before limits', async (t) => {
  const up = ctr('a', '1', '512Mi');
  const upPlan = planPodResize(pod([up]), rpod([running(up, held(500, 256))]));
  const r1 = recorder();
  if (upPlan) await applyPodResize(pod([up]), upPlan, r1.exec);
  t.same(r1.calls, [
    'pod memoryLimit',
    'container a {"limits":{"cpu":"500m","memory":"512Mi"},"requests":{"cpu":"500m","memory":"512Mi"}}',
    'pod cpuPeriod,cpuQuota',
    'pod cpuShares',
    'container a {"limits":{"cpu":"1","memory":"512Mi"},"requests":{"cpu":"1","memory":"512Mi"}}',
  ], 'memory keeps the current cpu; the cpu update keeps the new memory');

  const down = ctr('a', '250m', '128Mi');
  const downPlan = planPodResize(pod([down]), rpod([running(down, held(500, 256))]));
  const r2 = recorder(64 * MiB);
  if (downPlan) await applyPodResize(pod([down]), downPlan, r2.exec);
  t.same(r2.calls, [
    'container a {"limits":{"cpu":"500m","memory":"128Mi"},"requests":{"cpu":"500m","memory":"128Mi"}}',
    'pod memoryLimit',
    'container a {"limits":{"cpu":"250m","memory":"128Mi"},"requests":{"cpu":"250m","memory":"128Mi"}}',
    'pod cpuShares',
    'pod cpuPeriod,cpuQuota',
  ]);
});

t.test('a memory limit below what the pod uses is not attempted', async (t) => {
  const down = ctr('a', '500m', '128Mi');
  const plan = planPodResize(pod([down]), rpod([running(down, held(500, 256))]));
  const r = recorder(200 * MiB);
  await t.rejects(plan ? applyPodResize(pod([down]), plan, r.exec) : Promise.resolve(), { message: 'cannot decrease memory limits: attempting to set pod memory limit (134217728) below current usage (209715200)' });
  t.same(r.calls, [], 'nothing was changed');
});

t.test('status: allocated resources, and the values the runtime applied', async (t) => {
  const c = ctr('a', '500m', '256Mi');
  const status: PodStatus = { containerStatuses: [{ name: 'a', image: 'img', imageID: '', ready: true, restartCount: 0, state: { running: { startedAt: 'x' } } }] };
  const applied = withResizeStatus(status, pod([c]), rpod([running(c, held(500, 256))]));
  t.same(applied.containerStatuses?.[0]?.resources, { limits: { cpu: '500m', memory: '256Mi' }, requests: { cpu: '500m', memory: '256Mi' } });
  t.same(applied.containerStatuses?.[0]?.allocatedResources, { cpu: '500m', memory: '256Mi' });
  const lagging = withResizeStatus(status, pod([c]), rpod([running(c, held(250, 128))]));
  t.same(lagging.containerStatuses?.[0]?.resources, { limits: { cpu: '250m', memory: '128Mi' }, requests: { cpu: '250m', memory: '256Mi' } }, 'what runs, until the update lands (memory requests are not in a cgroup)');
  t.equal(formatMilli(2000), '2');
  t.equal(formatBytes(1000), '1000');
  t.equal(formatBytes(3 * 1024 * MiB), '3Gi');
});

t.test('the resize event message is the kubelet\'s JSON summary', async (t) => {
  t.equal(
    podResizeMessage(pod([ctr('a', '500m', '256Mi')]), 'Pod resize started', 3),
    'Pod resize started: {"containers":[{"name":"a","resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"500m","memory":"256Mi"}}}],"generation":3}',
  );
  t.match(podResizeMessage(pod([ctr('a', '3', '1Gi')]), 'Pod resize Infeasible', 4, 'Node didn\'t have enough capacity'), /"generation":4,"error":"Node didn't have enough capacity"}$/);
});

t.test('a memory request resize alone: seen from the actuated request, in place or a restart by the memory policy', async (t) => {
  // Burstable: request 20Mi, limit 45Mi; the request grows to 40Mi, the limit stays (no cgroup value moves).
  const burstable = (memRequest: string, extra: Partial<Container> = {}): Container => ({ name: 'a', image: 'img', resources: { requests: { cpu: '20m', memory: memRequest }, limits: { cpu: '30m', memory: '45Mi' } }, ...extra });
  const cgroup = { cpuRequestMilli: 20, cpuLimitMilli: 30, memoryLimitBytes: 45 * MiB };
  const plain = burstable('40Mi');
  t.same(containerResizeAction(plain, running(plain, cgroup)), { kind: 'none' }, 'nothing recorded: it runs with the allocated request');
  t.same(containerResizeAction(plain, running(plain, cgroup), undefined, 40 * MiB), { kind: 'none' }, 'the actuated request is the allocated one');
  t.match(containerResizeAction(plain, running(plain, cgroup), undefined, 20 * MiB), { kind: 'update', memory: 'grow' }, 'NotRequired: updated in place');
  t.match(containerResizeAction(plain, running(plain, cgroup), undefined, 60 * MiB), { kind: 'update', memory: 'shrink' });
  t.notMatch(containerResizeAction(plain, running(plain, cgroup), undefined, 20 * MiB), { cpu: String }, 'the cpu does not move');
  const restart = burstable('40Mi', { resizePolicy: [{ resourceName: 'cpu', restartPolicy: 'NotRequired' }, { resourceName: 'memory', restartPolicy: 'RestartContainer' }] });
  t.same(containerResizeAction(restart, running(restart, cgroup), undefined, 20 * MiB), { kind: 'restart', message: 'Container a resize requires restart' }, 'RestartContainer on memory: restarted');
  const actions = computePodActions(pod([restart]), rpod([running(restart, cgroup)]), new Backoff(), 0, undefined, { resize: true, actuatedMemoryRequest: (name) => (name === 'a' ? 20 * MiB : undefined) });
  t.same(actions.kill.map((k) => [k.name, k.message]), [['a', 'Container a resize requires restart']]);
  t.same(actions.start.map((s) => [s.container.name, s.attempt, s.reason]), [['a', 1, 'resize']]);
  const plan = planPodResize(pod([plain]), rpod([running(plain, cgroup)]), -1, undefined, () => 20 * MiB);
  t.same(plan?.memory.map((u) => [u.name, u.current.memoryRequestBytes, u.desired.memoryRequestBytes]), [['a', 20 * MiB, 40 * MiB]], 'the in-place plan updates the memory');
  t.same(plan?.cpu, []);
  t.equal(planPodResize(pod([plain]), rpod([running(plain, cgroup)]), -1, undefined, () => undefined), undefined, 'nothing recorded: nothing to plan');
});
