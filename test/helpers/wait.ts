/**
 * Polls `check` until it returns a value (not undefined), or fails after `timeoutMs` naming
 * `what` and the last error `check` threw. The tests' one way to wait for a condition: no sleep
 * stands in for synchronisation, only this bounded poll.
 */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 30_000, intervalMs = 50): Promise<T> {
  // The monotonic clock: a step of the wall clock (a VM resumed, a time sync) must not end a wait early.
  const deadline = performance.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
