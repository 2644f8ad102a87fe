import t from 'tap';
import { containerShouldRestart } from '../../../src/api/restart.js';
import type { Container, Pod, PodStatus } from '../../../src/api/types.js';
import { computePodActions } from '../../../src/kubelet/pod-actions.js';
import { Backoff } from '../../../src/kubelet/backoff.js';
import { generatePodStatus, getPhase } from '../../../src/kubelet/pod-status.js';
import {
  allContainersRestartingCondition,
  attemptFromStatus,
  restartAllActions,
  restartingAllContainers,
  shouldAllContainersRestart,
} from '../../../src/kubelet/restart-all.js';
import type { RuntimeContainer, RuntimeContainerState, RuntimePod } from '../../../src/runtime/types.js';
import { illegalContainerTransition } from '../../../src/status/transitions.js';
import { waitFor } from '../../helpers/wait.js';
import { startKubelet } from './fixtures/kubelet.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);

const restartAll = [{ action: 'RestartAllContainers', exitCodes: { operator: 'In', values: [42] } }];

/** The first e2e spec's pod (test/e2e/common/node/container_restart_policy.go): an init container, a sidecar, the source and a bystander. */
const pod = (extra: Partial<Container> = {}): Pod => ({
  metadata: { uid: 'u1', name: 'p', namespace: 'default' },
  spec: {
    restartPolicy: 'Never',
    initContainers: [
      { name: 'init', image: 'busybox' },
      { name: 'sidecar', image: 'busybox', restartPolicy: 'Always' },
    ],
    containers: [
      { name: 'source', image: 'busybox', restartPolicy: 'Never', restartPolicyRules: restartAll, ...extra },
      { name: 'regular', image: 'busybox' },
    ],
  },
});

function ctr(name: string, attempt: number, state: RuntimeContainerState, exitCode?: number): RuntimeContainer {
  return {
    id: `${name}-${attempt}`,
    name,
    attempt,
    restartCount: attempt,
    hash: 'h',
    image: 'busybox',
    imageID: 'sha256:abc',
    state,
    createdAt: at(attempt * 10),
    startedAt: at(attempt * 10 + 1),
    ...(state === 'exited' ? { finishedAt: at(attempt * 10 + 5), exitCode: exitCode ?? 0 } : {}),
  };
}

const runtimePod = (...containers: RuntimeContainer[]): RuntimePod => ({
  uid: 'u1',
  name: 'p',
  namespace: 'default',
  sandboxes: [{ id: 'sb', attempt: 0, ready: true, createdAt: at(0), ips: ['10.0.0.2'] }],
  containers,
});

/** The pod running, its source just exited 42 (an older instance of it exited 1 before). */
const triggered = () => runtimePod(ctr('init', 0, 'exited', 0), ctr('sidecar', 0, 'running'), ctr('source', 1, 'exited', 42), ctr('source', 0, 'exited', 1), ctr('regular', 0, 'running'));

t.test('containerShouldRestart: a matching RestartAllContainers rule restarts the container, whatever its own policy', async (t) => {
  const c = { restartPolicy: 'Never', restartPolicyRules: restartAll };
  t.equal(containerShouldRestart(c, { restartPolicy: 'Never' }, 42), true);
  t.equal(containerShouldRestart(c, { restartPolicy: 'Never' }, 1), false, 'no rule matches: its own Never');
});

t.test('shouldAllContainersRestart: the newest instance or the reported terminated state matched a rule, or the condition is True', async (t) => {
  const p = pod();
  t.equal(shouldAllContainersRestart(p, triggered(), undefined), true, 'the runtime shows the exit');
  t.equal(shouldAllContainersRestart(p, runtimePod(ctr('source', 1, 'running'), ctr('source', 0, 'exited', 42)), undefined), false, 'an older instance does not count');
  t.equal(shouldAllContainersRestart(p, runtimePod(ctr('source', 0, 'exited', 1)), undefined), false, 'another exit code');
  t.equal(shouldAllContainersRestart(pod({ restartPolicyRules: [{ action: 'RestartAllContainers', exitCodes: { operator: 'NotIn', values: [0] } }] }), runtimePod(ctr('source', 0, 'exited', 3)), undefined), true, 'NotIn');
  const reported: PodStatus = { containerStatuses: [{ name: 'source', ready: false, restartCount: 0, image: 'busybox', imageID: '', state: { terminated: { exitCode: 42 } } }] };
  t.equal(shouldAllContainersRestart(p, runtimePod(), reported), true, 'the reported status shows the exit');
  t.equal(shouldAllContainersRestart(p, runtimePod(), { conditions: [{ type: 'AllContainersRestarting', status: 'True' }] }), true, 'the condition');
  t.equal(shouldAllContainersRestart(p, runtimePod(), { conditions: [{ type: 'AllContainersRestarting', status: 'False' }] }), false);
});

t.test('AllContainersRestarting: True while a reset is due and containers are left, False once they are all gone or the pod is terminal', async (t) => {
  const p = pod();
  t.same(allContainersRestartingCondition(p, triggered(), undefined, 'Running'), { type: 'AllContainersRestarting', status: 'True', reason: 'RestartAllContainersStarted', message: 'container exited with restart policy rule' });
  const underWay: PodStatus = { conditions: [{ type: 'AllContainersRestarting', status: 'True' }] };
  t.same(allContainersRestartingCondition(p, runtimePod(), underWay, 'Running'), { type: 'AllContainersRestarting', status: 'False' }, 'cleaned up');
  t.same(allContainersRestartingCondition(p, runtimePod(ctr('init', 0, 'exited', 0)), underWay, 'Running').status, 'True', 'one container left');
  t.same(allContainersRestartingCondition(p, triggered(), undefined, 'Succeeded'), { type: 'AllContainersRestarting', status: 'False', reason: 'PodCompleted' });
  t.same(allContainersRestartingCondition(p, triggered(), undefined, 'Failed'), { type: 'AllContainersRestarting', status: 'False', reason: 'PodFailed' });
  t.equal(restartingAllContainers(p, triggered(), undefined), true);
  t.equal(restartingAllContainers(p, triggered(), { phase: 'Failed' }), false, 'a terminal pod is not reset');
  const noRule = pod({ restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }] });
  t.equal(restartingAllContainers(noRule, triggered(), undefined), false, 'a Restart rule restarts only its container');
});

t.test('restartAllActions: every instance removed — victims of regular, then of init containers, then the sources — the running ones killed first without grace', async (t) => {
  const actions = restartAllActions(pod(), triggered());
  t.same(actions.remove, ['source-0', 'regular-0', 'init-0', 'sidecar-0', 'source-1'], 'the source\'s older exit (code 1) is a victim; its exit 42 goes last');
  t.same(actions.kill, [
    { id: 'regular-0', name: 'regular', message: 'killing', graceSeconds: 0 },
    { id: 'sidecar-0', name: 'sidecar', message: 'killing', graceSeconds: 0 },
  ]);
  t.equal(actions.createSandbox, undefined, 'the sandbox stays');
  t.same(actions.start, [], 'nothing starts in the same sync');
  const fromInit = restartAllActions(
    { ...pod(), spec: { ...pod().spec!, initContainers: [{ name: 'init', image: 'busybox', restartPolicy: 'Never', restartPolicyRules: restartAll }] } },
    runtimePod(ctr('init', 0, 'exited', 42)),
  );
  t.same(fromInit.remove, ['init-0'], 'an init container as the source');
});

t.test('after the reset: the pod starts over from its first init container, counting attempts on from the reported status', async (t) => {
  const reported: PodStatus = {
    initContainerStatuses: [{ name: 'init', ready: false, restartCount: 1, image: 'busybox', imageID: '', state: { waiting: { reason: 'RestartingAllContainers' } } }],
    containerStatuses: [{ name: 'source', ready: false, restartCount: 2, image: 'busybox', imageID: '', containerID: 'docker://source-2', state: { terminated: { exitCode: 42 } } }],
  };
  t.equal(attemptFromStatus(reported, 'init'), 1, 'no instance named: the count as reported');
  t.equal(attemptFromStatus(reported, 'source'), 3, 'an instance named: one more');
  t.equal(attemptFromStatus(reported, 'regular'), 0, 'never reported');
  const actions = computePodActions(pod(), runtimePod(), new Backoff({ initialMs: 10_000, maxMs: 300_000 }), T0, undefined, { firstAttempt: (name) => attemptFromStatus(reported, name) });
  t.same(actions.start.map((s) => `${s.container.name} ${s.attempt}`), ['init 1']);
});

t.test('statuses through a reset: removed containers wait with RestartingAllContainers, one restart more, and keep it once they run again', async (t) => {
  const p = pod();
  const opts = { hostIP: '192.0.2.1', now: at(100) };
  // The sync that sees the exit: the condition turns True; the source reports its exit.
  const first = generatePodStatus({ ...p, status: { phase: 'Running' } }, triggered(), opts);
  t.equal(first.conditions?.find((c) => c.type === 'AllContainersRestarting')?.status, 'True');
  t.equal(first.phase, 'Running', 'the source will run again');
  t.equal(first.containerStatuses?.[1]?.state?.running !== undefined, true);
  // The sync that sees every container gone.
  const second = generatePodStatus(p, runtimePod(), { ...opts, previous: first });
  t.same(second.conditions?.find((c) => c.type === 'AllContainersRestarting'), { type: 'AllContainersRestarting', status: 'False', lastTransitionTime: '2026-01-01T00:01:40Z' });
  for (const s of [...(second.initContainerStatuses ?? []), ...(second.containerStatuses ?? [])]) {
    t.same(s.state, { waiting: { reason: 'RestartingAllContainers', message: 'The container is removed because RestartAllContainers in place' } }, `${s.name} waits`);
    t.same(s.lastState, { terminated: { exitCode: 137, reason: 'RestartingAllContainers', message: 'The container is removed because RestartAllContainers in place' } }, `${s.name} last state`);
    t.equal(s.containerID, undefined);
  }
  t.same(second.containerStatuses?.map((s) => s.restartCount), [2, 1], 'the source had restarted once before');
  t.equal(second.conditions?.find((c) => c.type === 'Initialized')?.status, 'True', 'a pod once initialized stays so');
  t.not(second.phase, 'Failed', 'waiting to restart is not a failure');
  // The init container runs again: the others keep their count and last termination.
  const third = generatePodStatus(p, runtimePod(ctr('init', 1, 'running')), { ...opts, previous: second });
  t.equal(third.initContainerStatuses?.[0]?.restartCount, 1);
  t.equal(third.initContainerStatuses?.[0]?.lastState?.terminated?.reason, 'RestartingAllContainers', 'carried from the report: no older instance is left');
  t.equal(third.containerStatuses?.[0]?.restartCount, 2, 'not started yet: the count carried over');
  t.equal(third.containerStatuses?.[0]?.lastState?.terminated?.reason, 'RestartingAllContainers');
  t.not(third.containerStatuses?.[0]?.state?.waiting?.reason, 'RestartingAllContainers', 'the reset is over');
  // A container whose new instance runs after a terminated report counts one more restart.
  const terminatedReport: PodStatus = { containerStatuses: [{ name: 'regular', ready: false, restartCount: 0, image: 'busybox', imageID: '', containerID: 'docker://removed', state: { terminated: { exitCode: 137 } } }] };
  const fourth = generatePodStatus(p, runtimePod(ctr('regular', 0, 'running')), { ...opts, previous: terminatedReport });
  t.equal(fourth.containerStatuses?.[1]?.restartCount, 1);
  t.same(fourth.containerStatuses?.[1]?.lastState, { terminated: { exitCode: 137 } });
});

t.test('the condition is only on pods with a RestartAllContainers rule', async (t) => {
  const plain = pod({ restartPolicyRules: undefined, restartPolicy: undefined });
  const s = generatePodStatus(plain, triggered(), { hostIP: '', now: at(100) });
  t.notOk(s.conditions?.some((c) => c.type === 'AllContainersRestarting'));
});

t.test('getPhase: an init container that failed into a reset, or whose rules restart it, does not fail the pod', async (t) => {
  const spec = {
    restartPolicy: 'Never',
    initContainers: [{ name: 'init', image: 'busybox', restartPolicy: 'Never', restartPolicyRules: restartAll }],
    containers: [{ name: 'app', image: 'busybox' }],
  };
  const init = (exitCode: number, reason?: string) => [{ name: 'init', ready: false, restartCount: 0, image: 'busybox', imageID: '', state: { terminated: { exitCode, ...(reason ? { reason } : {}) } } }];
  const app = [{ name: 'app', ready: false, restartCount: 0, image: 'busybox', imageID: '', state: { waiting: { reason: 'PodInitializing' } } }];
  t.equal(getPhase(spec, init(42), app), 'Pending', 'the rule restarts everything');
  t.equal(getPhase(spec, init(1), app), 'Failed', 'its own Never');
  t.equal(getPhase(spec, init(137, 'RestartingAllContainers'), app), 'Pending', 'removed by a reset');
});

t.test('the status manager lets any container of a pod with a RestartAllContainers rule leave the terminated state', async (t) => {
  const terminated: PodStatus = { containerStatuses: [{ name: 'regular', ready: false, restartCount: 0, image: 'busybox', imageID: '', state: { terminated: { exitCode: 0 } } }] };
  const waiting: PodStatus = { containerStatuses: [{ name: 'regular', ready: false, restartCount: 1, image: 'busybox', imageID: '', state: { waiting: { reason: 'RestartingAllContainers' } } }] };
  t.equal(illegalContainerTransition(terminated, waiting, pod().spec), undefined);
  t.equal(illegalContainerTransition(terminated, waiting, pod({ restartPolicyRules: undefined }).spec), 'regular', 'without the rule it is illegal under Never');
});

t.test('through the sync: the source exits 42, every container is killed and removed, and the pod runs again from its init container, once', async (t) => {
  const { runtime, statusManager, recorder, kubelet, add } = startKubelet();
  t.teardown(() => kubelet.stop());
  add(pod());
  const started = (call: string) => waitFor(call, () => (runtime.calls.includes(call) ? true : undefined), 5000, 5);
  await started('start init 0');
  runtime.exit('u1', 'init', 0);
  await started('start regular 0');
  const before = runtime.calls.length;
  runtime.exit('u1', 'source', 42);
  await started('start init 1');
  const reset = runtime.calls.slice(before, runtime.calls.indexOf('start init 1'));
  t.same(reset.filter((c) => c.startsWith('stop')).sort(), ['stop regular 0', 'stop sidecar 0'], 'the running ones killed without grace');
  t.same(reset.filter((c) => c.startsWith('remove')), ['remove regular', 'remove init', 'remove sidecar', 'remove source'], 'removed, the source last');
  t.notOk(reset.some((c) => c.startsWith('runSandbox')), 'the sandbox stays');
  const killing = recorder.list('default').filter((e) => e.reason === 'Killing').map((e) => e.message);
  t.same(killing, ['killing', 'killing']);
  runtime.exit('u1', 'init', 0);
  await started('start regular 1');
  t.ok(runtime.calls.includes('start sidecar 1') && runtime.calls.includes('start source 1'));
  const status = await waitFor('all running again', () => {
    const s = statusManager.getPodStatus('u1');
    return s?.containerStatuses?.every((c) => c.state?.running) && s.initContainerStatuses?.[1]?.state?.running ? s : undefined;
  }, 5000, 5);
  for (const s of [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]) {
    t.equal(s.restartCount, 1, `${s.name} restarted once`);
    t.ok(s.lastState?.terminated, `${s.name} has a last termination`);
  }
  t.equal(status.phase, 'Running');
  t.equal(status.conditions?.find((c) => c.type === 'AllContainersRestarting')?.status, 'False');
  t.equal(status.conditions?.find((c) => c.type === 'Initialized')?.status, 'True');
  t.notOk(runtime.calls.some((c) => / 2$/.test(c)), 'no second reset');
});

t.test('AllContainersRestarting carries no observedGeneration, the other conditions do', async (t) => {
  const p: Pod = { ...pod(), metadata: { ...pod().metadata, generation: 3 } };
  const s = generatePodStatus(p, triggered(), { hostIP: '', now: at(100) });
  t.equal(s.conditions?.find((c) => c.type === 'AllContainersRestarting')?.observedGeneration, undefined);
  t.equal(s.conditions?.find((c) => c.type === 'Ready')?.observedGeneration, 3);
});

t.test('a failed init container follows its own restartPolicy and rules (ShouldContainerBeRestarted), the pod\'s by default', async (t) => {
  const withInit = (restartPolicy: string, init: Partial<Container>): Pod => ({ ...pod(), spec: { restartPolicy, initContainers: [{ name: 'init', image: 'busybox', ...init }], containers: [{ name: 'app', image: 'busybox' }] } });
  const plan = (p: Pod, exitCode: number) => computePodActions(p, runtimePod(ctr('init', 0, 'exited', exitCode)), new Backoff({ initialMs: 10_000, maxMs: 300_000 }), T0 + 60_000);
  t.same(plan(withInit('Never', { restartPolicy: 'OnFailure' }), 1).start.map((s) => `${s.container.name} ${s.attempt}`), ['init 1'], 'its own OnFailure under the pod\'s Never');
  t.same(plan(withInit('Always', { restartPolicy: 'Never' }), 1).start, [], 'its own Never under the pod\'s Always: failed for good');
  t.same(plan(withInit('Never', { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [3] } }] }), 3).start.map((s) => s.container.name), ['init'], 'a Restart rule');
  t.same(plan(withInit('Never', {}), 1).start, [], 'the pod\'s Never');
  t.same(plan(withInit('OnFailure', {}), 1).start.map((s) => s.container.name), ['init'], 'the pod\'s OnFailure');
});
