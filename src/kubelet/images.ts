import { imageTag } from '../api/defaults.js';
import { goDuration } from '../api/time.js';
import type { ImageInfo, ImagePullPolicy, RegistryAuth, Runtime } from '../runtime/types.js';
import type { ImagePullManager } from './image-pull-manager.js';
import type { TrackedRegistryAuth } from './keyring.js';
import type { ImagePullCredentials, ImagePullSecretRef } from './pull-records.js';

/** An image a container cannot have, with the kubelet's waiting reason. */
export class ImageError extends Error {
  constructor(
    readonly reason: 'ErrImagePull' | 'ErrImageNeverPull' | 'InvalidImageName',
    message: string,
  ) {
    super(message);
    this.name = 'ImageError';
  }
}

/** The kubelet's `applyDefaultImageTag`: an untagged, undigested name means `:latest`. */
export function withDefaultTag(image: string): string {
  return imageTag(image) === undefined ? `${image}:latest` : image;
}

/** Records one event on the container being started. */
export type ImageEvent = (type: 'Normal' | 'Warning', reason: string, message: string) => void;

/** The pod's registry credentials, in the order to try them, each with the secret it came from when known. */
export type PodCredentials = () => Promise<readonly (RegistryAuth | TrackedRegistryAuth)[]>;

export interface EnsureImageOptions {
  /** The pod's registry credentials; asked at most once, and only when a pull or a credential check needs them. */
  readonly credentials?: PodCredentials;
  /**
   * The image pull manager (`KubeletEnsureSecretPulledImages`): when given, a present image is
   * reused only by a pod whose credentials may use it, and every pull is recorded.
   */
  readonly pullManager?: ImagePullManager;
  readonly event: ImageEvent;
  readonly now?: () => number;
}

/**
 * The kubelet's image manager (`EnsureImageExists`) over the runtime's ImageStatus and PullImage:
 * the default `:latest` tag, the pull policy, and the events `kubectl describe pod` shows, with
 * the kubelet's reasons and texts:
 *
 * - present, policy not `Always`: `Pulled` "Container image "x" already present on machine"; with
 *   the pull manager (`KubeletEnsureSecretPulledImages`), "… already present on machine and can be
 *   accessed by the pod" when the pod's credentials may use it, else a pull with them (with
 *   `Never`: `ErrImageNeverPull`, worded as for an absent image);
 * - absent with `Never`: `ErrImageNeverPull` (Warning), and the container waits with that reason;
 * - otherwise `Pulling` "Pulling image "x:tag"", then `Pulled` "Successfully pulled image … in 1.2s
 *   (1.2s including waiting). Image size: N bytes." or `Failed` "Failed to pull image …: why"
 *   and `ErrImagePull`.
 *
 * The back-off between failed pulls (`ImagePullBackOff`) is the sync loop's, as for other starts.
 */
export async function ensureImageExists(runtime: Pick<Runtime, 'imageStatus' | 'pullImage'>, requested: string, policy: ImagePullPolicy, opts: EnsureImageOptions): Promise<ImageInfo> {
  const { event, now = Date.now, pullManager } = opts;
  if (requested.trim() === '') {
    const message = `Failed to apply default image tag "${requested}": couldn't parse image name "${requested}": invalid reference format`;
    event('Warning', 'InspectFailed', message);
    throw new ImageError('InvalidImageName', message);
  }
  const image = withDefaultTag(requested);
  const neverPull = () => {
    // The same words whether the image is absent or present but not the pod's to use: a pod
    // must not learn that an image it may not use is on the node.
    const message = `Container image "${requested}" is not present with pull policy of Never`;
    event('Warning', 'ErrImageNeverPull', message);
    return new ImageError('ErrImageNeverPull', message);
  };
  // `lookupPullCredentials`: read once, no earlier than needed.
  let read: Promise<readonly (RegistryAuth | TrackedRegistryAuth)[]> | undefined;
  const credentials = async () => {
    read ??= opts.credentials ? opts.credentials() : Promise.resolve([]);
    try {
      return await read;
    } catch (err) {
      // A pull secret that cannot be read (the kubelet's MakeDockerKeyring error): no pull, no event.
      throw new ImageError('ErrImagePull', (err as Error).message);
    }
  };
  const present = policy === 'Always' ? undefined : await runtime.imageStatus(image);
  if (present) {
    if (!pullManager) {
      event('Normal', 'Pulled', `Container image "${requested}" already present on machine`);
      return present;
    }
    const secrets = async () => (await credentials()).flatMap(secretRefOf);
    if (!(await pullManager.mustAttemptImagePull(requested, present.id, secrets))) {
      event('Normal', 'Pulled', `Container image "${requested}" already present on machine and can be accessed by the pod`);
      return present;
    }
  }
  if (policy === 'Never') throw neverPull();

  const tried = await credentials();
  event('Normal', 'Pulling', `Pulling image "${image}"`);
  const started = now();
  let pulled: Awaited<ReturnType<Runtime['pullImage']>>;
  await pullManager?.recordPullIntent(requested);
  try {
    pulled = await runtime.pullImage(image, tried);
  } catch (err) {
    await pullManager?.recordImagePullFailed(requested);
    const why = (err as Error).message;
    event('Warning', 'Failed', `Failed to pull image "${image}": ${why}`);
    throw new ImageError('ErrImagePull', why);
  }
  // nodelet pulls at once (no serialized-pull queue), so the time pulling is the time waited.
  await pullManager?.recordImagePulled(requested, pulled.id, pulledWith(pulled.credentialIndex === undefined ? undefined : tried[pulled.credentialIndex]));
  const took = goDuration(now() - started);
  event('Normal', 'Pulled', `Successfully pulled image "${image}" in ${took} (${took} including waiting). Image size: ${pulled.sizeBytes} bytes.`);
  return pulled;
}

/** A credential's secret as the pull manager compares it; none for one of unknown origin. */
function secretRefOf(c: RegistryAuth | TrackedRegistryAuth): ImagePullSecretRef[] {
  return 'source' in c && c.source ? [{ ...c.source, credentialHash: c.authHash }] : [];
}

/** `trackedToImagePullCreds`: a pull without credentials (or of unknown origin) leaves the image to every pod of the node. */
function pulledWith(c: RegistryAuth | TrackedRegistryAuth | undefined): ImagePullCredentials {
  const [secret] = c ? secretRefOf(c) : [];
  return secret ? { kubernetesSecrets: [secret] } : { nodePodsAccessible: true };
}
