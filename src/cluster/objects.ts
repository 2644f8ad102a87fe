import type { ConfigMap, Pod, Secret, Service, ServiceList } from 'kubernetes-types/core/v1.js';
import type { TokenRequest } from 'kubernetes-types/authentication/v1.js';
import { isNotFound, TransportError, type KubeClient } from '../apiserver/client.js';
import type { Logger } from '../logging/index.js';
import type { LabelSelector } from 'kubernetes-types/meta/v1.js';
import type { PodObjectSource } from '../volumes/source.js';
import { Reflector } from './reflector.js';
import { ClusterTrustBundles } from './trust-bundles.js';
import { PodCertificates } from './pod-certificates.js';
import type { PodCertificateProjection } from '../volumes/pod-certificates.js';

/** Namespaces whose last service list is kept for apiserver outages. */
const MAX_REMEMBERED_NAMESPACES = 256;

const ns = (namespace: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}`;

/**
 * The API objects a pod's volumes and environment refer to, read from the apiserver on demand.
 * The Node authorizer lets a node read exactly the secrets and configMaps its pods reference,
 * and request tokens only for their service accounts, bound to the pod; ClusterTrustBundles it may
 * list and watch, and they are kept by an informer started on first use (trust-bundles.ts).
 * PodCertificateRequests for its pods it may create, and list and watch those of its node
 * (pod-certificates.ts, given `podCertificates`).
 */
export class ApiserverObjects implements PodObjectSource {
  readonly #client: KubeClient;
  /** The last service list read per namespace, for reads while the apiserver is away. */
  readonly #lastServices = new Map<string, Service[]>();
  /**
   * Every service of the cluster, as the kubelet's service informer keeps them (`serviceLister`,
   * pkg/kubelet/kubelet.go; the Node authorizer lets a node list and watch services): once it has
   * listed, a container start reads its environment from here instead of the apiserver.
   */
  readonly #services: Reflector<Service> | undefined;
  /** Absent without a logger (the informer logs). */
  readonly #trustBundles: ClusterTrustBundles | undefined;
  /** Absent without a logger or the node's name and an event sink. */
  readonly #podCertificates: PodCertificates | undefined;

  constructor(
    client: KubeClient,
    opts: {
      log?: Logger;
      minWatchTimeoutSeconds?: number;
      /** The node's name, where its pods' events go, and what re-syncs a pod whose certificate request settled. */
      podCertificates?: { nodeName: string; recordEvent: (pod: Pod, reason: string, message: string) => void; onRequestSettled?: (podUID: string) => void };
    } = {},
  ) {
    this.#client = client;
    this.#services = opts.log
      ? new Reflector<Service>({
          client,
          log: opts.log,
          path: '/api/v1/services',
          kind: 'Service',
          keyOf: (s) => (s.metadata?.name ? `${s.metadata.namespace ?? ''}/${s.metadata.name}` : undefined),
          ...(opts.minWatchTimeoutSeconds ? { minWatchTimeoutSeconds: opts.minWatchTimeoutSeconds } : {}),
        })
      : undefined;
    this.#trustBundles = opts.log ? new ClusterTrustBundles(client, opts.log) : undefined;
    this.#podCertificates = opts.log && opts.podCertificates ? new PodCertificates({ client, log: opts.log, ...opts.podCertificates }) : undefined;
  }

  /** Starts the service informer (without one, every container start reads the services). */
  start(): void {
    this.#services?.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.#services?.stop(), this.#trustBundles?.stop(), this.#podCertificates?.stop()]);
  }

  getPodCertificateCredentialBundle(pod: Pod, volumeName: string, sourceIndex: number, source: PodCertificateProjection): Promise<{ keyPem: string; certChain: string }> {
    if (!this.#podCertificates) return Promise.reject(new Error('podCertificate projection needs the pod certificate manager'));
    return this.#podCertificates.credentialBundle(pod, volumeName, sourceIndex, source);
  }

  forgetPodCertificates(podUID: string): void {
    this.#podCertificates?.forgetPod(podUID);
  }

  getTrustAnchorsByName(name: string, allowMissing: boolean): Promise<string> {
    if (!this.#trustBundles) return Promise.reject(new Error('ClusterTrustBundle projection needs the ClusterTrustBundle informer'));
    return this.#trustBundles.getTrustAnchorsByName(name, allowMissing);
  }

  getTrustAnchorsBySigner(signerName: string, labelSelector: LabelSelector | undefined, allowMissing: boolean): Promise<string> {
    if (!this.#trustBundles) return Promise.reject(new Error('ClusterTrustBundle projection needs the ClusterTrustBundle informer'));
    return this.#trustBundles.getTrustAnchorsBySigner(signerName, labelSelector, allowMissing);
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
   * The namespace's services and the default namespace's `kubernetes` service (what
   * `getServiceEnvVarMap` reads, pkg/kubelet/kubelet_pods.go): from the service informer once it
   * has listed. Before that (nodelet just started, or no informer) two reads: the namespace's list
   * and `default/kubernetes`; while the apiserver cannot be reached, the last list read for the
   * namespace serves, so containers keep restarting through an outage; with none read yet, the
   * start fails (the kubelet fails it too until its informer has synced).
   */
  async listServices(namespace: string): Promise<Service[]> {
    if (this.#services?.hasSynced) {
      return this.#services.list().filter((s) => s.metadata?.namespace === namespace || (s.metadata?.namespace === 'default' && s.metadata.name === 'kubernetes'));
    }
    try {
      const [own, master] = await Promise.all([
        this.#client.request<ServiceList>('GET', `${ns(namespace)}/services`),
        namespace === 'default' ? undefined : this.#client.request<Service>('GET', `${ns('default')}/services/kubernetes`).catch((err: unknown) => {
          if (isNotFound(err)) return undefined;
          throw err;
        }),
      ]);
      // A list's items carry no namespace of their own in some encodings; they are the namespace's.
      const items = own.items.map((s) => ({ ...s, metadata: { ...s.metadata, namespace } }));
      const services = master ? [...items, master] : items;
      // Newest last; the oldest namespace goes once the map is full.
      this.#lastServices.delete(namespace);
      this.#lastServices.set(namespace, services);
      if (this.#lastServices.size > MAX_REMEMBERED_NAMESPACES) this.#lastServices.delete(this.#lastServices.keys().next().value ?? '');
      return services;
    } catch (err) {
      const last = this.#lastServices.get(namespace);
      if (last && err instanceof TransportError) return last;
      throw err;
    }
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
