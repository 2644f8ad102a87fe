import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Namespace } from '../../api/types.js';
import { getRoute } from '../methods.js';

/**
 * `GET /api/v1/namespaces/{ns}`. nodelet keeps no namespace store: like a kubelet running
 * static pods, any namespace a pod may name exists, so every valid DNS-1123 label answers an
 * Active Namespace (invalid names are 400s from the path check). kubectl depends on this: after
 * a pod 404 it GETs the namespace and, when that succeeds, prints the pod's NotFound message.
 */
export function namespaceObject(name: string): Namespace {
  return {
    kind: 'Namespace',
    apiVersion: 'v1',
    // The label the apiserver stamps on every namespace (NamespaceDefaultLabelName).
    metadata: { name, labels: { 'kubernetes.io/metadata.name': name } },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  };
}

export async function apiNamespacesPlugin(app: FastifyInstance): Promise<void> {
  getRoute(app, '/api/v1/namespaces/:ns', async (request: FastifyRequest<{ Params: { ns: string } }>) =>
    namespaceObject(request.params.ns),
  );
}
