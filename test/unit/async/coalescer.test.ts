import t from 'tap';
import { Coalescer } from '../../../src/async/coalescer.js';

/** A task whose runs finish only when the test says so. */
function gatedTask() {
  const gates: (() => void)[] = [];
  let runs = 0;
  const task = () => {
    runs++;
    return new Promise<void>((resolve) => gates.push(resolve));
  };
  return { task, runs: () => runs, release: () => gates.shift()?.() };
}

t.test('a burst during a run shares one follow-up run; each caller waits for a run started after its call', async (t) => {
  const g = gatedTask();
  const c = new Coalescer(g.task);
  const first = c.run();
  const order: string[] = [];
  const a = c.run().then(() => order.push('a'));
  const b = c.run().then(() => order.push('b'));
  t.equal(g.runs(), 1, 'one run in flight');
  g.release();
  await first;
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(g.runs(), 2, 'the burst gets one follow-up');
  t.same(order, [], 'callers of the burst wait for the follow-up');
  let idle = false;
  const waiting = c.idle().then(() => (idle = true));
  g.release();
  await Promise.all([a, b, waiting]);
  t.same(order.sort(), ['a', 'b']);
  t.ok(idle, 'idle settles after the follow-up');
  const again = c.run();
  t.equal(g.runs(), 3, 'a call after that starts a new run at once');
  g.release();
  await again;
  await c.idle();
});

t.test('a failed run rejects its callers and does not block the next', async (t) => {
  let fail = true;
  const c = new Coalescer(async () => {
    if (fail) throw new Error('boom');
  });
  await t.rejects(c.run(), { message: 'boom' });
  fail = false;
  await t.resolves(c.run());
});

t.test('minGapMs: back-to-back runs are paced, calls during the gap share one run, a call after a quiet spell runs at once', async (t) => {
  let clock = 0;
  const started: number[] = [];
  const c = new Coalescer(async () => {
    started.push(clock);
  }, { minGapMs: 20, now: () => clock });
  await c.run();
  t.same(started, [0], 'the first call runs at once');
  const a = c.run();
  const b = c.run();
  t.equal(started.length, 1, 'a call right after a run waits for the gap');
  t.equal(a, b, 'calls during the gap share one run');
  await Promise.all([a, b]);
  t.equal(started.length, 2, 'one run for both');
  clock += 1000;
  await c.run();
  t.same(started, [0, 0, 1000]);
  clock += 1000;
  void c.run();
  t.equal(started.length, 4, 'after a quiet spell the task starts synchronously, as without a gap');
  await c.idle();
});

t.test('burst: after a quiet spell that many runs follow each other without a gap; sustained calls are paced as without it', async (t) => {
  let clock = 0;
  const started: number[] = [];
  const c = new Coalescer(async () => {
    started.push(clock);
  }, { minGapMs: 100, burst: 3, now: () => clock });
  for (let i = 0; i < 3; i++) {
    void c.run();
    await c.idle();
    clock += 10;
  }
  t.same(started, [0, 10, 20], 'three back-to-back runs start at once');
  void c.run();
  t.equal(started.length, 3, 'the fourth waits: the bank is spent');
  await c.idle();
  t.equal(started.length, 4, 'it runs once the gap is over');
  // The bank refills with idle time only: 250 ms idle buys two immediate runs, not three.
  clock += 250;
  void c.run();
  await c.idle();
  void c.run();
  await c.idle();
  t.equal(started.length, 6, 'two immediate runs after 250 ms idle');
  const waiting = c.run();
  t.equal(started.length, 6, 'the third waits');
  await waiting;
  const one = new Coalescer(async () => undefined, { minGapMs: 100, now: () => clock });
  await one.run();
  let ran = false;
  void one.run().then(() => (ran = true));
  t.notOk(ran, 'burst 1 (the default): a run right after another waits for the gap');
  await one.idle();
});

t.test('minGapMs: a burst during a run gets one follow-up after the gap; a failed run does not hold the next', async (t) => {
  const g = gatedTask();
  const c = new Coalescer(g.task, { minGapMs: 5 });
  const first = c.run();
  const follow = [c.run(), c.run(), c.run()];
  g.release();
  await first;
  t.equal(g.runs(), 1, 'the follow-up waits for the gap');
  // Poll (no fixed sleep): the follow-up starts once the gap is over.
  const deadline = Date.now() + 5000;
  while (g.runs() < 2 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve));
  t.equal(g.runs(), 2, 'one follow-up for the burst');
  g.release();
  await Promise.all(follow);
  let fail = true;
  const failing = new Coalescer(async () => {
    if (fail) throw new Error('boom');
  }, { minGapMs: 1 });
  const failed = failing.run();
  const after = failing.run();
  await t.rejects(failed, { message: 'boom' });
  fail = false;
  await t.resolves(after, 'a caller queued behind a failed run gets a run of its own');
});
