import { Socket } from 'node:net';
import type { Duplex, Writable } from 'node:stream';
import { TLSSocket } from 'node:tls';

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

/**
 * When bytes written to a socket are free again. `'tcp'`: a `net.Socket` whose `writableLength`
 * is 0 right after the write — libuv wrote every byte into the kernel, else it keeps a pointer to
 * the rest. `'tls'`: a `TLSSocket` that had nothing queued or corked, so the write reached its
 * TLSWrap at once, whose DoWrite passes the bytes to SSL_write or copies them (Node's
 * src/crypto/crypto_tls.cc); its callback only says the ciphertext left. `undefined`: anything
 * else — a JavaScript Duplex (the WebSocket tunnel) may hold a chunk after its callback — where
 * borrowed bytes must be copied instead.
 */
export type BorrowMode = 'tcp' | 'tls';

export function borrowModeOf(socket: Duplex): BorrowMode | undefined {
  return socket instanceof TLSSocket ? 'tls' : socket instanceof Socket ? 'tcp' : undefined;
}

/**
 * Writes borrowed bytes onto socket `s` (of `mode`): `write` writes the frames under one cork
 * (one writev), passing `onFlushed` as the callback of the write that carries the last borrowed
 * byte. `'released'` when the socket took the bytes (see BorrowMode); else `'queued'`, and
 * `released` runs once that last write left the socket's queue (Node calls a write's callback
 * then, or with an error when the socket is destroyed).
 */
export function writeGathered(s: Writable, mode: BorrowMode, write: (onFlushed: () => void) => void, released: () => void): 'released' | 'queued' {
  const dispatched = s.writableLength === 0 && s.writableCorked === 0;
  let queued = false;
  s.cork();
  write(() => {
    if (queued) released();
  });
  s.uncork();
  queued = mode === 'tls' ? !dispatched : s.writableLength > 0;
  return queued ? 'queued' : 'released';
}
