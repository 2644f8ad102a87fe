/**
 * Preloaded into the bench's nodelet child (`node --expose-gc --import gc-hook.js dist/cli.js`):
 * on SIGUSR2 it runs two full GCs (the second collects what the first's finalizers released) and
 * writes `NODELET_BENCH_GC {process.memoryUsage()}` to stderr, nodelet's log. Memory figures taken
 * this way separate live state from garbage. Nothing in nodelet itself handles SIGUSR2.
 */
const gc = (globalThis as { gc?: () => void }).gc;

process.on('SIGUSR2', () => {
  if (gc) {
    gc();
    gc();
  }
  process.stderr.write(`NODELET_BENCH_GC ${JSON.stringify({ ...process.memoryUsage(), gc: gc !== undefined })}\n`);
});
