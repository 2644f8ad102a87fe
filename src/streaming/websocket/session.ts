import { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type WebSocket from 'ws';
import type { Logger } from '../../logging/index.js';
import { protocolInfo } from '../remotecommand/negotiate.js';
import { ResizeDecoder, ResizeQueue } from '../remotecommand/resize.js';
import { statusPayload, type SessionKind, type SessionOutcome } from '../remotecommand/status.js';
import type { CommandResult, RemoteCommandVersion, StreamIO, StreamOptions } from '../types.js';
import {
  decodeFrame,
  encodeFrame,
  ERROR_CHANNEL,
  REMOTE_COMMAND_CHANNELS,
  RESIZE_CHANNEL,
  STDERR_CHANNEL,
  STDIN_CHANNEL,
  STDOUT_CHANNEL,
  type Framing,
} from './channels.js';

export interface WebSocketSessionOptions {
  /** The negotiated subprotocol (`selectWebSocketProtocol`); `''` = none (v1 binary). */
  readonly protocol: string;
  readonly options: StreamOptions;
  /** No frame either way (pings count) for this long ends the session; 0 = off. Kubelet/CRI default: 4 h. */
  readonly idleTimeoutMs: number;
  /** After our close frame, how long to wait for the client's before dropping the socket. */
  readonly closeWaitMs: number;
  /** Only the level methods: Fastify's `request.log` children fit as well as nodelet's pino Logger. */
  readonly log: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;
  readonly run: (io: StreamIO) => Promise<CommandResult>;
  /** argv, for the NonZeroExitCode message (exec); `[]` for attach. */
  readonly command: string[];
  readonly kind: SessionKind;
}

/**
 * Outbound backpressure: a stdout/stderr write completes at once while `ws.bufferedAmount` is below
 * this, else only when `ws.send` reports the frame flushed — so a slow client slows the container
 * instead of growing our memory (the kubelet's blocking `Message.Send`).
 */
export const OUTBOUND_HIGH_WATER_MARK = 1024 * 1024;
/** Largest payload per outbound frame (the kubelet's io.Copy frames are ≤ 32 KiB). */
export const MAX_FRAME_PAYLOAD = 64 * 1024;
/** Inbound stdin buffered before the socket is paused. */
const STDIN_HIGH_WATER_MARK = 64 * 1024;
const EMPTY = Buffer.alloc(0);

/**
 * Serves one exec/attach over an already-upgraded WebSocket: the kubelet's `wsstream.Conn` plus
 * `ServeExec`/`ServeAttach`. Resolves (never rejects) once `run` has settled and the socket is closed.
 *
 * The caller creates the server with a bounded `maxPayload` (recommended 16 MiB; `ws` defaults to
 * 100 MiB) — an oversized client frame then closes the socket with 1009, which ends the session here.
 * `ws` answers pings itself (autoPong); pings also count as activity for the idle timeout.
 */
export async function serveWebSocketRemoteCommand(ws: WebSocket, opts: WebSocketSessionOptions): Promise<void> {
  const info = protocolInfo(opts.protocol);
  if (!info || (info.version !== 'v1' && info.version !== 'v4' && info.version !== 'v5')) {
    // The caller negotiates with selectWebSocketProtocol, so this is a wiring bug, not client input.
    opts.log.error({ protocol: opts.protocol }, 'websocket remote command: unsupported subprotocol');
    ws.terminate();
    return;
  }
  await new Session(ws, opts, info.version, {
    base64: info.base64,
    supportsClose: info.version === 'v5',
    channels: REMOTE_COMMAND_CHANNELS,
  }).serve();
}

class Session {
  private readonly ac = new AbortController();
  private readonly stdin: Readable | undefined;
  private readonly resizes: ResizeQueue | undefined;
  private readonly decoder = new ResizeDecoder();
  /** Write callbacks waiting for `ws.send`; released at once when the client goes away. */
  private readonly pendingSends = new Set<() => void>();
  private stdinEnded = false;
  private pausedForStdin = false;
  /** The client is gone (closed, errored, idle, protocol violation): nothing more is sent. */
  private gone = false;
  /** `run` has settled: a disconnect now only stops output, there is nothing left to abort. */
  private runDone = false;
  private readonly gonePromise: Promise<void>;
  private markGone!: () => void;
  private readonly closedPromise: Promise<void>;
  private lastActivity = Date.now();
  private idleTimer: NodeJS.Timeout | undefined;
  /** A close we started on failure (idle, violation), awaited before returning. */
  private closing: Promise<void> | undefined;

  constructor(
    private readonly ws: WebSocket,
    private readonly opts: WebSocketSessionOptions,
    private readonly version: RemoteCommandVersion,
    private readonly framing: Framing,
  ) {
    this.gonePromise = new Promise((resolve) => (this.markGone = resolve));
    this.closedPromise = new Promise((resolve) => {
      if (ws.readyState === ws.CLOSED) resolve();
      else ws.once('close', () => resolve());
    });
    this.stdin = opts.options.stdin
      ? new Readable({
          highWaterMark: STDIN_HIGH_WATER_MARK,
          read: () => this.resumeInput(),
        })
      : undefined;
    // The consumer may destroy stdin early: stop feeding it and never leave the socket paused for it.
    this.stdin?.once('close', () => {
      this.stdinEnded = true;
      this.resumeInput();
    });
    this.resizes = opts.options.tty ? new ResizeQueue() : undefined;
  }

  async serve(): Promise<void> {
    const { ws, opts } = this;
    if (ws.readyState !== ws.OPEN) {
      opts.log.debug('websocket remote command: socket closed before the session started');
      return;
    }
    const onMessage = (data: WebSocket.RawData) => this.onMessage(data);
    const onActivity = () => this.touch();
    const onClose = (code: number) => this.clientGone(`client closed the connection (${code})`);
    const onError = (err: Error) => opts.log.debug({ err }, 'websocket remote command: socket error');
    ws.on('message', onMessage);
    ws.on('ping', onActivity);
    ws.on('pong', onActivity);
    ws.on('close', onClose);
    ws.on('error', onError);
    this.armIdle(opts.idleTimeoutMs);

    // "Connected": one empty frame on the lowest writable requested channel (wsstream Open). Never on
    // channels the client did not request — kubectl logs those as unknown streams.
    const first = opts.options.stdout ? STDOUT_CHANNEL : opts.options.stderr ? STDERR_CHANNEL : ERROR_CHANNEL;
    this.send(encodeFrame(first, EMPTY, this.framing.base64));

    const io: StreamIO = {
      stdin: this.stdin,
      stdout: opts.options.stdout ? this.channelWriter(STDOUT_CHANNEL) : undefined,
      stderr: opts.options.stderr && !opts.options.tty ? this.channelWriter(STDERR_CHANNEL) : undefined,
      tty: opts.options.tty,
      resizes: this.resizes,
      signal: this.ac.signal,
    };
    const outcome = this.runSafely(io);
    const ended = await Promise.race([outcome, this.gonePromise.then(() => undefined)]);

    try {
      if (ended === undefined) {
        // Client gone mid-run: signal/stdin/resizes were torn down in clientGone; let the runtime finish.
        const late = await outcome;
        if (late.kind === 'error') opts.log.debug({ err: late.error }, 'websocket remote command: run ended after disconnect');
        return;
      }
      await this.finish(io, ended);
    } finally {
      if (this.closing) await this.closing;
      clearTimeout(this.idleTimer);
      if (!this.socketClosed()) ws.terminate();
      await this.closedPromise;
      ws.off('message', onMessage);
      ws.off('ping', onActivity);
      ws.off('pong', onActivity);
      ws.off('close', onClose);
      ws.off('error', onError);
    }
  }

  /** Upstream `finish()`: end inputs, flush outputs, write the status, close 1000, wait for the client. */
  private async finish(io: StreamIO, outcome: SessionOutcome): Promise<void> {
    const { opts } = this;
    this.runDone = true;
    this.endInputs();
    if (outcome.kind === 'error') opts.log.info({ err: outcome.error, kind: opts.kind }, 'remote command failed');
    // Every stdout/stderr byte must be handed to ws before the status frame.
    const outputs = [io.stdout, io.stderr].filter((w): w is Writable => w !== undefined);
    for (const w of outputs) if (!w.writableEnded && !w.destroyed) w.end();
    await Promise.race([Promise.all(outputs.map((w) => finished(w).catch(() => undefined))), this.gonePromise]);
    if (this.gone) return;

    const payload = statusPayload(this.version, opts.kind, opts.command, outcome);
    if (payload !== undefined) {
      const frame = encodeFrame(ERROR_CHANNEL, Buffer.from(payload, 'utf8'), this.framing.base64);
      // Wait until it is flushed: ws's close timer (30 s) would otherwise cut off a slow reader's tail.
      await Promise.race([new Promise<void>((resolve) => this.send(frame, resolve)), this.gonePromise]);
      if (this.gone) return;
    }
    // kubectl hangs unless the server closes; with status + close 1000 it exits cleanly.
    await this.closeAndWait(1000, '');
  }

  private async runSafely(io: StreamIO): Promise<SessionOutcome> {
    try {
      return await this.opts.run(io);
    } catch (error) {
      return { kind: 'error', error };
    }
  }

  private onMessage(data: WebSocket.RawData): void {
    this.touch();
    const frame = decodeFrame(toBuffer(data), this.framing);
    if (!frame) return;
    if (frame.kind === 'violation') {
      this.opts.log.warn({ reason: frame.reason }, 'websocket remote command: protocol violation, closing');
      this.fail('protocol violation', 1002, 'protocol violation');
      return;
    }
    if (frame.kind === 'close') {
      // v5 half-close: stdin EOF (kubectl sends ff 00 after stdin EOF); resize likewise ends resizes.
      if (frame.channel === STDIN_CHANNEL) this.endStdin();
      else if (frame.channel === RESIZE_CHANNEL) this.resizes?.close();
      return;
    }
    if (frame.channel === STDIN_CHANNEL) this.pushStdin(frame.payload);
    else if (frame.channel === RESIZE_CHANNEL && this.resizes) {
      for (const size of this.decoder.push(frame.payload)) this.resizes.push(size);
    }
    // Anything else (unrequested stdin/resize, frames on output channels) is discarded.
  }

  private pushStdin(payload: Buffer): void {
    const stdin = this.stdin;
    if (!stdin || this.stdinEnded || stdin.destroyed || payload.length === 0) return;
    // Copy: ws may reuse nothing, but a subarray would pin the whole message buffer.
    if (!stdin.push(Buffer.from(payload)) && !this.pausedForStdin) {
      // A slow consumer stops us reading the socket (public `ws.pause()`), as the kubelet's io.Pipe blocks its read loop.
      // Caveat (same upstream): while paused, client pings are not answered.
      this.pausedForStdin = true;
      this.ws.pause();
    }
  }

  private resumeInput(): void {
    if (!this.pausedForStdin) return;
    this.pausedForStdin = false;
    this.ws.resume();
  }

  private endStdin(): void {
    if (this.stdin && !this.stdinEnded) {
      this.stdinEnded = true;
      this.stdin.push(null);
    }
    this.resumeInput();
  }

  private endInputs(): void {
    this.endStdin();
    this.resizes?.close();
  }

  /** A Writable that frames its bytes on `channel`, with the backpressure described above. */
  private channelWriter(channel: number): Writable {
    const write = (chunk: Buffer, cb: (err?: Error | null) => void): void => this.writeChannel(channel, chunk, cb);
    return new Writable({
      write: (chunk: Buffer, _enc, cb) => write(chunk, cb),
      // Many small writes queued behind a slow client go out as one frame.
      writev: (chunks, cb) => write(Buffer.concat(chunks.map((c) => c.chunk as Buffer)), cb),
    });
  }

  private writeChannel(channel: number, chunk: Buffer, cb: (err?: Error | null) => void): void {
    // Writes after the client left are discarded, like wsstream's writes to a closed conn being ignored
    // by the runtime: the abort signal is how the runtime learns the client is gone.
    if (this.gone || this.ws.readyState !== this.ws.OPEN || chunk.length === 0) {
      cb();
      return;
    }
    let done = false;
    const complete = (): void => {
      if (!done) {
        done = true;
        cb();
      }
    };
    for (let off = 0; off < chunk.length; off += MAX_FRAME_PAYLOAD) {
      const frame = encodeFrame(channel, chunk.subarray(off, off + MAX_FRAME_PAYLOAD), this.framing.base64);
      this.send(frame, off + MAX_FRAME_PAYLOAD >= chunk.length ? complete : undefined);
    }
    if (this.ws.bufferedAmount < OUTBOUND_HIGH_WATER_MARK) complete();
  }

  /** `ws.send`, counting as activity; `onSent` runs once flushed to the socket or when the client goes away. */
  private send(frame: Buffer | string, onSent?: () => void): void {
    this.touch();
    const binary = typeof frame !== 'string';
    if (!onSent) {
      this.ws.send(frame, { binary });
      return;
    }
    let called = false;
    const release = (): void => {
      if (called) return;
      called = true;
      this.pendingSends.delete(release);
      onSent();
    };
    this.pendingSends.add(release);
    // Errors (socket gone) surface as 'close'; either way the write is over.
    this.ws.send(frame, { binary }, () => release());
  }

  /** A method, not an inline comparison: TS would keep a readyState narrowed across awaits. */
  private socketClosed(): boolean {
    return this.ws.readyState === this.ws.CLOSED;
  }

  private touch(): void {
    this.lastActivity = Date.now();
  }

  private armIdle(delayMs: number): void {
    if (this.opts.idleTimeoutMs <= 0) return;
    this.idleTimer = setTimeout(() => {
      const idleFor = Date.now() - this.lastActivity;
      if (idleFor >= this.opts.idleTimeoutMs) {
        this.opts.log.info({ idleTimeoutMs: this.opts.idleTimeoutMs }, 'websocket remote command: idle timeout, closing');
        // 1001, not 1000: a normal close without status would make kubectl report success.
        this.fail('stream idle timeout', 1001, 'idle timeout');
      } else {
        this.armIdle(this.opts.idleTimeoutMs - idleFor);
      }
    }, delayMs);
    this.idleTimer.unref();
  }

  /** We end the connection (idle, violation): tear down like a disconnect, then close the socket. */
  private fail(why: string, code: number, reason: string): void {
    if (this.gone) return;
    this.clientGone(why);
    this.closing = this.closeAndWait(code, reason);
  }

  /** The client is unreachable: abort the runtime, EOF stdin, end resizes, release blocked writes. */
  private clientGone(why: string): void {
    if (this.gone) return;
    this.gone = true;
    clearTimeout(this.idleTimer);
    this.opts.log.debug({ why }, 'websocket remote command: client gone');
    if (!this.runDone) this.ac.abort(new Error(why));
    this.endInputs();
    for (const release of [...this.pendingSends]) release();
    this.markGone();
  }

  /** Send our close frame, wait up to `closeWaitMs` for the client's, then drop the socket. */
  private async closeAndWait(code: number, reason: string): Promise<void> {
    const { ws } = this;
    if (ws.readyState === ws.CLOSED) return;
    if (ws.readyState === ws.OPEN) ws.close(code, reason);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.closedPromise, new Promise<void>((resolve) => (timer = setTimeout(resolve, this.opts.closeWaitMs)))]);
    clearTimeout(timer);
    if (!this.socketClosed()) ws.terminate();
  }
}

function toBuffer(data: WebSocket.RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  return Buffer.from(data);
}
