/**
 * Single flight with one follow-up: `run()` starts `task` when none runs; calls while it runs
 * share one follow-up run after it. A burst of calls costs at most two runs, and every caller's
 * promise settles after a run that started after its call (so it sees state from after the call).
 * Used by the PLEG's relist and the stats sampler's rounds.
 *
 * With `minGapMs`, a run starts no sooner than that long after the previous one ended: calls
 * meanwhile share the one run that starts when the gap is over. A call after a quiet spell still
 * runs at once; only back-to-back runs are paced.
 *
 * With `burst` (default 1), idle time is banked up to `burst` gaps: after a quiet spell that
 * long, `burst` runs may follow each other without a gap, and sustained calls are paced as
 * without it (each gap spent must be earned back idle). So the few runs one change asks for go at
 * once, and a long burst still runs no more often than once per gap.
 */
export class Coalescer {
  readonly #task: () => Promise<void>;
  readonly #minGapMs: number;
  /** The most idle time that can be banked (`burst` gaps). */
  readonly #maxCreditMs: number;
  readonly #now: () => number;
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #lastEnd = -Infinity;
  /** Idle time banked when the last run ended (ms); grows with the idle time since, up to the cap. */
  #creditAtEnd = 0;

  constructor(task: () => Promise<void>, opts: { minGapMs?: number; burst?: number; now?: () => number } = {}) {
    this.#task = task;
    this.#minGapMs = opts.minGapMs ?? 0;
    this.#maxCreditMs = this.#minGapMs * Math.max(1, Math.floor(opts.burst ?? 1));
    this.#now = opts.now ?? (() => performance.now());
  }

  /** The banked idle time now (no run in flight). */
  #credit(): number {
    return Math.min(this.#maxCreditMs, this.#creditAtEnd + (this.#now() - this.#lastEnd));
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
    const wait = this.#minGapMs - this.#credit();
    if (wait <= 0) return this.#start();
    // Nothing else starts a run while this one is queued: it starts when the gap is over.
    this.#queued = new Promise<void>((resolve) => setTimeout(resolve, wait)).then(() => {
      this.#queued = undefined;
      return this.#start();
    });
    return this.#queued;
  }

  #start(): Promise<void> {
    // This run spends one gap of the bank (at most what there is: a timer may fire a little early).
    const left = Math.max(0, this.#credit() - this.#minGapMs);
    this.#running = this.#task().finally(() => {
      this.#creditAtEnd = left;
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
