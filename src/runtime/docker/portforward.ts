import type { OnReadOpts, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { Logger } from '../../logging/index.js';
import { writeBorrowed } from '../../streaming/borrowed.js';
import { GrowingReadBuffer } from '../../streaming/read-buffer.js';
import { DialError, type NetnsDialers } from './netns-dialer.js';

/**
 * After the pod side closed, how long the client may still send before its side is closed too
 * (containerd gives the other direction 1 s, dockershim's socat 0.5 s). The other way round
 * there is no limit: a client that half-closed still gets the whole answer.
 */
const CLIENT_LINGER_MS = 1000;

/**
 * Relays `stream` to 127.0.0.1:`port` inside the sandbox's network namespace. The connection is
 * made by the pod's port-forward helper (netns-dialer.ts: one process per pod in its netns,
 * reused), which hands the connected socket to nodelet; bytes then flow socket to stream here,
 * with no process in between. The address is fixed: clients choose only the port, never where
 * to connect (dockershim's `socat - TCP4:127.0.0.1:<port>`).
 *
 * Half-close both ways: the stream's EOF shuts down the socket's write side (the pod keeps
 * answering); the pod's EOF ends the stream, and the client may still send for
 * `CLIENT_LINGER_MS`. Backpressure: client to pod through `pipe`; pod to client the socket reads
 * into one buffer of its own (`PodReader`) and stops reading while the stream holds those bytes.
 *
 * Rejects, with the CRI streaming server's text (`error forwarding port P to pod <sandbox>,
 * uid : <reason>`), when the connection cannot be made: sandbox not running, nothing listening
 * (`exit status 1: connect(…): Connection refused`, socat's shape). Once connected, a later
 * failure (a reset) is only logged: kubectl tears down every forwarded connection on any error
 * text, and the client already sees its socket close. Resolves when the socket is closed;
 * `signal` closes it.
 */
export async function forwardPort(docker: Docker, dialers: NetnsDialers, sandboxId: string, port: number, stream: Duplex, signal: AbortSignal, log: Logger, host?: string): Promise<void> {
  const fail = (reason: string) => new Error(`error forwarding port ${port} to pod ${sandboxId}, uid : ${reason}`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw fail(`invalid port ${port}`);
  const pid = await sandboxPid(docker, sandboxId).catch((err: unknown) => {
    // Its helper, if any, serves a namespace that is gone or going.
    dialers.release(sandboxId);
    throw fail(err instanceof Error ? err.message : String(err));
  });
  if (signal.aborted) return;
  const toClient = new PodReader(stream);
  let socket: Socket;
  try {
    socket = await dialers.dial(sandboxId, pid, port, signal, host, toClient.onread);
  } catch (err) {
    if (signal.aborted) return;
    throw fail(err instanceof DialError ? err.message : String(err));
  }
  const result = await relay(socket, stream, toClient, signal);
  if (result.kind === 'broken') log.debug({ sandboxId, port, reason: result.reason }, 'port-forward: connection ended with an error');
}

/**
 * How long a sandbox's PID, once looked up, serves further connections. A burst of forwarded
 * connections (a browser opening a page) then costs one inspect, and one Docker socket, instead of
 * one each; a sandbox that restarted meanwhile makes nsenter fail, which that connection reports.
 */
const PID_CACHE_MS = 1000;
const pids = new Map<string, { at: number; pid: Promise<number> }>();

/** The sandbox's PID: one inspect in flight per sandbox, its answer reused for `PID_CACHE_MS`. */
function sandboxPid(docker: Docker, sandboxId: string): Promise<number> {
  const now = Date.now();
  const cached = pids.get(sandboxId);
  if (cached && now - cached.at < PID_CACHE_MS) return cached.pid;
  for (const [id, entry] of pids) if (now - entry.at >= PID_CACHE_MS) pids.delete(id);
  const pid = inspectPid(docker, sandboxId);
  const entry = { at: now, pid };
  pids.set(sandboxId, entry);
  // A failed lookup is not reused: the next connection asks again.
  pid.catch(() => {
    if (pids.get(sandboxId) === entry) pids.delete(sandboxId);
  });
  return pid;
}

async function inspectPid(docker: Docker, sandboxId: string): Promise<number> {
  let info: Docker.ContainerInspectInfo;
  try {
    info = await docker.getContainer(sandboxId).inspect();
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) throw new Error('sandbox not found');
    throw err;
  }
  const pid = info.State?.Pid ?? 0;
  if (!info.State?.Running || pid <= 0) throw new Error('sandbox is not running');
  return pid;
}

/**
 * Bytes per read from the pod: a connection starts with the smaller buffer and grows to the larger
 * while reads fill it (GrowingReadBuffer). A 256 KiB read goes out as four DATA frames of
 * MAX_OUTBOUND_DATA in one writev; against 64 KiB reads it took a fifth off nodelet's CPU per byte
 * in the bench's port-forward download (bench/findings.md, "Port-forward").
 */
export const POD_READ_MIN_BYTES = 16 * 1024;
export const POD_READ_MAX_BYTES = 256 * 1024;

/**
 * The pod-to-client direction: the socket reads into one buffer per connection (Node's `onread`)
 * that is written to the stream with `writeBorrowed` (src/streaming/borrowed.ts), and reading stops
 * (the callback's `false`) until the stream released those bytes. A fresh buffer per read made the
 * kernel fault in and zero new pages on every read. At most `POD_READ_MAX_BYTES` are held per
 * connection, in the buffer.
 */
class PodReader {
  readonly onread: OnReadOpts;
  readonly #stream: Duplex;
  readonly #buffer = new GrowingReadBuffer(POD_READ_MIN_BYTES, POD_READ_MAX_BYTES);
  #last = 0;
  #socket: Socket | undefined;

  constructor(stream: Duplex) {
    this.#stream = stream;
    // Node calls `buffer` once when the socket is made, then after every read for the next one.
    this.onread = { buffer: () => this.#buffer.next(this.#last), callback: (n, buf) => this.#onRead(n, buf) };
  }

  /** Starts reading `socket` (dialed with `onread`, so paused until now). */
  start(socket: Socket): void {
    this.#socket = socket;
    socket.resume();
  }

  #onRead(n: number, buf: Uint8Array): boolean {
    this.#last = n;
    const view = Buffer.from(buf.buffer, buf.byteOffset, n);
    return writeBorrowed(this.#stream, view, this.#released);
  }

  readonly #released = (): void => {
    const s = this.#socket;
    if (s && !s.destroyed) s.resume();
  };
}

type RelayResult =
  | { readonly kind: 'ok' }
  /** Connected, then failed. */
  | { readonly kind: 'broken'; readonly reason: string };

/** Relays until the socket is closed (both directions done, a reset, `signal`, the stream gone). */
function relay(socket: Socket, stream: Duplex, toClient: PodReader, signal: AbortSignal): Promise<RelayResult> {
  return new Promise((resolve) => {
    let error: Error | undefined;
    let lingerTimer: NodeJS.Timeout | undefined;
    // Resets are expected when either side goes first; the first error is what is logged.
    socket.on('error', (err) => {
      error ??= err;
    });
    stream.on('error', () => undefined);

    const stopInput = () => {
      stream.unpipe(socket);
      if (!socket.writableEnded) socket.end();
      // Bytes the client still sends are discarded, never left unread.
      stream.resume();
    };
    // Client EOF → FIN to the pod (pipe ends the socket; allowHalfOpen keeps its read side).
    stream.pipe(socket);
    // Pod → client; pod EOF → the stream ends; the client gets a moment to finish sending, then
    // EOF as well.
    toClient.start(socket);
    socket.once('end', () => {
      if (!stream.destroyed && !stream.writableEnded) stream.end();
      lingerTimer = setTimeout(stopInput, CLIENT_LINGER_MS);
      lingerTimer.unref();
    });
    // The client reset the stream or the session died: nothing more can be relayed.
    const onStreamClose = () => socket.destroy();
    stream.once('close', onStreamClose);
    const onAbort = () => socket.destroy();
    signal.addEventListener('abort', onAbort, { once: true });
    if (stream.destroyed || signal.aborted) socket.destroy();

    socket.once('close', () => {
      clearTimeout(lingerTimer);
      signal.removeEventListener('abort', onAbort);
      stream.off('close', onStreamClose);
      stream.unpipe(socket);
      stream.resume();
      // A reset ends the stream too, as a killed socat's closed stdout did.
      if (!stream.destroyed && !stream.writableEnded) stream.end();
      resolve(error ? { kind: 'broken', reason: error.message } : { kind: 'ok' });
    });
  });
}
