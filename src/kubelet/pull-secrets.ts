import type { Secret } from 'kubernetes-types/core/v1.js';
import type { Pod } from '../api/types.js';
import type { PodObjectSource } from '../volumes/source.js';
import { keyringFromSecrets, repositoryOf, type PullSecret, type TrackedRegistryAuth } from './keyring.js';

export interface PullSecretDeps {
  /** The apiserver's secrets (cluster mode); absent standalone, where no secret can be read. */
  readonly objects: PodObjectSource | undefined;
  /** Records a Warning event on the pod. */
  readonly warn: (reason: string, message: string) => void;
}

/** The kubelet's event when some of a pod's `imagePullSecrets` cannot be read. */
export const FAILED_PULL_SECRET_REASON = 'FailedToRetrieveImagePullSecret';

/**
 * The credentials to pull `image` for `pod`, in the order to try them: the kubelet's
 * `getPullSecretsForPod` then `MakeDockerKeyring(…).Lookup(repoToPull)`. Called only when the
 * image must be pulled. A secret that cannot be read (missing, forbidden, the apiserver away,
 * or standalone, where there is no apiserver) is skipped and named in a
 * `FailedToRetrieveImagePullSecret` warning, and the pull goes on with what was read (with
 * nothing: anonymously), as the kubelet does. An empty list means an anonymous pull. A malformed
 * docker config in a secret rejects (the pull fails with `ErrImagePull`), as the kubelet's
 * keyring does.
 */
export async function pullCredentials(pod: Pod, image: string, deps: PullSecretDeps): Promise<TrackedRegistryAuth[]> {
  // Entries with empty names pass validation; the kubelet skips them without a warning.
  const names = (pod.spec?.imagePullSecrets ?? []).map((r) => r.name ?? '').filter((n) => n !== '');
  if (!names.length) return [];
  const namespace = pod.metadata?.namespace ?? 'default';
  const read: PullSecret[] = [];
  const failed: string[] = [];
  for (const name of names) {
    const secret = deps.objects ? await deps.objects.getSecret(namespace, name).catch(() => undefined) : undefined;
    if (!secret) failed.push(name);
    else read.push(pullSecretOf(name, namespace, secret));
  }
  if (failed.length) {
    const standalone = deps.objects ? '' : ' Standalone nodelet reads no secrets: they need cluster mode (--kubeconfig).';
    deps.warn(FAILED_PULL_SECRET_REASON, `Unable to retrieve some image pull secrets (${failed.join(', ')}); attempting to pull the image may not succeed.${standalone}`);
  }
  return keyringFromSecrets(read).lookup(repositoryOf(image));
}

/** A secret's type and data, decoded from the API's base64. */
function pullSecretOf(name: string, namespace: string, secret: Secret): PullSecret {
  const data: Record<string, Buffer> = {};
  for (const [key, value] of Object.entries(secret.data ?? {})) data[key] = Buffer.from(value, 'base64');
  return { name, namespace, uid: secret.metadata?.uid ?? '', ...(secret.type ? { type: secret.type } : {}), data };
}
