import { ServerResponse, type IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WebSocketServer, type WebSocket } from 'ws';
import { StatusError, badRequest } from '../api/errors.js';
import type { StreamingUpgradeLabels } from '../metrics/registry.js';
import { offeredProtocols } from '../streaming/portforward/channels.js';
import { ACCEPTED_PROTOCOLS_HEADER, STREAM_PROTOCOL_HEADER, type HandshakeResult } from '../streaming/remotecommand/negotiate.js';
import { trackAnswers, whenAnswered } from './connections.js';
import { statusFor } from './errors.js';

const kUpgrade = Symbol('nodelet.upgrade');

/** The raw connection of an HTTP Upgrade request, before any 101 was written. */
export interface PendingUpgrade {
  readonly socket: Duplex;
  /** Bytes that arrived after the request headers (normally none: clients wait for the 101). */
  readonly head: Buffer;
}

const kEcho = Symbol('nodelet.subprotocol');
type UpgradeRequest = IncomingMessage & { [kUpgrade]?: PendingUpgrade; [kEcho]?: string };

/** The pending upgrade of `request`, when it arrived as an HTTP Upgrade (WebSocket or SPDY). */
function upgradeOf(request: FastifyRequest): PendingUpgrade | undefined {
  return (request.raw as UpgradeRequest)[kUpgrade];
}

/**
 * Whether `raw` came in through the `upgrade` event: its answer is either a 101, after which the
 * connection is the session's and closes with it, or a refusal, after which it closes too.
 */
export function isUpgradeRequest(raw: IncomingMessage): boolean {
  return (raw as UpgradeRequest)[kUpgrade] !== undefined;
}

/** The upgrade being asked for: `websocket` or `spdy/3.1`, with its connection; else a 400. */
export function upgradeRequest(request: FastifyRequest): PendingUpgrade & { readonly protocol: 'websocket' | 'spdy/3.1' } {
  const upgrade = upgradeOf(request);
  const protocol = String(request.headers.upgrade ?? '').toLowerCase();
  if (!upgrade || !protocol) throw badRequest('Upgrade request required');
  if (protocol !== 'websocket' && protocol !== 'spdy/3.1') throw badRequest(`unsupported upgrade protocol "${protocol}": use websocket or SPDY/3.1`);
  if (protocol === 'websocket') checkWebSocketHandshake(request);
  return { ...upgrade, protocol };
}

/** `ws`'s test of a handshake key: 16 bytes in base64 (RFC 6455 §4.1). */
const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;

/**
 * Refuses, as a Kubernetes Status and before anything is reserved, each handshake `ws` would
 * otherwise refuse with its own `text/html` answer (`websocket-server.js` `handleUpgrade`): a
 * method other than GET (405, as golang.org/x/net/websocket's `ReadHandshake` answers the
 * kubelet's clients), a version other than 13 or 8, a malformed key (400).
 */
function checkWebSocketHandshake(request: FastifyRequest): void {
  if (request.method !== 'GET') {
    throw new StatusError('MethodNotAllowed', `a WebSocket handshake must be a GET request, not ${request.method}`);
  }
  const version = request.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') throw badRequest(`unsupported Sec-WebSocket-Version ${JSON.stringify(version ?? '')}: use 13`);
  const key = request.headers['sec-websocket-key'];
  if (typeof key !== 'string' || !WEBSOCKET_KEY.test(key)) throw badRequest('missing or invalid Sec-WebSocket-Key');
  const offer = request.headers['sec-websocket-protocol'];
  if (offer !== undefined && offeredProtocols(offer).length === 0) throw badRequest('invalid Sec-WebSocket-Protocol header: it names no subprotocol');
}

/** The SPDY handshake's protocol, or the refusal (400, or 403 listing ours) thrown as a Status. */
export function spdyProtocol(reply: FastifyReply, negotiated: HandshakeResult): string {
  if (!('error' in negotiated)) return negotiated.protocol;
  if (negotiated.error === 400) throw badRequest(negotiated.message);
  void reply.header(ACCEPTED_PROTOCOLS_HEADER, negotiated.accepted);
  throw new StatusError('Forbidden', negotiated.message);
}

/** The WebSocket refusal when only unknown subprotocols were offered: not a 101, so kubectl falls back to SPDY. */
export function noSubprotocol(offered: readonly string[]): StatusError {
  return new StatusError('Forbidden', `unable to upgrade: none of the offered subprotocols [${offered.join(' ')}] is supported`);
}

/** Large enough for any terminal paste or client chunking, small enough that one frame cannot balloon memory. */
const MAX_WS_PAYLOAD = 16 * 1024 * 1024;
/**
 * The one WebSocket handshaker: `ws` never listens on the server, upgrades are handed to it by
 * `acceptUpgrade`. The subprotocol was chosen by the route, so `ws` never sees a valid offer (it
 * would refuse `SPDY/3.1+portforward.k8s.io`, `/` not being a token character) and the answer is
 * added here. No 'wsClientError' listener: with one, `ws` would leave a refused handshake hanging.
 */
const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_WS_PAYLOAD, perMessageDeflate: false, clientTracking: false });
wss.on('headers', (headers: string[], req: UpgradeRequest) => {
  if (req[kEcho]) headers.push(`Sec-WebSocket-Protocol: ${req[kEcho]}`);
});

/** The session cap and the 101 counter (`nodelet_streaming_upgrades_total`) every upgrade goes through. */
export interface UpgradeAccounting {
  readonly sessions: StreamingSessions;
  /** Called once per session at its 101. */
  readonly upgraded: (labels: StreamingUpgradeLabels) => void;
}

/**
 * Whether `ws` unmasks client frames with bufferutil's native code. `ws` loads it with
 * `require('bufferutil')` from its own directory unless WS_NO_BUFFER_UTIL is set, and bufferutil
 * itself falls back to JavaScript silently when its prebuilt binary cannot load: so both are
 * checked here, the same way, at start (logged by `routeUpgrades`, `nodelet_websocket_native_unmask`).
 */
export function nativeUnmask(): boolean {
  if (process.env.WS_NO_BUFFER_UTIL) return false;
  try {
    const fromWs = createRequire(createRequire(import.meta.url).resolve('ws'));
    const { mask } = fromWs('bufferutil') as { mask?: unknown };
    return typeof mask === 'function' && Function.prototype.toString.call(mask).includes('[native code]');
  } catch {
    return false;
  }
}

/** How to complete an upgrade: the WebSocket handshake with the chosen subprotocol (`''` = none), or SPDY's 101. */
export type UpgradeTarget = { readonly websocket: string } | { readonly spdy: string };
/** The upgraded connection `serve` gets: `ws` is the WebSocket for WebSocket targets. */
export interface Upgraded<T extends UpgradeTarget> {
  readonly socket: Duplex;
  /** Bytes that arrived before the handshake completed (SPDY only; `ws` consumes its own). */
  readonly head: Buffer;
  readonly ws: T extends { readonly websocket: string } ? WebSocket : undefined;
}

/**
 * Takes the connection of an upgrade request over: reserves a streaming session slot (429 when
 * full, nothing written yet), hijacks the reply, completes the handshake, and calls `serve` with
 * the upgraded connection (`ws` is set for WebSocket targets). The slot is released when the
 * promise `serve` returns settles, or when the socket dies first (`ws` may refuse a bad handshake
 * without calling back). Throws (before the hijack) only the 429.
 */
export function acceptUpgrade<T extends UpgradeTarget>(
  request: FastifyRequest,
  reply: FastifyReply,
  streaming: UpgradeAccounting,
  path: StreamingUpgradeLabels['path'],
  target: T,
  serve: (conn: Upgraded<T>) => Promise<void>,
): void {
  const { socket, head } = upgradeRequest(request);
  const slot = streaming.sessions.reserve();
  if (!slot) throw new StatusError('TooManyRequests', 'too many streaming sessions in flight; retry later', { retryAfterSeconds: 60 });
  socket.once('close', slot.release);
  takeOver(reply, socket);
  const start = (ws: WebSocket | undefined, rest: Buffer): void => {
    slot.track(socket);
    streaming.upgraded({ path, transport: ws ? 'websocket' : 'spdy', protocol: 'spdy' in target ? target.spdy : target.websocket });
    void serve({ socket, head: rest, ws } as Upgraded<T>).finally(slot.release);
  };
  if ('spdy' in target) {
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n${STREAM_PROTOCOL_HEADER}: ${target.spdy}\r\n\r\n`);
    return start(undefined, head);
  }
  handshake(request, socket, head, target.websocket, (ws) => start(ws, Buffer.alloc(0)));
}

/**
 * Completes the WebSocket handshake of a watch (`?watch=true` asked for as a WebSocket, the
 * apiserver's `HandleWS`) and calls `open` with the WebSocket. A watch is not a streaming session:
 * it is capped by the watch limits its route already applied, so no session slot is taken. If the
 * handshake fails after all (upgradeRequest refused every handshake `ws` would, so only a socket
 * that dies first), `open` is never called; callers release what they hold on the socket's `close`.
 */
export function acceptWatchWebSocket(request: FastifyRequest, reply: FastifyReply, subprotocol: string, open: (ws: WebSocket, socket: Duplex) => void): Duplex {
  const { socket, head, protocol } = upgradeRequest(request);
  if (protocol !== 'websocket') throw badRequest(`unsupported upgrade protocol "${protocol}" for a watch: use websocket`);
  takeOver(reply, socket);
  handshake(request, socket, head, subprotocol, (ws) => open(ws, socket));
  return socket;
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
  (socket as Partial<Socket>).setTimeout?.(0);
}

/** The WebSocket handshake answering with `subprotocol` (`''`: none). */
function handshake(request: FastifyRequest, socket: Duplex, head: Buffer, subprotocol: string, done: (ws: WebSocket) => void): void {
  const raw = request.raw as UpgradeRequest;
  // The subprotocol was chosen already (checkWebSocketHandshake refused an offer naming none):
  // `ws` only echoes it, and never parses the offer with rules of its own.
  delete raw.headers['sec-websocket-protocol'];
  raw[kEcho] = subprotocol;
  wss.handleUpgrade(raw, socket, head, done);
}

/**
 * Routes every HTTP Upgrade request through Fastify like any other request, so the same hooks
 * (path checks, and later authentication) run before a single upgraded byte, and unknown routes,
 * bad parameters or refused upgrades get ordinary HTTP answers that clients can read (kubectl
 * falls back from WebSocket to SPDY on any non-101). A handler that accepts the upgrade calls
 * `reply.hijack()` and owns the socket from then on. `@fastify/websocket` is not used because it
 * claims every Upgrade, SPDY included, for `ws`.
 */
export function routeUpgrades(app: FastifyInstance): void {
  if (nativeUnmask()) app.log.info('websocket: native unmasking (bufferutil) loaded');
  else app.log.warn('websocket: bufferutil not loaded, client frames are unmasked in JavaScript (slower exec stdin)');
  // Node detaches upgrade sockets from the HTTP server, so `close()` would not end a request still
  // answering on one (e.g. a log follow sent with upgrade headers): track and close them here.
  const open = new Set<Duplex>();
  app.addHook('preClose', async () => {
    for (const socket of open) socket.destroy();
  });
  trackAnswers(app.server);
  app.server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    // Clients vanishing mid-handshake must not become uncaught errors.
    socket.on('error', () => socket.destroy());
    // Pipelined behind requests still being answered: its turn comes after theirs, as in Go's
    // net/http (an answer in progress owns the socket until it finishes).
    whenAnswered(socket, () => {
      try {
        route(app, req as UpgradeRequest, socket, head);
      } catch (err) {
        // Outside any server event here (see whenAnswered): end this connection, not the process.
        app.log.error({ err }, 'http: panic serving an upgrade; closing its connection');
        socket.destroy();
      }
    });
  });
}

/** Hands an Upgrade request to Fastify's router with a ServerResponse of its own on `socket`. */
function route(app: FastifyInstance, req: UpgradeRequest, socket: Duplex, head: Buffer): void {
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
  req[kUpgrade] = { socket, head };
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
