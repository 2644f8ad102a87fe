import { Readable, Writable, type Duplex } from 'node:stream';
import type WebSocket from 'ws';
import { ERROR_CHANNEL, REMOTE_COMMAND_CHANNELS, RESIZE_CHANNEL, STDERR_CHANNEL, STDIN_CHANNEL, STDOUT_CHANNEL } from '../websocket/channels.js';
import { ChannelConnection } from '../websocket/connection.js';
import type { ProtocolInfo } from './negotiate.js';
import { RemoteCommand, type RemoteCommandSpec } from './session.js';

export { MAX_FRAME_PAYLOAD, OUTBOUND_HIGH_WATER_MARK } from '../websocket/connection.js';

export interface WebSocketSessionOptions extends RemoteCommandSpec {
  /** The negotiated framing (`protocolInfo` of the chosen subprotocol); its version is `spec.version`. */
  readonly framing: Pick<ProtocolInfo, 'base64'>;
  /** No frame either way (pings count) for this long ends the session; 0 = off. Kubelet/CRI default: 4 h. */
  readonly idleTimeoutMs: number;
  /** After our close frame, how long to wait for the client's before dropping the socket. */
  readonly closeWaitMs: number;
}

/** Inbound stdin buffered before the socket is paused. */
const STDIN_HIGH_WATER_MARK = 64 * 1024;
/** Output a producer may hand over before `write()` says wait (the connection's own limit is behind it). */
const OUTPUT_HIGH_WATER_MARK = 256 * 1024;
const EMPTY = Buffer.alloc(0);

/**
 * Serves one exec/attach over an upgraded WebSocket (`socket` is the connection `ws` runs on):
 * the kubelet's `wsstream.Conn` under the transport-neutral `RemoteCommand`. Resolves (never
 * rejects) once the command settled and the socket is closed.
 *
 * The caller creates the server with a bounded `maxPayload` — an oversized client frame then
 * closes the socket with 1009, which ends the session here. `ws` answers pings itself.
 */
export function serveWebSocketRemoteCommand(ws: WebSocket, socket: Duplex, opts: WebSocketSessionOptions): Promise<void> {
  const command = new RemoteCommand(opts);
  // The runtime prepares the command (Docker's exec create) while the rest of the session is set
  // up; the WebSocket's channels all exist with the handshake, so `serve` starts it at once.
  command.prepare();
  const { options } = opts;
  let stdinEnded = false;
  const stdin = options.stdin ? new Readable({ highWaterMark: STDIN_HIGH_WATER_MARK, read: () => conn.resume(STDIN_CHANNEL) }) : undefined;
  const endStdin = (): void => {
    if (stdin && !stdinEnded) {
      stdinEnded = true;
      stdin.push(null);
    }
    conn.resume(STDIN_CHANNEL);
  };
  const conn = new ChannelConnection(ws, socket, {
    framing: { base64: opts.framing.base64, supportsClose: opts.version === 'v5', channels: REMOTE_COMMAND_CHANNELS },
    idleTimeoutMs: opts.idleTimeoutMs,
    closeWaitMs: opts.closeWaitMs,
    log: opts.log,
    onData: (channel, payload) => {
      if (channel === RESIZE_CHANNEL) return command.resize(payload);
      // Unrequested stdin and frames on output channels are discarded.
      if (channel !== STDIN_CHANNEL || !stdin || stdinEnded || stdin.destroyed || payload.length === 0) return;
      // A slow consumer stops us reading the socket, as the kubelet's io.Pipe blocks its read loop.
      // Caveat (same upstream): while paused, client pings are not answered.
      if (!stdin.push(payload)) conn.pause(STDIN_CHANNEL);
    },
    // v5 half-close: stdin EOF (kubectl sends ff 00 after stdin EOF); resize likewise ends resizes.
    onHalfClose: (channel) => (channel === STDIN_CHANNEL ? endStdin() : channel === RESIZE_CHANNEL ? command.resizes?.close() : undefined),
  });
  if (conn.isGone) {
    void command.abandon();
    return conn.dispose();
  }
  // The consumer may destroy stdin early: stop feeding it and never leave the socket paused for it.
  stdin?.once('close', endStdin);

  // "Connected": one empty frame on the lowest writable requested channel (wsstream Open). Never on
  // channels the client did not request — kubectl logs those as unknown streams.
  conn.write(options.stdout ? STDOUT_CHANNEL : options.stderr ? STDERR_CHANNEL : ERROR_CHANNEL, EMPTY, noop);
  // Returned, not awaited, by a plain function: nothing of this one (no suspended frame, no
  // promise of its own waiting on the chain) is kept for the session's length.
  const disposed = (): Promise<void> => conn.dispose();
  return command
    .serve({
      stdin,
      stdout: options.stdout ? channelWriter(conn, STDOUT_CHANNEL) : undefined,
      stderr: options.stderr && !options.tty ? channelWriter(conn, STDERR_CHANNEL) : undefined,
      gone: conn.gone,
      endInput: endStdin,
      finish: async (payload) => {
        // Waits until flushed: ws's close timer (30 s) would otherwise cut off a slow reader's tail.
        if (payload !== undefined) await conn.send(ERROR_CHANNEL, Buffer.from(payload, 'utf8'));
        // kubectl hangs unless the server closes; with status + close 1000 it exits cleanly.
        if (!conn.isGone) await conn.closeAndWait(1000, '');
      },
    })
    .then(disposed, disposed);
}

/** A Writable framing its bytes on `channel`; writes queued behind a full socket go out as one frame. */
export function channelWriter(conn: ChannelConnection, channel: number): Writable {
  return new ChannelWriter(conn, channel);
}

/** Methods on the prototype, not closures per instance: an idle session keeps two of these for hours. */
class ChannelWriter extends Writable {
  readonly #conn: ChannelConnection;
  readonly #channel: number;

  constructor(conn: ChannelConnection, channel: number) {
    super({ highWaterMark: OUTPUT_HIGH_WATER_MARK });
    this.#conn = conn;
    this.#channel = channel;
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.#conn.write(this.#channel, chunk, cb);
  }

  override _writev(chunks: { chunk: Buffer }[], cb: (err?: Error | null) => void): void {
    this.#conn.write(this.#channel, chunks.map((c) => c.chunk), cb);
  }
}

const noop = (): void => undefined;
