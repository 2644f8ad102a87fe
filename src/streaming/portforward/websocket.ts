import { Duplex } from 'node:stream';
import { finished } from 'node:stream/promises';
import type WebSocket from 'ws';
import type { Logger } from '../../logging/index.js';
import { writeCopy, type BorrowingWriter } from '../borrowed.js';
import { ChannelConnection } from '../websocket/connection.js';
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
  readonly log: Pick<Logger, 'debug' | 'info' | 'warn'>;
  /** Ports (connections) this session may forward; those beyond get the reason on their error channel. */
  readonly maxConnections?: number;
  /** The node-wide bound on forwarded connections, shared with every other session. */
  readonly limiter?: ForwardLimiter;
}

/** Inbound bytes buffered per port before the socket is paused. */
const INBOUND_HIGH_WATER_MARK = 64 * 1024;

/**
 * Serves the kubelet's WebSocket port-forward (`portforward/websocket.go`) on an upgraded
 * socket: one TCP connection per requested port for the whole WebSocket, data on channel 2i,
 * error text on 2i+1, each channel opened by the port as uint16 LE. There is no per-channel
 * half-close in this protocol, so the connection closes (1000) once every port's forward has
 * ended, as the kubelet's `conn.Close()` after its WaitGroup.
 */
export function serveWebSocketPortForward(ws: WebSocket, socket: Duplex, opts: WebSocketPortForwardOptions): PortForwardSession {
  /** One per port: a shared signal would collect a listener per forward. */
  const aborts = opts.ports.map(() => new AbortController());
  const streams: Duplex[] = [];
  const done: boolean[] = opts.ports.map(() => false);
  const conn = new ChannelConnection(ws, socket, {
    framing: { base64: opts.base64, supportsClose: false, channels: 2 * opts.ports.length },
    idleTimeoutMs: opts.idleTimeoutMs,
    closeWaitMs: opts.closeWaitMs,
    log: opts.log,
    onData: (channel, payload) => {
      // Odd channels are the server's error channels: write-only; empty frames are ignored.
      const index = channel / 2;
      const stream = streams[index];
      if (channel % 2 === 1 || !stream || done[index] || payload.length === 0 || stream.readableEnded || stream.destroyed) return;
      // A slow pod side stops us reading the socket, as wsstream's io.Pipe blocks its read loop.
      if (!stream.push(payload)) conn.pause(index);
    },
    // The client is unreachable: abort the forwards and EOF their inputs.
    onGone: (why) => {
      for (const controller of aborts) controller.abort(new Error(why));
      for (const stream of streams) if (!stream.readableEnded && !stream.destroyed) stream.push(null);
    },
  });
  for (let index = 0; index < opts.ports.length; index++) {
    streams.push(new ChannelStream(conn, index));
  }

  async function forward(index: number, port: number): Promise<void> {
    const stream = streams[index] as Duplex;
    let failure: string | undefined;
    const { maxConnections, limiter } = opts;
    const overSession = maxConnections !== undefined && index >= maxConnections;
    const release = overSession ? undefined : limiter ? limiter.tryAcquire() : () => undefined;
    if (overSession) failure = tooManyPerSession(maxConnections);
    else if (!release) failure = tooManyOnNode(limiter?.max ?? 0);
    else {
      try {
        await opts.forward(port, stream, (aborts[index] as AbortController).signal);
      } catch (err) {
        failure = err instanceof Error ? err.message : String(err);
      } finally {
        release();
      }
    }
    done[index] = true;
    stream.resume();
    conn.resume(index);
    // Every data byte is handed over before the error text and before the close frame.
    if (!stream.writableEnded) stream.end();
    await Promise.race([finished(stream, { readable: false }).catch(() => undefined), conn.gone]);
    if (failure === undefined || conn.isGone) return;
    opts.log.info({ port, err: failure }, 'port-forward: forwarding failed');
    await Promise.race([conn.send(errorChannel(index), Buffer.from(failure, 'utf8')), conn.gone]);
  }

  async function serve(): Promise<void> {
    if (conn.isGone) return conn.dispose();
    opts.ports.forEach((port, index) => {
      const prefix = portPrefix(port);
      conn.write(dataChannel(index), prefix, noop);
      conn.write(errorChannel(index), prefix, noop);
    });
    const forwards = Promise.all(opts.ports.map((port, index) => forward(index, port)));
    try {
      await Promise.race([forwards, conn.gone]);
      if (!conn.isGone) await conn.closeAndWait(1000, '');
      // Gone mid-forward: the abort signal stops the runtime; let it finish before returning.
      await forwards;
    } finally {
      await conn.dispose();
    }
  }

  return { done: serve(), close: (reason) => conn.fail(reason, 1001, reason) };
}

const noop = (): void => undefined;

/**
 * One port's data channel as a Duplex, and a `BorrowingWriter`: the relay's reads from the pod go
 * straight to the connection while nothing is queued here (the order of bytes never changes),
 * else a copy takes the ordinary path.
 */
class ChannelStream extends Duplex implements BorrowingWriter {
  readonly #conn: ChannelConnection;
  readonly #channel: number;

  constructor(conn: ChannelConnection, index: number) {
    super({
      allowHalfOpen: true,
      readableHighWaterMark: INBOUND_HIGH_WATER_MARK,
      read: () => conn.resume(index),
      write: (chunk: Buffer, _enc, cb) => conn.write(dataChannel(index), chunk, cb),
      writev: (chunks, cb) => conn.write(dataChannel(index), chunks.map((c) => c.chunk as Buffer), cb),
      // Channel mode cannot half-close a channel: the pod's EOF shows when the connection closes.
      final: (cb) => cb(),
    });
    this.#conn = conn;
    this.#channel = dataChannel(index);
  }

  writeBorrowed(chunk: Buffer, released: () => void): boolean {
    if (this.destroyed || this.writableEnded) return true;
    if (this.writableLength === 0 && !this.writableCorked) {
      const r = this.#conn.writeBorrowed(this.#channel, chunk, released);
      if (r !== 'unready') return r === 'released';
    }
    return writeCopy(this, chunk, released);
  }
}
