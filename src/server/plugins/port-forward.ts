import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StatusError, notFound } from '../../api/errors.js';
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../logging/index.js';
import type { QueryValue } from '../../streaming/portforward/ports.js';
import { servePortForward } from '../../streaming/portforward/serve.js';
import type { Host, SandboxRef } from '../../host/index.js';
import { podDoesNotExist } from '../errors.js';
import { acceptUpgrade, pendingUpgrade } from '../upgrade.js';
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
 * (`/api/v1/namespaces/{ns}/pods/{name}/portforward`), GET or POST. The routes resolve pod →
 * sandbox and watch it; the three wire forms (SPDY/3.1 `portforward.k8s.io`, WebSocket channel
 * mode, SPDY tunnelled in a WebSocket) are `servePortForward`'s. The target is always 127.0.0.1
 * in the pod's network namespace. Everything checkable — pod, UID, sandbox, ports, protocol,
 * session cap — is answered with a Status before the 101; afterwards errors go on the error
 * stream/channel.
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

  /** Resolves the sandbox (404 or 400 before any upgrade) and hands the upgrade to `servePortForward`. */
  async function serve(request: FastifyRequest<{ Querystring: PortQuery }>, reply: FastifyReply, pod: Pod): Promise<void> {
    const ref = host.resolveSandbox(pod);
    const upgrade = pendingUpgrade(request);
    // Fastify's logger is the pino instance nodelet passed in (buildServer's `loggerInstance`).
    const log = request.log.child({ pod: `${ref.namespace}/${ref.pod}`, stream: 'portforward' }) as Logger;
    const negotiated = servePortForward(upgrade, {
      query: request.query,
      forward: (port, stream, signal) => host.portForward(ref, port, stream, signal),
      log,
      idleTimeoutMs: streaming.idleTimeoutMs,
      streamCreationTimeoutMs: streaming.streamCreationTimeoutMs,
      closeWaitMs: streaming.closeWaitMs,
      maxConnections: streaming.maxPortForwardConnectionsPerSession,
      limiter: streaming.portForwardConnections,
      watch: (end) => watchSandbox(host, ref, () => end(`pod "${ref.pod}" is no longer running`)),
    });
    acceptUpgrade(reply, upgrade, streaming, 'portForward', negotiated);
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
