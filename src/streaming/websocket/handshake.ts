import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { WebSocketServer, type WebSocket } from 'ws';
import { StatusError, badRequest } from '../../api/errors.js';
import { commaSeparatedHeaderValues } from '../headers.js';
import type { StreamingSession, UpgradeRequest } from '../upgrade.js';

/**
 * The WebSocket handshake of every upgrade nodelet accepts (exec, attach, port-forward, watches),
 * on `ws`: the checks `ws` would otherwise answer with its own `text/html`, the 101 with the
 * subprotocol chosen by the caller, and the unmasking check.
 */

const kEcho = Symbol('nodelet.subprotocol');
type Handshaking = IncomingMessage & { [kEcho]?: string };

/** `ws`'s test of a handshake key: 16 bytes in base64 (RFC 6455 §4.1). */
const WEBSOCKET_KEY = /^[+/0-9A-Za-z]{22}==$/;

/**
 * The refusal, as a Kubernetes Status and before anything is reserved, of each handshake `ws`
 * would otherwise refuse with its own `text/html` answer (`websocket-server.js` `handleUpgrade`):
 * a method other than GET (405, as golang.org/x/net/websocket's `ReadHandshake` answers the
 * kubelet's clients), a version other than 13 or 8, a malformed key, an offer naming no
 * subprotocol (400). Undefined when `ws` will accept it.
 */
export function checkWebSocketHandshake(request: IncomingMessage): StatusError | undefined {
  if (request.method !== 'GET') {
    return new StatusError('MethodNotAllowed', `a WebSocket handshake must be a GET request, not ${request.method ?? ''}`);
  }
  const version = request.headers['sec-websocket-version'];
  if (version !== '13' && version !== '8') return badRequest(`unsupported Sec-WebSocket-Version ${JSON.stringify(version ?? '')}: use 13`);
  const key = request.headers['sec-websocket-key'];
  if (typeof key !== 'string' || !WEBSOCKET_KEY.test(key)) return badRequest('missing or invalid Sec-WebSocket-Key');
  const offer = request.headersDistinct['sec-websocket-protocol'];
  if (offer !== undefined && offeredSubprotocols(request).length === 0) return badRequest('invalid Sec-WebSocket-Protocol header: it names no subprotocol');
  return undefined;
}

/** The subprotocols a WebSocket client offered, in its order (`Sec-WebSocket-Protocol`, every line). */
export function offeredSubprotocols(request: IncomingMessage): string[] {
  return commaSeparatedHeaderValues(request.headersDistinct['sec-websocket-protocol']);
}

/** The refusal when only unknown subprotocols were offered: not a 101 (wsstream's 403), so kubectl falls back to SPDY. */
export function noSubprotocol(offered: readonly string[]): StatusError {
  return new StatusError('Forbidden', `unable to upgrade: none of the offered subprotocols [${offered.join(' ')}] is supported`);
}

/** Large enough for any terminal paste or client chunking, small enough that one frame cannot balloon memory. */
const MAX_WS_PAYLOAD = 16 * 1024 * 1024;
/**
 * The one WebSocket handshaker: `ws` never listens on the server, upgrades are handed to it by
 * `acceptWebSocket`. The subprotocol was chosen by the caller, so `ws` never sees a valid offer
 * (it would refuse `SPDY/3.1+portforward.k8s.io`, `/` not being a token character) and the answer
 * is added here. No 'wsClientError' listener: with one, `ws` would leave a refused handshake hanging.
 */
const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_WS_PAYLOAD, perMessageDeflate: false, clientTracking: false });
wss.on('headers', (headers: string[], req: Handshaking) => {
  if (req[kEcho]) headers.push(`Sec-WebSocket-Protocol: ${req[kEcho]}`);
});

/**
 * Completes the WebSocket handshake of `upgrade` answering with `subprotocol` (`''`: none) and
 * calls `done` with the WebSocket. Callers checked the handshake (`checkWebSocketHandshake`)
 * first, so `done` is not called only when the socket dies before the 101.
 */
export function acceptWebSocket(upgrade: UpgradeRequest, subprotocol: string, done: (ws: WebSocket) => void): void {
  const request = upgrade.request as Handshaking;
  // `ws` only echoes the chosen subprotocol, and never parses the offer with rules of its own.
  delete request.headers['sec-websocket-protocol'];
  request[kEcho] = subprotocol;
  wss.handleUpgrade(request, upgrade.socket, upgrade.head, done);
}

/**
 * A session on a WebSocket: at `start`, the handshake with `protocol`, then `serve` with the
 * WebSocket. `serve` resolves (never rejects) once the session is over.
 */
export function webSocketSession(upgrade: UpgradeRequest, protocol: string, serve: (ws: WebSocket) => Promise<void>): StreamingSession {
  return {
    transport: 'websocket',
    protocol,
    start: (upgraded) =>
      new Promise<void>((resolve) => {
        const { socket } = upgrade;
        // A client that left while the request was checked: no 'close' is coming any more.
        if (socket.destroyed) return resolve();
        // `ws` may drop a dying socket without calling back: the session is then over.
        const closed = (): void => resolve();
        socket.once('close', closed);
        acceptWebSocket(upgrade, protocol, (ws) => {
          socket.off('close', closed);
          upgraded();
          resolve(serve(ws));
        });
      }),
  };
}

/**
 * Whether `ws` unmasks client frames with bufferutil's native code. `ws` loads it with
 * `require('bufferutil')` from its own directory unless WS_NO_BUFFER_UTIL is set, and bufferutil
 * itself falls back to JavaScript silently when its prebuilt binary cannot load: so both are
 * checked here, the same way (logged at start, `nodelet_websocket_native_unmask`).
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
