/**
 * Docker's stdcopy framing for non-TTY attach/exec streams: each frame is an 8-byte header
 * `[stream, 0, 0, 0, size (uint32 BE)]` and `size` payload bytes; stream 0 stdin, 1 stdout,
 * 2 stderr, 3 system error. Payloads are emitted as `subarray`s of the input — zero copy, unlike
 * dockerode's `demuxStream` (docker-modem's `lib/modem.js`), which concatenates every chunk into a
 * new buffer — and only a header split across chunks is
 * gathered (8 bytes, no allocation).
 */
export type StdStream = 1 | 2 | 3;

export class StdcopyParser {
  // The header is read straight from the chunk; only one split across chunks is gathered here,
  // in numbers (no Buffer: an idle exec keeps one parser for hours).
  #headerFill = 0;
  #stream = 0;
  #size = 0;
  #left = 0;

  /**
   * Feeds a chunk; calls `emit` for every payload piece, in order, with `self` as `this` (so a
   * long-lived caller can pass a shared function, not a closure of its own). Throws on an unknown
   * stream id.
   */
  push<T = undefined>(chunk: Buffer, emit: (this: T, stream: StdStream, payload: Buffer) => void, self?: T): void {
    let off = 0;
    while (off < chunk.length) {
      if (this.#left === 0) {
        if (this.#headerFill === 0 && chunk.length - off >= 8) {
          this.#stream = chunk[off]!;
          this.#size = chunk.readUInt32BE(off + 4);
          off += 8;
        } else {
          // Header byte i: 0 is the stream id, 4–7 the big-endian size.
          for (; this.#headerFill < 8 && off < chunk.length; this.#headerFill++, off++) {
            const byte = chunk[off]!;
            if (this.#headerFill === 0) this.#stream = byte;
            else if (this.#headerFill === 4) this.#size = byte;
            else if (this.#headerFill > 4) this.#size = this.#size * 256 + byte;
          }
          if (this.#headerFill < 8) return;
          this.#headerFill = 0;
        }
        if (this.#stream < 1 || this.#stream > 3) {
          throw new Error(`invalid Docker stream id ${this.#stream} in multiplexed output`);
        }
        this.#left = this.#size;
        continue;
      }
      const n = Math.min(this.#left, chunk.length - off);
      this.#left -= n;
      emit.call(self as T, this.#stream as StdStream, chunk.subarray(off, off + n));
      off += n;
    }
  }

  /** True when the input ended cleanly on a frame boundary. */
  get atBoundary(): boolean {
    return this.#left === 0 && this.#headerFill === 0;
  }
}
