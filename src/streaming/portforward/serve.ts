import { badRequest } from '../../api/errors.js';
import type { Logger } from '../../logging/index.js';
import { SpdyConnection } from '../spdy/index.js';
import { negotiated, spdySession, streamProtocolLines } from '../spdy/handshake.js';
import { refuse, upgradeTransport, type Negotiated, type UpgradeRequest } from '../upgrade.js';
import { noSubprotocol, offeredSubprotocols, webSocketSession } from '../websocket/handshake.js';
import { tunnelStream } from '../websocket/tunnel.js';
import type { ForwardLimiter } from './limits.js';
import { PORT_FORWARD_TUNNEL_PROTOCOL, negotiatePortForwardProtocol, selectPortForwardMode } from './negotiate.js';
import { parsePortList, type QueryValue } from './ports.js';
import { serveSpdyPortForward, type ForwardFn, type PortForwardSession } from './spdy.js';
import { serveWebSocketPortForward } from './websocket.js';

/** What to forward to, the limits, and the timeouts of one port-forward request. */
export interface PortForwardServeSpec {
  /** The request's query: WebSocket channel mode takes its ports from `port`/`ports`. */
  readonly query: { readonly port?: QueryValue; readonly ports?: QueryValue };
  /** Relays one forwarded connection to a port in the pod. */
  readonly forward: ForwardFn;
  readonly log: Logger;
  /** No traffic either way for this long ends the session; 0 = never. */
  readonly idleTimeoutMs: number;
  /** How long the second SPDY stream of a pair may take (the kubelet's 30 s). */
  readonly streamCreationTimeoutMs: number;
  /** After our WebSocket close frame, how long to wait for the client's before dropping the socket. */
  readonly closeWaitMs: number;
  /** Forwarded connections this session may have open at once. */
  readonly maxConnections: number;
  /** The node-wide bound on forwarded connections, shared with every other session. */
  readonly limiter: ForwardLimiter;
  /**
   * Watches the target once the session is up: calls `end` with the reason when it goes away (the
   * session then closes from our side); returns what stops the watch, called when the session is over.
   */
  readonly watch?: (end: (reason: string) => void) => () => void;
}

/**
 * Port-forward on an upgrade, the kubelet's `ServePortForward`
 * (`pkg/kubelet/cri/streaming/portforward/portforward.go`) in three wire forms: SPDY/3.1
 * `portforward.k8s.io` (stream pairs, `httpstream.go`), WebSocket channel mode (ports from the
 * query, `websocket.go`), and SPDY tunnelled in a WebSocket (`SPDY/3.1+portforward.k8s.io`,
 * kubectl ≥ 1.31). Returns the refusal (a bad handshake, bad ports — checked before the
 * subprotocol, as the kubelet does —, no protocol in common) before anything is written, or the
 * session the caller starts.
 */
export function servePortForward(upgrade: UpgradeRequest, spec: PortForwardServeSpec): Negotiated {
  const transport = upgradeTransport(upgrade);
  if (typeof transport !== 'string') return { refusal: transport };
  const { log } = spec;
  const limits = { maxConnections: spec.maxConnections, limiter: spec.limiter };
  const spdyOptions = { forward: spec.forward, creationTimeoutMs: spec.streamCreationTimeoutMs, log, ...limits };
  const overSpdy = (connection: SpdyConnection): Promise<void> => supervise(serveSpdyPortForward(connection, spdyOptions), spec);

  if (transport === 'spdy') {
    const protocol = negotiated(negotiatePortForwardProtocol(streamProtocolLines(upgrade.request)));
    if (typeof protocol !== 'string') return { refusal: protocol };
    return {
      session: spdySession(upgrade, protocol, (socket, head) => {
        log.debug('port-forward: SPDY started');
        return overSpdy(new SpdyConnection(socket, { head, log, idleTimeoutMs: spec.idleTimeoutMs }));
      }),
    };
  }
  const offered = offeredSubprotocols(upgrade.request);
  const mode = selectPortForwardMode(offered);
  if (mode?.mode === 'tunnel') {
    return {
      session: webSocketSession(upgrade, PORT_FORWARD_TUNNEL_PROTOCOL, (ws) => {
        log.debug('port-forward: SPDY over WebSocket started');
        return overSpdy(new SpdyConnection(tunnelStream(ws, log), { log, idleTimeoutMs: spec.idleTimeoutMs }));
      }),
    };
  }
  // Channel mode: the kubelet checks the ports before it negotiates the subprotocol.
  const parsed = parsePortList(spec.query);
  if ('error' in parsed) return refuse(badRequest(parsed.error));
  if (!mode) return refuse(noSubprotocol(offered));
  return {
    session: webSocketSession(upgrade, mode.protocol, (ws) => {
      log.debug({ protocol: mode.protocol, ports: parsed.ports }, 'port-forward: WebSocket started');
      const options = { base64: mode.base64, ports: parsed.ports, forward: spec.forward, idleTimeoutMs: spec.idleTimeoutMs, closeWaitMs: spec.closeWaitMs, log, ...limits };
      return supervise(serveWebSocketPortForward(ws, upgrade.socket, options), spec);
    }),
  };
}

/** Ends the session when its target goes away (`spec.watch`); resolves once the session is over. */
function supervise(session: PortForwardSession, spec: PortForwardServeSpec): Promise<void> {
  const stop = spec.watch?.((reason) => session.close(reason));
  return stop ? session.done.finally(stop) : session.done;
}
