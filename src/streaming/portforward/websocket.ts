import { Duplex } from 'node:stream';
import { finished } from 'node:stream/promises';
import type WebSocket from 'ws';
import type { Logger } from '../../logging/index.js';
import { decodeFrame, encodeFrame, type Framing } from '../websocket/channels.js';
import { MAX_FRAME_PAYLOAD, OUTBOUND_HIGH_WATER_MARK } from '../websocket/session.js';
import { dataChannel, errorChannel, portPrefix } from './channels.js';
import { tooManyOnNode, tooManyPerSession, type ForwardLimiter } from './limits.js';
import type { ForwardFn, PortForwardSession } from './spdy.js';

export interface WebSocketPortForwardOptions {
  /** `v4.base64.channel.k8s.io`: text frames with base64 payloads. */
  readonly base64: boolean;
  /** From the `port`/`ports` query; port i uses channels 2i and 2i+1. */
  readonly ports: readonly number[];
  readonly forward: ForwardFn;
  /** No frame either way (pings count) for this long closes the connection; 0 = never. */
  readonly idleTimeoutMs: number;
  /** After our close frame, how long to wait for the client's before dropping the socket. */
  readonly closeWaitMs: number;
  readonly log: Pick<Logger, 'debug' | 'info'>;
  /** Ports (connections) this session may forward; those beyond get the reason on their error channel. */
  readonly maxConnections?: number;
  /** The node-wide bound on forwarded connections, shared with every other session. */
  readonly limiter?: ForwardLimiter;
}

/** Inbound bytes buffered per port before the socket is paused. */
const INBOUND_HIGH_WATER_MARK = 64 * 1024;

interface PortState {
  readonly index: number;
  readonly port: number;
  readonly stream: Duplex;
  /** The forward has settled: inbound data for it is dropped. */
  done: boolean;
}

/**
 * Serves the kubelet's WebSocket port-forward (`portforward/websocket.go`) on an upgraded
 * socket: one TCP connection per requested port for the whole WebSocket, data on channel 2i,
 * error text on 2i+1, each channel opened by the port as uint16 LE. There is no per-channel
 * half-close in this protocol, so the connection closes (1000) once every port's forward has
 * ended, as the kubelet's `conn.Close()` after its WaitGroup.
 */
export function serveWebSocketPortForward(ws: WebSocket, opts: WebSocketPortForwardOptions): PortForwardSession {
  const session = new ChannelSession(ws, opts);
  return { done: session.serve(), close: (reason) => session.fail(reason, 1001, reason) };
}

class ChannelSession {
  readonly #ws: WebSocket;
  readonly #opts: WebSocketPortForwardOptions;
  readonly #framing: Framing;
  readonly #ports: PortState[];
  /** One per port: a shared signal would collect a listener per forward. */
  readonly #aborts: AbortController[];
  /** Ports whose full read buffer paused the socket. */
  readonly #pausedFor = new Set<number>();
  /** Write callbacks waiting for `ws.send`; released at once when the client goes away. */
  readonly #pendingSends = new Set<() => void>();
  readonly #closed: Promise<void>;
  readonly #gonePromise: Promise<void>;
  #markGone!: () => void;
  #gone = false;
  #closing: Promise<void> | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #lastActivity = Date.now();

  constructor(ws: WebSocket, opts: WebSocketPortForwardOptions) {
    this.#ws = ws;
    this.#opts = opts;
    this.#framing = { base64: opts.base64, supportsClose: false, channels: 2 * opts.ports.length };
    this.#ports = opts.ports.map((port, index) => ({ index, port, stream: this.#portStream(index), done: false }));
    this.#aborts = this.#ports.map(() => new AbortController());
    this.#gonePromise = new Promise((resolve) => (this.#markGone = resolve));
    this.#closed = new Promise((resolve) => {
      if (ws.readyState === ws.CLOSED) resolve();
      else ws.once('close', () => resolve());
    });
  }

  async serve(): Promise<void> {
    const ws = this.#ws;
    if (ws.readyState !== ws.OPEN) return;
    const onMessage = (data: WebSocket.RawData) => this.#onMessage(data);
    const onActivity = () => this.#touch();
    const onClose = () => this.#clientGone('client closed the connection');
    const onError = (err: Error) => this.#opts.log.debug({ err }, 'port-forward websocket: socket error');
    ws.on('message', onMessage);
    ws.on('ping', onActivity);
    ws.on('pong', onActivity);
    ws.on('close', onClose);
    ws.on('error', onError);
    this.#armIdle(this.#opts.idleTimeoutMs);

    for (const p of this.#ports) {
      const prefix = portPrefix(p.port);
      this.#send(encodeFrame(dataChannel(p.index), prefix, this.#framing.base64));
      this.#send(encodeFrame(errorChannel(p.index), prefix, this.#framing.base64));
    }
    const forwards = Promise.all(this.#ports.map((p) => this.#forward(p)));
    try {
      await Promise.race([forwards, this.#gonePromise]);
      if (!this.#gone) await this.#closeAndWait(1000, '');
      // Gone mid-forward: the abort signal stops the runtime; let it finish before returning.
      await forwards;
    } finally {
      if (this.#closing) await this.#closing;
      clearTimeout(this.#idleTimer);
      if (!this.#socketClosed()) ws.terminate();
      await this.#closed;
      ws.off('message', onMessage);
      ws.off('ping', onActivity);
      ws.off('pong', onActivity);
      ws.off('close', onClose);
      ws.off('error', onError);
    }
  }

  /** We end the connection (idle timeout, pod gone): a disconnect, then our close frame. */
  fail(why: string, code: number, reason: string): void {
    if (this.#gone) return;
    this.#clientGone(why);
    this.#closing = this.#closeAndWait(code, reason);
  }

  async #forward(p: PortState): Promise<void> {
    let failure: string | undefined;
    const { maxConnections, limiter } = this.#opts;
    const overSession = maxConnections !== undefined && p.index >= maxConnections;
    const release = overSession ? undefined : limiter ? limiter.tryAcquire() : () => undefined;
    if (overSession) failure = tooManyPerSession(maxConnections);
    else if (!release) failure = tooManyOnNode(limiter?.max ?? 0);
    else {
      try {
        await this.#opts.forward(p.port, p.stream, this.#aborts[p.index]?.signal ?? AbortSignal.abort());
      } catch (err) {
        failure = err instanceof Error ? err.message : String(err);
      } finally {
        release();
      }
    }
    p.done = true;
    p.stream.resume();
    this.#resumeFor(p.index);
    // Every data byte is handed to ws before the error text and before the close frame.
    if (!p.stream.writableEnded) p.stream.end();
    await Promise.race([finished(p.stream, { readable: false }).catch(() => undefined), this.#gonePromise]);
    if (failure === undefined || this.#gone) return;
    this.#opts.log.info({ port: p.port, err: failure }, 'port-forward: forwarding failed');
    const frame = encodeFrame(errorChannel(p.index), Buffer.from(failure, 'utf8'), this.#framing.base64);
    await Promise.race([new Promise<void>((resolve) => this.#send(frame, resolve)), this.#gonePromise]);
  }

  /** The Duplex a forward reads the client's bytes from and writes the pod's bytes to. */
  #portStream(index: number): Duplex {
    const write = (chunk: Buffer, cb: (err?: Error | null) => void) => this.#writeChannel(dataChannel(index), chunk, cb);
    return new Duplex({
      allowHalfOpen: true,
      readableHighWaterMark: INBOUND_HIGH_WATER_MARK,
      read: () => this.#resumeFor(index),
      write: (chunk: Buffer, _enc, cb) => write(chunk, cb),
      writev: (chunks, cb) => write(Buffer.concat(chunks.map((c) => c.chunk as Buffer)), cb),
      // Channel mode cannot half-close a channel: the pod's EOF shows when the connection closes.
      final: (cb) => cb(),
    });
  }

  #onMessage(data: WebSocket.RawData): void {
    this.#touch();
    const frame = decodeFrame(toBuffer(data), this.#framing);
    // Empty, out-of-range or undecodable frames are ignored, as wsstream does.
    if (!frame || frame.kind !== 'data' || frame.payload.length === 0) return;
    // Odd channels are the server's error channels: write-only.
    if (frame.channel % 2 === 1) return;
    const p = this.#ports[frame.channel / 2];
    if (!p || p.done || p.stream.readableEnded || p.stream.destroyed) return;
    // A copy: a subarray would pin the whole message.
    if (!p.stream.push(Buffer.from(frame.payload)) && !this.#pausedFor.has(p.index)) {
      // A slow pod side stops us reading the socket, as wsstream's io.Pipe blocks its read loop.
      if (this.#pausedFor.size === 0) this.#ws.pause();
      this.#pausedFor.add(p.index);
    }
  }

  #resumeFor(index: number): void {
    if (!this.#pausedFor.delete(index) || this.#pausedFor.size > 0) return;
    this.#ws.resume();
  }

  #writeChannel(channel: number, chunk: Buffer, cb: (err?: Error | null) => void): void {
    // After the client left, writes are discarded; the abort signal tells the runtime.
    if (this.#gone || this.#ws.readyState !== this.#ws.OPEN || chunk.length === 0) return cb();
    let called = false;
    const complete = () => {
      if (called) return;
      called = true;
      cb();
    };
    for (let off = 0; off < chunk.length; off += MAX_FRAME_PAYLOAD) {
      const last = off + MAX_FRAME_PAYLOAD >= chunk.length;
      this.#send(encodeFrame(channel, chunk.subarray(off, off + MAX_FRAME_PAYLOAD), this.#framing.base64), last ? complete : undefined);
    }
    // Below the mark the write is done at once; above it, when ws flushed the last frame.
    if (this.#ws.bufferedAmount < OUTBOUND_HIGH_WATER_MARK) complete();
  }

  #send(frame: Buffer | string, onSent?: () => void): void {
    this.#touch();
    const binary = typeof frame !== 'string';
    if (!onSent) {
      this.#ws.send(frame, { binary });
      return;
    }
    let called = false;
    const release = () => {
      if (called) return;
      called = true;
      this.#pendingSends.delete(release);
      onSent();
    };
    this.#pendingSends.add(release);
    this.#ws.send(frame, { binary }, () => release());
  }

  #touch(): void {
    this.#lastActivity = Date.now();
  }

  #armIdle(delayMs: number): void {
    if (this.#opts.idleTimeoutMs <= 0) return;
    this.#idleTimer = setTimeout(() => {
      const idleFor = Date.now() - this.#lastActivity;
      if (idleFor >= this.#opts.idleTimeoutMs) this.fail('stream idle timeout', 1001, 'idle timeout');
      else this.#armIdle(this.#opts.idleTimeoutMs - idleFor);
    }, delayMs);
    this.#idleTimer.unref();
  }

  /** The client is unreachable: abort the forwards, EOF their inputs, release blocked writes. */
  #clientGone(why: string): void {
    if (this.#gone) return;
    this.#gone = true;
    clearTimeout(this.#idleTimer);
    this.#opts.log.debug({ why }, 'port-forward websocket: connection over');
    for (const controller of this.#aborts) controller.abort(new Error(why));
    for (const p of this.#ports) if (!p.stream.readableEnded && !p.stream.destroyed) p.stream.push(null);
    for (const release of [...this.#pendingSends]) release();
    this.#markGone();
  }

  /** Our close frame, then up to `closeWaitMs` for the client's, then the socket is dropped. */
  async #closeAndWait(code: number, reason: string): Promise<void> {
    const ws = this.#ws;
    if (ws.readyState === ws.CLOSED) return;
    if (ws.readyState === ws.OPEN) ws.close(code, reason.slice(0, 120));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.#closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#opts.closeWaitMs)))]);
    clearTimeout(timer);
    if (!this.#socketClosed()) ws.terminate();
  }

  /** A method, not an inline comparison: TS would keep `readyState` narrowed across awaits. */
  #socketClosed(): boolean {
    return this.#ws.readyState === this.#ws.CLOSED;
  }
}

function toBuffer(data: WebSocket.RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
