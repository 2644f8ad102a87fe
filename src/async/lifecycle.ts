/** One part of a process that is started and stopped with the others. */
export interface Part {
  /** For the error a failed stop is reported with. */
  readonly name: string;
  /** Absent: the part is live once added (a resource opened when it was made). */
  readonly start?: () => Promise<void> | void;
  /** Absent: nothing to undo. */
  readonly stop?: () => Promise<void> | void;
}

/**
 * An ordered list of parts: `start` starts them in the order they were added, and `stop` stops
 * every live one in the reverse order — after a failed start (only what was made or started
 * before the failure) as on a normal close, so the two can never disagree. A part without
 * `start` is live from the moment it is added, so a failure while the others are still being
 * made undoes it too. A failed stop is reported to `onStopError` and the next part is stopped
 * anyway. Starting twice, or after `stop`, is refused.
 */
export class Lifecycle {
  readonly #parts: { part: Part; live: boolean }[] = [];
  readonly #onStopError: (err: unknown, name: string) => void;
  #state: 'adding' | 'starting' | 'started' | 'stopped' = 'adding';
  #stopping: Promise<void> | undefined;

  constructor(opts: { onStopError: (err: unknown, name: string) => void }) {
    this.#onStopError = opts.onStopError;
  }

  /** Adds `part` after the others; returns it. */
  add<P extends Part>(part: P): P {
    if (this.#state !== 'adding') throw new Error(`cannot add ${part.name}: the parts were already started`);
    this.#parts.push({ part, live: part.start === undefined });
    return part;
  }

  /** Starts every part in order; on a failure, stops the live ones in reverse and rethrows. */
  async start(): Promise<void> {
    if (this.#state !== 'adding') throw new Error('the parts were already started');
    this.#state = 'starting';
    for (const entry of this.#parts) {
      if (entry.live) continue;
      try {
        await entry.part.start?.();
      } catch (err) {
        await this.stop();
        throw err;
      }
      entry.live = true;
    }
    this.#state = 'started';
  }

  /** Stops every live part in the reverse order; a second call waits for the first. */
  stop(): Promise<void> {
    this.#stopping ??= this.#stopAll();
    return this.#stopping;
  }

  async #stopAll(): Promise<void> {
    this.#state = 'stopped';
    for (const entry of [...this.#parts].reverse()) {
      if (!entry.live) continue;
      entry.live = false;
      try {
        await entry.part.stop?.();
      } catch (err) {
        this.#onStopError(err, entry.part.name);
      }
    }
  }
}
