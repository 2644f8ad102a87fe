import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WebSocketServer } from 'ws';
import { StatusError, badRequest, notFound } from '../../api/errors.js';
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../logging/index.js';
import { PORT_FORWARD_TUNNEL_PROTOCOL, offeredProtocols, selectPortForwardMode } from '../../streaming/portforward/channels.js';
import { parsePortList, type QueryValue } from '../../streaming/portforward/ports.js';
import { serveSpdyPortForward, type ForwardFn, type PortForwardSession } from '../../streaming/portforward/spdy.js';
import { tunnelStream } from '../../streaming/portforward/tunnel.js';
import { serveWebSocketPortForward } from '../../streaming/portforward/websocket.js';
import { ACCEPTED_PROTOCOLS_HEADER, STREAM_PROTOCOL_HEADER, negotiatePortForwardProtocol } from '../../streaming/remotecommand/negotiate.js';
import { SpdyConnection } from '../../streaming/spdy/index.js';
import type { Host, SandboxRef } from '../../host/index.js';
import { upgradeOf, type StreamingSessions } from '../upgrade.js';
import type { StreamingOptions } from './remote-command.js';

interface KubeletParams {
  ns: string;
  name: string;
  uid?: string;
}
interface ApiParams {
  ns: string;
  name: string;
}
interface PortQuery {
  port?: QueryValue;
  ports?: QueryValue;
}
type Slot = NonNullable<ReturnType<StreamingSessions['reserve']>>;

/** Large enough for any client's chunking, small enough that one frame cannot balloon memory. */
const MAX_WS_PAYLOAD = 16 * 1024 * 1024;
/** How often an open session checks that its pod (and sandbox) still exist. */
const POD_CHECK_INTERVAL_MS = 1000;

/**
 * Port-forward on the kubelet's paths (`/portForward/{ns}/{pod}[/{uid}]`) and the apiserver's
 * (`/api/v1/namespaces/{ns}/pods/{name}/portforward`), GET or POST, in three wire forms:
 * SPDY/3.1 `portforward.k8s.io` (stream pairs), WebSocket channel mode (`port`/`ports` query,
 * kubelet `portforward/websocket.go`), and SPDY tunnelled in a WebSocket
 * (`SPDY/3.1+portforward.k8s.io`, kubectl ≥ 1.31). The target is always 127.0.0.1 in the pod's
 * network namespace. Everything checkable — pod, UID, sandbox, ports, protocol, session cap —
 * is answered with a Status before the 101; afterwards errors go on the error stream/channel.
 */
export async function portForwardPlugin(app: FastifyInstance, opts: { host: Host; streaming: StreamingOptions }): Promise<void> {
  const { host, streaming } = opts;
  // Upgrades are handed to `ws` by hand (see upgrade.ts); `ws` never listens on the server.
  const wsOptions = { noServer: true, maxPayload: MAX_WS_PAYLOAD, perMessageDeflate: false, clientTracking: false } as const;
  const channelWss = new WebSocketServer(wsOptions);
  // `ws` refuses `SPDY/3.1+portforward.k8s.io` (`/` is not a token character), so the offer is
  // hidden from it and the answer added here. No 'wsClientError' listener: with one, `ws` would
  // leave a refused handshake hanging instead of answering 400.
  const tunnelWss = new WebSocketServer(wsOptions);
  tunnelWss.on('headers', (headers: string[]) => {
    headers.push(`Sec-WebSocket-Protocol: ${PORT_FORWARD_TUNNEL_PROTOCOL}`);
  });

  const kubeletHandler = async (request: FastifyRequest<{ Params: KubeletParams; Querystring: PortQuery }>, reply: FastifyReply) => {
    const { ns, name, uid } = request.params;
    const pod = host.getPodByName(ns, name);
    if (!pod) throw new StatusError('NotFound', 'pod does not exist', { name, kind: 'pods' });
    // The kubelet's getPortForward: a UID in the path must be this pod's.
    if (uid !== undefined && uid !== pod.metadata?.uid) throw new StatusError('NotFound', 'pod not found', { name, kind: 'pods' });
    return serve(request, reply, pod);
  };
  const apiHandler = async (request: FastifyRequest<{ Params: ApiParams; Querystring: PortQuery }>, reply: FastifyReply) => {
    const { ns, name } = request.params;
    const pod = host.getPodByName(ns, name);
    if (!pod) throw notFound('pods', name);
    return serve(request, reply, pod);
  };

  for (const url of ['/portForward/:ns/:name', '/portForward/:ns/:name/:uid']) {
    app.route({ method: ['GET', 'POST'], url, handler: kubeletHandler });
  }
  app.route({ method: ['GET', 'POST'], url: '/api/v1/namespaces/:ns/pods/:name/portforward', handler: apiHandler });

  async function serve(request: FastifyRequest<{ Querystring: PortQuery }>, reply: FastifyReply, pod: Pod): Promise<void> {
    const ref = host.resolveSandbox(pod);
    const upgrade = upgradeOf(request);
    const protocolHeader = String(request.headers.upgrade ?? '').toLowerCase();
    if (!upgrade || !protocolHeader) throw badRequest('Upgrade request required');
    const { socket, head } = upgrade;

    // Fastify's logger is the pino instance nodelet passed in (buildServer's `loggerInstance`).
    const log = request.log.child({ pod: `${ref.namespace}/${ref.pod}`, stream: 'portforward' }) as Logger;
    const forward: ForwardFn = (port, stream, signal) => host.portForward(ref, port, stream, signal);
    const limits = { maxConnections: streaming.maxPortForwardConnectionsPerSession, limiter: streaming.portForwardConnections };
    const spdyOptions = { forward, creationTimeoutMs: streaming.streamCreationTimeoutMs, log, ...limits };

    if (protocolHeader === 'websocket') {
      const offered = offeredProtocols(request.headers['sec-websocket-protocol']);
      const mode = selectPortForwardMode(offered);
      if (mode?.mode === 'tunnel') {
        const slot = reserve(streaming.sessions, socket);
        reply.hijack();
        delete request.raw.headers['sec-websocket-protocol'];
        tunnelWss.handleUpgrade(request.raw, socket, head, (ws) => {
          slot.track(socket);
          streaming.upgraded({ path: 'portForward', transport: 'websocket', protocol: PORT_FORWARD_TUNNEL_PROTOCOL });
          log.debug('port-forward: SPDY over WebSocket started');
          const conn = new SpdyConnection(tunnelStream(ws, log), { log, idleTimeoutMs: streaming.idleTimeoutMs });
          supervise(serveSpdyPortForward(conn, spdyOptions), ref, slot);
        });
        return;
      }
      // Channel mode: the kubelet checks the ports before it negotiates the subprotocol.
      const parsed = parsePortList(request.query);
      if ('error' in parsed) throw badRequest(parsed.error);
      // Not a 101: kubectl falls back to SPDY on any other status.
      if (!mode) throw new StatusError('Forbidden', `unable to upgrade: none of the offered subprotocols [${offered.join(' ')}] is supported`);
      const slot = reserve(streaming.sessions, socket);
      reply.hijack();
      // Only the chosen protocol reaches `ws`, which echoes the first one offered.
      if (mode.protocol) request.raw.headers['sec-websocket-protocol'] = mode.protocol;
      else delete request.raw.headers['sec-websocket-protocol'];
      channelWss.handleUpgrade(request.raw, socket, head, (ws) => {
        slot.track(socket);
        streaming.upgraded({ path: 'portForward', transport: 'websocket', protocol: mode.protocol });
        log.debug({ protocol: mode.protocol, ports: parsed.ports }, 'port-forward: WebSocket started');
        const session = serveWebSocketPortForward(ws, {
          base64: mode.base64,
          ports: parsed.ports,
          forward,
          idleTimeoutMs: streaming.idleTimeoutMs,
          closeWaitMs: streaming.closeWaitMs,
          log,
          ...limits,
        });
        supervise(session, ref, slot);
      });
      return;
    }

    if (protocolHeader === 'spdy/3.1') {
      const negotiated = negotiatePortForwardProtocol(request.raw.headersDistinct[STREAM_PROTOCOL_HEADER.toLowerCase()]);
      if ('error' in negotiated) {
        if (negotiated.error === 403) {
          void reply.header(ACCEPTED_PROTOCOLS_HEADER, negotiated.accepted);
          throw new StatusError('Forbidden', negotiated.message);
        }
        throw badRequest(negotiated.message);
      }
      const slot = reserve(streaming.sessions, socket);
      reply.hijack();
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n${STREAM_PROTOCOL_HEADER}: ${negotiated.protocol}\r\n\r\n`);
      slot.track(socket);
      streaming.upgraded({ path: 'portForward', transport: 'spdy', protocol: negotiated.protocol });
      log.debug('port-forward: SPDY started');
      const conn = new SpdyConnection(socket, { head, log, idleTimeoutMs: streaming.idleTimeoutMs });
      supervise(serveSpdyPortForward(conn, spdyOptions), ref, slot);
      return;
    }
    throw badRequest(`unsupported upgrade protocol "${protocolHeader}": use websocket or SPDY/3.1`);
  }

  /** Ends the session when its pod goes away; frees the slot when the session is over. */
  function supervise(session: PortForwardSession, ref: SandboxRef, slot: Slot): void {
    const stop = watchSandbox(host, ref, () => session.close(`pod "${ref.pod}" is no longer running`));
    void session.done.finally(() => {
      stop();
      slot.release();
    });
  }
}

/** A session slot, released as well if the socket dies before the upgrade completes. */
function reserve(sessions: StreamingSessions, socket: Duplex): Slot {
  const slot = sessions.reserve();
  if (!slot) throw new StatusError('TooManyRequests', 'too many streaming sessions in flight; retry later', { retryAfterSeconds: 60 });
  socket.once('close', () => slot.release());
  return slot;
}

/**
 * Polls (in memory, no Docker call) until the pod's UID or ready sandbox differs from `ref`
 * twice in a row, then calls `onGone` once. The forwarded connections die with the network
 * namespace anyway, but kubectl only exits when the session itself ends.
 */
function watchSandbox(host: Host, ref: SandboxRef, onGone: () => void): () => void {
  let misses = 0;
  const timer = setInterval(() => {
    if (currentSandbox(host, ref) === ref.id) {
      misses = 0;
      return;
    }
    if (++misses < 2) return;
    clearInterval(timer);
    onGone();
  }, POD_CHECK_INTERVAL_MS);
  timer.unref();
  return () => clearInterval(timer);
}

function currentSandbox(host: Host, ref: SandboxRef): string | undefined {
  const pod = host.getPodByName(ref.namespace, ref.pod);
  if (!pod || pod.metadata?.uid !== ref.podUID) return undefined;
  try {
    return host.resolveSandbox(pod).id;
  } catch {
    return undefined;
  }
}
