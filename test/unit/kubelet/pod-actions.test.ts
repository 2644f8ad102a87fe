import t from 'tap';
import type { Container, Pod } from '../../../src/api/types.js';
import { Backoff, backoffKey } from '../../../src/kubelet/backoff.js';
import { computePodActions } from '../../../src/kubelet/pod-actions.js';
import { hashContainer } from '../../../src/runtime/hash.js';
import type { RuntimeContainer, RuntimePod, RuntimeSandbox } from '../../../src/runtime/types.js';

const NOW = 1_000_000_000;
const spec = (name: string, extra: Partial<Container> = {}): Container => ({ name, image: 'img', ...extra });
const pod = (containers: Container[], restartPolicy = 'Always'): Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: { restartPolicy, containers },
});
const sandbox = (attempt = 0, ready = true): RuntimeSandbox => ({ id: `sb${attempt}`, attempt, ready, createdAt: new Date(NOW - 60_000), ips: [] });
const inst = (c: Container, attempt: number, state: RuntimeContainer['state'], extra: Partial<RuntimeContainer> = {}): RuntimeContainer => ({
  id: `${c.name}-${attempt}`,
  name: c.name,
  attempt,
  restartCount: attempt,
  hash: hashContainer(c),
  image: 'img',
  imageID: 'sha256:1',
  state,
  createdAt: new Date(NOW - 50_000 + attempt),
  ...(state === 'exited' ? { exitCode: 1, finishedAt: new Date(NOW - 1000), reason: 'Error' } : {}),
  ...extra,
});
const rpod = (sandboxes: RuntimeSandbox[], containers: RuntimeContainer[]): RuntimePod => ({ uid: 'u1', name: 'p', namespace: 'ns', sandboxes, containers });

t.test('a new pod gets a sandbox and every container at attempt 0', async (t) => {
  const a = computePodActions(pod([spec('a'), spec('b')]), undefined, new Backoff(), NOW);
  t.equal(a.createSandbox, 0);
  t.same(a.start.map((s) => [s.container.name, s.attempt, s.reason]), [['a', 0, 'new'], ['b', 0, 'new']]);
  t.same(a.kill, []);
});

t.test('a healthy pod needs nothing', async (t) => {
  const c = spec('a');
  const a = computePodActions(pod([c]), rpod([sandbox()], [inst(c, 0, 'running')]), new Backoff(), NOW);
  t.same([a.createSandbox, a.start, a.kill, a.remove], [undefined, [], [], []]);
});

t.test('an exited container restarts with attempt+1, then crash-loops in back-off', async (t) => {
  const c = spec('a');
  const backoff = new Backoff({ initialMs: 10_000, maxMs: 300_000 });
  const first = computePodActions(pod([c]), rpod([sandbox()], [inst(c, 0, 'exited')]), backoff, NOW);
  t.same(first.start.map((s) => [s.attempt, s.reason]), [[1, 'restart']]);
  // It dies again right away: now it waits.
  const second = computePodActions(pod([c]), rpod([sandbox()], [inst(c, 1, 'exited', { finishedAt: new Date(NOW + 500) }), inst(c, 0, 'exited')]), backoff, NOW + 1000);
  t.same(second.start, []);
  t.equal(second.waiting.get('a')?.reason, 'CrashLoopBackOff');
  t.match(second.waiting.get('a')?.message, /back-off 10s restarting failed container=a pod=p_ns\(u1\)/);
  t.equal(second.resyncAfterMs, 9500);
  // After the delay it restarts; the older dead instances stay for the container GC.
  const third = computePodActions(pod([c]), rpod([sandbox()], [inst(c, 1, 'exited', { finishedAt: new Date(NOW + 500) }), inst(c, 0, 'exited')]), backoff, NOW + 11_000);
  t.same(third.start.map((s) => s.attempt), [2]);
  t.same(third.remove, [], 'no dead instance removed by the sync');
  t.equal(backoff.delayOf(backoffKey(pod([c]), c)), 20_000, 'delay doubles');
});

t.test('restart policy decides whether an exited container comes back', async (t) => {
  const c = spec('a');
  const ok = inst(c, 0, 'exited', { exitCode: 0, reason: 'Completed' });
  const failed = inst(c, 0, 'exited', { exitCode: 2 });
  const run = (policy: string, i: RuntimeContainer) => computePodActions(pod([c], policy), rpod([sandbox()], [i]), new Backoff(), NOW).start.length;
  t.equal(run('Always', ok), 1);
  t.equal(run('OnFailure', ok), 0);
  t.equal(run('OnFailure', failed), 1);
  t.equal(run('Never', failed), 0);
});

t.test('a changed spec replaces the running container', async (t) => {
  const old = spec('a', { command: ['sleep', '1'] });
  const now = spec('a', { command: ['sleep', '2'] });
  const a = computePodActions(pod([now]), rpod([sandbox()], [inst(old, 0, 'running')]), new Backoff(), NOW);
  t.same(a.kill.map((k) => k.id), ['a-0']);
  t.same(a.start.map((s) => [s.attempt, s.reason]), [[1, 'changed']]);
});

t.test('a dead sandbox is replaced and its containers restarted in the new one', async (t) => {
  const c = spec('a');
  const a = computePodActions(pod([c]), rpod([sandbox(0, false)], [inst(c, 0, 'running')]), new Backoff(), NOW);
  t.equal(a.createSandbox, 1);
  t.same(a.kill.map((k) => k.id), ['a-0'], 'a dead sandbox without IPs has no pod network left to tear down');
  t.same(a.remove, [], 'the dead sandbox stays for the container GC');
  const attached = computePodActions(pod([c]), rpod([{ ...sandbox(0, false), ips: ['10.244.0.9'] }], [inst(c, 0, 'running')]), new Backoff(), NOW);
  t.same(attached.kill.map((k) => k.id), ['sb0', 'a-0'], 'a dead sandbox still holding its IP is stopped (its pod network torn down)');
  t.same(attached.remove, []);
  const unattached = computePodActions(pod([c]), rpod([{ ...sandbox(0, false), running: true }], [inst(c, 0, 'running')]), new Backoff(), NOW);
  t.same(unattached.kill.map((k) => k.id), ['sb0', 'a-0'], 'a running sandbox without its pod network (not ready) is stopped');
  t.same(a.start.map((s) => [s.attempt, s.reason]), [[1, 'sandbox']]);
});

t.test('old sandboxes still ready (or still holding IPs) are stopped, not removed; the current one stays', async (t) => {
  const c = spec('a');
  const a = computePodActions(pod([c]), rpod([sandbox(3), sandbox(2), { ...sandbox(1, false), ips: ['10.244.0.9'] }, sandbox(0, false)], [inst(c, 0, 'running')]), new Backoff(), NOW);
  t.equal(a.createSandbox, undefined);
  t.same(a.kill.map((k) => [k.id, k.name]), [['sb2', 'POD'], ['sb1', 'POD']], 'the ready one, and the dead one whose network is still set up');
  t.same(a.remove, []);
});

t.test('older instances: running duplicates are killed and removed, dead ones stay for the container GC', async (t) => {
  const c = spec('a');
  const a = computePodActions(pod([c]), rpod([sandbox()], [inst(c, 3, 'running'), inst(c, 2, 'running'), inst(c, 1, 'exited'), inst(c, 0, 'exited')]), new Backoff(), NOW);
  t.same(a.kill.map((k) => [k.id, k.message]), [['a-2', 'Duplicate container instance']]);
  t.same(a.remove, ['a-2']);
  t.same(a.start, []);
});

t.test('a finished Never pod gets no new sandbox', async (t) => {
  const c = spec('a');
  const a = computePodActions(pod([c], 'Never'), rpod([sandbox(0, false)], [inst(c, 0, 'exited', { exitCode: 0 })]), new Backoff(), NOW);
  t.equal(a.createSandbox, undefined);
  t.same(a.start, []);
});

t.test('containers not in the spec are killed; the container GC removes them', async (t) => {
  const c = spec('a');
  const stray = inst(spec('gone'), 0, 'running');
  const a = computePodActions(pod([c]), rpod([sandbox()], [inst(c, 0, 'running'), stray, inst(spec('gone'), 1, 'exited')]), new Backoff(), NOW);
  t.same(a.kill.map((k) => k.id), ['gone-0']);
  t.same(a.remove, []);
});

t.test('a container created but never started is removed and retried', async (t) => {
  const c = spec('a');
  const a = computePodActions(pod([c]), rpod([sandbox()], [inst(c, 0, 'created')]), new Backoff(), NOW);
  t.same(a.remove, ['a-0']);
  t.same(a.start.map((s) => s.attempt), [1]);
});

const withInits = (inits: Container[], containers: Container[], restartPolicy = 'Always'): Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: { restartPolicy, initContainers: inits, containers },
});
const done = (c: Container, attempt = 0): RuntimeContainer => inst(c, attempt, 'exited', { exitCode: 0, reason: 'Completed' });

t.test('init containers run one at a time, in order, before any regular container', async (t) => {
  const [i1, i2, app] = [spec('init-1'), spec('init-2'), spec('app')];
  const p = withInits([i1, i2], [app]);
  const fresh = computePodActions(p, undefined, new Backoff(), NOW);
  t.equal(fresh.createSandbox, 0);
  t.same(fresh.start.map((s) => s.container.name), ['init-1'], 'only the first init container starts');
  t.same(fresh.waiting.get('app'), { reason: 'PodInitializing', message: '' });
  t.same([fresh.waiting.get('init-1')?.reason, fresh.waiting.get('init-2')?.reason], ['PodInitializing', 'PodInitializing'], 'init containers not run yet wait with PodInitializing');

  const running = computePodActions(p, rpod([sandbox()], [inst(i1, 0, 'running')]), new Backoff(), NOW);
  t.same(running.start, [], 'nothing starts while an init container runs');
  const next = computePodActions(p, rpod([sandbox()], [done(i1)]), new Backoff(), NOW);
  t.same(next.start.map((s) => s.container.name), ['init-2']);
  const apps = computePodActions(p, rpod([sandbox()], [done(i1), done(i2)]), new Backoff(), NOW);
  t.same(apps.start.map((s) => s.container.name), ['app'], 'after all init containers, the app');
  t.same(apps.remove, [], 'completed init containers are kept (their statuses)');
  const later = computePodActions(p, rpod([sandbox()], [inst(app, 0, 'running')]), new Backoff(), NOW);
  t.same([later.start, later.kill], [[], []], 'once an app container started, initialisation is over (init instances may be gone)');
});

t.test('a failing init container follows the restart policy, with back-off', async (t) => {
  const [i1, app] = [spec('init-1'), spec('app')];
  const failed = rpod([sandbox()], [inst(i1, 0, 'exited', { exitCode: 2, finishedAt: new Date(NOW - 60_000) })]);
  const b = new Backoff({ initialMs: 10_000, maxMs: 300_000 });
  const retry = computePodActions(withInits([i1], [app], 'OnFailure'), failed, b, NOW);
  t.same(retry.start.map((s) => [s.container.name, s.attempt, s.reason]), [['init-1', 1, 'restart']]);
  const soon = computePodActions(withInits([i1], [app], 'OnFailure'), rpod([sandbox()], [inst(i1, 1, 'exited', { exitCode: 2, finishedAt: new Date(NOW - 1000) })]), b, NOW);
  t.same(soon.start, []);
  t.equal(soon.waiting.get('init-1')?.reason, 'CrashLoopBackOff');
  t.ok((soon.resyncAfterMs ?? 0) > 0);
  const never = computePodActions(withInits([i1], [app], 'Never'), failed, new Backoff(), NOW);
  t.same([never.start, never.createSandbox], [[], undefined], 'restartPolicy Never: the pod has failed; nothing runs again');
  const neverNoSandbox = computePodActions(withInits([i1], [app], 'Never'), rpod([sandbox(0, false)], [...failed.containers]), new Backoff(), NOW);
  t.equal(neverNoSandbox.createSandbox, undefined, 'and no new sandbox for it');
});

t.test('sidecars (restartPolicy Always init containers) start in order and keep running beside the app', async (t) => {
  const side = spec('proxy', { restartPolicy: 'Always' });
  const [i2, app] = [spec('init-2'), spec('app')];
  const p = withInits([side, i2], [app]);
  t.same(computePodActions(p, undefined, new Backoff(), NOW).start.map((s) => s.container.name), ['proxy']);
  t.same(computePodActions(p, rpod([sandbox()], [inst(side, 0, 'running')]), new Backoff(), NOW).start.map((s) => s.container.name), ['init-2'], 'a running sidecar counts as started');
  const all = computePodActions(p, rpod([sandbox()], [inst(side, 0, 'running'), done(i2)]), new Backoff(), NOW);
  t.same(all.start.map((s) => s.container.name), ['app']);
  t.same(all.kill, [], 'the sidecar is neither killed nor removed (its name is in the spec)');
});

t.test('a new sandbox runs the init containers again', async (t) => {
  const [i1, app] = [spec('init-1'), spec('app')];
  const a = computePodActions(withInits([i1], [app]), rpod([sandbox(0, false)], [done(i1), inst(app, 0, 'running')]), new Backoff(), NOW);
  t.equal(a.createSandbox, 1);
  t.same(a.start.map((s) => [s.container.name, s.attempt]), [['init-1', 1]]);
  t.ok(a.kill.some((k) => k.name === 'app'), 'the app of the old sandbox is stopped');
});

t.test('a failed liveness or startup probe restarts the container; under Never it is only killed', async (t) => {
  const c = spec('app');
  const live = rpod([sandbox()], [inst(c, 0, 'running')]);
  const verdict = (name: string, id: string) => (name === 'app' && id === 'app-0' ? ('liveness' as const) : undefined);
  const a = computePodActions(pod([c]), live, new Backoff(), NOW, verdict);
  t.same(a.kill.map((k) => k.message), ['Container app failed liveness probe, will be restarted']);
  t.same(a.start.map((s) => [s.attempt, s.reason]), [[1, 'unhealthy']]);
  const never = computePodActions(pod([c], 'Never'), live, new Backoff(), NOW, verdict);
  t.equal(never.kill.length, 1);
  t.same(never.start, []);
  t.same(computePodActions(pod([c]), live, new Backoff(), NOW, () => undefined).kill, [], 'healthy: nothing');
});

t.test("a probe-triggered kill uses the probe's terminationGracePeriodSeconds, other kills the pod's", async (t) => {
  const c = { ...spec('app'), livenessProbe: { exec: { command: ['false'] }, terminationGracePeriodSeconds: 5 }, startupProbe: { exec: { command: ['false'] } } };
  const live = rpod([sandbox()], [inst(c, 0, 'running')]);
  const kill = (probe: 'liveness' | 'startup') => computePodActions(pod([c]), live, new Backoff(), NOW, () => probe).kill;
  t.equal(kill('liveness')[0]?.graceSeconds, 5, 'the liveness probe has its own grace period');
  t.equal(kill('startup')[0]?.graceSeconds, undefined, "the startup probe has none: the pod's applies");
});

t.test('ephemeral containers start once in the running sandbox and are never restarted or removed', async (t) => {
  const app = spec('app');
  const debug = { name: 'debugger', image: 'img', targetContainerName: 'app' };
  const withDebug: Pod = { ...pod([app]), spec: { ...pod([app]).spec!, ephemeralContainers: [debug] } };
  const started = computePodActions(withDebug, rpod([sandbox()], [inst(app, 0, 'running')]), new Backoff(), NOW);
  t.same(started.start.map((s) => [s.container.name, s.attempt, s.container.targetContainerName]), [['debugger', 0, 'app']]);
  const exited = computePodActions(withDebug, rpod([sandbox()], [inst(app, 0, 'running'), inst(spec('debugger'), 0, 'exited')]), new Backoff(), NOW);
  t.same([exited.start, exited.kill, exited.remove], [[], [], []], 'an exited ephemeral container stays as it is');
  const fresh = computePodActions(withDebug, undefined, new Backoff(), NOW);
  t.same(fresh.start.map((s) => s.container.name), ['app'], 'not in a sandbox being created');
});

t.test('container restart rules (ContainerRestartRules): the container\'s own policy and rules decide its restart', async (t) => {
  const never = spec('n', { restartPolicy: 'Never' });
  const exited = (c: Container, exitCode: number) => inst(c, 0, 'exited', { exitCode, finishedAt: new Date(NOW - 60_000) });
  const a = computePodActions(pod([never]), rpod([sandbox()], [exited(never, 1)]), new Backoff(), NOW);
  t.same(a.start, [], 'restartPolicy Never on the container beats the pod\'s Always');
  const retry = spec('r', { restartPolicy: 'Never', restartPolicyRules: [{ action: 'Restart', exitCodes: { operator: 'In', values: [42] } }] });
  const b = computePodActions(pod([retry], 'Never'), rpod([sandbox()], [exited(retry, 42)]), new Backoff(), NOW);
  t.same(b.start.map((s) => [s.container.name, s.attempt, s.reason]), [['r', 1, 'restart']], 'exit 42 matches the rule: restarted');
  const c = computePodActions(pod([retry], 'Never'), rpod([sandbox()], [exited(retry, 1)]), new Backoff(), NOW);
  t.same(c.start, [], 'exit 1 matches no rule: the container\'s Never');
  const always = spec('w', { restartPolicy: 'Always' });
  const d = computePodActions(pod([always], 'Never'), rpod([sandbox()], [exited(always, 0)]), new Backoff(), NOW);
  t.same(d.start.map((s) => s.container.name), ['w'], 'Always on the container in a Never pod');
});
