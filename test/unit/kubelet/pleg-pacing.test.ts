import t from 'tap';
import { pino } from 'pino';
import { MIN_RELIST_GAP_MS, PLEG, RELIST_BURST } from '../../../src/kubelet/pleg.js';
import type { Runtime, RuntimePod } from '../../../src/runtime/types.js';

/** A runtime whose listings are counted and timed, and whose event stream the test drives. */
function fakeRuntime() {
  const listedAt: number[] = [];
  const endedAt: number[] = [];
  let emit: () => void = () => undefined;
  const runtime = {
    listPods: async (): Promise<RuntimePod[]> => {
      listedAt.push(performance.now());
      await Promise.resolve();
      endedAt.push(performance.now());
      return [];
    },
    watch: (onChange: () => void) => {
      emit = onChange;
      return () => undefined;
    },
  } as unknown as Runtime;
  return { runtime, listedAt, endedAt, emit: () => emit() };
}

t.test('a burst of runtime events costs at most two listings; back-to-back relists keep the least gap once the banked ones are spent', async (t) => {
  const { runtime, listedAt, endedAt, emit } = fakeRuntime();
  const pleg = new PLEG({ runtime, log: pino({ level: 'silent' }), relistPeriodMs: 60_000 });
  pleg.start(() => undefined);
  t.teardown(() => pleg.stop());
  for (let i = 0; i < 50; i++) emit();
  await pleg.relist();
  t.ok(listedAt.length >= 1 && listedAt.length <= 2, `${listedAt.length} listings for 50 events and a relist`);
  // After the quiet start RELIST_BURST listings may follow each other at once (the bank; its
  // arithmetic is coalescer.test.ts's, on a fake clock); the next one waits for the gap.
  while (listedAt.length < RELIST_BURST) await pleg.relist();
  const before = listedAt.length;
  await pleg.relist();
  t.equal(listedAt.length, before + 1, 'a relist asked right after one ended lists once more');
  // The previous listing ended no later than the PLEG saw it end; timers round to the millisecond.
  // What the bank still held is the idle time between the banked listings, at most the time since
  // the first began: the gap less that is the least wait.
  const waited = listedAt.at(-1)! - endedAt.at(-2)!;
  const leftover = endedAt.at(-2)! - listedAt[0]!;
  t.ok(waited >= MIN_RELIST_GAP_MS - 1 - leftover, `it started ${Math.round(waited)} ms after the previous one ended, the gap being ${MIN_RELIST_GAP_MS} less ${leftover.toFixed(1)} ms banked`);
  t.ok(waited >= MIN_RELIST_GAP_MS / 2, 'a real wait, not a banked start');
});

t.test('without a gap (minRelistGapMs 0) a relist asked after one ended lists at once', async (t) => {
  const { runtime, listedAt } = fakeRuntime();
  const pleg = new PLEG({ runtime, log: pino({ level: 'silent' }), relistPeriodMs: 60_000, minRelistGapMs: 0 });
  await pleg.relist();
  void pleg.relist();
  t.equal(listedAt.length, 2, 'the second listing started synchronously');
});
