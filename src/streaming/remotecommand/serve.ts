import { badRequest } from '../../api/errors.js';
import type { Logger } from '../../logging/index.js';
import { SpdyConnection } from '../spdy/index.js';
import { negotiated, spdySession, streamProtocolLines } from '../spdy/handshake.js';
import type { CommandResult, PendingStreamIO } from '../types.js';
import { refuse, upgradeTransport, type Negotiated, type UpgradeRequest } from '../upgrade.js';
import { noSubprotocol, offeredSubprotocols, webSocketSession } from '../websocket/handshake.js';
import { negotiateRemoteCommandProtocol, protocolInfo, selectWebSocketProtocol } from './negotiate.js';
import type { ParsedStreamOptions } from './options.js';
import { serveSpdyRemoteCommand } from './spdy.js';
import type { SessionKind } from './status.js';
import { serveWebSocketRemoteCommand } from './websocket.js';

/** What to run, and how long a session may idle, wait for its streams, and wait for the client's close. */
export interface RemoteCommandServeSpec {
  readonly kind: SessionKind;
  /** The parsed query: which streams, a TTY, and the argv (`[]` for attach). */
  readonly options: ParsedStreamOptions;
  /** Called when the session starts, before the client's streams are all there (see `RemoteCommandSpec.run`). */
  readonly run: (pending: PendingStreamIO) => Promise<CommandResult>;
  /** The session's logger (the SPDY connection logs on it too). */
  readonly log: Logger;
  /** No traffic either way for this long ends the session; 0 = never. */
  readonly idleTimeoutMs: number;
  /** How long a SPDY client has to open its streams (the kubelet's 30 s). */
  readonly streamCreationTimeoutMs: number;
  /** After the status is written, how long the client may take to close (then nodelet closes). */
  readonly closeWaitMs: number;
}

/**
 * exec and attach on an upgrade, the kubelet's `createStreams`
 * (`pkg/kubelet/cri/streaming/remotecommand/httpstream.go`): the transport from the request
 * (WebSocket, `channel.k8s.io` v1–v5 and base64, `websocket.go`; or SPDY/3.1, v1–v4), the protocol
 * version negotiated once, in the client's order. Returns the refusal (a bad handshake 400/405, no
 * protocol in common 400/403) before anything is written, or the session the caller starts.
 */
export function serveRemoteCommand(upgrade: UpgradeRequest, spec: RemoteCommandServeSpec): Negotiated {
  const transport = upgradeTransport(upgrade);
  if (typeof transport !== 'string') return { refusal: transport };
  let protocol: string;
  if (transport === 'websocket') {
    const offered = offeredSubprotocols(upgrade.request);
    const selected = selectWebSocketProtocol(offered);
    if (selected === false) return refuse(noSubprotocol(offered));
    protocol = selected;
  } else {
    const chosen = negotiated(negotiateRemoteCommandProtocol(streamProtocolLines(upgrade.request)));
    if (typeof chosen !== 'string') return { refusal: chosen };
    protocol = chosen;
  }
  const info = protocolInfo(protocol);
  if (!info) return refuse(badRequest(`unsupported protocol ${protocol}`));

  const { kind, options, run, log } = spec;
  const { version } = info;
  // The session options are written out, not spread: the session keeps them for its whole length,
  // and objects made by spreading got a hidden class of their own each (≈ 0.3 KiB per session).
  if (transport === 'websocket') {
    return {
      session: webSocketSession(upgrade, protocol, (ws) => {
        log.debug({ protocol }, 'remote command started');
        const { idleTimeoutMs, closeWaitMs } = spec;
        return serveWebSocketRemoteCommand(ws, upgrade.socket, { version, options, kind, command: options.command, log, run, framing: info, idleTimeoutMs, closeWaitMs });
      }),
    };
  }
  return {
    session: spdySession(upgrade, protocol, (socket, head) => {
      log.debug({ protocol }, 'remote command started');
      const connection = new SpdyConnection(socket, { head, log, idleTimeoutMs: spec.idleTimeoutMs });
      const { streamCreationTimeoutMs: creationTimeoutMs, closeWaitMs } = spec;
      return serveSpdyRemoteCommand(connection, { version, options, kind, command: options.command, log, run, creationTimeoutMs, closeWaitMs });
    }),
  };
}
