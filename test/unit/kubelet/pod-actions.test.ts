import t from 'tap';
import type { Container, Pod } from '../../../src/api/types.js';
import { Backoff } from '../../../src/kubelet/backoff.js';
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
  // After the delay it restarts, and the instance before the previous one is garbage.
  const third = computePodActions(pod([c]), rpod([sandbox()], [inst(c, 1, 'exited', { finishedAt: new Date(NOW + 500) }), inst(c, 0, 'exited')]), backoff, NOW + 11_000);
  t.same(third.start.map((s) => s.attempt), [2]);
  t.same(third.remove, ['a-0']);
  t.equal(backoff.delayOf('u1/a'), 20_000, 'delay doubles');
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
  t.same(a.kill.map((k) => k.id), ['a-0']);
  t.ok(a.remove.includes('sb0'));
  t.same(a.start.map((s) => [s.attempt, s.reason]), [[1, 'sandbox']]);
});

t.test('a finished Never pod gets no new sandbox', async (t) => {
  const c = spec('a');
  const a = computePodActions(pod([c], 'Never'), rpod([sandbox(0, false)], [inst(c, 0, 'exited', { exitCode: 0 })]), new Backoff(), NOW);
  t.equal(a.createSandbox, undefined);
  t.same(a.start, []);
});

t.test('containers not in the spec are killed and removed', async (t) => {
  const c = spec('a');
  const stray = inst(spec('gone'), 0, 'running');
  const a = computePodActions(pod([c]), rpod([sandbox()], [inst(c, 0, 'running'), stray]), new Backoff(), NOW);
  t.same(a.kill.map((k) => k.id), ['gone-0']);
  t.same(a.remove, ['gone-0']);
});

t.test('a container created but never started is removed and retried', async (t) => {
  const c = spec('a');
  const a = computePodActions(pod([c]), rpod([sandbox()], [inst(c, 0, 'created')]), new Backoff(), NOW);
  t.same(a.remove, ['a-0']);
  t.same(a.start.map((s) => s.attempt), [1]);
});
