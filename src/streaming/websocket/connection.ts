import type { Duplex } from 'node:stream';
import type WebSocket from 'ws';
import type { Logger } from '../../logging/index.js';
import { borrowModeOf, writeGathered, type BorrowMode } from '../borrowed.js';
import { decodeFrame, type Framing } from './channels.js';
import { IdleSweep, type IdleMember } from './idle.js';

/**
 * Outbound backpressure: a channel write completes at once while the socket holds less than this
 * unsent, else on the socket's 'drain' — so a slow client slows the source instead of growing our
 * memory (the kubelet's blocking `Message.Send`). Nothing is ever queued beyond it.
 */
export const OUTBOUND_HIGH_WATER_MARK = 1024 * 1024;
/** Largest payload per outbound frame (the kubelet's io.Copy frames are ≤ 32 KiB). */
export const MAX_FRAME_PAYLOAD = 64 * 1024;

export interface ChannelConnectionOptions {
  readonly framing: Framing;
  /** No frame either way (pings count) for this long ends the connection with 1001; 0 = off. */
  readonly idleTimeoutMs: number;
  /** After our close frame, how long to wait for the client's before dropping the socket. */
  readonly closeWaitMs: number;
  readonly log: Pick<Logger, 'debug' | 'info' | 'warn'>;
  /** Inbound data; `payload` is a view of the message (keeping it pins at most that message). */
  readonly onData: (channel: number, payload: Buffer) => void;
  /** v5 `[0xFF, channel]` half-close of a channel. */
  readonly onHalfClose?: (channel: number) => void;
  /** Called once when the client becomes unreachable (closed, errored, idle, protocol violation). */
  readonly onGone?: (why: string) => void;
}

type Callback = (err?: Error | null) => void;

/** The connection a `ws` WebSocket or its socket belongs to, for the shared listeners. */
const kConnection = Symbol('nodelet.channelConnection');
type Owned = { [kConnection]?: ChannelConnection };

/**
 * One `*.channel.k8s.io` WebSocket connection, shared by exec/attach and port-forward: channel
 * framing both ways, the idle timer, inbound flow control (`pause`/`resume` by key), outbound
 * backpressure, and close-and-wait.
 *
 * Binary frames are written by this class straight onto the upgraded `socket` (which `ws` keeps
 * reading and writing control frames on): header and payload as separate chunks under one
 * cork/uncork, so no payload is ever copied to prepend its channel byte. This is safe because
 * `ws` (no permessage-deflate, no Blobs) writes every frame synchronously, so frames never
 * interleave. Base64 protocols go through `ws.send`.
 */
export class ChannelConnection implements IdleMember {
  readonly #ws: WebSocket;
  readonly #socket: Duplex;
  /** How borrowed payloads are known to be free (`writeBorrowed`); undefined: they are copied. */
  readonly #borrow: BorrowMode | undefined;
  readonly #opts: ChannelConnectionOptions;
  readonly #pausedBy = new Set<number>();
  /** Write callbacks waiting for the socket's 'drain'; released at once when the client goes away. */
  #waiting: Callback[] = [];
  #gone = false;
  #lastActivity = Date.now();
  #closing: Promise<void> | undefined;
  /** Resolves once `ws` emitted 'close'; made when first waited for (`#whenClosed`), not per session. */
  #closed: Promise<void> | undefined;
  #markClosed: (() => void) | undefined;
  readonly gone: Promise<void>;
  #markGone!: () => void;

  constructor(ws: WebSocket, socket: Duplex, opts: ChannelConnectionOptions) {
    this.#ws = ws;
    this.#socket = socket;
    this.#borrow = borrowModeOf(socket);
    this.#opts = opts;
    this.gone = new Promise((resolve) => (this.#markGone = resolve));
    (ws as Owned)[kConnection] = this;
    (socket as Owned)[kConnection] = this;
    ws.on('message', ChannelConnection.#onMessage);
    ws.on('ping', ChannelConnection.#touch);
    ws.on('pong', ChannelConnection.#touch);
    ws.on('close', ChannelConnection.#onClose);
    ws.on('error', ChannelConnection.#onError);
    socket.on('drain', ChannelConnection.#onDrain);
    if (ws.readyState !== ws.OPEN) this.#clientGone('socket closed before the session started');
    else if (opts.idleTimeoutMs > 0) idleSweep.add(this);
  }

  get isGone(): boolean {
    return this.#gone;
  }

  /**
   * Writes `data` (one chunk, or several coalesced into one frame) on `channel`; `cb` runs at once
   * while the socket has room, else once it drained. After the client left, writes are discarded
   * (the owner's abort signal is how the producer learns it).
   */
  write(channel: number, data: Buffer | readonly Buffer[], cb: Callback): void {
    if (this.#gone || this.#ws.readyState !== this.#ws.OPEN) return cb();
    this.#lastActivity = Date.now();
    if (this.#opts.framing.base64) this.#sendText(channel, Buffer.isBuffer(data) ? data : Buffer.concat(data));
    else if (Buffer.isBuffer(data)) this.#frames(channel, data);
    else if (data.length === 1) this.#frames(channel, data[0] as Buffer);
    else this.#coalesced(channel, data);
    if (this.#socket.writableLength < OUTBOUND_HIGH_WATER_MARK) cb();
    else this.#waiting.push(cb);
  }

  /**
   * `write` of bytes the caller reuses (src/streaming/borrowed.ts): `'released'` when the socket
   * took them, `'queued'` when `released` follows once it did (which is also the backpressure),
   * `'unready'` when nothing was written (base64 framing, or a socket that cannot tell) and the
   * caller must copy. After the client left, the bytes are discarded: `'released'`.
   */
  writeBorrowed(channel: number, payload: Buffer, released: () => void): 'released' | 'queued' | 'unready' {
    if (this.#gone || this.#ws.readyState !== this.#ws.OPEN) return 'released';
    if (this.#opts.framing.base64 || !this.#borrow) return 'unready';
    this.#lastActivity = Date.now();
    return writeGathered(this.#socket, this.#borrow, (onFlushed) => this.#frames(channel, payload, onFlushed), released);
  }

  /** `write`, as a promise that resolves once the socket has room or the client went away. */
  send(channel: number, payload: Buffer): Promise<void> {
    return new Promise((resolve) => this.write(channel, payload, () => resolve()));
  }

  /** Stops reading the socket until every key that paused it resumed it (a full consumer, per channel). */
  pause(key: number): void {
    if (this.#pausedBy.size === 0) this.#ws.pause();
    this.#pausedBy.add(key);
  }

  resume(key: number): void {
    if (this.#pausedBy.delete(key) && this.#pausedBy.size === 0) this.#ws.resume();
  }

  /** We end the connection (idle, violation, pod gone): a disconnect for the owner, then our close frame. */
  fail(why: string, code: number, reason: string): void {
    if (this.#gone) return;
    this.#clientGone(why);
    this.#closing = this.closeAndWait(code, reason);
  }

  /** Our close frame, then up to `closeWaitMs` for the client's, then the socket is dropped. */
  async closeAndWait(code: number, reason: string): Promise<void> {
    const ws = this.#ws;
    if (ws.readyState === ws.CLOSED) return;
    if (ws.readyState === ws.OPEN) ws.close(code, reason.slice(0, 120));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.#whenClosed(), new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#opts.closeWaitMs)))]);
    clearTimeout(timer);
    this.#terminate();
  }

  /** The session is over: waits for a close we started, drops the socket, detaches every listener. */
  async dispose(): Promise<void> {
    if (this.#closing) await this.#closing;
    idleSweep.delete(this);
    this.#terminate();
    await this.#whenClosed();
    this.#clientGone('session over');
    const ws = this.#ws;
    ws.off('message', ChannelConnection.#onMessage);
    ws.off('ping', ChannelConnection.#touch);
    ws.off('pong', ChannelConnection.#touch);
    ws.off('close', ChannelConnection.#onClose);
    ws.off('error', ChannelConnection.#onError);
    this.#socket.off('drain', ChannelConnection.#onDrain);
  }

  /**
   * A payload as frames of at most MAX_FRAME_PAYLOAD, each header + view in one gathered write;
   * `onFlushed` is the callback of the write that carries the payload's last byte.
   */
  #frames(channel: number, payload: Buffer, onFlushed?: () => void): void {
    const s = this.#socket;
    s.cork();
    if (payload.length === 0) s.write(frameHeader(channel, 0), onFlushed);
    for (let off = 0; off < payload.length; off += MAX_FRAME_PAYLOAD) {
      const piece = off === 0 && payload.length <= MAX_FRAME_PAYLOAD ? payload : payload.subarray(off, off + MAX_FRAME_PAYLOAD);
      s.write(frameHeader(channel, piece.length));
      s.write(piece, off + piece.length >= payload.length ? onFlushed : undefined);
    }
    s.uncork();
  }

  /** Several small chunks (e.g. Docker frames of one socket read) as one frame, none copied. */
  #coalesced(channel: number, chunks: readonly Buffer[]): void {
    let total = 0;
    for (const c of chunks) total += c.length;
    if (total > MAX_FRAME_PAYLOAD) {
      for (const c of chunks) this.#frames(channel, c);
      return;
    }
    const s = this.#socket;
    s.cork();
    s.write(frameHeader(channel, total));
    for (const c of chunks) if (c.length > 0) s.write(c);
    s.uncork();
  }

  #sendText(channel: number, payload: Buffer): void {
    for (let off = 0; off === 0 || off < payload.length; off += MAX_FRAME_PAYLOAD) {
      this.#ws.send(String.fromCharCode(0x30 + channel) + payload.toString('base64', off, off + MAX_FRAME_PAYLOAD));
    }
  }

  // The listeners on `ws` and the socket are shared by every connection, each finding its own on
  // the emitter (`kConnection`): an idle session keeps its connection for hours, and bound
  // closures would be six more objects per session.
  static #onMessage(this: object, data: WebSocket.RawData): void {
    const conn = (this as Owned)[kConnection];
    if (conn) conn.#message(data);
  }
  static #touch(this: object): void {
    const conn = (this as Owned)[kConnection];
    if (conn) conn.#lastActivity = Date.now();
  }
  static #onClose(this: object, code: number): void {
    const conn = (this as Owned)[kConnection];
    if (conn) conn.#closedBy(code);
  }
  static #onError(this: object, err: Error): void {
    const conn = (this as Owned)[kConnection];
    if (conn) conn.#opts.log.debug({ err }, 'websocket: socket error');
  }
  static #onDrain(this: object): void {
    const conn = (this as Owned)[kConnection];
    if (conn) conn.#drained();
  }

  #message(data: WebSocket.RawData): void {
    this.#lastActivity = Date.now();
    const frame = decodeFrame(toBuffer(data), this.#opts.framing);
    if (!frame) return;
    if (frame.kind === 'violation') {
      this.#opts.log.warn({ reason: frame.reason }, 'websocket: protocol violation, closing');
      this.fail('protocol violation', 1002, 'protocol violation');
    } else if (frame.kind === 'close') this.#opts.onHalfClose?.(frame.channel);
    else this.#opts.onData(frame.channel, frame.payload);
  }

  /** Resolves once `ws` closed (its 'close' is emitted once, after `readyState` became CLOSED). */
  #whenClosed(): Promise<void> {
    if (this.#ws.readyState === this.#ws.CLOSED) return Promise.resolve();
    return (this.#closed ??= new Promise((resolve) => (this.#markClosed = resolve)));
  }

  #closedBy(code: number): void {
    this.#markClosed?.();
    this.#clientGone(`client closed the connection (${code})`);
  }

  #drained(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const cb of waiting) cb();
  }

  /** For the idle sweep: no frame either way (pings count) until then ends the connection. */
  idleDeadline(): number {
    return this.#lastActivity + this.#opts.idleTimeoutMs;
  }

  /** For the idle sweep: the deadline passed. */
  idleExpired(): void {
    this.#opts.log.info({ idleTimeoutMs: this.#opts.idleTimeoutMs }, 'websocket: idle timeout, closing');
    // 1001, not 1000: a normal close without status would make kubectl report success.
    this.fail('stream idle timeout', 1001, 'idle timeout');
  }

  #clientGone(why: string): void {
    if (this.#gone) return;
    this.#gone = true;
    idleSweep.delete(this);
    this.#opts.log.debug({ why }, 'websocket: connection over');
    this.#opts.onGone?.(why);
    this.#drained();
    this.#markGone();
  }

  #terminate(): void {
    if (this.#ws.readyState !== this.#ws.CLOSED) this.#ws.terminate();
  }
}

/** The idle timeouts of every connection, on one timer (an idle session keeps no Timeout of its own). */
const idleSweep = new IdleSweep();

/** Unmasked binary frame headers (FIN + opcode 2, length, channel byte), carved from a shared slab. */
let slab = Buffer.allocUnsafeSlow(16 * 1024);
let slabUsed = 0;

function frameHeader(channel: number, payloadLength: number): Buffer {
  // The slab is never reused: a header may sit in the socket's queue until written. A new slab
  // per ~1500 frames replaces an allocation per frame.
  if (slabUsed + 11 > slab.length) {
    slab = Buffer.allocUnsafeSlow(slab.length);
    slabUsed = 0;
  }
  const start = slabUsed;
  const len = payloadLength + 1;
  slab[slabUsed++] = 0x82;
  if (len < 126) slab[slabUsed++] = len;
  else if (len < 65536) {
    slab[slabUsed++] = 126;
    slab.writeUInt16BE(len, slabUsed);
    slabUsed += 2;
  } else {
    slab[slabUsed++] = 127;
    slab.writeUInt32BE(Math.floor(len / 2 ** 32), slabUsed);
    slab.writeUInt32BE(len >>> 0, slabUsed + 4);
    slabUsed += 8;
  }
  slab[slabUsed++] = channel;
  return slab.subarray(start, slabUsed);
}

function toBuffer(data: WebSocket.RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
