/**
 * Preloaded into the bench's nodelet child (`node --expose-gc --import gc-hook.js dist/cli.js`):
 * on SIGUSR2 it runs two full GCs (the second collects what the first's finalizers released) and
 * writes `NODELET_BENCH_GC {process.memoryUsage()}` to stderr, nodelet's log. Memory figures taken
 * this way separate live state from garbage. Nothing in nodelet itself handles SIGUSR2.
 *
 * With `NODELET_BENCH_HEAP_SNAPSHOTS=DIR` (the bench's `--heap-snapshots DIR`) each collection is
 * followed by a heap snapshot `DIR/gc-<n>.heapsnapshot`, named in the line as `snapshot`; two of
 * them compare with `node dist-bench/bench/lib/heap-diff.js A B` (what each session keeps alive).
 */
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';

const gc = (globalThis as { gc?: () => void }).gc;
const snapshots = process.env.NODELET_BENCH_HEAP_SNAPSHOTS;
let taken = 0;

process.on('SIGUSR2', () => {
  if (gc) {
    gc();
    gc();
  }
  const memory = { ...process.memoryUsage(), gc: gc !== undefined };
  const snapshot = snapshots ? writeHeapSnapshot(join(snapshots, `gc-${++taken}.heapsnapshot`)) : undefined;
  process.stderr.write(`NODELET_BENCH_GC ${JSON.stringify({ ...memory, ...(snapshot ? { snapshot } : {}) })}\n`);
});
