import type { Writable } from 'node:stream';

/**
 * Writing bytes that live in a buffer the caller reuses: a relay that reads its socket into one
 * fixed buffer (`net.Socket`'s `onread`) instead of a fresh 64 KiB allocation per read. Fresh read
 * buffers cost more than the bytes in them: each one is a malloc that V8 frees in batches, glibc
 * gives the memory back, and the kernel then faults in and zeroes new pages inside the next read
 * (a quarter of nodelet's CPU in a port-forward download, from `perf`).
 */
export interface BorrowingWriter {
  /**
   * Writes `chunk`, whose memory the caller will overwrite. `true`: nothing refers to `chunk` any
   * more (the bytes were handed to the kernel, copied, or dropped because the writer is gone), so
   * the caller may reuse it and write again. `false`: `chunk` is still queued; `released` is called
   * exactly once when it is not (sent, or dropped), and the caller must neither reuse it nor write
   * again before then — which is also the writer's backpressure.
   */
  writeBorrowed(chunk: Buffer, released: () => void): boolean;
}

function isBorrowingWriter(w: Writable): w is Writable & BorrowingWriter {
  return typeof (w as Partial<BorrowingWriter>).writeBorrowed === 'function';
}

/**
 * `BorrowingWriter.writeBorrowed` on any Writable: the writer's own when it has one; otherwise a
 * copy of `chunk` is written, and `false` (wait for `released`) means the Writable asked for
 * backpressure — `released` then comes with 'drain', or with 'close' if it is destroyed first.
 */
export function writeBorrowed(w: Writable, chunk: Buffer, released: () => void): boolean {
  return isBorrowingWriter(w) ? w.writeBorrowed(chunk, released) : writeCopy(w, chunk, released);
}

/** The fallback of `writeBorrowed`: `w.write` of a copy, `released` once `w` drained (or closed). */
export function writeCopy(w: Writable, chunk: Buffer, released: () => void): boolean {
  if (w.destroyed || w.writableEnded) return true;
  if (w.write(Buffer.from(chunk))) return true;
  const done = (): void => {
    w.off('drain', done);
    w.off('close', done);
    released();
  };
  w.on('drain', done);
  w.on('close', done);
  return false;
}
