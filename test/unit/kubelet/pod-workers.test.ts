import t from 'tap';
import { PodWorkers } from '../../../src/kubelet/pod-workers.js';

const tick = () => new Promise((r) => setImmediate(r));

t.test('syncs of one pod never overlap; requests during a sync coalesce into one more run', async (t) => {
  let running = 0;
  let maxRunning = 0;
  const runs: string[] = [];
  let release: (() => void) | undefined;
  const workers = new PodWorkers({
    sync: async (uid) => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      runs.push(uid);
      if (uid === 'a' && runs.filter((r) => r === 'a').length === 1) await new Promise<void>((r) => (release = r));
      running--;
    },
    onError: () => t.fail('no error expected'),
    isGone: () => false,
  });
  workers.schedule('a');
  await tick();
  workers.schedule('a');
  workers.schedule('a');
  workers.schedule('b');
  await tick();
  t.same(runs, ['a', 'b'], 'b runs beside a; the repeated a waits');
  release?.();
  await tick();
  await tick();
  t.same(runs, ['a', 'b', 'a'], 'two requests during the sync: exactly one more run');
  t.equal(maxRunning, 2, 'never two syncs of the same pod (two pods at once is fine)');
  await workers.stop();
});

t.test('errors are reported and do not stop the worker; gone pods are forgotten; stop waits', async (t) => {
  const errors: string[] = [];
  let gone = false;
  let calls = 0;
  const workers = new PodWorkers({
    sync: async () => {
      calls++;
      if (calls === 1) throw new Error('boom');
    },
    onError: (err, uid) => errors.push(`${uid}: ${(err as Error).message}`),
    isGone: () => gone,
  });
  workers.schedule('p');
  await tick();
  t.same(errors, ['p: boom']);
  t.equal(workers.size, 1, 'kept while the pod exists');
  gone = true;
  workers.schedule('p');
  await tick();
  await tick();
  t.equal(workers.size, 0, 'forgotten once the pod is gone');
  workers.schedule('');
  t.equal(workers.size, 0, 'an empty UID is ignored');
  let finished = false;
  const slow = new PodWorkers({ sync: () => new Promise<void>((r) => setTimeout(() => { finished = true; r(); }, 30)), onError: () => undefined, isGone: () => false });
  slow.schedule('x');
  await slow.stop();
  t.ok(finished, 'stop waits for the running sync');
  slow.schedule('x');
  t.equal(calls, 2);
});

t.test('stop waits for a running sync at most as long as it is told, and names the ones it left', async (t) => {
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const workers = new PodWorkers({ sync: (uid) => (uid === 'long' ? held : Promise.resolve()), onError: () => undefined, isGone: () => false });
  workers.schedule('long');
  workers.schedule('short');
  t.same(await workers.stop(20), ['long'], 'the sync still running past the wait is named; the finished one is not');
  release();
  await held;
  const quick = new PodWorkers({ sync: () => Promise.resolve(), onError: () => undefined, isGone: () => false });
  quick.schedule('a');
  t.same(await quick.stop(60_000), [], 'nothing left when every sync finished in time (and no timer keeps the wait)');
});

t.test('scheduleAfter arms one timer per pod', async (t) => {
  const at: number[] = [];
  const start = Date.now();
  const workers = new PodWorkers({ sync: async () => void at.push(Date.now() - start), onError: () => undefined, isGone: () => false });
  workers.schedule('p');
  await tick();
  workers.scheduleAfter('p', 10);
  workers.scheduleAfter('p', 10_000);
  for (const deadline = Date.now() + 2000; at.length < 2 && Date.now() < deadline; ) await tick();
  t.equal(at.length, 2, 'the first run, then the earliest timer; the second timer was not armed');
  t.ok((at[1] ?? 0) >= 10, 'not before its delay');
  workers.scheduleAfter('unknown', 1);
  t.equal(workers.size, 1, 'no timer (and no worker) for a pod never scheduled');
  await workers.stop();
});
