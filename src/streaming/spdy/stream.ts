import { Duplex } from 'node:stream';
import { writeCopy, type BorrowingWriter } from '../borrowed.js';
import { RstStatus } from './frames.js';
import { firstValues, type HeaderInput, type HeaderValues } from './headers.js';

/** Bytes buffered per direction before backpressure; also the outbound DATA frame size. */
export const STREAM_HIGH_WATER_MARK = 64 * 1024;

const EMPTY = Buffer.alloc(0);

/** What a stream asks of its session. Implemented privately by SpdyConnection. */
export interface StreamSession {
  reply(id: number, headers: HeaderInput): Promise<void>;
  /** Undefined when the socket accepted the bytes at once; else resolves once it did (or the stream/session died); never rejects. */
  write(id: number, chunk: Buffer, fin: boolean): Promise<void> | undefined;
  /**
   * DATA from memory the caller reuses, straight onto the socket: `'released'` when the socket
   * keeps no reference (or the stream is gone), `'queued'` when `released` will be called once it
   * does not, `'unready'` when nothing was written (no SYN_REPLY yet, or a socket whose write
   * completion does not prove the bytes were taken).
   */
  writeBorrowed(id: number, chunk: Buffer, released: () => void): 'released' | 'queued' | 'unready';
  reset(id: number, status: number): void;
  /** The reader wants more: lets the session resume reading if it paused for this stream. */
  read(id: number): void;
  destroyed(id: number): void;
}

/** How the session drives a stream's readable side. */
export interface StreamControl {
  /** false when the reader's buffer is full. */
  push(payload: Buffer): boolean;
  end(): void;
  peerReset(status: number): void;
  headers(values: HeaderValues): void;
  /** The session is gone: destroy without an error. */
  abort(): void;
}

/**
 * One client-opened SPDY stream as a Duplex. Readable side: the client's DATA (its FIN ends it).
 * Writable side: DATA to the client; `end()` sends FIN. Nothing is sent before `reply()`: writes
 * wait until the SYN_REPLY is on the socket (spdystream drops DATA that precedes it).
 *
 * Events besides Duplex's: `'reset'` `(status: number)` when the client sent RST_STREAM (the
 * stream is then destroyed without an error), `'headers'` `(values: HeaderValues)` for a
 * HEADERS frame.
 *
 * Every stream must be read (or `resume()`d, or `reset()`): the session stops reading its socket
 * while any stream's read buffer is full, like the kubelet's io.Pipe per stream.
 */
export class SpdyStream extends Duplex implements BorrowingWriter {
  readonly id: number;
  /** Lower-cased header names → first value (`streamtype`, `port`, `requestid`, …). */
  readonly headers: Readonly<Record<string, string>>;
  /** Every value of each header (SPDY joins repeated values with NUL). */
  readonly headerValues: HeaderValues;
  readonly #session: StreamSession;
  #replied: Promise<void> | undefined;

  /** @internal Streams are created by SpdyConnection. */
  static open(session: StreamSession, id: number, values: HeaderValues): [SpdyStream, StreamControl] {
    const s = new SpdyStream(session, id, values);
    const control: StreamControl = {
      push: (payload) => s.push(payload),
      end: () => s.push(null),
      peerReset: (status) => {
        s.emit('reset', status);
        s.destroy();
      },
      headers: (v) => s.emit('headers', v),
      abort: () => s.destroy(),
    };
    return [s, control];
  }

  private constructor(session: StreamSession, id: number, values: HeaderValues) {
    super({ allowHalfOpen: true, readableHighWaterMark: STREAM_HIGH_WATER_MARK, writableHighWaterMark: STREAM_HIGH_WATER_MARK });
    this.#session = session;
    this.id = id;
    this.headerValues = values;
    this.headers = firstValues(values);
  }

  /**
   * Sends SYN_REPLY (default: no headers, as the kubelet's spdystream server does): it is on the
   * socket when this returns, and the promise is already resolved. Never rejects: if the stream
   * or the session ended first, nothing is sent (`destroyed` tells). Later calls return the first
   * call's promise.
   *
   * kubectl reads no stream until every stream it opened has its reply, so reply to all the
   * streams of a command before producing output.
   */
  reply(headers: HeaderInput = {}): Promise<void> {
    this.#replied ??= this.#session.reply(this.id, headers);
    return this.#replied;
  }

  /** Sends RST_STREAM (default CANCEL) and destroys the stream. */
  reset(status: number = RstStatus.CANCEL): void {
    if (this.destroyed) return;
    this.#session.reset(this.id, status);
    this.destroy();
  }

  /**
   * `BorrowingWriter`: the relay's hot path. While the writable side is idle (nothing buffered or
   * in flight, not ending) the bytes go straight to the session as DATA, skipping the Writable's
   * queue and callbacks; otherwise — or before the SYN_REPLY — a copy takes the ordinary path
   * behind what is queued, so the order of bytes never changes.
   */
  writeBorrowed(chunk: Buffer, released: () => void): boolean {
    if (this.destroyed || this.writableEnded) return true;
    if (this.writableLength === 0 && !this.writableCorked) {
      const r = this.#session.writeBorrowed(this.id, chunk, released);
      if (r !== 'unready') return r === 'released';
    }
    return writeCopy(this, chunk, released);
  }

  override _read(): void {
    this.#session.read(this.id);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, cb: (err?: Error | null) => void): void {
    const pending = this.#session.write(this.id, chunk, false);
    if (pending) pending.then(() => cb(), cb);
    else cb();
  }

  override _final(cb: (err?: Error | null) => void): void {
    const pending = this.#session.write(this.id, EMPTY, true);
    if (pending) pending.then(() => cb(), cb);
    else cb();
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.#session.destroyed(this.id);
    cb(err);
  }
}

