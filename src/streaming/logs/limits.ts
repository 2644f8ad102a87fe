/**
 * How many container log streams (follow or not) are served at once. Each holds a client socket,
 * a Docker connection and their buffers for as long as the client keeps it open; a client that
 * never reads costs as much as one that does.
 */

/** Default of `--max-container-log-streams`. */
export const DEFAULT_MAX_CONTAINER_LOG_STREAMS = 256;
/** `Retry-After` of the 429 beyond it: a log stream ends when its reader leaves, usually soon. */
export const LOG_STREAMS_RETRY_AFTER_SECONDS = 10;

export class LogStreamSlots {
  readonly max: number;
  #active = 0;

  constructor(max: number) {
    this.max = max;
  }

  get active(): number {
    return this.#active;
  }

  /** A slot, or `undefined` at the cap; the returned release is idempotent. */
  tryAcquire(): (() => void) | undefined {
    if (this.#active >= this.max) return undefined;
    this.#active++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#active--;
    };
  }
}
