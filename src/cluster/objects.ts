import type { ConfigMap, Pod, Secret, Service, ServiceList } from 'kubernetes-types/core/v1.js';
import type { TokenRequest } from 'kubernetes-types/authentication/v1.js';
import { isNotFound, type KubeClient } from '../apiserver/client.js';
import type { PodObjectSource } from '../volumes/source.js';

const ns = (namespace: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}`;

/**
 * The API objects a pod's volumes and environment refer to, read from the apiserver on demand.
 * The Node authorizer lets a node read exactly the secrets and configMaps its pods reference,
 * and request tokens only for their service accounts, bound to the pod.
 */
export class ApiserverObjects implements PodObjectSource {
  readonly #client: KubeClient;

  constructor(client: KubeClient) {
    this.#client = client;
  }

  async getSecret(namespace: string, name: string): Promise<Secret | undefined> {
    try {
      return await this.#client.request<Secret>('GET', `${ns(namespace)}/secrets/${encodeURIComponent(name)}`);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async getConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined> {
    try {
      return await this.#client.request<ConfigMap>('GET', `${ns(namespace)}/configmaps/${encodeURIComponent(name)}`);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  /**
   * Two reads per container start (the kubelet keeps an informer instead): the namespace's
   * services and the default namespace's `kubernetes` service.
   */
  async listServices(namespace: string): Promise<Service[]> {
    const [own, master] = await Promise.all([
      this.#client.request<ServiceList>('GET', `${ns(namespace)}/services`),
      namespace === 'default' ? undefined : this.#client.request<Service>('GET', `${ns('default')}/services/kubernetes`).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      }),
    ]);
    // A list's items carry no namespace of their own in some encodings; they are the namespace's.
    const items = own.items.map((s) => ({ ...s, metadata: { ...s.metadata, namespace } }));
    return master ? [...items, master] : items;
  }

  async requestServiceAccountToken(pod: Pod, serviceAccountName: string, opts: { audience?: string; expirationSeconds: number }): Promise<{ token: string; expirationTimestamp: Date }> {
    const meta = pod.metadata ?? {};
    const request: TokenRequest = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: opts.audience ? [opts.audience] : [],
        expirationSeconds: opts.expirationSeconds,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: meta.name ?? '', uid: meta.uid ?? '' },
      },
    };
    const answer = await this.#client.request<TokenRequest>('POST', `${ns(meta.namespace ?? 'default')}/serviceaccounts/${encodeURIComponent(serviceAccountName)}/token`, { body: request });
    const token = answer.status?.token;
    if (!token) throw new Error(`TokenRequest for service account ${meta.namespace}/${serviceAccountName} returned no token`);
    return { token, expirationTimestamp: new Date(answer.status?.expirationTimestamp ?? Date.now() + opts.expirationSeconds * 1000) };
  }
}
