import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { httpLabels } from '../../metrics/http.js';
import type { Metrics } from '../../metrics/registry.js';
import { getRoute } from '../methods.js';

/**
 * The kubelet's HTTP metrics for every request, as a root hook: counted and timed when the
 * response closes. Upgraded sessions (exec, attach, port-forward) close when the session does,
 * so their duration is the session's, as on the kubelet.
 */
export function instrumentHttp(app: FastifyInstance, metrics: Metrics, serverType: 'readonly' | 'readwrite'): void {
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const labels = httpLabels(request.method, request.url, serverType);
    metrics.httpInflight.inc(labels);
    const end = metrics.httpDuration.startTimer(labels);
    reply.raw.once('close', () => {
      metrics.httpInflight.dec(labels);
      metrics.httpRequests.inc(labels);
      end();
    });
  });
}

/** `GET /metrics`: Prometheus text exposition. */
export async function metricsPlugin(app: FastifyInstance, opts: { metrics: Metrics }): Promise<void> {
  getRoute(app, '/metrics', async (_request, reply) => {
    const text = await opts.metrics.registry.metrics();
    return reply.type(opts.metrics.registry.contentType).send(text);
  });
}
