import type { EventEmitter } from 'node:events';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { performance } from 'node:perf_hooks';
import type { HttpSeries } from '../../metrics/http.js';
import type { Metrics } from '../../metrics/registry.js';
import { getRoute } from '../methods.js';
import { isUpgradeRequest } from '../upgrade.js';

const kSeries = Symbol('nodelet.httpSeries');
const kStarted = Symbol('nodelet.httpStarted');
/** A response (or an upgrade's socket) whose request is counted in flight. */
type Timed = EventEmitter & { [kSeries]?: HttpSeries | undefined; [kStarted]?: number };

/**
 * The kubelet's HTTP metrics for one request (pkg/kubelet/server/server.go `ServeHTTP`): counted in
 * flight now, counted and timed when its response closes — finished or aborted, Node emits
 * `close` on every ServerResponse. Upgraded sessions (exec, attach, port-forward) close when the
 * session does, so their duration is the session's, as on the kubelet. Synchronous and
 * allocation-light: the series was found when the route was registered (`HttpSeriesSet.forRoute`),
 * counts are plain additions read at scrape time, the duration a bucket increment
 * (`HttpSeries.observe`), and the one listener is shared by every request (its state sits on the
 * response), so no closure is made per request.
 */
export function startHttpRequest(series: HttpSeries, request: FastifyRequest, reply: FastifyReply): void {
  series.inflight++;
  const started = performance.now();
  if (isUpgradeRequest(request.raw)) {
    // An upgrade's ServerResponse is detached from its socket at the 101 (upgrade.ts), so it never
    // closes: the session's end is its socket's close, as the kubelet counts the hijacked request.
    // The state sits on the socket like a response's (an idle session keeps it for hours).
    timeUntilClose(request.raw.socket, series, started);
    return;
  }
  timeUntilClose(reply.raw, series, started);
}

function timeUntilClose(emitter: Timed, series: HttpSeries, started: number): void {
  emitter[kSeries] = series;
  emitter[kStarted] = started;
  emitter.on('close', responseClosed);
}

function responseClosed(this: Timed): void {
  const series = this[kSeries];
  if (series === undefined) return;
  this[kSeries] = undefined;
  ended(series, this[kStarted] ?? 0);
}

function ended(series: HttpSeries, started: number): void {
  series.inflight--;
  series.completed++;
  series.observe((performance.now() - started) / 1000);
}

/** `GET /metrics`: Prometheus text exposition. */
export async function metricsPlugin(app: FastifyInstance, opts: { metrics: Metrics }): Promise<void> {
  getRoute(app, '/metrics', async (_request, reply) => {
    const text = await opts.metrics.registry.metrics();
    return reply.type(opts.metrics.registry.contentType).send(text);
  });
}
