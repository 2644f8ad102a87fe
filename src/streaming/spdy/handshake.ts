import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { StatusError, badRequest } from '../../api/errors.js';
import { commaSeparatedHeaderValues, type HeaderLines } from '../headers.js';
import type { Refusal, StreamingSession, UpgradeRequest } from '../upgrade.js';

/** The header the SPDY handshake negotiates on, and the one a 403 lists the server's protocols in. */
export const STREAM_PROTOCOL_HEADER = 'X-Stream-Protocol-Version';
export const ACCEPTED_PROTOCOLS_HEADER = 'X-Accepted-Stream-Protocol-Versions';

export type HandshakeResult =
  | { readonly protocol: string }
  | { readonly error: 400; readonly message: string }
  /** The caller answers 403 and sets one `X-Accepted-Stream-Protocol-Versions` header per `accepted`. */
  | { readonly error: 403; readonly message: string; readonly accepted: readonly string[] };

/** Go's `%v` of a `[]string`: `[a b c]`, reproduced so error bodies read like the kubelet's. */
const goList = (xs: readonly string[]): string => `[${xs.join(' ')}]`;

/**
 * apimachinery `httpstream.Handshake` (`staging/src/k8s.io/apimachinery/pkg/util/httpstream/httpstream.go`):
 * the first client-offered protocol the server supports wins; none offered is a 400, no overlap a 403.
 */
export function handshake(lines: HeaderLines, serverProtocols: readonly string[]): HandshakeResult {
  const offered = commaSeparatedHeaderValues(lines);
  if (offered.length === 0) {
    return { error: 400, message: `unable to upgrade: ${STREAM_PROTOCOL_HEADER} is required` };
  }
  const chosen = offered.find((p) => serverProtocols.includes(p));
  if (chosen !== undefined) return { protocol: chosen };
  return {
    error: 403,
    message: `unable to upgrade: unable to negotiate protocol: client supports ${goList(offered)}, server accepts ${goList(serverProtocols)}`,
    accepted: [...serverProtocols],
  };
}

/** The `X-Stream-Protocol-Version` lines of a request, one element per line. */
export function streamProtocolLines(request: IncomingMessage): HeaderLines {
  return request.headersDistinct[STREAM_PROTOCOL_HEADER.toLowerCase()];
}

/** A handshake's protocol, or its refusal: 400, or 403 with the accepted protocols listed. */
export function negotiated(result: HandshakeResult): string | Refusal {
  if (!('error' in result)) return result.protocol;
  if (result.error === 400) return { error: badRequest(result.message), headers: {} };
  return { error: new StatusError('Forbidden', result.message), headers: { [ACCEPTED_PROTOCOLS_HEADER]: result.accepted } };
}

/**
 * A session on SPDY/3.1: at `start`, the 101 naming `protocol` (apimachinery
 * `spdy.responseUpgrader.UpgradeResponse`), then `serve` with the socket and the bytes already
 * read. `serve` builds its `SpdyConnection` and resolves (never rejects) once the session is over.
 */
export function spdySession(upgrade: UpgradeRequest, protocol: string, serve: (socket: Duplex, head: Buffer) => Promise<void>): StreamingSession {
  return {
    transport: 'spdy',
    protocol,
    start: (upgraded) => {
      const { socket, head } = upgrade;
      // A client that left while the request was checked: nothing to serve, no 'close' to wait for.
      if (socket.destroyed) return Promise.resolve();
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n${STREAM_PROTOCOL_HEADER}: ${protocol}\r\n\r\n`);
      upgraded();
      return serve(socket, head);
    },
  };
}
