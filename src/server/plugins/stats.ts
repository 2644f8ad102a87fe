import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notFound, notImplemented, plainText } from '../../api/errors.js';
import type { APIResourceList } from '../../api/types.js';
import { metricsList } from '../../stats/metrics-api.js';
import { resourceMetricsContentType } from '../../stats/resource-metrics.js';
import { metricsGroupVersion, type NodeMetrics, type PodMetrics } from '../../stats/types.js';
import { MethodNotAllowedError } from '../errors.js';
import type { Host, HostStats } from '../../host/index.js';
import { getRoute } from '../methods.js';
import { queryValue, queryValues, refuseWatch } from '../params.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from '../selectors.js';

/**
 * Resource usage, all served from the sampler's memory (routes never call Docker):
 * - the kubelet's `/stats/summary` (GET and POST) and `/metrics/resource`;
 * - metrics-server's `metrics.k8s.io/v1beta1` API over this node's pods and the node itself, so
 *   `kubectl top pod` works against nodelet directly (`/apis` lists the group, see discovery).
 */

const metricsResources: APIResourceList = {
  kind: 'APIResourceList',
  apiVersion: 'v1',
  groupVersion: metricsGroupVersion,
  resources: [
    { name: 'nodes', singularName: '', namespaced: false, kind: 'NodeMetrics', verbs: ['get', 'list'] },
    { name: 'pods', singularName: '', namespaced: true, kind: 'PodMetrics', verbs: ['get', 'list'] },
  ],
};

const podFields: ReadonlySet<string> = new Set(['metadata.name', 'metadata.namespace']);
const nodeFields: ReadonlySet<string> = new Set(['metadata.name']);

/** metrics-server's list filtering: `labelSelector` and `fieldSelector` on name and namespace. */
function selected<T extends PodMetrics | NodeMetrics>(request: FastifyRequest, items: T[], fields: ReadonlySet<string>, resource: string): T[] {
  refuseWatch(request, resource);
  const labels = parseLabelSelector(queryValue(request, 'labelSelector'));
  const fieldReqs = parseFieldSelector(queryValue(request, 'fieldSelector'), fields);
  const get = (m: T) => (f: string) => (f === 'metadata.name' ? m.metadata.name : f === 'metadata.namespace' ? m.metadata.namespace : undefined);
  return items.filter((m) => matchesLabels(labels, m.metadata.labels) && matchesFields(fieldReqs, get(m)));
}

/**
 * pkg/kubelet/server/stats/handler.go `handleSummary`: `only_cpu_and_memory` given once, as
 * `true`, in the query or a form body (`Request.Form` holds both: the body's values first).
 */
function onlyCpuAndMemory(request: FastifyRequest): boolean {
  const values = queryValues(request, 'only_cpu_and_memory');
  if (typeof request.body === 'string') values.unshift(...new URLSearchParams(request.body).getAll('only_cpu_and_memory'));
  return values.length === 1 && values[0] === 'true';
}

async function rejectSummaryMethod(): Promise<never> {
  throw new MethodNotAllowedError(['GET', 'HEAD', 'POST']);
}

export async function statsPlugin(app: FastifyInstance, opts: { host: Host }): Promise<void> {
  // An optional capability: without a sampler every route here is a 501 Status, never empty data.
  const stats = (): HostStats => {
    const s = opts.host.stats;
    if (s === undefined) throw notImplemented('resource usage statistics are not available on this node');
    return s;
  };

  // Go's ParseForm reads a form body on POST, whose `only_cpu_and_memory` counts as the query's does.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => done(null, body));

  const summary = async (request: FastifyRequest) => {
    const s = stats();
    try {
      return s.getStatsSummary({ onlyCpuAndMemory: onlyCpuAndMemory(request) });
    } catch (err) {
      // The kubelet's handleError: 500 with `Internal Error: …` as plain text.
      const message = err instanceof Error ? err.message : String(err);
      throw plainText('InternalError', `Internal Error: ${message}`);
    }
  };
  app.get('/stats/summary', summary);
  app.post('/stats/summary', summary);
  app.route({
    method: app.supportedMethods.filter((m) => !['GET', 'HEAD', 'POST'].includes(m)),
    url: '/stats/summary',
    config: { methodNotAllowed: true },
    onRequest: rejectSummaryMethod,
    handler: rejectSummaryMethod,
  });

  getRoute(app, '/metrics/resource', async (_request, reply) => reply.type(resourceMetricsContentType).send(stats().getResourceMetrics()));

  getRoute(app, `/apis/${metricsGroupVersion}`, async () => structuredClone(metricsResources));

  const listPods = async (request: FastifyRequest<{ Params: { ns?: string } }>) =>
    metricsList('PodMetricsList', selected(request, stats().getPodMetrics(request.params.ns), podFields, 'PodMetrics'));
  getRoute(app, `/apis/${metricsGroupVersion}/pods`, listPods);
  getRoute(app, `/apis/${metricsGroupVersion}/namespaces/:ns/pods`, listPods);
  getRoute<{ Params: { ns: string; name: string } }>(app, `/apis/${metricsGroupVersion}/namespaces/:ns/pods/:name`, async (request) => {
    const { ns, name } = request.params;
    const found = stats().getPodMetrics(ns).find((m) => m.metadata.name === name);
    // Unknown, or sampled only once so far (no rate yet): metrics-server's NotFound.
    if (!found) throw notFound('podmetrics', name, 'metrics.k8s.io');
    return found;
  });

  const node = () => stats().getNodeMetrics();
  getRoute(app, `/apis/${metricsGroupVersion}/nodes`, async (request) => {
    const n = node();
    return metricsList('NodeMetricsList', selected(request, n ? [n] : [], nodeFields, 'NodeMetrics'));
  });
  getRoute<{ Params: { name: string } }>(app, `/apis/${metricsGroupVersion}/nodes/:name`, async (request) => {
    const n = node();
    if (!n || n.metadata.name !== request.params.name) throw notFound('nodemetrics', request.params.name, 'metrics.k8s.io');
    return n;
  });
}
