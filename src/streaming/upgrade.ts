import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { badRequest, type StatusError } from '../api/errors.js';
import { checkWebSocketHandshake } from './websocket/handshake.js';

/**
 * The entry points' common types: what `serveRemoteCommand` and `servePortForward` take (an HTTP
 * Upgrade request nobody answered yet) and what they give back (a refusal to answer with, or a
 * session to start). The HTTP layer owns everything around them: routing, authentication, the
 * session cap, taking the socket from its framework.
 */

/** An HTTP Upgrade request before any answer: Node's parsed request, its connection, the bytes after its headers. */
export interface UpgradeRequest {
  /** Method and headers (`headers` joined, `headersDistinct` one element per line). */
  readonly request: IncomingMessage;
  readonly socket: Duplex;
  /** Bytes that arrived after the request headers (normally none: clients wait for the 101). */
  readonly head: Buffer;
}

/** The transport a session runs on: `Upgrade: websocket` or `Upgrade: SPDY/3.1`. */
export type Transport = 'websocket' | 'spdy';

/** An upgrade refused before the 101: the Status to answer with, and the headers to add to it. */
export interface Refusal {
  readonly error: StatusError;
  readonly headers: Readonly<Record<string, readonly string[]>>;
}

/** A negotiated session, not started: nothing was written to the socket yet. */
export interface StreamingSession {
  readonly transport: Transport;
  /** The negotiated protocol (`''` when a WebSocket client offered none), as the 101 names it. */
  readonly protocol: string;
  /**
   * Writes the 101 (completes the handshake) on the upgrade's socket and serves the session;
   * `upgraded` is called once, at the 101. Resolves (never rejects) once the session is over, or
   * once the socket closed before the handshake completed or was gone already (then `upgraded` is
   * never called).
   */
  start(upgraded: () => void): Promise<void>;
}

export type Negotiated = { readonly session: StreamingSession } | { readonly refusal: Refusal };

/** A refusal as `Negotiated`. */
export function refuse(error: StatusError, headers: Refusal['headers'] = {}): { readonly refusal: Refusal } {
  return { refusal: { error, headers } };
}

/**
 * The transport an upgrade asks for, as the kubelet's streaming handlers branch on
 * `wsstream.IsWebSocketRequest` (`pkg/kubelet/cri/streaming/remotecommand/httpstream.go`
 * `createStreams`, `portforward/portforward.go` `ServePortForward`) — or the refusal: an upgrade
 * to anything but WebSocket or SPDY/3.1, or a WebSocket handshake `ws` would refuse.
 */
export function upgradeTransport(upgrade: UpgradeRequest): Transport | Refusal {
  const protocol = String(upgrade.request.headers.upgrade ?? '').toLowerCase();
  if (protocol === 'spdy/3.1') return 'spdy';
  if (protocol !== 'websocket') {
    const error = protocol === '' ? badRequest('Upgrade request required') : badRequest(`unsupported upgrade protocol "${protocol}": use websocket or SPDY/3.1`);
    return { error, headers: {} };
  }
  const refused = checkWebSocketHandshake(upgrade.request);
  return refused ? { error: refused, headers: {} } : 'websocket';
}
