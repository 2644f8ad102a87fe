/**
 * Single flight with one follow-up: `run()` starts `task` when none runs; calls while it runs
 * share one follow-up run after it. A burst of calls costs at most two runs, and every caller's
 * promise settles after a run that started after its call (so it sees state from after the call).
 * Used by the PLEG's relist and the stats sampler's rounds.
 */
export class Coalescer {
  readonly #task: () => Promise<void>;
  #running: Promise<void> | undefined;
  #queued: Promise<void> | undefined;

  constructor(task: () => Promise<void>) {
    this.#task = task;
  }

  run(): Promise<void> {
    if (!this.#running) {
      this.#running = this.#task().finally(() => (this.#running = undefined));
      return this.#running;
    }
    this.#queued ??= this.#running.then(() => {
      this.#queued = undefined;
      return this.run();
    });
    return this.#queued;
  }

  /** Settles when the run in flight and the follow-up queued behind it (if any) are done. */
  async idle(): Promise<void> {
    await (this.#queued ?? this.#running);
  }
}
