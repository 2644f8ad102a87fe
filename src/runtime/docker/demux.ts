/**
 * Docker's stdcopy framing for non-TTY attach/exec streams: each frame is an 8-byte header
 * `[stream, 0, 0, 0, size (uint32 BE)]` and `size` payload bytes; stream 0 stdin, 1 stdout,
 * 2 stderr, 3 system error. Payloads are emitted as `subarray`s of the input — zero copy, unlike
 * dockerode's `demuxStream` (perf-baselines.md §2) — and only a header split across chunks is
 * copied (8 bytes).
 */
export type StdStream = 1 | 2 | 3;

export class StdcopyParser {
  readonly #header = Buffer.alloc(8);
  #headerFill = 0;
  #stream = 0;
  #left = 0;

  /** Feeds a chunk; calls `emit` for every payload piece, in order. Throws on an unknown stream id. */
  push(chunk: Buffer, emit: (stream: StdStream, payload: Buffer) => void): void {
    let off = 0;
    while (off < chunk.length) {
      if (this.#left === 0) {
        const take = Math.min(8 - this.#headerFill, chunk.length - off);
        chunk.copy(this.#header, this.#headerFill, off, off + take);
        this.#headerFill += take;
        off += take;
        if (this.#headerFill < 8) return;
        this.#headerFill = 0;
        this.#stream = this.#header.readUInt8(0);
        this.#left = this.#header.readUInt32BE(4);
        if (this.#stream < 1 || this.#stream > 3) {
          throw new Error(`invalid Docker stream id ${this.#stream} in multiplexed output`);
        }
        continue;
      }
      const n = Math.min(this.#left, chunk.length - off);
      this.#left -= n;
      emit(this.#stream as StdStream, chunk.subarray(off, off + n));
      off += n;
    }
  }

  /** True when the input ended cleanly on a frame boundary. */
  get atBoundary(): boolean {
    return this.#left === 0 && this.#headerFill === 0;
  }
}
