import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { badRequest } from '../api/errors.js';
import { statusFor } from './errors.js';

const kUpgrade = Symbol('nodelet.upgrade');

/** The raw connection of an HTTP Upgrade request, before any 101 was written. */
export interface PendingUpgrade {
  readonly socket: Duplex;
  /** Bytes that arrived after the request headers (normally none: clients wait for the 101). */
  readonly head: Buffer;
}

type UpgradeRequest = IncomingMessage & { [kUpgrade]?: PendingUpgrade };

/** The pending upgrade of `request`, when it arrived as an HTTP Upgrade (WebSocket or SPDY). */
export function upgradeOf(request: FastifyRequest): PendingUpgrade | undefined {
  return (request.raw as UpgradeRequest)[kUpgrade];
}

/**
 * Routes every HTTP Upgrade request through Fastify like any other request, so the same hooks
 * (path checks, and later authentication) run before a single upgraded byte, and unknown routes,
 * bad parameters or refused upgrades get ordinary HTTP answers that clients can read (kubectl
 * falls back from WebSocket to SPDY on any non-101). A handler that accepts the upgrade calls
 * `reply.hijack()` and owns the socket from then on. `@fastify/websocket` is not used because it
 * claims every Upgrade (SPDY included) for `ws` (ecosystem.md §1.3).
 */
export function routeUpgrades(app: FastifyInstance): void {
  // Node detaches upgrade sockets from the HTTP server, so `close()` would not end a request still
  // answering on one (e.g. a log follow sent with upgrade headers): track and close them here.
  const open = new Set<Duplex>();
  app.addHook('preClose', async () => {
    for (const socket of open) socket.destroy();
  });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    // Clients vanishing mid-handshake must not become uncaught errors.
    socket.on('error', () => socket.destroy());
    // Request smuggling: Node leaves an upgrade request's body unread, so after a 101 it would be
    // parsed as WebSocket/SPDY frames. Upgrades carry no body; refuse one that declares one.
    if (req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0') {
      const body = JSON.stringify(statusFor(badRequest('an upgrade request must not have a body')));
      socket.write(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
      closeAfterAnswer(socket);
      return;
    }
    (req as UpgradeRequest)[kUpgrade] = { socket, head };
    const res = new ServerResponse(req);
    res.assignSocket(socket as Socket);
    // Node has detached its HTTP parser from this socket: one answer, then the connection closes.
    res.shouldKeepAlive = false;
    res.on('finish', () => closeAfterAnswer(socket));
    app.routing(req, res);
  });
}

/**
 * How long a refused upgrade's socket lingers after its answer before it is destroyed: enough for
 * the client to read the answer before the close (Go's net/http waits 500 ms, `rstAvoidanceDelay`),
 * short enough that silent clients cannot pile up descriptors (the upgrade path has no timeouts).
 */
export const REFUSED_UPGRADE_LINGER_MS = 500;

/**
 * Ends a socket whose upgrade was answered without a 101: FIN after the answer, whatever the client
 * still sends is read and discarded (so the close is not a reset that could eat the answer), and the
 * socket is destroyed once the client closed too or after `REFUSED_UPGRADE_LINGER_MS`, whichever
 * comes first — never left to a client that stays silent.
 */
function closeAfterAnswer(socket: Duplex): void {
  if (socket.destroyed) return;
  socket.end();
  socket.resume();
  const timer = setTimeout(() => socket.destroy(), REFUSED_UPGRADE_LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/**
 * Counts open streaming sessions (exec, attach, port-forward) against a cap, like the kubelet's
 * 1000 in-flight streams, and closes them all when the server stops so `app.close()` completes.
 */
export class StreamingSessions {
  readonly #max: number;
  readonly #open = new Set<Duplex>();
  #reserved = 0;

  constructor(max: number) {
    this.#max = max;
  }

  get size(): number {
    return this.#open.size + this.#reserved;
  }

  /** Reserves a slot before upgrading; undefined when the cap is reached (answer 429). */
  reserve(): { track(socket: Duplex): void; release(): void } | undefined {
    if (this.size >= this.#max) return undefined;
    this.#reserved++;
    let state: 'reserved' | 'tracked' | 'released' = 'reserved';
    let tracked: Duplex | undefined;
    const release = () => {
      if (state === 'reserved') this.#reserved--;
      if (state === 'tracked' && tracked) this.#open.delete(tracked);
      state = 'released';
    };
    return {
      track: (socket) => {
        if (state !== 'reserved') return;
        this.#reserved--;
        state = 'tracked';
        tracked = socket;
        this.#open.add(socket);
        socket.once('close', release);
      },
      release,
    };
  }

  closeAll(): void {
    for (const socket of this.#open) socket.destroy();
    this.#open.clear();
  }
}
