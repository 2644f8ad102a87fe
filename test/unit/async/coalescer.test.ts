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
