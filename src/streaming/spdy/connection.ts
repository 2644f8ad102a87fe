import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../logging/index.js';
import { borrowModeOf, writeGathered, type BorrowMode } from '../borrowed.js';
import { SpdyIdleTimeoutError, SpdyProtocolError } from './errors.js';
import {
  DEFAULT_WINDOW,
  GoAwayStatus,
  RstStatus,
  SettingsId,
  encodeDataHeader,
  encodeGoAway,
  encodePing,
  encodeRstStream,
  encodeSettings,
  encodeSynReply,
  encodeWindowUpdate,
  type DataFrame,
  type Frame,
  type HeadersFrame,
  type SynReplyFrame,
  type SynStreamFrame,
} from './frames.js';
import { HeaderCompressor, HeaderDecompressor, type HeaderInput, type HeaderValues } from './headers.js';
import { FrameParser } from './parser.js';
import { STREAM_HIGH_WATER_MARK, SpdyStream, type StreamControl, type StreamSession } from './stream.js';

export interface SpdyConnectionOptions {
  /** Bytes that arrived with the upgrade request, parsed before the socket's. */
  readonly head?: Buffer;
  readonly log?: Logger;
  /** Cap on one decompressed header block (default 64 KiB). */
  readonly maxHeaderBytes?: number;
  /** Concurrent client streams; SYN_STREAMs beyond it get RST_STREAM REFUSED_STREAM (default 1000). */
  readonly maxStreams?: number;
  /** 0 = none. Any received frame (PINGs included) restarts it; on expiry: GOAWAY and close. */
  readonly idleTimeoutMs?: number;
  /** Receive window advertised per stream and for the session (default 1 MiB). */
  readonly initialWindowSize?: number;
}

/** Outbound DATA frames carry at most this much, so streams interleave and backpressure is fine-grained. */
export const MAX_OUTBOUND_DATA = STREAM_HIGH_WATER_MARK;
/** Unsent bytes on the socket beyond which we stop reading (a peer that sends but never reads). */
const WRITE_BACKLOG_LIMIT = 1024 * 1024;
/** How long a closing socket may take to flush our GOAWAY before it is destroyed. */
const CLOSE_LINGER_MS = 2000;

interface StreamRecord {
  readonly id: number;
  readonly control: StreamControl;
  remoteFin: boolean;
  localFin: boolean;
  /** The SYN_REPLY is on the socket: DATA may go out. */
  replied: boolean;
  /** Set while DATA written before reply() waits; called once replied or gone. */
  openGate: (() => void) | undefined;
  /** Received bytes not yet granted back by WINDOW_UPDATE. */
  unacked: number;
}

type PauseReason = 'reader' | 'backlog';

const noop = (): void => {};

/**
 * The server side of one SPDY/3.1 session (the protocol kubectl's moby/spdystream speaks for
 * exec/attach/port-forward) over any Duplex: a TCP socket after the HTTP 101, or a WebSocket
 * byte stream for the port-forward tunnel (frames may arrive split anywhere).
 *
 * Events: `'stream'` `(stream: SpdyStream)` per accepted client SYN_STREAM; `'close'`
 * `(err?: Error)` exactly once when the session ends: socket end/close (no error), socket error,
 * protocol error (a SpdyProtocolError, after GOAWAY PROTOCOL_ERROR), idle timeout
 * (SpdyIdleTimeoutError), `close()`, or — after a GOAWAY from either side — once the last open
 * stream is done (kubectl resets its streams, then sends GOAWAY, then closes TCP).
 *
 * Flow control: outbound windows are ignored (kubectl never sends WINDOW_UPDATE), backpressure
 * comes from the socket instead: a stream write completes only once the socket took its frames.
 * Inbound, WINDOW_UPDATEs keep spec-following clients going, and when a stream's read buffer
 * is full the whole session stops reading until that stream is read (head-of-line blocking, like
 * the kubelet's per-stream io.Pipe). Header blocks are inflated and compressed synchronously, in
 * frame order (each direction's zlib context spans frames): a SYN_STREAM's 'stream' event fires
 * from inside the frame parser, and reply() puts the SYN_REPLY on the socket at once.
 */
/** Typed events (the class merges with this interface). */
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- the typed-events idiom; the interface only narrows EventEmitter's methods
export interface SpdyConnection {
  on(event: 'stream', listener: (stream: SpdyStream) => void): this;
  on(event: 'close', listener: (err?: Error) => void): this;
  once(event: 'stream', listener: (stream: SpdyStream) => void): this;
  once(event: 'close', listener: (err?: Error) => void): this;
}

// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- see the interface above
export class SpdyConnection extends EventEmitter {
  readonly #socket: Duplex;
  /** How borrowed DATA payloads are known to be free (`#writeBorrowed`); undefined: they are copied. */
  readonly #borrow: BorrowMode | undefined;
  readonly #log: Logger | undefined;
  readonly #maxStreams: number;
  readonly #idleTimeoutMs: number;
  readonly #window: number;
  readonly #parser: FrameParser;
  readonly #inflate: HeaderDecompressor;
  readonly #deflate = new HeaderCompressor();
  readonly #streams = new Map<number, StreamRecord>();
  readonly #pauses = new Set<PauseReason>();
  #idleTimer: NodeJS.Timeout | undefined;
  /** Highest client stream id seen (accepted or refused): new ones must exceed it. */
  #lastRemoteId = 0;
  /** Highest accepted stream id, for GOAWAY. */
  #lastGoodId = 0;
  #sessionUnacked = 0;
  #blockedOn: StreamRecord | undefined;
  #drain: { promise: Promise<void>; resolve: () => void } | undefined;
  #goAwaySent = false;
  #peerGoneAway = false;
  #closed = false;

  constructor(socket: Duplex, opts: SpdyConnectionOptions = {}) {
    super();
    this.#socket = socket;
    this.#borrow = borrowModeOf(socket);
    this.#log = opts.log;
    this.#maxStreams = opts.maxStreams ?? 1000;
    this.#idleTimeoutMs = opts.idleTimeoutMs ?? 0;
    this.#window = opts.initialWindowSize ?? 1024 * 1024;
    this.#inflate = new HeaderDecompressor({ maxHeaderBytes: opts.maxHeaderBytes });
    this.#parser = new FrameParser((f) => this.#onFrame(f));

    // Listeners first and forever: a socket error must never go uncaught, even after close.
    socket.on('error', (err: Error) => {
      this.#log?.debug({ err }, 'spdy: socket error');
      this.#shutdown(err, 'destroy');
    });
    socket.on('end', () => this.#shutdown(undefined, 'end'));
    socket.on('close', () => this.#shutdown(undefined, 'destroy'));
    socket.on('drain', () => this.#onDrain());
    if (this.#idleTimeoutMs > 0) {
      this.#idleTimer = setTimeout(() => this.#onIdle(), this.#idleTimeoutMs);
    }
    // Start on the next tick so the owner can attach 'stream' first.
    const head = opts.head;
    process.nextTick(() => this.#start(head));
  }

  /** Streams currently open (not yet closed in both directions, reset or destroyed). */
  get openStreams(): number {
    return this.#streams.size;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Sends GOAWAY (default status OK) naming the last accepted stream; later SYN_STREAMs are
   * ignored (§2.6.6) and the session closes once the open streams are done.
   */
  goAway(status: number = GoAwayStatus.OK): void {
    if (this.#closed || this.#goAwaySent) return;
    this.#goAwaySent = true;
    this.#write(encodeGoAway(this.#lastGoodId, status));
    this.#closeIfDrained();
  }

  /** Destroys the socket and every stream now. */
  close(): void {
    this.#shutdown(undefined, 'destroy');
  }

  // ---- input ---------------------------------------------------------------------------------

  #start(head: Buffer | undefined): void {
    if (this.#closed) return;
    // Advertise a large receive window. kubectl ignores both frames; spec clients need them.
    this.#write(encodeSettings([{ id: SettingsId.INITIAL_WINDOW_SIZE, value: this.#window, flags: 0 }]));
    if (this.#window > DEFAULT_WINDOW) this.#write(encodeWindowUpdate(0, this.#window - DEFAULT_WINDOW));
    this.#socket.on('data', (chunk: Buffer) => this.#onSocketData(chunk));
    if (head && head.length > 0) this.#onSocketData(head);
  }

  #onSocketData(chunk: Buffer): void {
    if (this.#closed) return;
    try {
      this.#parser.push(chunk);
    } catch (err) {
      this.#fail(err);
    }
  }

  #onFrame(frame: Frame): void {
    if (this.#closed) return;
    this.#idleTimer?.refresh();
    switch (frame.type) {
      case 'SYN_STREAM':
        return this.#onSynStream(frame);
      case 'SYN_REPLY':
      case 'HEADERS':
        return this.#onHeaders(frame);
      case 'DATA':
        return this.#onData(frame);
      case 'RST_STREAM': {
        // Never answer RST with RST (§2.4.2); unknown ids are simply ignored.
        const rec = this.#streams.get(frame.streamId);
        if (!rec) return;
        this.#forget(rec);
        rec.control.peerReset(frame.status);
        return;
      }
      case 'PING':
        // Odd ids are the client's (kubectl pings every 5 s and drops the session if unanswered);
        // even ids would answer pings of ours, and we send none.
        if (frame.id % 2 === 1) this.#writeControl(encodePing(frame.id));
        return;
      case 'GOAWAY':
        this.#peerGoneAway = true;
        this.#closeIfDrained();
        return;
      case 'SETTINGS':
      case 'WINDOW_UPDATE':
        return; // the send side ignores the peer's windows on purpose
    }
  }

  #onSynStream(frame: SynStreamFrame): void {
    const id = frame.streamId;
    if (id % 2 === 0 || id <= this.#lastRemoteId) {
      return this.#fail(new SpdyProtocolError(`SYN_STREAM id ${id} is even or not above ${this.#lastRemoteId}`));
    }
    this.#lastRemoteId = id;
    // Even a stream we will refuse must be inflated: the zlib context spans all frames. A zlib
    // or parse error (or a throwing 'stream' listener) propagates through the parser to #fail.
    const values = this.#inflate.decompress(frame.headerBlock);
    if (this.#goAwaySent || this.#peerGoneAway) return; // §2.6.6: ignore new streams after GOAWAY
    if (this.#streams.size >= this.#maxStreams) {
      this.#writeControl(encodeRstStream(id, RstStatus.REFUSED_STREAM));
      return;
    }
    this.#accept(id, values, frame);
  }

  #accept(id: number, values: HeaderValues, frame: SynStreamFrame): void {
    const [stream, control] = SpdyStream.open(this.#session, id, values);
    const rec: StreamRecord = {
      id,
      control,
      remoteFin: false,
      localFin: frame.unidirectional, // §2.3.6: the recipient of a unidirectional stream never sends
      replied: false,
      openGate: undefined,
      unacked: 0,
    };
    this.#streams.set(id, rec);
    this.#lastGoodId = id;
    this.#log?.debug({ streamId: id, headers: stream.headers }, 'spdy: stream opened');
    // The listener may reset the stream or close the session (which pauses the parser, so no
    // later frame of the same chunk is processed): check before going on.
    this.emit('stream', stream);
    if (frame.fin && this.#isOpen(rec)) this.#remoteFin(rec);
  }

  #onHeaders(frame: SynReplyFrame | HeadersFrame): void {
    const values = this.#inflate.decompress(frame.headerBlock); // always: the context spans frames
    const rec = this.#streams.get(frame.streamId);
    if (!rec || frame.type === 'SYN_REPLY') {
      // We never open streams, so a SYN_REPLY is always wrong; HEADERS needs an open stream.
      if (rec) return this.#resetStream(rec, RstStatus.PROTOCOL_ERROR);
      if (frame.streamId > this.#lastRemoteId || frame.streamId % 2 === 0) {
        this.#writeControl(encodeRstStream(frame.streamId, RstStatus.INVALID_STREAM));
      }
      return;
    }
    rec.control.headers(values);
    if (frame.fin && this.#isOpen(rec)) this.#remoteFin(rec);
  }

  #onData(frame: DataFrame): void {
    const rec = this.#streams.get(frame.streamId);
    if (!rec) {
      // Frames still in flight for a stream we closed, reset or refused are dropped; a stream
      // that was never opened is an error for the peer (§2.2.2).
      if (frame.streamId % 2 === 0 || frame.streamId > this.#lastRemoteId) {
        this.#writeControl(encodeRstStream(frame.streamId, RstStatus.INVALID_STREAM));
      }
      return;
    }
    if (rec.remoteFin) return this.#resetStream(rec, RstStatus.STREAM_ALREADY_CLOSED);
    const n = frame.payload.length;
    if (n > 0) {
      this.#grant(rec, n, frame.fin);
      const more = rec.control.push(frame.payload);
      // Wait for the reader only if the stream is still open (a 'data' listener may have reset
      // it just now) and more may come: after FIN, a reader that drains an ended stream never
      // asks for more.
      if (!more && !frame.fin && this.#isOpen(rec)) {
        this.#blockedOn = rec;
        this.#pauseInput('reader');
      }
    }
    if (frame.fin && this.#isOpen(rec)) this.#remoteFin(rec);
  }

  /** Returns receive window once half of it was used, per stream and for the session. */
  #grant(rec: StreamRecord, n: number, fin: boolean): void {
    const threshold = this.#window / 2;
    rec.unacked += n;
    if (!fin && rec.unacked >= threshold) {
      this.#writeControl(encodeWindowUpdate(rec.id, rec.unacked));
      rec.unacked = 0;
    }
    this.#sessionUnacked += n;
    if (this.#sessionUnacked >= threshold) {
      this.#writeControl(encodeWindowUpdate(0, this.#sessionUnacked));
      this.#sessionUnacked = 0;
    }
  }

  #remoteFin(rec: StreamRecord): void {
    rec.remoteFin = true;
    rec.control.end();
    if (rec.localFin) this.#forget(rec);
  }

  #pauseInput(reason: PauseReason): void {
    if (this.#pauses.size === 0) {
      this.#parser.pause();
      this.#socket.pause();
    }
    this.#pauses.add(reason);
  }

  #resumeInput(reason: PauseReason): void {
    if (!this.#pauses.delete(reason) || this.#pauses.size > 0 || this.#closed) return;
    try {
      this.#parser.resume(); // delivers what was buffered; may pause again
    } catch (err) {
      return this.#fail(err);
    }
    if (this.#pauses.size === 0 && !this.#closed) this.#socket.resume();
  }

  // ---- streams -------------------------------------------------------------------------------

  /** The private API SpdyStream calls back into. */
  readonly #session: StreamSession = {
    reply: (id, headers) => this.#reply(id, headers),
    write: (id, chunk, fin) => this.#writeData(id, chunk, fin),
    writeBorrowed: (id, chunk, released) => this.#writeBorrowed(id, chunk, released),
    reset: (id, status) => {
      const rec = this.#streams.get(id);
      if (rec) this.#resetStream(rec, status, false);
    },
    read: (id) => {
      if (this.#blockedOn?.id !== id) return;
      this.#blockedOn = undefined;
      // Not from inside _read: resuming delivers frames, which pushes into streams.
      process.nextTick(() => this.#resumeInput('reader'));
    },
    destroyed: (id) => {
      // Destroyed by its owner while still open: tell the peer.
      const rec = this.#streams.get(id);
      if (rec) this.#resetStream(rec, RstStatus.CANCEL, false);
    },
  };

  /** Compresses and writes the SYN_REPLY at once, so blocks go out in compression order. */
  #reply(id: number, headers: HeaderInput): Promise<void> {
    const rec = this.#streams.get(id);
    // Skipped for a stream that is gone (the session's are cleared on close): not compressing
    // it leaves the peer's inflate context intact.
    if (!rec || rec.replied) return Promise.resolve();
    let block: Buffer;
    try {
      block = this.#deflate.compress(headers);
    } catch (err) {
      this.#fail(err);
      return Promise.resolve();
    }
    this.#write(encodeSynReply(id, block));
    rec.replied = true;
    this.#release(rec);
    return Promise.resolve();
  }

  /**
   * Sends `chunk` as DATA frames. Synchronous (undefined) when the stream's SYN_REPLY is out and
   * the socket took every frame — the relay's hot path allocates no promise; otherwise a promise
   * that settles once the reply went out and the socket drained (never rejects).
   */
  #writeData(id: number, chunk: Buffer, fin: boolean): Promise<void> | undefined {
    const rec = this.#streams.get(id);
    if (!rec || rec.localFin) return undefined;
    // DATA never overtakes its stream's SYN_REPLY (earlier streams' replies are out already).
    if (!rec.replied) return this.#writeAfterReply(rec, chunk, fin);
    return chunk.length === 0 && !fin ? undefined : this.#sendData(id, chunk, 0, fin);
  }

  /** The stream serializes its writes, so at most one waits per stream. */
  async #writeAfterReply(rec: StreamRecord, chunk: Buffer, fin: boolean): Promise<void> {
    await new Promise<void>((resolve) => (rec.openGate = resolve));
    if (chunk.length === 0 && !fin) return;
    await this.#sendData(rec.id, chunk, 0, fin);
  }

  /** Lets DATA held for the SYN_REPLY go (to be sent, or dropped if the stream is gone). */
  #release(rec: StreamRecord): void {
    const open = rec.openGate;
    rec.openGate = undefined;
    open?.();
  }

  #sendData(id: number, chunk: Buffer, from: number, fin: boolean): Promise<void> | undefined {
    let off = from;
    do {
      const rec = this.#streams.get(id);
      if (!rec || rec.localFin || this.#closed) return undefined;
      const n = Math.min(MAX_OUTBOUND_DATA, chunk.length - off);
      const last = off + n >= chunk.length;
      const accepted = this.#writeDataFrame(encodeDataHeader(id, n, fin && last), n === chunk.length ? chunk : chunk.subarray(off, off + n));
      off += n;
      if (fin && last) {
        rec.localFin = true;
        if (rec.remoteFin) this.#forget(rec);
      }
      if (!accepted) {
        const rest = off;
        return this.#drained().then(() => (rest < chunk.length ? this.#sendData(id, chunk, rest, fin) : undefined));
      }
    } while (off < chunk.length);
    return undefined;
  }

  /**
   * DATA frames of `chunk` (memory the caller reuses) in one writev; `writeGathered` says whether
   * the socket took them at once (the common case) or `released` follows.
   */
  #writeBorrowed(id: number, chunk: Buffer, released: () => void): 'released' | 'queued' | 'unready' {
    const rec = this.#streams.get(id);
    if (!rec || rec.localFin || this.#closed) return 'released';
    if (!rec.replied || !this.#borrow) return 'unready';
    const s = this.#socket;
    if (s.destroyed || s.writableEnded || chunk.length === 0) return 'released';
    return writeGathered(
      s,
      this.#borrow,
      (onFlushed) => {
        for (let off = 0; off < chunk.length; ) {
          const n = Math.min(MAX_OUTBOUND_DATA, chunk.length - off);
          s.write(encodeDataHeader(id, n, false));
          const last = off + n >= chunk.length;
          s.write(n === chunk.length ? chunk : chunk.subarray(off, off + n), last ? onFlushed : undefined);
          off += n;
        }
      },
      released,
    );
  }

  #resetStream(rec: StreamRecord, status: number, destroy = true): void {
    this.#forget(rec);
    this.#writeControl(encodeRstStream(rec.id, status));
    if (destroy) rec.control.abort();
  }

  #isOpen(rec: StreamRecord): boolean {
    return this.#streams.get(rec.id) === rec;
  }

  /** Drops a stream that is closed both ways, reset or destroyed. */
  #forget(rec: StreamRecord): void {
    if (!this.#isOpen(rec)) return;
    this.#streams.delete(rec.id);
    this.#release(rec);
    if (this.#blockedOn === rec) {
      this.#blockedOn = undefined;
      process.nextTick(() => this.#resumeInput('reader'));
    }
    this.#closeIfDrained();
  }

  #closeIfDrained(): void {
    if ((this.#goAwaySent || this.#peerGoneAway) && this.#streams.size === 0) this.#shutdown(undefined, 'end');
  }

  // ---- output --------------------------------------------------------------------------------

  /** Writes one frame; returns the socket's backpressure verdict. */
  /** A DATA frame as header + payload view, gathered into one socket write (no payload copy). */
  #writeDataFrame(header: Buffer, payload: Buffer): boolean {
    const s = this.#socket;
    if (this.#closed || s.destroyed || s.writableEnded) return true;
    if (payload.length === 0) return s.write(header);
    s.cork();
    s.write(header);
    const accepted = s.write(payload);
    s.uncork();
    return accepted;
  }

  #write(frame: Buffer): boolean {
    const s = this.#socket;
    if (this.#closed || s.destroyed || s.writableEnded) return true;
    return s.write(frame);
  }

  /** Frames sent in answer to the peer's: if it never reads, stop reading it too. */
  #writeControl(frame: Buffer): void {
    this.#write(frame);
    if (this.#socket.writableLength > WRITE_BACKLOG_LIMIT && !this.#pauses.has('backlog') && !this.#closed) {
      this.#pauseInput('backlog');
      void this.#drained().then(() => this.#resumeInput('backlog'));
    }
  }

  #drained(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (!this.#drain) {
      let resolve = noop;
      const promise = new Promise<void>((r) => (resolve = r));
      this.#drain = { promise, resolve };
    }
    return this.#drain.promise;
  }

  #onDrain(): void {
    const d = this.#drain;
    this.#drain = undefined;
    d?.resolve();
  }

  // ---- teardown ------------------------------------------------------------------------------

  #onIdle(): void {
    if (this.#closed) return;
    this.#log?.debug({ idleTimeoutMs: this.#idleTimeoutMs }, 'spdy: idle timeout');
    if (!this.#goAwaySent) this.#write(encodeGoAway(this.#lastGoodId, GoAwayStatus.OK));
    this.#shutdown(new SpdyIdleTimeoutError(this.#idleTimeoutMs), 'end');
  }

  /** A protocol violation (or an internal failure): GOAWAY with its status, then close. */
  #fail(err: unknown): void {
    if (this.#closed) return;
    const e = err instanceof Error ? err : new Error(String(err));
    const status = e instanceof SpdyProtocolError ? e.status : GoAwayStatus.INTERNAL_ERROR;
    if (e instanceof SpdyProtocolError) this.#log?.debug({ err: e }, 'spdy: protocol error');
    else this.#log?.warn({ err: e }, 'spdy: session failed');
    this.#write(encodeGoAway(this.#lastGoodId, status));
    this.#shutdown(e, 'end');
  }

  /**
   * Ends the session once. 'end' lets queued frames (our GOAWAY) flush before the socket is
   * destroyed, at most CLOSE_LINGER_MS later; 'destroy' drops everything now.
   */
  #shutdown(err: Error | undefined, how: 'end' | 'destroy'): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    this.#parser.pause();
    const recs = [...this.#streams.values()];
    this.#streams.clear();
    this.#blockedOn = undefined;
    for (const rec of recs) {
      this.#release(rec);
      rec.control.abort();
    }
    this.#onDrain();
    this.#deflate.close();
    this.#inflate.close();
    const s = this.#socket;
    if (how === 'end' && !s.destroyed) {
      s.end();
      s.resume(); // discard input so the peer's FIN can arrive
      setTimeout(() => s.destroy(), CLOSE_LINGER_MS).unref();
    } else {
      s.destroy();
    }
    process.nextTick(() => this.emit('close', err));
  }
}
