import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { PodEvictions, PodRestarts } from '../../../src/kubelet/kill-now.js';
import type { KillPodOptions } from '../../../src/kubelet/kill.js';
import { NodeShutdown } from '../../../src/kubelet/shutdown.js';
import { PodTerminator } from '../../../src/kubelet/terminate.js';
import { createLogger } from '../../../src/logging/index.js';
import type { RuntimePod } from '../../../src/runtime/types.js';

/**
 * The modules cut out of kubelet.ts, each driven through its narrow interface alone (the
 * kubelet's own behaviour through them is covered by sync.test.ts and the integration tests).
 */

const log = createLogger({ verbosity: 0, format: 'json' });
const pod = (uid: string, priority?: number): Pod => ({ metadata: { uid, name: uid, namespace: 'default' }, spec: { containers: [], ...(priority === undefined ? {} : { priority }) } });
const runtimePod = (uid: string): RuntimePod => ({ uid, name: uid, namespace: 'default', sandboxes: [], containers: [] });

t.test('PodRestarts: kills with the request grace, forgets, calls onKilled, then syncs; a second request joins', async (t) => {
  const calls: string[] = [];
  let stopped = false;
  const restarts = new PodRestarts({
    getPod: (uid) => pod(uid),
    stopped: () => stopped,
    schedule: (uid) => calls.push(`schedule ${uid}`),
    killer: { killPod: async (rp: RuntimePod, _spec: Pod | undefined, o?: KillPodOptions) => void calls.push(`kill ${rp.uid} grace=${o?.grace} remove=${o?.remove} tearDown=${o?.tearDown}`) },
    relist: async () => void calls.push('relist'),
    runtimePod: (uid) => runtimePod(uid),
    log,
    deletePodStatus: (uid) => calls.push(`deleteStatus ${uid}`),
    forget: (uid) => calls.push(`forget ${uid}`),
    sync: async (uid) => void calls.push(`sync ${uid}`),
  });
  const first = restarts.restartPod('a', -5, () => calls.push('onKilled'));
  t.equal(restarts.restartPod('a', 30, () => calls.push('second onKilled')), first, 'a second request while one is pending joins it');
  t.ok(restarts.pending('a'));
  await restarts.restartNow('a');
  await first;
  t.notOk(restarts.pending('a'), 'taken once done');
  t.same(calls, ['schedule a', 'kill a grace=0 remove=true tearDown=true', 'relist', 'deleteStatus a', 'forget a', 'onKilled', 'sync a']);
  stopped = true;
  await t.rejects(restarts.restartPod('b', 1, () => undefined), /nodelet is stopping/);
});

t.test('PodEvictions: one eviction per pod, resolved once its end is told; forget clears it', async (t) => {
  const ended = new Map<string, () => void>();
  const evictions = new PodEvictions({
    getPod: (uid) => (uid === 'a' ? pod(uid) : undefined),
    stopped: () => false,
    schedule: () => undefined,
    killer: { killPod: async () => undefined },
    relist: async () => undefined,
    onEnded: (uid, done) => ended.set(uid, done),
    removeProbes: () => undefined,
  });
  t.equal(await evictions.evictPod('x', { reason: 'Evicted', message: 'm' }, 1), false, 'not a pod of this node');
  const evicted = evictions.evictPod('a', { reason: 'Evicted', message: 'm' }, -1);
  t.same(evictions.get('a'), { failure: { reason: 'Evicted', message: 'm', eventRecorded: true }, graceSeconds: 0 });
  t.equal(await evictions.evictPod('a', { reason: 'Evicted', message: 'm' }, 1), false, 'already ending');
  ended.get('a')?.();
  t.equal(await evicted, true);
  await evictions.reclaim(pod('a'), runtimePod('a'));
  t.ok(evictions.isReclaimed('a'));
  evictions.forget('a');
  t.notOk(evictions.has('a'));
  t.notOk(evictions.isReclaimed('a'));
});

t.test('PodTerminator: onceEnded is told once, onEnded every time', async (t) => {
  const terminator = new PodTerminator({
    record: () => undefined,
    publish: () => undefined,
    killer: { killPod: async () => undefined },
    relist: async () => undefined,
    terminated: () => undefined,
    evictions: { has: () => false, isReclaimed: () => false, reclaim: async () => undefined },
  });
  let once = 0;
  let every = 0;
  terminator.onceEnded('a', () => once++);
  terminator.onEnded('b', () => every++);
  for (let i = 0; i < 2; i++) {
    terminator.ended('a');
    terminator.ended('b');
  }
  t.equal(once, 1);
  t.equal(every, 2);
});

t.test('NodeShutdown: lowest priority group first, each pod with its grace; in progress from the first group', async (t) => {
  const order: string[] = [];
  const ended = new Map<string, () => void>();
  const shutdown = new NodeShutdown({
    pods: () => [pod('low', 0), pod('high', 1000)],
    log,
    onEnded: (uid, done) => ended.set(uid, done),
    schedule: (uid) => {
      order.push(`${uid} grace=${shutdown.grace(uid)}`);
      queueMicrotask(() => ended.get(uid)?.());
    },
    relist: async () => void order.push('relist'),
  });
  t.notOk(shutdown.inProgress);
  await shutdown.shutdownPods([{ priority: 0, graceSeconds: 5 }, { priority: 1000, graceSeconds: 7 }]);
  t.ok(shutdown.inProgress);
  t.same(order, ['low grace=5', 'high grace=7', 'relist']);
  t.equal(shutdown.grace('other'), undefined);
});
