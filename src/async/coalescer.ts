/**
 * Single flight with one follow-up: `run()` starts `task` when none runs; calls while it runs
 * share one follow-up run after it. A burst of calls costs at most two runs, and every caller's
 * promise settles after a run that started after its call (so it sees state from after the call).
 * Used by the PLEG's relist and the stats sampler's rounds.
 *
 * With `minGapMs`, a run starts no sooner than that long after the previous one ended: calls
 * meanwhile share the one run that starts when the gap is over. A call after a quiet spell still
 * runs at once; only back-to-back runs are paced.
 */
export class Coalescer {
  readonly #task: () => Promise<void>;
  readonly #minGapMs: number;
  readonly #now: () => number;
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #lastEnd = -Infinity;

  constructor(task: () => Promise<void>, opts: { minGapMs?: number; now?: () => number } = {}) {
    this.#task = task;
    this.#minGapMs = opts.minGapMs ?? 0;
    this.#now = opts.now ?? (() => performance.now());
  }

  run(): Promise<void> {
    if (this.#queued) return this.#queued;
    if (this.#running) {
      this.#queued = this.#running.then(
        () => this.#followUp(),
        () => this.#followUp(),
      );
      return this.#queued;
    }
    const wait = this.#lastEnd + this.#minGapMs - this.#now();
    if (wait <= 0) return this.#start();
    // Nothing else starts a run while this one is queued: it starts when the gap is over.
    this.#queued = new Promise<void>((resolve) => setTimeout(resolve, wait)).then(() => {
      this.#queued = undefined;
      return this.#start();
    });
    return this.#queued;
  }

  #start(): Promise<void> {
    this.#running = this.#task().finally(() => {
      this.#running = undefined;
      this.#lastEnd = this.#now();
    });
    return this.#running;
  }

  #followUp(): Promise<void> {
    this.#queued = undefined;
    return this.run();
  }

  /** Settles when the run in flight and the follow-up queued behind it (if any) are done. */
  async idle(): Promise<void> {
    await (this.#queued ?? this.#running);
  }
}
