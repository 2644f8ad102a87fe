import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { performance } from 'node:perf_hooks';
import type { Metrics } from '../../metrics/registry.js';
import { getRoute } from '../methods.js';
import { isUpgradeRequest } from '../upgrade.js';

/**
 * The kubelet's HTTP metrics for every request, as a root hook: counted and timed when the
 * response closes. Upgraded sessions (exec, attach, port-forward) close when the session does,
 * so their duration is the session's, as on the kubelet. Synchronous and allocation-light: the
 * series is found by route pattern (its bucket computed once per route), counts are plain
 * additions read at scrape time, the duration a bucket increment (`HttpSeries.observe`).
 */
export function instrumentHttp(app: FastifyInstance, metrics: Metrics, serverType: 'readonly' | 'readwrite'): void {
  const { http } = metrics;
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const series = request.is404
      ? http.forPath(request.method, request.url, serverType)
      : http.forRoute(request.method, request.routeOptions.url ?? request.url, serverType);
    const started = performance.now();
    series.inflight++;
    // An upgrade's ServerResponse is detached from its socket at the 101 (upgrade.ts), so it never
    // closes: the session's end is its socket's close, as the kubelet counts the hijacked request.
    const ended = isUpgradeRequest(request.raw) ? request.raw.socket : reply.raw;
    ended.once('close', () => {
      series.inflight--;
      series.completed++;
      series.observe((performance.now() - started) / 1000);
    });
    done();
  });
}

/** `GET /metrics`: Prometheus text exposition. */
export async function metricsPlugin(app: FastifyInstance, opts: { metrics: Metrics }): Promise<void> {
  getRoute(app, '/metrics', async (_request, reply) => {
    const text = await opts.metrics.registry.metrics();
    return reply.type(opts.metrics.registry.contentType).send(text);
  });
}
