import t from 'tap';
import type { Container, Pod } from '../../../src/api/types.js';
import { Backoff } from '../../../src/kubelet/backoff.js';
import { computePodActions } from '../../../src/kubelet/pod-actions.js';
import { generatePodStatus } from '../../../src/kubelet/pod-status.js';
import { ProberManager } from '../../../src/kubelet/prober/manager.js';
import { TerminationOrdering, terminationPrerequisites } from '../../../src/kubelet/termination-order.js';
import { hashContainer } from '../../../src/runtime/hash.js';
import type { RuntimeContainer, RuntimePod, RuntimeSandbox } from '../../../src/runtime/types.js';

const NOW = 1_000_000_000;
const spec = (name: string, extra: Partial<Container> = {}): Container => ({ name, image: 'img', ...extra });
const sidecar = (name: string, extra: Partial<Container> = {}) => spec(name, { restartPolicy: 'Always', ...extra });
const pod = (inits: Container[], containers: Container[], restartPolicy = 'Always'): Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: { restartPolicy, initContainers: inits, containers },
});
const sandbox: RuntimeSandbox = { id: 'sb0', attempt: 0, ready: true, createdAt: new Date(NOW - 60_000), ips: [] };
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
  startedAt: new Date(NOW - 50_000 + attempt),
  ...(state === 'exited' ? { exitCode: 1, finishedAt: new Date(NOW - 1000), reason: 'Error' } : {}),
  ...extra,
});
const rpod = (containers: RuntimeContainer[]): RuntimePod => ({ uid: 'u1', name: 'p', namespace: 'ns', sandboxes: [sandbox], containers });
const names = (a: { start: { container: Container }[] }) => a.start.map((s) => s.container.name);

t.test('a sidecar whose startup probe has not passed holds the next init container back', async (t) => {
  const side = sidecar('proxy', { startupProbe: { exec: { command: ['true'] } } });
  const next = spec('init-2');
  const p = pod([side, next], [spec('app')]);
  const runtime = rpod([inst(side, 0, 'running')]);
  const waiting = computePodActions(p, runtime, new Backoff(), NOW, () => undefined, { started: () => false });
  t.same(names(waiting), [], 'nothing starts while the sidecar is not started');
  t.equal(waiting.waiting.get('init-2')?.reason, 'PodInitializing');
  t.equal(waiting.waiting.get('app')?.reason, 'PodInitializing');
  const started = computePodActions(p, runtime, new Backoff(), NOW, () => undefined, { started: (name) => (name === 'proxy' ? true : undefined) });
  t.same(names(started), ['init-2'], 'once started, the next init container runs');
  const noProbe = computePodActions(pod([sidecar('proxy'), next], [spec('app')]), rpod([inst(sidecar('proxy'), 0, 'running')]), new Backoff(), NOW);
  t.same(names(noProbe), ['init-2'], 'without a startup probe a running sidecar is started');
});

t.test('a sidecar whose startup probe failed is killed with the probe grace period and restarted, during initialisation', async (t) => {
  const side = sidecar('proxy', { startupProbe: { exec: { command: ['false'] }, terminationGracePeriodSeconds: 3 } });
  const a = computePodActions(pod([side, spec('init-2')], [spec('app')]), rpod([inst(side, 0, 'running')]), new Backoff(), NOW, () => 'startup', { started: () => false });
  t.same(a.kill, [{ id: 'proxy-0', name: 'proxy', message: 'Init container proxy failed startup probe', graceSeconds: 3 }]);
  t.same(a.start.map((s) => [s.container.name, s.attempt, s.reason]), [['proxy', 1, 'unhealthy']]);
});

t.test('after initialisation a sidecar failing liveness is restarted; the app container is untouched', async (t) => {
  const side = sidecar('proxy', { livenessProbe: { exec: { command: ['false'] }, terminationGracePeriodSeconds: 5 } });
  const app = spec('app');
  const runtime = rpod([inst(side, 0, 'running'), inst(app, 0, 'running')]);
  const healthy = computePodActions(pod([side], [app]), runtime, new Backoff(), NOW);
  t.same([healthy.kill, healthy.start], [[], []], 'a healthy initialised pod needs nothing');
  const a = computePodActions(pod([side], [app]), runtime, new Backoff(), NOW, (name) => (name === 'proxy' ? 'liveness' : undefined));
  t.same(a.kill, [{ id: 'proxy-0', name: 'proxy', message: 'Init container proxy failed liveness probe', graceSeconds: 5 }]);
  t.same(a.start.map((s) => [s.container.name, s.attempt, s.reason]), [['proxy', 1, 'unhealthy']]);
});

t.test('after initialisation an exited sidecar restarts (with back-off), whatever the pod restart policy', async (t) => {
  const side = sidecar('proxy');
  const app = spec('app');
  const backoff = new Backoff({ initialMs: 10_000, maxMs: 300_000 });
  const runtime = rpod([inst(side, 0, 'exited'), inst(app, 0, 'running')]);
  const a = computePodActions(pod([side], [app], 'Never'), runtime, backoff, NOW);
  t.same(a.start.map((s) => [s.container.name, s.attempt, s.reason]), [['proxy', 1, 'restart']]);
  const again = computePodActions(pod([side], [app], 'Never'), rpod([inst(side, 1, 'exited', { finishedAt: new Date(NOW + 500) }), inst(app, 0, 'running')]), backoff, NOW + 1000);
  t.same(again.start, [], 'the second exit waits out the back-off');
  t.equal(again.waiting.get('proxy')?.reason, 'CrashLoopBackOff');
});

t.test('a sidecar whose spec changed is replaced', async (t) => {
  const side = sidecar('proxy');
  const changed = { ...side, image: 'img:2' };
  const a = computePodActions(pod([changed], [spec('app')]), rpod([inst(side, 0, 'running'), inst(spec('app'), 0, 'running')]), new Backoff(), NOW);
  t.same(a.kill.map((k) => k.message), ['Init container proxy definition changed']);
  t.same(a.start.map((s) => [s.container.name, s.reason]), [['proxy', 'changed']]);
});

t.test('once every regular container is done for good, the sidecars are stopped and not restarted', async (t) => {
  const s1 = sidecar('s1');
  const s2 = sidecar('s2');
  const app = spec('app');
  const done = rpod([inst(s1, 0, 'running'), inst(s2, 0, 'exited'), inst(app, 0, 'exited', { exitCode: 0, reason: 'Completed' })]);
  const a = computePodActions(pod([s1, s2], [app], 'Never'), done, new Backoff(), NOW);
  t.same(a.kill.map((k) => [k.name, k.message]), [['s1', 'Stopping container s1']]);
  t.same(a.start, [], 'the exited sidecar is not restarted');
  const restarting = computePodActions(pod([s1, s2], [app], 'Always'), done, new Backoff(), NOW);
  t.same(restarting.kill, [], 'under Always the app restarts: the sidecars stay');
  t.same(names(restarting).sort(), ['app', 's2']);
});

t.test('termination order: regular containers first, then sidecars in reverse order of declaration', async (t) => {
  const p = pod([sidecar('s1'), spec('init'), sidecar('s2'), sidecar('s3')], [spec('a'), spec('b')]);
  const all = terminationPrerequisites(p, ['s1', 's2', 's3', 'a', 'b']);
  t.same(Object.fromEntries(all), { s3: ['a', 'b'], s2: ['a', 'b', 's3'], s1: ['a', 'b', 's2'] });
  t.notOk(all.has('a'), 'regular containers wait for nothing');
  const some = terminationPrerequisites(p, ['s1', 's2', 'b']);
  t.same(Object.fromEntries(some), { s3: ['b'], s2: ['b'], s1: ['b', 's2'] }, 'containers that do not run are not waited for');
});

t.test('TerminationOrdering: a sidecar waits for its prerequisites, at most its grace period', async (t) => {
  const p = pod([sidecar('s1'), sidecar('s2')], [spec('a')]);
  const order = new TerminationOrdering(p, ['s1', 's2', 'a']);
  const seen: string[] = [];
  const s1 = order.waitForTurn('s1', 30).then(() => seen.push('s1'));
  const s2 = order.waitForTurn('s2', 30).then(() => seen.push('s2'));
  t.equal(await order.waitForTurn('a', 30), 0, 'the app goes at once');
  await new Promise((r) => setImmediate(r));
  t.same(seen, [], 'no sidecar goes before the app exits');
  order.containerTerminated('a');
  await s2;
  t.same(seen, ['s2'], 's2 goes once the app exited; s1 still waits for s2');
  order.containerTerminated('s2');
  await s1;
  t.same(seen, ['s2', 's1']);
  const stuck = new TerminationOrdering(p, ['s1', 'a']);
  const started = Date.now();
  const waited = await stuck.waitForTurn('s1', 0.2);
  t.ok(waited >= 0.15 && Date.now() - started < 2000, `the grace period bounds the wait (${waited} s)`);
  t.equal(await stuck.waitForTurn('s1', 0), 0, 'no grace, no wait');
});

t.test('prober: workers for sidecars; a startup-only sidecar is ready once started and counts for Ready', async (t) => {
  const timers: (() => void)[] = [];
  const prober = new ProberManager({
    io: () => ({ host: '127.0.0.1', exec: async () => ({ exitCode: 0, output: '' }), connect: async () => Buffer.alloc(0), dial: () => { throw new Error('no'); } }),
    onChange: () => undefined,
    onFailure: () => undefined,
    schedule: (fn) => {
      timers.push(fn);
      return () => undefined;
    },
    now: () => NOW,
  });
  const side = sidecar('proxy', { startupProbe: { exec: { command: ['true'] } } });
  const reader = sidecar('reader', { readinessProbe: { exec: { command: ['true'] } }, livenessProbe: { exec: { command: ['true'] } } });
  const plain = spec('init', { livenessProbe: { exec: { command: ['true'] } } });
  const app = spec('app');
  const p = pod([plain, side, reader], [app]);
  const runtime = rpod([inst(plain, 0, 'running'), inst(side, 0, 'running'), inst(reader, 0, 'running'), inst(app, 0, 'running')]);
  prober.syncPod(p, runtime);
  t.equal(prober.size, 3, 'startup for proxy, liveness and readiness for reader; none for a run-to-completion init container');
  const status = () => generatePodStatus(p, runtime, { hostIP: '10.0.0.1', now: new Date(NOW), probes: { ready: (n, id) => prober.isReady('u1', n, id), started: (n, id) => prober.isStarted('u1', n, id) } });
  const before = status();
  t.same(before.initContainerStatuses?.filter((s) => s.name !== 'init').map((s) => [s.name, s.started, s.ready]), [['proxy', false, false], ['reader', true, false]]);
  t.equal(before.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  for (const fn of timers.splice(0)) fn();
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
  const after = status();
  t.same(after.initContainerStatuses?.filter((s) => s.name !== 'init').map((s) => [s.name, s.started, s.ready]), [['proxy', true, true], ['reader', true, true]]);
  t.equal(after.conditions?.find((c) => c.type === 'Ready')?.status, 'True', 'ready sidecars make the pod Ready');
  prober.stop();
});
