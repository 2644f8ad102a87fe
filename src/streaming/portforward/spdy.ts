import type { Duplex } from 'node:stream';
import type { Logger } from '../../logging/index.js';
import type { SpdyConnection, SpdyStream } from '../spdy/index.js';
import { validateStreamHeaders } from './headers.js';
import { tooManyOnNode, tooManyPerSession, type ForwardLimiter } from './limits.js';
import { StreamPairing, type PendingPair } from './pairing.js';

/** Relays `stream` to `port` in the pod; rejects (with the text for the error stream) when it cannot. */
export type ForwardFn = (port: number, stream: Duplex, signal: AbortSignal) => Promise<void>;

/** One upgraded port-forward connection, whatever its wire form. */
export interface PortForwardSession {
  /** Resolves (never rejects) once the connection is closed and every forward has settled. */
  readonly done: Promise<void>;
  /** Ends the session from our side (the pod went away): forwards are aborted, the connection closed. */
  close(reason: string): void;
}

export interface SpdyPortForwardOptions {
  readonly forward: ForwardFn;
  /** How long the second stream of a pair may take (the kubelet's 30 s). */
  readonly creationTimeoutMs: number;
  readonly log: Pick<Logger, 'debug' | 'info'>;
  /** After `close()`, how long the client has to finish its streams before the socket is dropped. */
  readonly closeGraceMs?: number;
  /** Forwarded connections (complete pairs) this session may have open at once; default unbounded. */
  readonly maxConnections?: number;
  /** The node-wide bound, shared with every other session. */
  readonly limiter?: ForwardLimiter;
}

const noop = (): void => undefined;

/**
 * Serves `portforward.k8s.io` over an accepted SPDY connection (plain, or tunnelled in a
 * WebSocket), as the kubelet's `portforward/httpstream.go`: every stream is validated when it
 * is created (bad `port` or `streamType` → RST_STREAM), answered with a SYN_REPLY, and paired
 * with its partner by request ID; a complete pair is forwarded, and a forward that fails writes
 * its error on that pair's error stream only — the other pairs carry on. Both streams of a pair
 * are FINed when its forward ends: kubectl waits for the data stream's EOF, then for the error
 * stream's, and exits 1 if the latter carried text.
 *
 * A pair beyond `maxConnections` open in this session, or beyond the node-wide `limiter`, is
 * refused the same way, before the runtime is asked (nothing is spawned): the reason on its error
 * stream. Each forward gets its own abort signal (no listener piles up on a shared one).
 */
export function serveSpdyPortForward(conn: SpdyConnection, opts: SpdyPortForwardOptions): PortForwardSession {
  const { log } = opts;
  /** One per forward in flight: its abort signal, and so the count of open connections. */
  const running = new Set<AbortController>();
  const abortAll = () => {
    for (const controller of running) controller.abort();
  };
  const forwards = new Set<Promise<void>>();
  const ports = new WeakMap<SpdyStream, number>();
  let closing = false;

  const pairing = new StreamPairing<SpdyStream>({
    timeoutMs: opts.creationTimeoutMs,
    onTimeout: (pair, message) => {
      log.info({ requestId: pair.requestId }, 'port-forward: timed out waiting for the second stream of a pair');
      abandon(pair, message);
    },
  });

  conn.on('stream', (stream: SpdyStream) => {
    // Nothing a client does with a stream may throw into the process.
    stream.on('error', noop);
    const checked = validateStreamHeaders(stream.headers, stream.id);
    if ('error' in checked) {
      log.debug({ streamId: stream.id, headers: stream.headers, reason: checked.error }, 'port-forward: stream rejected');
      stream.reset();
      return;
    }
    const { type, port, requestId } = checked.stream;
    const added = pairing.add(stream, type, requestId);
    if (added.kind === 'duplicate') {
      log.debug({ streamId: stream.id, requestId }, added.message);
      added.pair.error?.write(added.message);
      stream.reset();
      return;
    }
    ports.set(stream, port);
    void stream.reply();
    // kubectl FINs its error stream right after the reply and never writes on it; drained so
    // that a chatty client can never stall the session (every stream must be read).
    if (type === 'error') stream.resume();
    if (added.kind === 'complete') start(added.error, added.data);
  });

  const done = new Promise<void>((resolve) => {
    conn.once('close', () => {
      closing = true;
      abortAll();
      // The connection destroyed every stream; only the timers are left.
      pairing.close();
      void Promise.allSettled([...forwards]).then(() => resolve());
    });
  });

  function start(errorStream: SpdyStream, dataStream: SpdyStream): void {
    const port = ports.get(dataStream) ?? 0;
    if (opts.maxConnections !== undefined && running.size >= opts.maxConnections) return refuse(errorStream, dataStream, port, tooManyPerSession(opts.maxConnections));
    const release = opts.limiter ? opts.limiter.tryAcquire() : noop;
    if (!release) return refuse(errorStream, dataStream, port, tooManyOnNode(opts.limiter?.max ?? 0));
    const controller = new AbortController();
    running.add(controller);
    // A forward that throws instead of rejecting is still only this pair's failure.
    const run = new Promise<void>((resolve) => resolve(opts.forward(port, dataStream, controller.signal))).then(
      () => undefined,
      (err: unknown) => (err instanceof Error ? err.message : String(err)),
    );
    const settled = run.then((failure) => {
      if (failure !== undefined && !closing) {
        log.info({ port, streamId: dataStream.id, err: failure }, 'port-forward: forwarding failed');
        if (!errorStream.destroyed && !errorStream.writableEnded) errorStream.write(failure);
      }
      endQuietly(dataStream);
      // Whatever the client still sends on a finished pair is discarded, never left unread.
      dataStream.resume();
      endQuietly(errorStream);
    });
    forwards.add(settled);
    void settled.finally(() => {
      forwards.delete(settled);
      running.delete(controller);
      release();
    });
  }

  /**
   * A complete pair over a limit ends as a failed forward does: the reason on its error stream,
   * both streams FINed, whatever the client still sends discarded. Not a reset of the data stream:
   * kubectl then reports "stream reset" and never reads the reason.
   */
  function refuse(errorStream: SpdyStream, dataStream: SpdyStream, port: number, message: string): void {
    // Debug only: a client can cause this as often as it likes.
    log.debug({ port, streamId: dataStream.id }, `port-forward: refused, ${message}`);
    if (!errorStream.destroyed && !errorStream.writableEnded) errorStream.end(message);
    endQuietly(dataStream);
    dataStream.resume();
  }

  /** A pair that will never be complete: its message goes on its error stream, if it has one. */
  function abandon(pair: PendingPair<SpdyStream>, message: string): void {
    if (pair.error && !pair.error.destroyed && !pair.error.writableEnded) pair.error.end(message);
    pair.data?.reset();
  }

  return {
    done,
    close(reason: string): void {
      if (closing || conn.closed) return;
      closing = true;
      log.info({ reason }, 'port-forward: closing the session');
      abortAll();
      for (const pair of pairing.close()) abandon(pair, reason);
      // GOAWAY: the session ends once the client has closed the finished pairs…
      conn.goAway();
      // …or a moment later in any case.
      setTimeout(() => conn.close(), opts.closeGraceMs ?? 2000).unref();
    },
  };
}

function endQuietly(stream: SpdyStream): void {
  if (!stream.destroyed && !stream.writableEnded) stream.end();
}
