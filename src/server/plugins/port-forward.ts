import type { Duplex } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StatusError, badRequest, notFound } from '../../api/errors.js';
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../logging/index.js';
import { PORT_FORWARD_TUNNEL_PROTOCOL, offeredProtocols, selectPortForwardMode } from '../../streaming/portforward/channels.js';
import { parsePortList, type QueryValue } from '../../streaming/portforward/ports.js';
import { serveSpdyPortForward, type ForwardFn, type PortForwardSession } from '../../streaming/portforward/spdy.js';
import { tunnelStream } from '../../streaming/portforward/tunnel.js';
import { serveWebSocketPortForward } from '../../streaming/portforward/websocket.js';
import { STREAM_PROTOCOL_HEADER, negotiatePortForwardProtocol } from '../../streaming/remotecommand/negotiate.js';
import { SpdyConnection } from '../../streaming/spdy/index.js';
import type { Host, SandboxRef } from '../../host/index.js';
import { podDoesNotExist } from '../errors.js';
import { acceptUpgrade, noSubprotocol, spdyProtocol, upgradeRequest } from '../upgrade.js';
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

  const kubeletHandler = async (request: FastifyRequest<{ Params: KubeletParams; Querystring: PortQuery }>, reply: FastifyReply) => {
    const { ns, name, uid } = request.params;
    const pod = host.getPodByName(ns, name);
    if (!pod) throw podDoesNotExist(name);
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
    const { protocol: transport } = upgradeRequest(request);
    // Fastify's logger is the pino instance nodelet passed in (buildServer's `loggerInstance`).
    const log = request.log.child({ pod: `${ref.namespace}/${ref.pod}`, stream: 'portforward' }) as Logger;
    const forward: ForwardFn = (port, stream, signal) => host.portForward(ref, port, stream, signal);
    const limits = { maxConnections: streaming.maxPortForwardConnectionsPerSession, limiter: streaming.portForwardConnections };
    const spdyOptions = { forward, creationTimeoutMs: streaming.streamCreationTimeoutMs, log, ...limits };
    const spdySession = (stream: Duplex, head?: Buffer): Promise<void> =>
      supervise(serveSpdyPortForward(new SpdyConnection(stream, { head, log, idleTimeoutMs: streaming.idleTimeoutMs }), spdyOptions), ref);

    if (transport === 'spdy/3.1') {
      const protocol = spdyProtocol(reply, negotiatePortForwardProtocol(request.raw.headersDistinct[STREAM_PROTOCOL_HEADER.toLowerCase()]));
      return acceptUpgrade(request, reply, streaming, 'portForward', { spdy: protocol }, ({ socket, head }) => {
        log.debug('port-forward: SPDY started');
        return spdySession(socket, head);
      });
    }
    const offered = offeredProtocols(request.headers['sec-websocket-protocol']);
    const mode = selectPortForwardMode(offered);
    if (mode?.mode === 'tunnel') {
      return acceptUpgrade(request, reply, streaming, 'portForward', { websocket: PORT_FORWARD_TUNNEL_PROTOCOL }, ({ ws }) => {
        log.debug('port-forward: SPDY over WebSocket started');
        return spdySession(tunnelStream(ws, log));
      });
    }
    // Channel mode: the kubelet checks the ports before it negotiates the subprotocol.
    const parsed = parsePortList(request.query);
    if ('error' in parsed) throw badRequest(parsed.error);
    if (!mode) throw noSubprotocol(offered);
    acceptUpgrade(request, reply, streaming, 'portForward', { websocket: mode.protocol }, ({ ws, socket }) => {
      log.debug({ protocol: mode.protocol, ports: parsed.ports }, 'port-forward: WebSocket started');
      const options = { base64: mode.base64, ports: parsed.ports, forward, idleTimeoutMs: streaming.idleTimeoutMs, closeWaitMs: streaming.closeWaitMs, log, ...limits };
      return supervise(serveWebSocketPortForward(ws, socket, options), ref);
    });
  }

  /** Ends the session when its pod goes away; resolves once the session is over. */
  function supervise(session: PortForwardSession, ref: SandboxRef): Promise<void> {
    const stop = watchSandbox(host, ref, () => session.close(`pod "${ref.pod}" is no longer running`));
    return session.done.finally(stop);
  }
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
