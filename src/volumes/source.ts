import type { ConfigMap, Pod, Secret } from 'kubernetes-types/core/v1.js';

/** Reads the API objects a pod's volumes and env refer to. Implemented by cluster mode; absent standalone. */
export interface PodObjectSource {
  /** The secret, or undefined when it does not exist (404). Rejects on any other failure. */
  getSecret(namespace: string, name: string): Promise<Secret | undefined>;
  getConfigMap(namespace: string, name: string): Promise<ConfigMap | undefined>;
  /** A TokenRequest for `serviceAccountName`, bound to `pod`. */
  requestServiceAccountToken(pod: Pod, serviceAccountName: string, opts: { audience?: string; expirationSeconds: number }): Promise<{ token: string; expirationTimestamp: Date }>;
}
