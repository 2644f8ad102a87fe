import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { badRequest, notFound } from '../../api/errors.js';
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../logging/index.js';
import { offeredProtocols } from '../../streaming/portforward/channels.js';
import { STREAM_PROTOCOL_HEADER, negotiateRemoteCommandProtocol, protocolInfo, selectWebSocketProtocol } from '../../streaming/remotecommand/negotiate.js';
import { parseStreamOptions, type ParsedStreamOptions, type QueryDialect, type StreamQuery } from '../../streaming/remotecommand/options.js';
import { serveSpdyRemoteCommand } from '../../streaming/remotecommand/spdy.js';
import { SpdyConnection } from '../../streaming/spdy/index.js';
import type { CommandResult, StreamIO } from '../../streaming/types.js';
import { serveWebSocketRemoteCommand } from '../../streaming/websocket/session.js';
import type { ForwardLimiter } from '../../streaming/portforward/limits.js';
import type { Host } from '../../host/index.js';
import { podDoesNotExist } from '../errors.js';
import { defaultContainerName } from '../params.js';
import type { StreamingUpgradeLabels } from '../../metrics/registry.js';
import { acceptUpgrade, noSubprotocol, spdyProtocol, upgradeRequest, type StreamingSessions } from '../upgrade.js';

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

/**
 * exec and attach, on the kubelet's paths (`/exec/{ns}/{pod}[/{uid}]/{container}`, GET or POST)
 * and on the apiserver's (`/api/v1/namespaces/{ns}/pods/{name}/exec?container=`), over WebSocket
 * (`channel.k8s.io` v1–v5 and base64) or SPDY/3.1 (v1–v4). Everything that can fail is checked
 * before the 101 — pod, container, running, options, protocol, session cap — and answered with a
 * Status; after the upgrade, failures travel on the error channel.
 */
export async function remoteCommandPlugin(app: FastifyInstance, opts: { host: Host; streaming: StreamingOptions }): Promise<void> {
  const { host, streaming } = opts;

  const kubeletHandler = (kind: Kind) => async (request: FastifyRequest<{ Params: KubeletParams; Querystring: StreamQuery }>, reply: FastifyReply) => {
    const { ns, name, container } = request.params;
    const pod = host.getPodByName(ns, name);
    if (!pod) throw podDoesNotExist(name);
    return serve(kind, request, reply, pod, container, parse(request, 'kubelet', kind));
  };
  const apiHandler = (kind: Kind) => async (request: FastifyRequest<{ Params: ApiParams; Querystring: StreamQuery }>, reply: FastifyReply) => {
    const { ns, name } = request.params;
    const pod = host.getPodByName(ns, name);
    if (!pod) throw notFound('pods', name);
    const options = parse(request, 'apiserver', kind);
    return serve(kind, request, reply, pod, defaultContainerName(pod, options.container), options);
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
    const { protocol: transport } = upgradeRequest(request);
    // The protocol is negotiated here, once; the session gets its version and framing.
    let protocol: string;
    if (transport === 'websocket') {
      const offered = offeredProtocols(request.headers['sec-websocket-protocol']);
      const selected = selectWebSocketProtocol(offered);
      if (selected === false) throw noSubprotocol(offered);
      protocol = selected;
    } else {
      protocol = spdyProtocol(reply, negotiateRemoteCommandProtocol(request.raw.headersDistinct[STREAM_PROTOCOL_HEADER.toLowerCase()]));
    }
    const info = protocolInfo(protocol);
    if (!info) throw badRequest(`unsupported protocol ${protocol}`);

    // Fastify's logger is the pino instance nodelet passed in (buildServer's `loggerInstance`).
    const log = request.log.child({ pod: `${ref.namespace}/${ref.pod}`, container: ref.container, stream: kind }) as Logger;
    const spec = {
      version: info.version,
      options,
      kind,
      command: options.command,
      log,
      closeWaitMs: streaming.closeWaitMs,
      run: (io: StreamIO): Promise<CommandResult> => (kind === 'exec' ? host.exec(ref, options.command, io) : host.attach(ref, io)),
    };
    acceptUpgrade(request, reply, streaming, kind, transport === 'websocket' ? { websocket: protocol } : { spdy: protocol }, ({ socket, head, ws }) => {
      log.debug({ protocol }, 'remote command started');
      if (ws) return serveWebSocketRemoteCommand(ws, socket, { ...spec, framing: info, idleTimeoutMs: streaming.idleTimeoutMs });
      const connection = new SpdyConnection(socket, { head, log, idleTimeoutMs: streaming.idleTimeoutMs });
      return serveSpdyRemoteCommand(connection, { ...spec, creationTimeoutMs: streaming.streamCreationTimeoutMs });
    });
  }
}

