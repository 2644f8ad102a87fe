import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { notFound } from '../../api/errors.js';
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../logging/index.js';
import { parseStreamOptions, type ParsedStreamOptions, type QueryDialect, type StreamQuery } from '../../streaming/remotecommand/options.js';
import { serveRemoteCommand } from '../../streaming/remotecommand/serve.js';
import { whenConnected } from '../../streaming/remotecommand/session.js';
import type { CommandResult, PendingStreamIO } from '../../streaming/types.js';
import type { ForwardLimiter } from '../../streaming/portforward/limits.js';
import type { Host } from '../../host/index.js';
import { podDoesNotExist } from '../errors.js';
import { defaultContainerName } from '../params.js';
import type { StreamingUpgradeLabels } from '../../metrics/registry.js';
import { acceptUpgrade, pendingUpgrade, type StreamingSessions } from '../upgrade.js';

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
 * and on the apiserver's (`/api/v1/namespaces/{ns}/pods/{name}/exec?container=`). The routes
 * resolve pod → container and parse the options; transport and protocol (WebSocket `channel.k8s.io`
 * v1–v5 and base64, or SPDY/3.1 v1–v4) are `serveRemoteCommand`'s. Everything that can fail is
 * checked before the 101 — pod, container, running, options, protocol, session cap — and answered
 * with a Status; after the upgrade, failures travel on the error channel.
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

  /** Resolves the container (404 or 400 before any upgrade) and hands the upgrade to `serveRemoteCommand`. */
  async function serve(kind: Kind, request: FastifyRequest, reply: FastifyReply, pod: Pod, container: string, options: ParsedStreamOptions): Promise<void> {
    const ref = host.resolveContainer(pod, container);
    const upgrade = pendingUpgrade(request);
    // Fastify's logger is the pino instance nodelet passed in (buildServer's `loggerInstance`).
    const log = request.log.child({ pod: `${ref.namespace}/${ref.pod}`, container: ref.container, stream: kind }) as Logger;
    const negotiated = serveRemoteCommand(upgrade, {
      kind,
      options,
      log,
      // exec: Docker's exec create overlaps the client's stream handshake; attach has nothing to prepare.
      run: kind === 'exec' ? (pending: PendingStreamIO): Promise<CommandResult> => host.exec(ref, options.command, pending) : whenConnected((io) => host.attach(ref, io)),
      idleTimeoutMs: streaming.idleTimeoutMs,
      streamCreationTimeoutMs: streaming.streamCreationTimeoutMs,
      closeWaitMs: streaming.closeWaitMs,
    });
    acceptUpgrade(reply, upgrade, streaming, kind, negotiated);
  }
}
