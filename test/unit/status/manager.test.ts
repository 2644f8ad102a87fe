import t from 'tap';
import type { Pod, PodStatus } from '../../../src/api/types.js';
import { StatusManager, type StatusUpdate } from '../../../src/status/manager.js';

const RFC3339_SECONDS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

const testPod = (uid = '12345678', extra: Partial<Pod> = {}): Pod => ({
  metadata: { uid, name: `foo-${uid}`, namespace: 'new' },
  spec: { containers: [{ name: 'c', image: 'busybox' }] },
  ...extra,
});

// The seed's getRandomPodStatus: a status that differs from every other one.
let seq = 0;
const randomStatus = (): PodStatus => ({ phase: 'Running', message: `m${++seq}` });

/** Lets setImmediate-started drain loops run (and their microtasks settle). */
const flush = async (turns = 5) => {
  for (let i = 0; i < turns; i++) await new Promise((r) => setImmediate(r));
};

function recorder() {
  const updates: StatusUpdate[] = [];
  return { updates, consumer: (u: StatusUpdate) => void updates.push(u) };
}

function warnings() {
  const msgs: string[] = [];
  return { msgs, log: { warn: (_obj: object, msg: string) => void msgs.push(msg) } };
}

const running = (name: string): PodStatus['containerStatuses'] => [
  { name, image: 'i', imageID: '', ready: true, restartCount: 0, state: { running: { startedAt: '2026-01-01T00:00:00Z' } } },
];
const terminated = (name: string, exitCode: number): PodStatus['containerStatuses'] => [
  { name, image: 'i', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode, finishedAt: '2026-01-01T00:01:00Z' } } },
];

t.test('TestNewStatus: a start time is set and one update is delivered, after setPodStatus returns', async (t) => {
  const sm = new StatusManager();
  const { updates, consumer } = recorder();
  sm.subscribe(consumer);
  sm.setPodStatus(testPod(), randomStatus());
  t.equal(updates.length, 0, 'no consumer runs inside setPodStatus');
  await flush();
  t.equal(updates.length, 1);
  t.match(updates[0], { uid: '12345678', version: 1, podName: 'foo-12345678', podNamespace: 'new' });
  t.match(sm.getPodStatus('12345678')?.startTime, RFC3339_SECONDS);
  t.equal(sm.getVersion('12345678'), 1);
});

t.test('a signal re-sends only the pods that changed', async (t) => {
  const sm = new StatusManager();
  const { updates, consumer } = recorder();
  sm.subscribe(consumer);
  sm.setPodStatus(testPod('a'), randomStatus());
  sm.setPodStatus(testPod('b'), randomStatus());
  await flush();
  sm.setPodStatus(testPod('a'), randomStatus());
  await flush();
  t.same(updates.map((u) => `${u.uid}@${u.version}`), ['a@1', 'b@1', 'a@2']);
});

t.test('redeliver hands one pod\'s newest status to that consumer again, and only to it', async (t) => {
  const sm = new StatusManager();
  const first = recorder();
  const second = recorder();
  const subscription = sm.subscribe(first.consumer);
  sm.subscribe(second.consumer);
  sm.setPodStatus(testPod('a'), randomStatus());
  sm.setPodStatus(testPod('b'), randomStatus());
  sm.setPodStatus(testPod('a'), randomStatus());
  await flush();
  subscription.redeliver('a');
  subscription.redeliver('unknown');
  await flush();
  t.same(first.updates.map((u) => `${u.uid}@${u.version}`), ['a@2', 'b@1', 'a@2'], 'the newest status, once more');
  t.same(second.updates.map((u) => `${u.uid}@${u.version}`), ['a@2', 'b@1'], 'other consumers are not affected');
  subscription();
  subscription.redeliver('b');
  await flush();
  t.equal(first.updates.length, 3, 'nothing after unsubscribing');
});

t.test('start time defaults to now, in RFC3339 seconds', async (t) => {
  const sm = new StatusManager({ now: () => new Date('2026-03-04T05:06:07.891Z') });
  sm.setPodStatus(testPod(), randomStatus());
  t.equal(sm.getPodStatus('12345678')?.startTime, '2026-03-04T05:06:07Z');
});

t.test('TestChangedStatusKeepsStartTime', async (t) => {
  const sm = new StatusManager({ now: () => new Date('2030-01-01T00:00:00Z') });
  const { updates, consumer } = recorder();
  sm.subscribe(consumer);
  const start = '2026-01-02T03:04:05Z';
  sm.setPodStatus(testPod(), { ...randomStatus(), startTime: start });
  await flush();
  sm.setPodStatus(testPod(), randomStatus());
  await flush();
  t.equal(updates.length, 2);
  t.same(updates.map((u) => u.version), [1, 2]);
  t.equal(sm.getPodStatus('12345678')?.startTime, start);
  // A later status carrying its own start time does not move it either.
  sm.setPodStatus(testPod(), { ...randomStatus(), startTime: '2027-01-01T00:00:00Z' });
  t.equal(sm.getPodStatus('12345678')?.startTime, start);
});

t.test('TestNewStatusPreservesPodStartTime: after a restart the pod\'s recorded start time is kept', async (t) => {
  const sm = new StatusManager();
  const startTime = new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
  sm.setPodStatus(testPod('12345678', { status: { startTime } }), randomStatus());
  t.equal(sm.getPodStatus('12345678')?.startTime, startTime);
});

t.test('an equal status is not re-sent and keeps its version', async (t) => {
  const sm = new StatusManager();
  const { updates, consumer } = recorder();
  sm.subscribe(consumer);
  const status: PodStatus = {
    phase: 'Running',
    conditions: [
      { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
      { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z', lastProbeTime: '2026-01-01T00:00:00Z' },
    ],
    containerStatuses: [...(running('a') ?? []), ...(running('b') ?? [])],
  };
  sm.setPodStatus(testPod(), status);
  await flush();
  // Same content: other container order, another probe time, sub-second precision, conditions reordered.
  sm.setPodStatus(testPod(), {
    ...status,
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-01-01T00:00:00.400Z', lastProbeTime: '2026-05-05T00:00:00Z' },
      { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' },
    ],
    containerStatuses: [...(running('b') ?? []), ...(running('a') ?? [])],
  });
  await flush();
  t.equal(sm.getVersion('12345678'), 1);
  t.equal(updates.length, 1);
  sm.setPodStatus(testPod(), { ...status, phase: 'Failed' });
  t.equal(sm.getVersion('12345678'), 2, 'a real change bumps the version');
});

t.test('normalizes: RFC3339 seconds, containers sorted by name, input untouched, result frozen', async (t) => {
  const sm = new StatusManager();
  const input: PodStatus = {
    startTime: '2026-01-01T00:00:00.999Z',
    containerStatuses: [...(running('z') ?? []), ...(terminated('a', 0) ?? [])],
  };
  const before = JSON.stringify(input);
  sm.setPodStatus(testPod(), input);
  const got = sm.getPodStatus('12345678');
  t.equal(got?.startTime, '2026-01-01T00:00:00Z');
  t.same(got?.containerStatuses?.map((c) => c.name), ['a', 'z']);
  t.equal(JSON.stringify(input), before);
  t.ok(Object.isFrozen(got) && Object.isFrozen(got?.containerStatuses?.[0]?.state));
});

t.test('condition transition times move only when the condition status changes', async (t) => {
  let now = new Date('2026-01-01T00:00:00Z');
  const sm = new StatusManager({ now: () => now });
  const ready = (status: string, at: string): PodStatus => ({ conditions: [{ type: 'Ready', status, lastTransitionTime: at }] });
  sm.setPodStatus(testPod(), ready('False', '2026-01-01T00:00:00Z'));
  now = new Date('2026-01-01T00:01:00Z');
  sm.setPodStatus(testPod(), ready('False', '2026-01-01T00:01:00Z'));
  t.equal(sm.getVersion('12345678'), 1, 'only the generation time differed');
  t.equal(sm.getPodStatus('12345678')?.conditions?.[0]?.lastTransitionTime, '2026-01-01T00:00:00Z');
  sm.setPodStatus(testPod(), { conditions: [{ type: 'Ready', status: 'True' }] });
  t.equal(sm.getPodStatus('12345678')?.conditions?.[0]?.lastTransitionTime, '2026-01-01T00:01:00Z');
});

t.test('a terminal phase is kept', async (t) => {
  const { msgs, log } = warnings();
  const sm = new StatusManager({ log });
  sm.setPodStatus(testPod(), { phase: 'Succeeded', message: 'done' });
  sm.setPodStatus(testPod(), { phase: 'Running', message: 'later' });
  t.equal(sm.getPodStatus('12345678')?.phase, 'Succeeded');
  t.equal(sm.getPodStatus('12345678')?.message, 'later', 'the rest of the update applies');
  sm.setPodStatus(testPod(), { phase: 'Failed', message: 'later' });
  t.equal(sm.getPodStatus('12345678')?.phase, 'Succeeded', 'Succeeded does not become Failed');
  t.ok(msgs.some((m) => /illegal phase transition/.test(m)));

  // After a restart, the phase the API recorded counts as the previous one.
  const sm2 = new StatusManager();
  sm2.setPodStatus(testPod('u2', { status: { phase: 'Failed' } }), { phase: 'Pending' });
  t.equal(sm2.getPodStatus('u2')?.phase, 'Failed');
});

t.test('terminated → running: rejected unless the container will restart', async (t) => {
  const cases: { policy: string; exitCode: number; accepted: boolean }[] = [
    { policy: 'Never', exitCode: 0, accepted: false },
    { policy: 'Never', exitCode: 1, accepted: false },
    { policy: 'OnFailure', exitCode: 0, accepted: false },
    { policy: 'OnFailure', exitCode: 2, accepted: true },
    { policy: 'Always', exitCode: 0, accepted: true },
  ];
  for (const { policy, exitCode, accepted } of cases) {
    const { msgs, log } = warnings();
    const sm = new StatusManager({ log });
    const pod = testPod('u', { spec: { restartPolicy: policy, containers: [{ name: 'c' }] } });
    sm.setPodStatus(pod, { phase: 'Running', containerStatuses: terminated('c', exitCode) });
    sm.setPodStatus(pod, { phase: 'Running', containerStatuses: running('c') });
    const state = sm.getPodStatus('u')?.containerStatuses?.[0]?.state;
    t.equal(state?.running !== undefined, accepted, `${policy} after exit ${exitCode}`);
    t.equal(sm.getVersion('u'), accepted ? 2 : 1);
    t.equal(msgs.some((m) => /illegal transition/.test(m)), !accepted);
  }
  // Waiting is not terminated either: a Never pod's finished container does not go back to waiting.
  const sm = new StatusManager();
  const pod = testPod('w', { spec: { restartPolicy: 'Never', containers: [{ name: 'c' }] } });
  sm.setPodStatus(pod, { containerStatuses: terminated('c', 1) });
  sm.setPodStatus(pod, { containerStatuses: [{ name: 'c', image: 'i', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } }] });
  t.ok(sm.getPodStatus('w')?.containerStatuses?.[0]?.state?.terminated);
});

t.test('a slow consumer blocks neither the producer nor other consumers, and gets only the newest status', async (t) => {
  const sm = new StatusManager();
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const slow: StatusUpdate[] = [];
  sm.subscribe(async (u) => {
    slow.push(u);
    if (slow.length === 1) await gate;
  });
  const fast = recorder();
  sm.subscribe(fast.consumer);

  sm.setPodStatus(testPod('a'), randomStatus());
  await flush();
  t.equal(slow.length, 1, 'the slow consumer is now stuck on a@1');

  const started = performance.now();
  for (let i = 0; i < 1000; i++) for (const uid of ['a', 'b', 'c']) sm.setPodStatus(testPod(uid), randomStatus());
  t.ok(performance.now() - started < 2000, '3000 updates return without waiting on the consumer');
  t.equal(sm.getVersion('a'), 1001);
  // One entry per (consumer, pod) at most, whatever the number of updates: 2 consumers × 3 pods.
  t.ok(sm.pendingUpdates() <= 6, `pending state bounded by the number of pods (${sm.pendingUpdates()})`);

  await flush();
  t.same(fast.updates.filter((u) => u.version > 1).map((u) => `${u.uid}@${u.version}`).sort(), ['a@1001', 'b@1000', 'c@1000'], 'the other consumer kept up');
  t.equal(slow.length, 1, 'still blocked');

  release();
  await flush();
  t.same(slow.map((u) => `${u.uid}@${u.version}`), ['a@1', 'a@1001', 'b@1000', 'c@1000']);
  t.equal(slow.at(-1)?.status.message, sm.getPodStatus('c')?.message);
  t.equal(sm.pendingUpdates(), 0);
});

t.test('a throwing consumer is logged and the pod retried on the next signal', async (t) => {
  const { msgs, log } = warnings();
  const sm = new StatusManager({ log });
  let failures = 1;
  const got: string[] = [];
  sm.subscribe((u) => {
    if (u.uid === 'a' && failures-- > 0) throw new Error('apiserver down');
    got.push(`${u.uid}@${u.version}`);
  });
  sm.setPodStatus(testPod('a'), randomStatus());
  await flush();
  t.same(got, []);
  t.ok(msgs.some((m) => /retrying/.test(m)));
  t.equal(sm.pendingUpdates(), 1);

  sm.setPodStatus(testPod('b'), randomStatus()); // any change is a signal
  await flush();
  t.same(got.sort(), ['a@1', 'b@1']);

  // resync() is a signal too (the periodic full sync).
  let fail = true;
  const again: string[] = [];
  sm.subscribe(async (u) => {
    if (fail) throw new Error('x');
    again.push(u.uid);
  });
  await flush();
  t.same(again, []);
  fail = false;
  sm.resync();
  await flush();
  t.same(again.sort(), ['a', 'b']);
});

t.test('a late subscriber gets the current statuses; unsubscribe stops delivery', async (t) => {
  const sm = new StatusManager();
  sm.setPodStatus(testPod('a'), randomStatus());
  const { updates, consumer } = recorder();
  const stop = sm.subscribe(consumer);
  await flush();
  t.equal(updates.length, 1);
  stop();
  sm.setPodStatus(testPod('a'), randomStatus());
  await flush();
  t.equal(updates.length, 1);
  t.equal(sm.pendingUpdates(), 0, 'an unsubscribed consumer holds nothing');
});

t.test('deletePodStatus and removeOrphanedStatuses forget pods; a re-added pod is delivered again', async (t) => {
  const sm = new StatusManager();
  const { updates, consumer } = recorder();
  sm.subscribe(consumer);
  for (const uid of ['a', 'b', 'c']) sm.setPodStatus(testPod(uid), randomStatus());
  await flush();
  sm.deletePodStatus('a');
  t.equal(sm.getPodStatus('a'), undefined);
  t.equal(sm.getVersion('a'), 0);
  sm.removeOrphanedStatuses(new Set(['b']));
  t.equal(sm.getPodStatus('c'), undefined);
  t.ok(sm.getPodStatus('b'));

  sm.setPodStatus(testPod('a'), randomStatus());
  t.equal(sm.getVersion('a'), 1);
  await flush();
  t.same(updates.filter((u) => u.uid === 'a').map((u) => u.version), [1, 1]);
});

t.test('a pod without UID is ignored', async (t) => {
  const { msgs, log } = warnings();
  const sm = new StatusManager({ log });
  sm.setPodStatus({ metadata: { name: 'x' } }, randomStatus());
  t.equal(sm.pendingUpdates(), 0);
  t.equal(msgs.length, 1);
});

t.test('observedGeneration: the generation of the pod the status was set for, never going back', async (t) => {
  const sm = new StatusManager();
  const at = (generation: number | undefined) => testPod('gen', { metadata: { uid: 'gen', name: 'g', namespace: 'n', ...(generation === undefined ? {} : { generation }) } });
  sm.setPodStatus(at(undefined), { phase: 'Pending' });
  t.notOk('observedGeneration' in (sm.getPodStatus('gen') ?? {}), 'a pod without a generation (a static pod) reports none');
  sm.setPodStatus(at(1), { phase: 'Pending' });
  t.equal(sm.getPodStatus('gen')?.observedGeneration, 1, 'generation 1 acted on');
  t.equal(sm.getVersion('gen'), 2, 'a new generation alone is a new status to send');
  sm.setPodStatus(at(3), { phase: 'Running' });
  t.equal(sm.getPodStatus('gen')?.observedGeneration, 3);
  sm.setPodStatus(at(2), { phase: 'Running', message: 'from an older copy' });
  t.equal(sm.getPodStatus('gen')?.observedGeneration, 3, 'a status computed from an older copy of the pod keeps the newer generation');
  sm.setPodStatus(at(0), { phase: 'Running' });
  t.equal(sm.getPodStatus('gen')?.observedGeneration, 3, 'generation 0 (none) does not clear it');
});

t.test('a consumer with concurrency: up to N calls at once, never two for one pod, each pod\'s newest status last', async (t) => {
  const sm = new StatusManager();
  const gates = new Map<string, () => void>();
  const calls: string[] = [];
  let inFlight = 0;
  let most = 0;
  const busy = new Set<string>();
  let twiceForOnePod = false;
  sm.subscribe(async (u) => {
    if (busy.has(u.uid)) twiceForOnePod = true;
    busy.add(u.uid);
    most = Math.max(most, ++inFlight);
    calls.push(`${u.uid}@${u.version}`);
    await new Promise<void>((r) => gates.set(`${u.uid}@${u.version}`, r));
    inFlight--;
    busy.delete(u.uid);
  }, { concurrency: 3 });

  for (const uid of ['a', 'b', 'c', 'd', 'e']) sm.setPodStatus(testPod(uid), randomStatus());
  await flush();
  t.same(calls, ['a@1', 'b@1', 'c@1'], 'three at once, in order');
  sm.setPodStatus(testPod('a'), randomStatus());
  gates.get('b@1')?.();
  await flush();
  t.same(calls, ['a@1', 'b@1', 'c@1', 'd@1'], 'a freed slot takes the next pod');
  for (const k of ['a@1', 'c@1', 'd@1']) gates.get(k)?.();
  await flush();
  t.same(calls.slice(4), ['e@1'], 'the pass ends with e');
  gates.get('e@1')?.();
  await flush();
  t.same(calls.slice(5), ['a@2'], 'a\'s newer status in the next pass, after its first call ended');
  gates.get('a@2')?.();
  await flush();
  t.equal(most, 3, 'never more than three at once');
  t.notOk(twiceForOnePod, 'never two calls for one pod at a time');
  t.equal(sm.pendingUpdates(), 0);
});
