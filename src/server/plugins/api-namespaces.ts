import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Namespace } from '../../api/types.js';
import { rfc3339 } from '../../api/time.js';
import type { Host } from '../../host/index.js';
import { getRoute } from '../methods.js';
import { preferredTableVersion } from '../negotiate.js';
import { queryValue, refuseWatch } from '../params.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from '../selectors.js';
import { namespacesToTable } from '../table.js';
import { checkListRequest } from '../list-options.js';

/**
 * Namespaces. nodelet keeps no namespace store: like a kubelet running static pods, any namespace
 * a pod may name exists, so `GET /api/v1/namespaces/{ns}` answers an Active Namespace for every
 * valid DNS-1123 label (invalid names are 400s from the path check). kubectl depends on this:
 * after a pod 404 it GETs the namespace and, when that succeeds, prints the pod's NotFound
 * message. The list (`kubectl get ns`) is what an apiserver would show for this node: the
 * namespaces that hold pods plus `default`, `kube-system`, `kube-public` and `kube-node-lease`.
 */

/** The namespaces every apiserver creates at start (the system namespaces controller). */
export const systemNamespaces: readonly string[] = ['default', 'kube-node-lease', 'kube-public', 'kube-system'];

export function namespaceObject(name: string, creationTimestamp?: string): Namespace {
  return {
    kind: 'Namespace',
    apiVersion: 'v1',
    // The label the apiserver stamps on every namespace (NamespaceDefaultLabelName).
    metadata: { name, labels: { 'kubernetes.io/metadata.name': name }, ...(creationTimestamp ? { creationTimestamp } : {}) },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  };
}

const namespaceFieldGetters: Record<string, (n: Namespace) => string | undefined> = {
  'metadata.name': (n) => n.metadata?.name,
  'status.phase': (n) => n.status?.phase,
};
const namespaceSelectableFields: ReadonlySet<string> = new Set(Object.keys(namespaceFieldGetters));

export async function apiNamespacesPlugin(app: FastifyInstance, opts: { host: Host }): Promise<void> {
  const { host } = opts;
  // Namespaces exist as long as the node serves them: they are as old as this server.
  const created = rfc3339(new Date(Math.floor(Date.now() / 1000) * 1000));

  getRoute(app, '/api/v1/namespaces', async (request: FastifyRequest) => {
    refuseWatch(request, 'namespaces');
    const labels = parseLabelSelector(queryValue(request, 'labelSelector'));
    const fields = parseFieldSelector(queryValue(request, 'fieldSelector'), namespaceSelectableFields);
    const { items: pods, resourceVersion } = host.watch.pods.list();
    checkListRequest(request, resourceVersion);
    const names = new Set(systemNamespaces);
    for (const p of pods) names.add(p.metadata?.namespace ?? 'default');
    const items = [...names]
      .sort()
      .map((n) => namespaceObject(n, created))
      .filter((n) => matchesLabels(labels, n.metadata?.labels) && matchesFields(fields, (f) => namespaceFieldGetters[f]?.(n)));
    const table = preferredTableVersion(request.headers.accept);
    return table ? namespacesToTable(items, new Date(), table, resourceVersion) : { kind: 'NamespaceList', apiVersion: 'v1', metadata: { resourceVersion }, items };
  });

  getRoute(app, '/api/v1/namespaces/:ns', async (request: FastifyRequest<{ Params: { ns: string } }>) => {
    const ns = namespaceObject(request.params.ns, created);
    const table = preferredTableVersion(request.headers.accept);
    return table ? namespacesToTable([ns], new Date(), table) : ns;
  });
}
