import t from 'tap';
import { pino } from 'pino';
import { EVENTED_RELIST_PERIOD_MS, PLEG } from '../../../src/kubelet/pleg.js';
import type { Runtime, RuntimePod } from '../../../src/runtime/types.js';

/** A runtime whose listings are counted (each can be awaited) and whose event stream's state the test drives. */
function fakeRuntime() {
  const listedAt: number[] = [];
  let waiters: { n: number; resolve: () => void }[] = [];
  let stream: (up: boolean) => void = () => undefined;
  const runtime = {
    listPods: async (): Promise<RuntimePod[]> => {
      listedAt.push(performance.now());
      waiters = waiters.filter((w) => (listedAt.length >= w.n ? (w.resolve(), false) : true));
      return [];
    },
    watch: (_onChange: () => void, onStream?: (up: boolean) => void) => {
      stream = onStream ?? (() => undefined);
      return () => undefined;
    },
  } as unknown as Runtime;
  // The PLEG's timers are unref'd: this keeps the test's process up while it waits for them.
  const keepAlive = setInterval(() => undefined, 1000);
  const listings = (n: number) => new Promise<void>((resolve) => (listedAt.length >= n ? resolve() : waiters.push({ n, resolve })));
  return { runtime, listedAt, listings, stream: (up: boolean) => stream(up), done: () => clearInterval(keepAlive) };
}

t.test('the period: short while the event stream is down, the evented one while it is up; a relist when it comes back', async (t) => {
  t.ok(EVENTED_RELIST_PERIOD_MS >= 10_000, 'the evented period is the long one');
  const { runtime, listedAt, listings, stream, done } = fakeRuntime();
  const pleg = new PLEG({ runtime, log: pino({ level: 'silent' }), relistPeriodMs: 20, eventedRelistPeriodMs: 60_000, minRelistGapMs: 0 });
  pleg.start(() => undefined);
  t.teardown(() => (pleg.stop(), done()));
  await listings(3);
  t.pass('no stream yet: listed on the short period');

  const upAt = performance.now();
  const beforeUp = listedAt.length;
  stream(true);
  await listings(beforeUp + 1);
  t.ok(listedAt.at(-1)! - upAt < 20, 'listed at once when the stream came up (what it missed)');
  await new Promise((r) => setImmediate(r)); // a listing the stream's return asked for has ended
  const quietFrom = listedAt.length;
  // A measurement window, not synchronisation: ten short periods in which no listing may start.
  await new Promise((r) => setTimeout(r, 200));
  t.equal(listedAt.length, quietFrom, 'no periodic listing while the stream is up');

  const downAt = performance.now();
  stream(false);
  await listings(quietFrom + 2);
  t.ok(listedAt[quietFrom]! - downAt < 1000, `back to the short period as soon as it ended (${Math.round(listedAt[quietFrom]! - downAt)} ms)`);
});

t.test('a relist period longer than the evented one is kept while the stream is up', async (t) => {
  const { runtime, listedAt, listings, stream, done } = fakeRuntime();
  const pleg = new PLEG({ runtime, log: pino({ level: 'silent' }), relistPeriodMs: 30, eventedRelistPeriodMs: 10, minRelistGapMs: 0 });
  pleg.start(() => undefined);
  t.teardown(() => (pleg.stop(), done()));
  stream(true);
  await listings(3);
  const gaps = listedAt.slice(1).map((x, i) => x - listedAt[i]!);
  t.ok(gaps.slice(1).every((g) => g >= 29), `never more often than the relist period (${gaps.map(Math.round).join(', ')} ms)`);
});
