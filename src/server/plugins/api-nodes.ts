import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Node } from 'kubernetes-types/core/v1.js';
import { notFound } from '../../api/errors.js';
import type { Host } from '../../host/index.js';
import { getRoute } from '../methods.js';
import { preferredTableVersion } from '../negotiate.js';
import { queryValue } from '../params.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from '../selectors.js';
import { nodesToTable } from '../table.js';
import { isWatchRequest, serveWatch, type WatchStreams } from '../watch.js';
import { checkListRequest } from '../list-options.js';

/**
 * `/api/v1/nodes`, `/api/v1/nodes/{name}` and `…/status`: this node — the object cluster mode
 * registers (src/node/object.ts via the host's NodeSource) — as a NodeList, a Node, a Table with
 * the apiserver's columns (`kubectl get nodes`, `-o wide`), or a watch. Any other name is the
 * apiserver's 404. `kubectl describe node` and `kubectl top node` start here.
 */

/** pkg/registry/core/node `NodeToSelectableFields`. */
const nodeFieldGetters: Record<string, (n: Node) => string | undefined> = {
  'metadata.name': (n) => n.metadata?.name,
  'spec.unschedulable': (n) => String(n.spec?.unschedulable ?? false),
};
const nodeSelectableFields: ReadonlySet<string> = new Set(Object.keys(nodeFieldGetters));

export async function apiNodesPlugin(app: FastifyInstance, opts: { host: Host; streams: WatchStreams }): Promise<void> {
  const { host, streams } = opts;

  getRoute(app, '/api/v1/nodes', async (request: FastifyRequest, reply: FastifyReply) => {
    const watch = isWatchRequest(request);
    const labels = parseLabelSelector(queryValue(request, 'labelSelector'));
    const fields = parseFieldSelector(queryValue(request, 'fieldSelector'), nodeSelectableFields);
    const filter = (n: Node) => matchesLabels(labels, n.metadata?.labels) && matchesFields(fields, (f) => nodeFieldGetters[f]?.(n));
    // Brings the node feed up to date (facts are cached), so the state and its version are current.
    const node = await host.getNode();
    if (watch) return serveWatch(request, reply, { hub: host.watch.nodes.hub, filter, table: nodesToTable, streams });
    const resourceVersion = host.watch.nodes.hub.resourceVersion;
    checkListRequest(request, resourceVersion);
    const items = [node].filter(filter);
    const table = preferredTableVersion(request.headers.accept);
    return table ? nodesToTable(items, new Date(), table, resourceVersion) : { kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion }, items };
  });

  const get = async (request: FastifyRequest<{ Params: { name: string } }>) => {
    const { name } = request.params;
    if (name !== host.nodeName) throw notFound('nodes', name);
    const node = await host.getNode();
    const table = preferredTableVersion(request.headers.accept);
    return table ? nodesToTable([node], new Date(), table, node.metadata?.resourceVersion ?? '') : { ...node, kind: 'Node', apiVersion: 'v1' };
  };
  getRoute(app, '/api/v1/nodes/:name', get);
  getRoute(app, '/api/v1/nodes/:name/status', get);
}
