import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { Backoff } from '../../../src/kubelet/backoff.js';
import { waitFor } from '../../helpers/wait.js';
import { startKubelet } from './fixtures/kubelet.js';

const SANDBOX_BACKOFF_MS = 300;

/** The sync of one pod, end to end inside the kubelet, against a runtime held in memory. */
const setup = (gcPeriodMs?: number) => startKubelet({
  sandboxBackoff: new Backoff({ initialMs: SANDBOX_BACKOFF_MS, maxMs: 2 * SANDBOX_BACKOFF_MS }),
  ...(gcPeriodMs ? { containerGC: { periodMs: gcPeriodMs } } : {}),
});

const pod = (restartPolicy: string, extra: Partial<NonNullable<Pod['spec']>> = {}): Pod => ({
  metadata: { uid: 'u1', name: 'p', namespace: 'default' },
  spec: { restartPolicy, terminationGracePeriodSeconds: 7, containers: [{ name: 'app', image: 'busybox' }], ...extra },
});

t.test('a new pod: one sandbox, then its container; the status says Running', async (t) => {
  const { runtime, statusManager, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  add(pod('Always'));
  await waitFor('Running', () => (statusManager.getPodStatus('u1')?.phase === 'Running' ? true : undefined), 5000, 5);
  t.same(runtime.calls, ['runSandbox 0', 'start app 0']);
  t.equal(statusManager.getPodStatus('u1')?.containerStatuses?.[0]?.ready, true);
});

t.test('an exited container restarts under Always, after a back-off the second time, with CrashLoopBackOff meanwhile', async (t) => {
  const { runtime, statusManager, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  add(pod('Always'));
  await waitFor('first start', () => (runtime.calls.includes('start app 0') ? true : undefined), 5000, 5);
  runtime.exit('u1', 'app', 1);
  await waitFor('restarted', () => (runtime.calls.includes('start app 1') ? true : undefined), 5000, 5);
  runtime.exit('u1', 'app', 1);
  await waitFor('waiting in back-off', () => (statusManager.getPodStatus('u1')?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff' ? true : undefined), 5000, 5);
  t.notOk(runtime.calls.includes('start app 2'), 'not restarted during the back-off');
  await waitFor('restarted after the back-off', () => (runtime.calls.includes('start app 2') ? true : undefined), 5000, 5);
  t.equal(statusManager.getPodStatus('u1')?.containerStatuses?.[0]?.restartCount, 2);
});

t.test('a changed spec (a new image) starts from the initial delay: the back-off key holds the spec hash (GetStableKey)', async (t) => {
  // A minute-long back-off: a restart within the test's deadline means the back-off was reset.
  const { runtime, statusManager, podManager, kubelet, add } = startKubelet({ backoff: new Backoff({ initialMs: 60_000, maxMs: 120_000 }) });
  t.teardown(() => kubelet.stop());
  const first = pod('Always');
  add(first);
  await waitFor('first start', () => (runtime.calls.includes('start app 0') ? true : undefined), 5000, 5);
  runtime.exit('u1', 'app', 1);
  await waitFor('restarted at once the first time', () => (runtime.calls.includes('start app 1') ? true : undefined), 5000, 5);
  runtime.exit('u1', 'app', 1);
  await waitFor('in a minute\'s back-off', () => (statusManager.getPodStatus('u1')?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff' ? true : undefined), 5000, 5);
  const updated: Pod = { ...first, spec: { ...first.spec!, containers: [{ name: 'app', image: 'busybox:2' }] } };
  podManager.updatePod(updated);
  kubelet.handlePodChanges({ added: [], updated: [updated], removed: [] });
  await waitFor('restarted with the new image, no back-off', () => (runtime.calls.includes('start app 2') ? true : undefined), 5000, 5);
  t.equal(statusManager.getPodStatus('u1')?.containerStatuses?.[0]?.image, 'busybox:2');
});

t.test('under Never an exited container stays down and the pod ends Failed', async (t) => {
  const { runtime, statusManager, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  add(pod('Never'));
  await waitFor('started', () => (runtime.calls.includes('start app 0') ? true : undefined), 5000, 5);
  runtime.exit('u1', 'app', 3);
  await waitFor('Failed', () => (statusManager.getPodStatus('u1')?.phase === 'Failed' ? true : undefined), 5000, 5);
  t.same(runtime.calls, ['runSandbox 0', 'start app 0']);
});

t.test('a deletion stops the containers with the deletion grace period and publishes a terminal status', async (t) => {
  const { runtime, statusManager, podManager, kubelet } = setup();
  t.teardown(() => kubelet.stop());
  const live = pod('Always');
  podManager.updatePod(live);
  kubelet.handlePodChanges({ added: [live], updated: [], removed: [] });
  await waitFor('started', () => (runtime.calls.includes('start app 0') ? true : undefined), 5000, 5);
  const deleting: Pod = { ...live, metadata: { ...live.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 3 } };
  podManager.updatePod(deleting);
  kubelet.handlePodChanges({ added: [], updated: [deleting], removed: [] });
  await waitFor('terminal', () => (statusManager.getPodStatus('u1')?.phase === 'Failed' ? true : undefined), 5000, 5);
  t.ok(runtime.calls.includes('stop app 3'), 'the deletion grace period, not the spec one');
  t.ok(runtime.calls.includes('stop POD 0'));
  t.notOk(runtime.calls.some((c) => c.startsWith('remove')), 'containers stay until the pod leaves its source (logs remain readable)');
  podManager.deletePod(deleting);
  kubelet.handlePodChanges({ added: [], updated: [], removed: [deleting] });
  await waitFor('removed', async () => ((await runtime.listPods()).length === 0 ? true : undefined), 5000, 5);
  await waitFor('status forgotten', () => (statusManager.getPodStatus('u1') === undefined ? true : undefined), 5000, 5);
});

t.test('a pod in a terminal phase starts nothing again once the container GC has removed its dead container', async (t) => {
  const { runtime, statusManager, kubelet, add } = startKubelet({ containerGC: { policy: { minAgeMs: 0, maxPerPodContainer: 0, maxContainers: -1 }, periodMs: 50 } });
  t.teardown(() => kubelet.stop());
  const p = pod('Never');
  add(p);
  await waitFor('started', () => (runtime.calls.includes('start app 0') ? true : undefined), 5000, 5);
  runtime.exit('u1', 'app', 3);
  await waitFor('Failed', () => (statusManager.getPodStatus('u1')?.phase === 'Failed' ? true : undefined), 5000, 5);
  await waitFor('the dead container removed (0 kept per container)', () => (runtime.calls.includes('remove app') ? true : undefined), 5000, 5);
  // Syncs of the pod after the removal (an update, and the GC's relists), counted, not timed.
  kubelet.handlePodChanges({ added: [], updated: [p], removed: [] });
  const relists = kubelet.relistHealth().relists;
  await waitFor('five more relists', () => (kubelet.relistHealth().relists >= relists + 5 ? true : undefined), 5000, 5);
  t.same(runtime.calls, ['runSandbox 0', 'start app 0', 'remove app'], 'no new sandbox, no start');
  const status = statusManager.getPodStatus('u1');
  t.equal(status?.phase, 'Failed');
  t.equal(status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 3, 'the terminated state stays as reported');
});

t.test('deleteAllUnusedContainers: a terminated pod loses its dead container, a running one keeps its previous instance', async (t) => {
  const { runtime, statusManager, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  add(pod('OnFailure'));
  add({ ...pod('Always'), metadata: { uid: 'u2', name: 'q', namespace: 'default' } });
  await waitFor('both started', () => (runtime.calls.filter((c) => c === 'start app 0').length === 2 ? true : undefined), 5000, 5);
  runtime.exit('u1', 'app', 0);
  runtime.exit('u2', 'app', 1);
  await waitFor('u1 Succeeded, u2 restarted', () => (statusManager.getPodStatus('u1')?.phase === 'Succeeded' && runtime.calls.includes('start app 1') ? true : undefined), 5000, 5);
  await waitFor('u1\'s container exited', async () => ((await runtime.listPods()).find((p) => p.uid === 'u1')?.containers.every((c) => c.state !== 'running') ? true : undefined), 5000, 5);
  await kubelet.deleteAllUnusedContainers();
  const pods = await runtime.listPods();
  t.same(pods.find((p) => p.uid === 'u1')?.containers ?? [], [], 'the Succeeded pod\'s dead container removed');
  t.same(pods.find((p) => p.uid === 'u2')?.containers.map((c) => `${c.attempt}:${c.state}`), ['1:running', '0:exited'], 'the running pod keeps its previous instance');
  t.equal(statusManager.getPodStatus('u1')?.phase, 'Succeeded');
});

t.test('a failed sandbox creation waits out a back-off before the next, however many events arrive', async (t) => {
  const { runtime, statusManager, kubelet, add } = setup(100);
  t.teardown(() => kubelet.stop());
  runtime.failSandboxes = 2;
  const p = pod('Always');
  add(p);
  const creations = () => runtime.calls.filter((c) => c.startsWith('runSandbox')).length;
  const at = (n: number) => waitFor(`sandbox creation ${n}`, () => (creations() >= n ? Date.now() : undefined), 5000, 2);
  const first = await at(1);
  // Pod updates and the failed sandbox's own PLEG event each sync the pod: none creates a sandbox.
  for (let i = 0; i < 10; i++) kubelet.handlePodChanges({ added: [], updated: [p], removed: [] });
  await waitFor('waiting with the failure', () => (statusManager.getPodStatus('u1')?.containerStatuses?.[0]?.state?.waiting?.message?.startsWith('Failed to create pod sandbox') ? true : undefined), 5000, 2);
  const second = await at(2);
  t.ok(second - first >= SANDBOX_BACKOFF_MS - 20, `second attempt ${second - first} ms after the first (back-off ${SANDBOX_BACKOFF_MS} ms)`);
  const third = await at(3);
  t.ok(third - second >= 2 * SANDBOX_BACKOFF_MS - 20, `third attempt ${third - second} ms after the second (back-off doubled)`);
  await waitFor('Running', () => (statusManager.getPodStatus('u1')?.phase === 'Running' ? true : undefined), 5000, 5);
  t.equal(creations(), 3, 'one creation per back-off period');
  // The container GC removes the dead sandboxes that are not the newest.
  await waitFor("the failed creations' sandboxes removed", async () => ((await runtime.listPods())[0]?.sandboxes.length === 1 ? true : undefined), 5000, 5);
  t.equal(runtime.calls.filter((c) => c === 'remove POD').length, 2, 'each failed sandbox removed once');
  t.ok(runtime.calls.includes('start app 0'));
});

t.test('dead instances wait for the container GC; one it cannot remove is tried again at its next run, and never holds a restart', async (t) => {
  const { runtime, statusManager, kubelet, add } = setup(100);
  t.teardown(() => kubelet.stop());
  add(pod('Always'));
  await waitFor('first start', () => (runtime.calls.includes('start app 0') ? true : undefined), 5000, 5);
  runtime.failRemovals = 1;
  runtime.exit('u1', 'app', 1);
  await waitFor('restarted', () => (runtime.calls.includes('start app 1') ? true : undefined), 5000, 5);
  runtime.exit('u1', 'app', 1);
  await waitFor('restarted again', () => (runtime.calls.includes('start app 2') ? true : undefined), 5000, 5);
  // Two dead instances, one kept (`--maximum-dead-containers-per-container` 1): the first removal fails.
  const apps = async () => (await runtime.listPods())[0]?.containers.map((c) => `${c.attempt}:${c.state}`);
  t.same(await waitFor('the oldest removed', async () => {
    const list = await apps();
    return list?.length === 2 ? list : undefined;
  }, 5000, 5), ['2:running', '1:exited'], 'the running instance and the previous one are kept');
  t.equal(runtime.calls.filter((c) => c === 'remove app').length, 2, 'a failed removal, then the next run\'s');
  await waitFor('Running', () => (statusManager.getPodStatus('u1')?.containerStatuses?.[0]?.state?.running ? true : undefined), 5000, 5);
  t.equal(statusManager.getPodStatus('u1')?.containerStatuses?.[0]?.lastState?.terminated?.exitCode, 1, 'lastState still from the previous instance');
});

t.test('pod network not ready: no sandbox for a pod-network pod, a NetworkNotReady event; a host-network pod starts; the pod starts once the network is ready', async (t) => {
  const { runtime, statusManager, recorder, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  runtime.network = { readiness: { ready: false, reason: 'NetworkPluginNotReady', message: 'cni config uninitialized' }, hostPorts: false };
  add(pod('Always'));
  add({ ...pod('Always', { hostNetwork: true }), metadata: { uid: 'u2', name: 'h', namespace: 'default' } });
  const event = await waitFor('NetworkNotReady', () => recorder.list('default').find((e) => e.reason === 'NetworkNotReady'), 5000, 5);
  t.equal(event.message, 'network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:docker: network plugin is not ready: cni config uninitialized');
  t.equal(event.involvedObject?.name, 'p');
  await waitFor('the host-network pod Running', () => (statusManager.getPodStatus('u2')?.phase === 'Running' ? true : undefined), 5000, 5);
  t.equal(runtime.calls.filter((c) => c.startsWith('runSandbox')).length, 1, 'only the host-network pod got a sandbox');
  t.equal(statusManager.getPodStatus('u1')?.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
  runtime.network = { readiness: { ready: true }, hostPorts: false };
  runtime.sandboxIPs = ['10.244.0.7'];
  const status = await waitFor('Running once ready (retried without any runtime event)', () => (statusManager.getPodStatus('u1')?.phase === 'Running' ? statusManager.getPodStatus('u1') : undefined), 8000, 5);
  t.equal(status?.podIP, '10.244.0.7', 'the IP the network gave the sandbox');
  t.same(status?.podIPs, [{ ip: '10.244.0.7' }]);
});

t.test('a failed pod-network teardown is logged, not fatal: a removed pod\'s sandbox is still stopped and every container removed', async (t) => {
  const { runtime, podManager, statusManager, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  const p = pod('Always');
  add(p);
  await waitFor('Running', () => (statusManager.getPodStatus('u1')?.phase === 'Running' ? true : undefined), 5000, 5);
  runtime.failTeardowns = 1;
  podManager.deletePod(p);
  kubelet.handlePodChanges({ added: [], updated: [], removed: [p] });
  await waitFor('the sandbox removed', () => (runtime.calls.includes('remove POD') ? true : undefined), 5000, 5);
  t.equal(runtime.failTeardowns, 0, 'the teardown was tried, and failed');
  t.ok(runtime.calls.includes('stop POD 0'), 'the sandbox was stopped anyway');
  t.ok(runtime.calls.includes('remove app'));
});

t.test('evictPod: stopped with the grace period, Failed/Evicted with DisruptionTarget, then its content removed; no longer active', async (t) => {
  const { runtime, statusManager, recorder, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  add(pod('Always'));
  await waitFor('Running', () => (statusManager.getPodStatus('u1')?.phase === 'Running' ? true : undefined), 5000, 5);
  t.same(kubelet.activePods().map((p) => p.metadata?.uid), ['u1']);
  const evicted = await kubelet.evictPod('u1', { reason: 'Evicted', message: 'The node was low on resource: memory. ', disruption: 'TerminationByKubelet' }, 1);
  t.equal(evicted, true, 'resolved once the pod stopped');
  t.ok(runtime.calls.includes('stop app 1'), 'its container stopped with the eviction\'s grace period');
  await waitFor('its content removed', () => (kubelet.podCleanedUp('u1') ? true : undefined), 5000, 5);
  t.same((await runtime.listPods()).filter((p) => p.uid === 'u1'), [], 'containers and sandbox removed');
  const status = statusManager.getPodStatus('u1');
  t.same([status?.phase, status?.reason, status?.message], ['Failed', 'Evicted', 'The node was low on resource: memory. ']);
  t.equal(status?.conditions?.find((c) => c.type === 'DisruptionTarget')?.reason, 'TerminationByKubelet');
  t.same(kubelet.activePods(), [], 'an evicted pod is not active');
  t.same(recorder.list(undefined).filter((e) => e.reason === 'Evicted' || e.reason === 'DeadlineExceeded'), [], 'the eviction manager records the event, not the kill path');
  // A sync decides before its first await: once it has begun, its decision is made.
  const before = kubelet.lastActivity();
  await new Promise((r) => setTimeout(r, 2));
  kubelet.handlePodChanges({ added: [], updated: [pod('Always')], removed: [] });
  await waitFor('the pod synced again', () => (kubelet.lastActivity() > before ? true : undefined), 5000, 5);
  t.equal(runtime.calls.filter((c) => c.startsWith('runSandbox')).length, 1, 'never started again');
  t.equal(await kubelet.evictPod('u1', { reason: 'Evicted', message: 'again' }, 1), false, 'an evicted pod is not evicted twice');
  t.equal(await kubelet.evictPod('nope', { reason: 'Evicted', message: 'x' }, 1), false, 'not a pod of this node');
});

t.test('evictPod resolves when the pod leaves its source before its stop is seen (the eviction manager never waits on it)', async (t) => {
  const { podManager, statusManager, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  const p = pod('Always');
  add(p);
  await waitFor('Running', () => (statusManager.getPodStatus('u1')?.phase === 'Running' ? true : undefined), 5000, 5);
  let resolved: boolean | undefined;
  void kubelet.evictPod('u1', { reason: 'Evicted', message: 'm' }, 30).then((v) => (resolved = v));
  podManager.deletePod(p);
  kubelet.handlePodChanges({ added: [], updated: [], removed: [p] });
  await waitFor('evictPod resolved', () => resolved, 5000, 5);
  t.equal(resolved, true);
});

// One kill path (src/kubelet/kill.ts): a preStop `sleep` hook needs no exec, so the in-memory
// runtime shows it by the grace period left for SIGTERM (the hook's second taken from it).
const hooked = (): Pod => pod('Always', { containers: [{ name: 'app', image: 'busybox', lifecycle: { preStop: { sleep: { seconds: 1 } } } }] });
/** The hook's timer does not hold the process (as every timer of the kubelet's): the test does, as the server would. */
const holdProcess = (t: { teardown(fn: () => void): void }) => {
  const timer = setInterval(() => {}, 1000);
  t.teardown(() => clearInterval(timer));
};
const killings = (recorder: { list(ns: string): { reason?: string; message?: string }[] }) => recorder.list('default').filter((e) => e.reason === 'Killing').map((e) => e.message);
/**
 * The grace period the container's stop got: the kill's less the whole seconds the hook took
 * (`graceAfterHook`), so at most `grace - 1` after the 1 s sleep hook, and less on a loaded machine
 * where the hook's timer fires late — never the whole grace period, never nothing.
 */
const stopGrace = (calls: readonly string[], name: string): number | undefined => {
  const stop = calls.find((c) => c.startsWith(`stop ${name} `));
  return stop === undefined ? undefined : Number(stop.slice(`stop ${name} `.length));
};

t.test('an API delete (restartPod) kills as every kill: Killing, the preStop hook within the request\'s grace period, then the removal and a new incarnation', async (t) => {
  const { runtime, recorder, statusManager, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  holdProcess(t);
  add(hooked());
  await waitFor('Running', () => (statusManager.getPodStatus('u1')?.phase === 'Running' ? true : undefined), 5000, 5);
  let killed = false;
  await kubelet.restartPod('u1', 5, () => (killed = true));
  t.ok(killed);
  const grace = stopGrace(runtime.calls, 'app') ?? NaN;
  t.ok(grace >= 1 && grace <= 4, `preStop ran before the stop, which got the request's 5 s less the hook's time (${runtime.calls.filter((c) => c.startsWith('stop app')).join(', ')})`);
  t.ok(runtime.calls.indexOf('remove app') > runtime.calls.indexOf(`stop app ${grace}`), 'removed after the stop');
  t.same(killings(recorder), ['Stopping container app']);
  await waitFor('the new incarnation', () => (runtime.calls.filter((c) => c === 'start app 0').length === 2 ? true : undefined), 5000, 5);
});

t.test('a pod removed from its source: Killing recorded and its preStop hook run with its last spec, then everything removed', async (t) => {
  const { runtime, recorder, podManager, statusManager, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  holdProcess(t);
  const p = hooked();
  add(p);
  await waitFor('Running', () => (statusManager.getPodStatus('u1')?.phase === 'Running' ? true : undefined), 5000, 5);
  podManager.deletePod(p);
  kubelet.handlePodChanges({ added: [], updated: [], removed: [p] });
  await waitFor('removed', () => (runtime.calls.includes('remove POD') ? true : undefined), 5000, 5);
  const grace = stopGrace(runtime.calls, 'app') ?? NaN;
  t.ok(grace >= 3 && grace <= 6, `the spec's 7 s less the hook's time (${runtime.calls.filter((c) => c.startsWith('stop app')).join(', ')})`);
  t.same(killings(recorder), ['Stopping container app']);
});

t.test('events: a pod refused at admission is rejected once (Failed, "Pod was rejected: …", podRejected); a deleted pod that stopped is podTerminated', async (t) => {
  const { runtime, statusManager, podManager, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  const rejected: string[] = [];
  const terminated: string[] = [];
  kubelet.on('podRejected', (p, refusal) => rejected.push(`${p.metadata?.uid} ${refusal.reason}`));
  const off = kubelet.on('podTerminated', (uid) => terminated.push(uid));
  add({ ...pod('Always', { os: { name: 'windows' } }), metadata: { uid: 'w1', name: 'win', namespace: 'default' } });
  await waitFor('rejected', () => (statusManager.getPodStatus('w1')?.phase === 'Failed' ? true : undefined), 5000, 5);
  t.match(statusManager.getPodStatus('w1'), { qosClass: 'BestEffort', phase: 'Failed', reason: 'PodOSNotSupported', message: "Pod was rejected: Failed to admit pod as the OS field doesn't match node OS" });
  t.same(rejected, ['w1 PodOSNotSupported']);
  t.notOk(runtime.calls.some((c) => c.startsWith('runSandbox')), 'no sandbox for a rejected pod');

  const live = pod('Always');
  add(live);
  await waitFor('started', () => (runtime.calls.includes('start app 0') ? true : undefined), 5000, 5);
  const deleting: Pod = { ...live, metadata: { ...live.metadata, deletionTimestamp: '2026-01-01T00:00:00Z', deletionGracePeriodSeconds: 1 } };
  podManager.updatePod(deleting);
  kubelet.handlePodChanges({ added: [], updated: [deleting], removed: [] });
  await waitFor('podTerminated', () => (terminated.includes('u1') ? true : undefined), 5000, 5);
  off();
  kubelet.handlePodChanges({ added: [], updated: [deleting], removed: [] });
  await waitFor('synced again', () => (statusManager.getPodStatus('u1')?.phase === 'Failed' ? true : undefined), 5000, 5);
  t.same([...new Set(terminated)], ['u1'], 'only the deleted pod, and no more once unsubscribed');
});

t.test('rejectPod: an apiserver pod refused as invalid gets the same Failed status; a pod whose own status is terminal keeps it', async (t) => {
  const { statusManager, kubelet } = setup();
  t.teardown(() => kubelet.stop());
  const rejected: string[] = [];
  kubelet.on('podRejected', (p) => rejected.push(p.metadata?.uid ?? ''));
  const invalid: Pod = { metadata: { uid: 'a1', name: 'bad', namespace: 'default' }, spec: { containers: [{ name: 'c', image: 'i', resources: { limits: { cpu: 'lots' } } }] } };
  kubelet.rejectPod(invalid, { reason: 'FailedValidation', message: 'spec.containers[0].resources.limits[cpu]: Invalid value: "lots"' });
  const status = statusManager.getPodStatus('a1');
  t.same([status?.phase, status?.reason, status?.message], ['Failed', 'FailedValidation', 'Pod was rejected: spec.containers[0].resources.limits[cpu]: Invalid value: "lots"']);
  kubelet.rejectPod({ ...invalid, metadata: { uid: 'a2', name: 'done', namespace: 'default' }, status: { phase: 'Succeeded' } }, { reason: 'FailedValidation', message: 'x' });
  t.equal(statusManager.getPodStatus('a2'), undefined, 'a finished pod is not failed again');
  t.same(rejected, ['a1']);
});

t.test('admission: handlers added run before the kubelet\'s own; the node\'s allocatable counts once the node was built', async (t) => {
  const { statusManager, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  kubelet.addPodAdmitHandler((p) => (p.metadata?.name === 'pressured' ? { reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ' } : undefined));
  add({ ...pod('Always'), metadata: { uid: 'e1', name: 'pressured', namespace: 'default' } });
  await waitFor('refused by the handler', () => (statusManager.getPodStatus('e1')?.reason === 'Evicted' ? true : undefined), 5000, 5);
  const big = (uid: string): Pod => ({ ...pod('Always', { containers: [{ name: 'app', image: 'busybox', resources: { requests: { cpu: '2' } } }] }), metadata: { uid, name: uid, namespace: 'default' } });
  add(big('b1'));
  await waitFor('admitted before the node was built', () => (statusManager.getPodStatus('b1')?.phase === 'Running' ? true : undefined), 5000, 5);
  kubelet.nodeBuilt({ status: { allocatable: { cpu: '3', memory: '1Gi', pods: '110' } } });
  add(big('b2'));
  await waitFor('refused: no cpu left', () => (statusManager.getPodStatus('b2')?.reason === 'OutOfcpu' ? true : undefined), 5000, 5);
  t.equal(statusManager.getPodStatus('b2')?.phase, 'Failed');
});

t.test('admission: node affinity against the apiserver\'s Node once observed, else the built one; an admitted pod keeps running when labels change', async (t) => {
  const { runtime, statusManager, kubelet, add } = setup();
  t.teardown(() => kubelet.stop());
  const selecting = (uid: string): Pod => ({ ...pod('Always', { nodeSelector: { zone: 'a' } }), metadata: { uid, name: uid, namespace: 'default' } });
  kubelet.nodeBuilt({ metadata: { name: 'node-1', labels: { 'kubernetes.io/hostname': 'node-1' } }, status: { allocatable: { cpu: '4', memory: '1Gi', pods: '110' } } });
  add(selecting('s1'));
  await waitFor('refused against the built node', () => (statusManager.getPodStatus('s1')?.reason === 'NodeAffinity' ? true : undefined), 5000, 5);
  t.equal(statusManager.getPodStatus('s1')?.message, "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector");
  kubelet.nodeObserved({ metadata: { name: 'node-1', labels: { zone: 'a' } } });
  add(selecting('s2'));
  await waitFor('admitted against the observed node', () => (statusManager.getPodStatus('s2')?.phase === 'Running' ? true : undefined), 5000, 5);
  const calls = runtime.calls.length;
  kubelet.nodeObserved({ metadata: { name: 'node-1', labels: {} }, spec: { taints: [{ key: 'k', effect: 'NoExecute' }] } });
  kubelet.syncPodSoon('s2');
  add(selecting('s3'));
  await waitFor('a new pod refused against the changed node', () => (statusManager.getPodStatus('s3')?.reason === 'NodeAffinity' ? true : undefined), 5000, 5);
  t.equal(statusManager.getPodStatus('s2')?.phase, 'Running', 'the admitted pod is not re-checked');
  t.same(runtime.calls.slice(calls).filter((c) => c.startsWith('stop') || c.startsWith('kill') || c.startsWith('remove')), [], 'nothing of it stopped');
  kubelet.nodeObserved(undefined);
  add({ ...pod('Always', { nodeSelector: { 'kubernetes.io/hostname': 'node-1' } }), metadata: { uid: 's4', name: 's4', namespace: 'default' } });
  await waitFor('the built node again once the Node is gone', () => (statusManager.getPodStatus('s4')?.phase === 'Running' ? true : undefined), 5000, 5);
});
