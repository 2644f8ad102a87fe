/**
 * Jittered exponential back-off for calls to the apiserver (client-go's `wait.Backoff` shape):
 * each failure doubles the delay up to `maxMs`, a success resets it. One instance per loop.
 */
export class RetryDelay {
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #jitter: number;
  #current = 0;

  constructor(opts: { initialMs?: number; maxMs?: number; jitter?: number } = {}) {
    this.#initialMs = opts.initialMs ?? 500;
    this.#maxMs = opts.maxMs ?? 30_000;
    this.#jitter = opts.jitter ?? 0.2;
  }

  /** The delay before the next attempt after a failure. */
  next(): number {
    this.#current = this.#current === 0 ? this.#initialMs : Math.min(this.#current * 2, this.#maxMs);
    return Math.round(this.#current * (1 + Math.random() * this.#jitter));
  }

  reset(): void {
    this.#current = 0;
  }

  get failing(): boolean {
    return this.#current !== 0;
  }
}

/**
 * A timer that can be cancelled by `signal` and never keeps the process alive, unless `keepAlive`
 * (a wait that is all the process does, e.g. TLS bootstrap before anything else runs).
 */
export function delay(ms: number, signal: AbortSignal, keepAlive = false): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    if (!keepAlive) timer.unref();
    function done() {
      signal.removeEventListener('abort', done);
      clearTimeout(timer);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** `metav1.MicroTime` on the wire: RFC3339 with six fractional digits (the apiserver rejects three). */
export function microTime(d: Date): string {
  return `${d.toISOString().slice(0, 23)}000Z`;
}
