/**
 * The buffer a socket reads into with Node's `onread` (`net.Socket` option): one buffer reused
 * read after read, small for a connection that sends little, doubled (up to `max`) each time a
 * read fills it. A bulk transfer then moves `max` bytes per read and per write, for fewer
 * syscalls and larger TCP segments; an idle or interactive connection holds only `min`.
 *
 * Node asks for the next buffer after every read (`onread.buffer` as a function): `next(n)` is
 * the answer, given the bytes the last read returned. A grown buffer is a new one: the old one
 * may still be referenced by a write in flight, and is left to the garbage collector.
 */
export class GrowingReadBuffer {
  readonly #max: number;
  #buf: Buffer;

  constructor(min: number, max: number) {
    if (!(min > 0 && max >= min)) throw new RangeError(`read buffer sizes: need 0 < min <= max, got ${min}, ${max}`);
    this.#max = max;
    this.#buf = Buffer.allocUnsafeSlow(min);
  }

  get current(): Buffer {
    return this.#buf;
  }

  /** The buffer for the next read: the same one, or a twice larger one when `lastRead` filled it. */
  next(lastRead: number): Buffer {
    const size = this.#buf.length;
    if (lastRead >= size && size < this.#max) this.#buf = Buffer.allocUnsafeSlow(Math.min(size * 2, this.#max));
    return this.#buf;
  }
}
