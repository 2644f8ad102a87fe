import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { WebSocketServer } from 'ws';
import { StatusError, badRequest, notFound } from '../../api/errors.js';
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../logging/index.js';
import { ACCEPTED_PROTOCOLS_HEADER, STREAM_PROTOCOL_HEADER, negotiateRemoteCommandProtocol, protocolInfo, selectWebSocketProtocol } from '../../streaming/remotecommand/negotiate.js';
import { parseStreamOptions, type ParsedStreamOptions, type QueryDialect, type StreamQuery } from '../../streaming/remotecommand/options.js';
import { serveSpdyRemoteCommand } from '../../streaming/remotecommand/spdy.js';
import { SpdyConnection } from '../../streaming/spdy/index.js';
import type { CommandResult, StreamIO } from '../../streaming/types.js';
import { serveWebSocketRemoteCommand } from '../../streaming/websocket/session.js';
import type { ForwardLimiter } from '../../streaming/portforward/limits.js';
import type { Host } from '../../host/index.js';
import type { StreamingUpgradeLabels } from '../../metrics/registry.js';
import { upgradeOf, type StreamingSessions } from '../upgrade.js';

export interface StreamingOptions {
  sessions: StreamingSessions;
  /** Idle streaming connections are closed after this long; 0 = never. */
  idleTimeoutMs: number;
  /** How long a SPDY client has to open its streams (the kubelet's 30 s). */
  streamCreationTimeoutMs: number;
  /** After the status is written, how long the client may take to close (then nodelet closes). */
  closeWaitMs: number;
  /** Forwarded connections one port-forward session may have open (`--max-port-forward-connections-per-session`). */
  maxPortForwardConnectionsPerSession: number;
  /** Forwarded connections on the node, shared by every session (`--max-port-forward-connections`). */
  portForwardConnections: ForwardLimiter;
  /** Called once per session at its 101 (`nodelet_streaming_upgrades_total`). */
  upgraded: (labels: StreamingUpgradeLabels) => void;
}

type Kind = 'exec' | 'attach';

interface KubeletParams {
  ns: string;
  name: string;
  uid?: string;
  container: string;
}
interface ApiParams {
  ns: string;
  name: string;
}

/** Large enough for any terminal paste, small enough that one frame cannot balloon memory. */
const MAX_WS_PAYLOAD = 16 * 1024 * 1024;

/**
 * exec and attach, on the kubelet's paths (`/exec/{ns}/{pod}[/{uid}]/{container}`, GET or POST)
 * and on the apiserver's (`/api/v1/namespaces/{ns}/pods/{name}/exec?container=`), over WebSocket
 * (`channel.k8s.io` v1–v5 and base64) or SPDY/3.1 (v1–v4). Everything that can fail is checked
 * before the 101 — pod, container, running, options, protocol, session cap — and answered with a
 * Status; after the upgrade, failures travel on the error channel.
 */
export async function remoteCommandPlugin(app: FastifyInstance, opts: { host: Host; streaming: StreamingOptions }): Promise<void> {
  const { host, streaming } = opts;
  // Upgrades are handed to `ws` by hand (see upgrade.ts); `ws` never listens on the server.
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_WS_PAYLOAD, perMessageDeflate: false, clientTracking: false });

  const kubeletHandler = (kind: Kind) => async (request: FastifyRequest<{ Params: KubeletParams; Querystring: StreamQuery }>, reply: FastifyReply) => {
    const { ns, name, container } = request.params;
    const pod = host.getPodByName(ns, name);
    if (!pod) throw new StatusError('NotFound', 'pod does not exist', { name, kind: 'pods' });
    return serve(kind, request, reply, pod, container, parse(request, 'kubelet', kind));
  };
  const apiHandler = (kind: Kind) => async (request: FastifyRequest<{ Params: ApiParams; Querystring: StreamQuery }>, reply: FastifyReply) => {
    const { ns, name } = request.params;
    const pod = host.getPodByName(ns, name);
    if (!pod) throw notFound('pods', name);
    const options = parse(request, 'apiserver', kind);
    return serve(kind, request, reply, pod, defaultContainer(pod, options.container), options);
  };

  for (const kind of ['exec', 'attach'] as const) {
    for (const url of [`/${kind}/:ns/:name/:container`, `/${kind}/:ns/:name/:uid/:container`]) {
      app.route({ method: ['GET', 'POST'], url, handler: kubeletHandler(kind) });
    }
    app.route({ method: ['GET', 'POST'], url: `/api/v1/namespaces/:ns/pods/:name/${kind}`, handler: apiHandler(kind) });
  }

  function parse(request: FastifyRequest<{ Querystring: StreamQuery }>, dialect: QueryDialect, kind: Kind): ParsedStreamOptions {
    return parseStreamOptions(request.query, dialect, kind);
  }

  async function serve(kind: Kind, request: FastifyRequest, reply: FastifyReply, pod: Pod, container: string, options: ParsedStreamOptions): Promise<void> {
    const ref = host.resolveContainer(pod, container);
    const upgrade = upgradeOf(request);
    const protocolHeader = String(request.headers.upgrade ?? '').toLowerCase();
    if (!upgrade || !protocolHeader) throw badRequest('Upgrade request required');

    // Fastify's logger is the pino instance nodelet passed in (buildServer's `loggerInstance`).
    const log = request.log.child({ pod: `${ref.namespace}/${ref.pod}`, container: ref.container, stream: kind }) as Logger;
    const run = (io: StreamIO): Promise<CommandResult> => (kind === 'exec' ? host.exec(ref, options.command, io) : host.attach(ref, io));

    if (protocolHeader === 'websocket') {
      const offered = String(request.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim()).filter(Boolean);
      const protocol = selectWebSocketProtocol(offered);
      // Not a 101: kubectl falls back to SPDY on any other status.
      if (protocol === false) throw new StatusError('Forbidden', `unable to upgrade: none of the offered subprotocols [${offered.join(' ')}] is supported`);
      const slot = reserve(streaming.sessions);
      // `ws` may still refuse the handshake (bad key or subprotocol header) without calling back.
      upgrade.socket.once('close', () => slot.release());
      reply.hijack();
      wss.handleUpgrade(request.raw, upgrade.socket, upgrade.head, (ws) => {
        slot.track(upgrade.socket);
        streaming.upgraded({ path: kind, transport: 'websocket', protocol });
        log.debug({ protocol }, 'WebSocket remote command started');
        void serveWebSocketRemoteCommand(ws, { protocol, options, idleTimeoutMs: streaming.idleTimeoutMs, closeWaitMs: streaming.closeWaitMs, log, run, command: options.command, kind })
          .finally(() => slot.release());
      });
      return;
    }

    if (protocolHeader === 'spdy/3.1') {
      const negotiated = negotiateRemoteCommandProtocol(request.raw.headersDistinct[STREAM_PROTOCOL_HEADER.toLowerCase()]);
      if ('error' in negotiated) {
        if (negotiated.error === 403) {
          void reply.header(ACCEPTED_PROTOCOLS_HEADER, negotiated.accepted);
          throw new StatusError('Forbidden', negotiated.message);
        }
        throw badRequest(negotiated.message);
      }
      const info = protocolInfo(negotiated.protocol);
      if (!info) throw badRequest(`unsupported protocol ${negotiated.protocol}`);
      const slot = reserve(streaming.sessions);
      reply.hijack();
      const { socket, head } = upgrade;
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n${STREAM_PROTOCOL_HEADER}: ${negotiated.protocol}\r\n\r\n`);
      slot.track(socket);
      streaming.upgraded({ path: kind, transport: 'spdy', protocol: negotiated.protocol });
      const connection = new SpdyConnection(socket, { head, log, idleTimeoutMs: streaming.idleTimeoutMs });
      log.debug({ protocol: negotiated.protocol }, 'SPDY remote command started');
      void serveSpdyRemoteCommand(connection, {
        version: info.version,
        options,
        creationTimeoutMs: streaming.streamCreationTimeoutMs,
        closeWaitMs: streaming.closeWaitMs,
        log,
        run,
        command: options.command,
        kind,
      }).finally(() => slot.release());
      return;
    }
    throw badRequest(`unsupported upgrade protocol "${protocolHeader}": use websocket or SPDY/3.1`);
  }
}

function reserve(sessions: StreamingSessions): NonNullable<ReturnType<StreamingSessions['reserve']>> {
  const slot = sessions.reserve();
  if (!slot) throw new StatusError('TooManyRequests', 'too many streaming sessions in flight; retry later', { retryAfterSeconds: 60 });
  return slot;
}

/** The apiserver's defaulting: a missing container name means the pod's only container. */
function defaultContainer(pod: Pod, requested: string | undefined): string {
  if (requested) return requested;
  const names = (pod.spec?.containers ?? []).map((c) => c.name);
  if (names.length === 1 && names[0]) return names[0];
  throw badRequest(`a container name must be specified for pod ${pod.metadata?.name}, choose one of: [${names.join(' ')}]`);
}
