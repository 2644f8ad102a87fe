import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StatusError, badRequest, invalid, notFound } from '../../api/errors.js';
import type { Pod } from '../../api/types.js';
import type { Host } from '../../host/index.js';
import { getRoute, methodRoutes } from '../methods.js';
import { preferredTableVersion } from '../negotiate.js';
import { withPodTypeMeta } from '../objects.js';
import { queryValue } from '../params.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from '../selectors.js';
import { podsToTable } from '../table.js';
import { isWatchRequest, serveWatch, type WatchStreams } from '../watch.js';
import { checkListRequest } from '../list-options.js';

/**
 * The apiserver's pod API over the node's own pods, so kubectl can point straight at nodelet:
 * list (all namespaces or one) and watch with label/field selectors, get, `/status`, and delete
 * (a static pod is killed and recreated from its manifest). When the Accept header asks for
 * `as=Table` (kubectl get), lists, gets and watch events are server-side printed Tables,
 * otherwise plain JSON objects. Lists carry the resourceVersion a watch starts from. `limit` is
 * accepted and ignored (one page holds a node).
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

/** meta/v1 DeleteOptions, the fields nodelet reads. */
interface DeleteOptions {
  gracePeriodSeconds?: number | null;
  preconditions?: { uid?: string | null; resourceVersion?: string | null } | null;
  dryRun?: string[] | null;
  propagationPolicy?: string | null;
}

export async function apiPodsPlugin(app: FastifyInstance, opts: { host: Host; streams: WatchStreams }): Promise<void> {
  const { host, streams } = opts;

  /** The request's namespace and selectors as one predicate; a bad selector is a clean 400 before any lookup. */
  const selection = (request: FastifyRequest<{ Params: { ns?: string } }>) => {
    const labels = parseLabelSelector(queryValue(request, 'labelSelector'));
    const fields = parseFieldSelector(queryValue(request, 'fieldSelector'), podSelectableFields);
    const ns = request.params.ns;
    return (p: Pod) =>
      (ns === undefined || p.metadata?.namespace === ns) && matchesLabels(labels, p.metadata?.labels) && matchesFields(fields, (f) => podFieldGetters[f]?.(p));
  };

  const list = async (request: FastifyRequest<{ Params: { ns?: string } }>, reply: FastifyReply) => {
    const watch = isWatchRequest(request);
    const filter = selection(request);
    if (watch) {
      host.watch.pods.sync();
      return serveWatch(request, reply, { hub: host.watch.pods.hub, filter, table: podsToTable, streams });
    }
    const { items, resourceVersion } = host.watch.pods.list();
    checkListRequest(request, resourceVersion);
    const pods = items.filter(filter);
    const table = preferredTableVersion(request.headers.accept);
    return table ? podsToTable(pods, new Date(), table, resourceVersion) : { kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion }, items: pods };
  };
  getRoute(app, '/api/v1/pods', list);
  getRoute(app, '/api/v1/namespaces/:ns/pods', list);

  /** The pod with its resourceVersion, or the apiserver's 404. */
  const lookup = (ns: string, name: string): Pod => {
    const pod = host.getPodByName(ns, name);
    if (!pod) throw notFound('pods', name);
    return host.watch.pods.get(pod.metadata?.uid ?? '') ?? pod;
  };

  const get = async (request: FastifyRequest<{ Params: { ns: string; name: string } }>) => {
    const { ns, name } = request.params;
    const pod = lookup(ns, name);
    const table = preferredTableVersion(request.headers.accept);
    return table ? podsToTable([pod], new Date(), table, pod.metadata?.resourceVersion ?? '') : withPodTypeMeta(pod);
  };

  /**
   * DELETE: the apiserver's graceful delete answer, `200` with the Pod as it now is (terminating,
   * `deletionTimestamp` set); kubectl records its UID and then waits for the pod's DELETED watch
   * event. `gracePeriodSeconds` comes from the DeleteOptions body or the query; `dryRun=All`
   * answers without deleting; a UID precondition that does not hold is a 409.
   */
  const del = async (request: FastifyRequest<{ Params: { ns: string; name: string }; Body: unknown }>) => {
    const { ns, name } = request.params;
    const options = deleteOptions(request);
    const pod = lookup(ns, name);
    const wantUID = options.preconditions?.uid;
    if (wantUID && wantUID !== pod.metadata?.uid) {
      throw new StatusError('Conflict', `Operation cannot be fulfilled on pods "${name}": Precondition failed: UID in precondition: ${wantUID}, UID in object meta: ${pod.metadata?.uid ?? ''}`, { name, kind: 'pods' });
    }
    const wantRV = options.preconditions?.resourceVersion;
    if (wantRV && wantRV !== pod.metadata?.resourceVersion) {
      throw new StatusError('Conflict', `Operation cannot be fulfilled on pods "${name}": Precondition failed: ResourceVersion in precondition: ${wantRV}, ResourceVersion in object meta: ${pod.metadata?.resourceVersion ?? ''}`, { name, kind: 'pods' });
    }
    if (options.dryRun?.includes('All')) return withPodTypeMeta(pod);
    let grace = options.gracePeriodSeconds ?? undefined;
    // The pod strategy: a negative grace period means the shortest one.
    if (grace !== undefined && grace < 0) grace = 1;
    return withPodTypeMeta(host.deletePod(ns, name, grace));
  };

  methodRoutes(app, '/api/v1/namespaces/:ns/pods/:name', { GET: get, DELETE: del });
  getRoute(app, '/api/v1/namespaces/:ns/pods/:name/status', get);
}

/** DeleteOptions from the body (kubectl sends JSON) merged with the query (`?gracePeriodSeconds=`, `?dryRun=All`). */
function deleteOptions(request: FastifyRequest<{ Body: unknown }>): DeleteOptions {
  const body = request.body;
  let options: DeleteOptions = {};
  if (body !== undefined && body !== null && body !== '') {
    if (typeof body !== 'object' || Array.isArray(body)) throw badRequest('the body of a delete request must be a DeleteOptions object');
    const kind = (body as { kind?: unknown }).kind;
    if (kind !== undefined && kind !== 'DeleteOptions') throw badRequest(`expected a DeleteOptions body, got kind ${JSON.stringify(kind)}`);
    options = body as DeleteOptions;
  }
  const q = queryValue(request, 'gracePeriodSeconds');
  if (q !== '') {
    if (!/^-?\d{1,9}$/.test(q)) throw badRequest(`gracePeriodSeconds: Invalid value: ${JSON.stringify(q)}: must be an integer`);
    options = { ...options, gracePeriodSeconds: Number(q) };
  }
  const grace = options.gracePeriodSeconds;
  if (grace !== undefined && grace !== null && (typeof grace !== 'number' || !Number.isInteger(grace))) {
    throw badRequest('gracePeriodSeconds: Invalid value: must be an integer');
  }
  const dryQuery = queryValue(request, 'dryRun');
  const dryRun = dryQuery !== '' ? [dryQuery] : (options.dryRun ?? []);
  for (const d of dryRun) {
    if (d !== 'All') throw invalid(`DeleteOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ${JSON.stringify(d)}: supported values: "All"`);
  }
  const policy = options.propagationPolicy;
  if (policy !== undefined && policy !== null && !['Orphan', 'Background', 'Foreground'].includes(policy)) {
    throw invalid(`DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: ${JSON.stringify(policy)}: supported values: "Foreground", "Background", "Orphan", "nil"`);
  }
  return { ...options, dryRun };
}
