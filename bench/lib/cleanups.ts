/**
 * A stack of cleanups run once, newest first, on success, on failure, and on SIGINT/SIGTERM
 * (then the process exits 130). A failing step is logged and the rest still run.
 */
export interface Cleanups {
  /** Registers a cleanup; it runs before every one registered earlier. */
  push(fn: () => Promise<void>): void;
  /** Runs them (once: later calls get the same promise). */
  run(): Promise<void>;
}

export function cleanupsOnExit(log: (line: string) => void, onSignal: string): Cleanups {
  const fns: (() => Promise<void>)[] = [];
  let running: Promise<void> | undefined;
  const run = (): Promise<void> =>
    (running ??= (async () => {
      for (const fn of fns.reverse()) {
        try {
          await fn();
        } catch (err) {
          log(`cleanup: ${String(err)}`);
        }
      }
    })());
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      log(`${sig}: ${onSignal}`);
      void run().finally(() => process.exit(130));
    });
  }
  return { push: (fn) => void fns.push(fn), run };
}
