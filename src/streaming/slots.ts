/**
 * A counting limit on something a client can make nodelet hold (log streams, forwarded
 * connections): `tryAcquire` never waits — at the cap it answers undefined so the caller refuses
 * at once — and each slot's release is idempotent, so every exit path may call it.
 */
export class CountingSlots {
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
