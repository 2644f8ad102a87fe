import type { ConfigMap, Pod, Secret, Service } from 'kubernetes-types/core/v1.js';
import type { LabelSelector } from 'kubernetes-types/meta/v1.js';
import type { PodCertificateProjection } from './pod-certificates.js';

/** Reads the API objects a pod's volumes and env refer to. Implemented by cluster mode; absent standalone. */
export interface PodObjectSource {
  /** The secret, or undefined when it does not exist (404). Rejects on any other failure. */
  getSecret(namespace: string, name: string): Promise<Secret | undefined>;
  getConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined>;
  /**
   * The services of `namespace` and the default namespace's `kubernetes` service, for the
   * service environment variables. Absent: no service environment (a kubelet without a
   * service lister).
   */
  listServices?(namespace: string): Promise<Service[]>;
  /** A TokenRequest for `serviceAccountName`, bound to `pod`. */
  requestServiceAccountToken(pod: Pod, serviceAccountName: string, opts: { audience?: string; expirationSeconds: number }): Promise<{ token: string; expirationTimestamp: Date }>;
  /**
   * The kubelet's ClusterTrustBundle manager (pkg/kubelet/clustertrustbundle): the PEM file of a
   * projection by bundle `name`, empty when it does not exist and `allowMissing`. Absent: the
   * projection cannot be set up.
   */
  getTrustAnchorsByName?(name: string, allowMissing: boolean): Promise<string>;
  /** The merged PEM file of the bundles of `signerName` whose labels match (undefined matches nothing). */
  getTrustAnchorsBySigner?(signerName: string, labelSelector: LabelSelector | undefined, allowMissing: boolean): Promise<string>;
  /**
   * The kubelet's pod certificate manager (pkg/kubelet/podcertificate): the key and issued chain
   * of the `podCertificate` source at `sourceIndex` of the pod's projected volume `volumeName`;
   * rejects while none is issued, once the request was denied or failed. Absent: the projection
   * cannot be set up.
   */
  getPodCertificateCredentialBundle?(pod: Pod, volumeName: string, sourceIndex: number, source: PodCertificateProjection): Promise<{ keyPem: string; certChain: string }>;
  /** Drops what the pod certificate manager keeps for a pod that is gone (`ForgetPod`). */
  forgetPodCertificates?(podUID: string): void;
}
