import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** An HTTP server's socket: Node's parser sits on it until the socket closes or is upgraded (lib/_http_server.js `freeParser`). */
type HttpSocket = Socket & { parser?: unknown };

interface Seen {
  /** `bytesRead + bytesWritten` at the last sweep that saw them change. */
  moved: number;
  /** When they were last seen changing (`Date.now()` ms). */
  since: number;
}

/**
 * The socket inactivity limit of an HTTP server (nodelet's 4 h, the kubelet's read/write timeouts
 * for long log follows), checked by one sweep for all connections instead of Node's per-socket
 * timer (`server.timeout`, Fastify's `connectionTimeout`, which must then be 0).
 *
 * Why: with `server.timeout` set, Node re-arms each keep-alive socket's timer twice per request
 * (lib/_http_server.js `resetSocketTimeout` on the request, the keep-alive timeout in
 * `resOnFinish`), each time a new `Timeout` and a bound callback (lib/internal/stream_base_commons.js
 * `setStreamTimeout`); without it the request only clears the keep-alive timer. Here a connection
 * costs a set entry when it opens and nothing per request.
 *
 * Contract: a socket that moved no byte either way (`bytesRead + bytesWritten` unchanged) for
 * `limitMs` gets the `timeout` event Node's timer would have emitted: Node's own listener
 * (`socketOnTimeout`) hands it to the request, the response and the server's `timeout` listeners,
 * and destroys the socket when none takes it. The limit is enforced between `limitMs` and
 * `limitMs + 2 × intervalMs` after the last byte (activity is noticed at the next sweep), once per
 * quiet spell. Idle keep-alive sockets and sockets still sending their request headers are ended
 * earlier by Node's own `keepAliveTimeout` and `headersTimeout`/`requestTimeout`. Upgraded sockets
 * leave the HTTP server (exec, attach and port-forward sessions have their own idle timeouts):
 * they are forgotten at the `upgrade` event.
 */
export class InactivityLimit {
  readonly #limitMs: number;
  readonly #sockets = new Map<HttpSocket, Seen>();
  readonly #timer: NodeJS.Timeout;
  /** One `close` listener for every socket: no closure per connection. */
  readonly #closed: (this: HttpSocket) => void;

  /**
   * `event` is the one that hands Node's HTTP layer its sockets: `connection` for HTTP,
   * `secureConnection` for HTTPS (the TLS socket carries the parser).
   */
  constructor(server: Server, event: 'connection' | 'secureConnection', limitMs: number, intervalMs = Math.min(60_000, limitMs)) {
    this.#limitMs = limitMs;
    const sockets = this.#sockets;
    this.#closed = function closed(this: HttpSocket): void {
      sockets.delete(this);
    };
    server.on(event, (socket: HttpSocket) => {
      sockets.set(socket, { moved: 0, since: Date.now() });
      socket.on('close', this.#closed);
    });
    server.on('upgrade', (_req: unknown, socket: HttpSocket) => this.#forget(socket));
    this.#timer = setInterval(() => this.sweep(Date.now()), intervalMs);
    // Like the per-socket timers it replaces: it does not keep the process alive.
    this.#timer.unref();
    server.once('close', () => clearInterval(this.#timer));
  }

  /** Connections watched. */
  get size(): number {
    return this.#sockets.size;
  }

  /** One pass over the connections at time `now` (run by the interval; callable for tests). */
  sweep(now: number): void {
    for (const [socket, seen] of this.#sockets) {
      // No parser: upgraded (or closed) without the events above; not the HTTP server's any more.
      if (socket.parser == null) {
        this.#forget(socket);
        continue;
      }
      const moved = socket.bytesRead + socket.bytesWritten;
      if (moved !== seen.moved) {
        seen.moved = moved;
        seen.since = now;
      } else if (now - seen.since >= this.#limitMs) {
        seen.since = now;
        socket.emit('timeout');
      }
    }
  }

  #forget(socket: HttpSocket): void {
    if (this.#sockets.delete(socket)) socket.off('close', this.#closed);
  }
}
