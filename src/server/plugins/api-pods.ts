import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notFound } from '../../api/errors.js';
import type { Pod } from '../../api/types.js';
import type { Host } from '../host.js';
import { getRoute } from '../methods.js';
import { preferredTableVersion } from '../negotiate.js';
import { podList, withPodTypeMeta } from '../objects.js';
import { queryValue, refuseWatch } from '../params.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from '../selectors.js';
import { podsToTable } from '../table.js';

/**
 * The apiserver's read-only pod API over the node's own pods, so kubectl can point straight at
 * nodelet: list (all namespaces or one) with label/field selectors, get, and `/status`. When
 * the Accept header asks for `as=Table` (kubectl get), the answer is a server-side printed
 * Table, otherwise plain JSON objects. `limit` is accepted and ignored (one page holds a node).
 */

/** pkg/registry/core/pod `PodToSelectableFields`. */
const podFieldGetters: Record<string, (p: Pod) => string | undefined> = {
  'metadata.name': (p) => p.metadata?.name,
  'metadata.namespace': (p) => p.metadata?.namespace,
  'spec.nodeName': (p) => p.spec?.nodeName,
  'spec.restartPolicy': (p) => p.spec?.restartPolicy,
  'spec.schedulerName': (p) => p.spec?.schedulerName,
  'spec.serviceAccountName': (p) => p.spec?.serviceAccountName,
  'spec.hostNetwork': (p) => String(p.spec?.hostNetwork ?? false),
  'status.phase': (p) => p.status?.phase,
  'status.podIP': (p) => p.status?.podIP,
  'status.nominatedNodeName': (p) => p.status?.nominatedNodeName,
};
const podSelectableFields: ReadonlySet<string> = new Set(Object.keys(podFieldGetters));

export async function apiPodsPlugin(app: FastifyInstance, opts: { host: Host }): Promise<void> {
  const { host } = opts;

  /** Either a PodList or, for kubectl's Table Accept header, a Table. */
  const respondList = (request: FastifyRequest, pods: Pod[]) => {
    const table = preferredTableVersion(request.headers.accept);
    return table ? podsToTable(pods, new Date(), table) : podList(pods);
  };

  const list = async (request: FastifyRequest<{ Params: { ns?: string } }>) => {
    refuseWatch(request, 'pods');
    // Parse both selectors before touching the host, so a bad one is a clean 400.
    const labels = parseLabelSelector(queryValue(request, 'labelSelector'));
    const fields = parseFieldSelector(queryValue(request, 'fieldSelector'), podSelectableFields);
    const ns = request.params.ns;
    const pods = host
      .getPods()
      .filter(
        (p) =>
          (ns === undefined || p.metadata?.namespace === ns) &&
          matchesLabels(labels, p.metadata?.labels) &&
          matchesFields(fields, (f) => podFieldGetters[f]?.(p)),
      );
    return respondList(request, pods);
  };
  getRoute(app, '/api/v1/pods', list);
  getRoute(app, '/api/v1/namespaces/:ns/pods', list);

  const get = async (request: FastifyRequest<{ Params: { ns: string; name: string } }>) => {
    const { ns, name } = request.params;
    const pod = host.getPodByName(ns, name);
    if (!pod) throw notFound('pods', name);
    return preferredTableVersion(request.headers.accept) ? respondList(request, [pod]) : withPodTypeMeta(pod);
  };
  getRoute(app, '/api/v1/namespaces/:ns/pods/:name', get);
  getRoute(app, '/api/v1/namespaces/:ns/pods/:name/status', get);
}
