import { ServerResponse, type IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { StatusError, badRequest } from '../api/errors.js';
import type { StreamingUpgradeLabels } from '../metrics/registry.js';
import { upgradeTransport, type Negotiated, type UpgradeRequest } from '../streaming/upgrade.js';
import { stopSocketTimer } from '../streaming/socket-timer.js';
import { acceptWebSocket, nativeUnmask } from '../streaming/websocket/handshake.js';
import { whenAnswered } from './connections.js';
import { statusFor } from './errors.js';
import type { Logger } from '../logging/index.js';

const kUpgrade = Symbol('nodelet.upgrade');
type RoutedUpgrade = IncomingMessage & { [kUpgrade]?: UpgradeRequest };

/**
 * Whether `raw` came in through the `upgrade` event: its answer is either a 101, after which the
 * connection is the session's and closes with it, or a refusal, after which it closes too.
 */
export function isUpgradeRequest(raw: IncomingMessage): boolean {
  return (raw as RoutedUpgrade)[kUpgrade] !== undefined;
}

/**
 * The upgrade `request` arrived as (its request, socket and early bytes), for the streaming entry
 * points (`serveRemoteCommand`, `servePortForward`); a 400 when it is not an HTTP Upgrade.
 */
export function pendingUpgrade(request: FastifyRequest): UpgradeRequest {
  const upgrade = (request.raw as RoutedUpgrade)[kUpgrade];
  if (!upgrade || !request.headers.upgrade) throw badRequest('Upgrade request required');
  return upgrade;
}

/** The session cap and the 101 counter (`nodelet_streaming_upgrades_total`) every upgrade goes through. */
export interface UpgradeAccounting {
  readonly sessions: StreamingSessions;
  /** Called once per session at its 101. */
  readonly upgraded: (labels: StreamingUpgradeLabels) => void;
}

/**
 * Answers what a streaming entry point negotiated on `upgrade`. A refusal is thrown as its Status
 * (with its headers set). A session reserves a streaming session slot (429 when full, nothing
 * written yet), takes the connection from Fastify and starts: at its 101 the slot tracks the
 * socket and `nodelet_streaming_upgrades_total` counts it. The slot is released when the session
 * is over, or when the socket dies first.
 */
export function acceptUpgrade(
  reply: FastifyReply,
  upgrade: UpgradeRequest,
  streaming: UpgradeAccounting,
  path: StreamingUpgradeLabels['path'],
  negotiated: Negotiated,
): void {
  if ('refusal' in negotiated) {
    for (const [name, values] of Object.entries(negotiated.refusal.headers)) void reply.header(name, values);
    throw negotiated.refusal.error;
  }
  const { session } = negotiated;
  const { socket } = upgrade;
  const slot = streaming.sessions.reserve();
  if (!slot) throw new StatusError('TooManyRequests', 'too many streaming sessions in flight; retry later', { retryAfterSeconds: 60 });
  // 'close' is emitted once: `on` without `once`'s wrapper. This listener also ends a tracked slot.
  socket.on('close', slot.release);
  takeOver(reply, socket);
  const upgraded = (): void => {
    slot.track(socket);
    streaming.upgraded({ path, transport: session.transport, protocol: session.protocol });
  };
  // `then`, not `finally` (which keeps two more closures per session); `start` never rejects.
  void session.start(upgraded).then(slot.release, slot.release);
}

/**
 * Completes the WebSocket handshake of a watch (`?watch=true` asked for as a WebSocket, the
 * apiserver's `HandleWS`) and calls `open` with the WebSocket. A watch is not a streaming session:
 * it is capped by the watch limits its route already applied, so no session slot is taken. If the
 * handshake fails after all (`upgradeTransport` refused every handshake `ws` would, so only a socket
 * that dies first), `open` is never called; callers release what they hold on the socket's `close`.
 */
export function acceptWatchWebSocket(request: FastifyRequest, reply: FastifyReply, subprotocol: string, open: (ws: WebSocket, socket: Duplex) => void): Duplex {
  const upgrade = pendingUpgrade(request);
  const transport = upgradeTransport(upgrade);
  if (typeof transport !== 'string') throw transport.error;
  if (transport !== 'websocket') throw badRequest('unsupported upgrade protocol "spdy/3.1" for a watch: use websocket');
  takeOver(reply, upgrade.socket);
  acceptWebSocket(upgrade, subprotocol, (ws) => open(ws, upgrade.socket));
  return upgrade.socket;
}

/**
 * Takes an upgrade's connection from Fastify. From here the session owns the socket: nothing of
 * the HTTP exchange may stay reachable from it for the session's lifetime (the ServerResponse,
 * and through its listeners Fastify's request, reply and logger: ~4 KiB per idle session), and
 * the server's 4 h socket timer stops (refreshed on every read and write; sessions and watches
 * have their own timeouts).
 */
function takeOver(reply: FastifyReply, socket: Duplex): void {
  reply.hijack();
  if (reply.raw.socket === socket) reply.raw.detachSocket(socket as Socket);
  stopSocketTimer(socket);
}

/**
 * Routes every HTTP Upgrade request through Fastify like any other request, so the same hooks
 * (path checks, and later authentication) run before a single upgraded byte, and unknown routes,
 * bad parameters or refused upgrades get ordinary HTTP answers that clients can read (kubectl
 * falls back from WebSocket to SPDY on any non-101). A handler that accepts the upgrade calls
 * `reply.hijack()` and owns the socket from then on. `@fastify/websocket` is not used because it
 * claims every Upgrade, SPDY included, for `ws`.
 */
export function routeUpgrades(app: FastifyInstance, log: Logger): void {
  if (nativeUnmask()) log.info('websocket: native unmasking (bufferutil) loaded');
  else log.warn('websocket: bufferutil not loaded, client frames are unmasked in JavaScript (slower exec stdin)');
  // Node detaches upgrade sockets from the HTTP server, so `close()` would not end a request still
  // answering on one (e.g. a log follow sent with upgrade headers): track and close them here.
  const open = new Set<Duplex>();
  app.addHook('preClose', async () => {
    for (const socket of open) socket.destroy();
  });
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    watchUpgradeSocket(open, socket);
    // Pipelined behind requests still being answered: its turn comes after theirs, as in Go's
    // net/http (an answer in progress owns the socket until it finishes).
    whenAnswered(socket, () => {
      try {
        route(app, req as RoutedUpgrade, socket, head);
      } catch (err) {
        // Outside any server event here (see whenAnswered): end this connection, not the process.
        log.error({ err }, 'http: panic serving an upgrade; closing its connection');
        socket.destroy();
      }
    });
  });
}

/**
 * The listeners every upgrade socket keeps for its whole life: in `open` until it closes, and an
 * error (a client vanishing mid-handshake) destroys it instead of becoming uncaught. Made here,
 * not in the `upgrade` handler: closures share their function's context, so listeners made there
 * would keep the request (its headers, URL and parser state: ≈ 2.5 KiB) alive as long as the
 * session. 'close' is emitted once (`net.Socket` `destroy`), so `on` does what `once` would
 * without its wrapper.
 */
function watchUpgradeSocket(open: Set<Duplex>, socket: Duplex): void {
  open.add(socket);
  socket.on('close', () => open.delete(socket));
  socket.on('error', destroyOnError);
}

function destroyOnError(this: Duplex): void {
  this.destroy();
}

/** Hands an Upgrade request to Fastify's router with a ServerResponse of its own on `socket`. */
function route(app: FastifyInstance, req: RoutedUpgrade, socket: Duplex, head: Buffer): void {
  // An earlier answer said `Connection: close` (or the client half-closed): nothing more is served.
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  // Request smuggling: Node leaves an upgrade request's body unread, so after a 101 it would be
  // parsed as WebSocket/SPDY frames. Upgrades carry no body; refuse one that declares one.
  if (req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0') {
    const body = JSON.stringify(statusFor(badRequest('an upgrade request must not have a body')));
    socket.write(`HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
    closeAfterAnswer(socket);
    return;
  }
  req[kUpgrade] = { request: req, socket, head };
  const res = new ServerResponse(req);
  res.assignSocket(socket as Socket);
  // Node has detached its HTTP parser from this socket: one answer, then the connection closes.
  res.shouldKeepAlive = false;
  res.on('finish', () => closeAfterAnswer(socket));
  app.routing(req, res);
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

  /**
   * Reserves a slot before upgrading; undefined when the cap is reached (answer 429). `track`
   * counts the slot as the open `socket` (closed by `closeAll`); the caller calls `release` when
   * the session is over and when that socket closes (both may happen: `release` is idempotent).
   */
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
      },
      release,
    };
  }

  closeAll(): void {
    for (const socket of this.#open) socket.destroy();
    this.#open.clear();
  }
}
