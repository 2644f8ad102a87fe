import { imageTag } from '../api/defaults.js';
import { goDuration } from '../api/time.js';
import type { ImageInfo, ImagePullPolicy, PullCredentials, Runtime } from '../runtime/types.js';

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

export interface EnsureImageOptions {
  /** The pod's registry credentials; asked only when a pull is needed. */
  readonly credentials?: PullCredentials;
  readonly event: ImageEvent;
  readonly now?: () => number;
}

/**
 * The kubelet's image manager (`EnsureImageExists`) over the runtime's ImageStatus and PullImage:
 * the default `:latest` tag, the pull policy, and the events `kubectl describe pod` shows, with
 * the kubelet's reasons and texts:
 *
 * - present, policy not `Always`: `Pulled` "Container image "x" already present on machine";
 * - absent with `Never`: `ErrImageNeverPull` (Warning), and the container waits with that reason;
 * - otherwise `Pulling` "Pulling image "x:tag"", then `Pulled` "Successfully pulled image … in 1.2s
 *   (1.2s including waiting). Image size: N bytes." or `Failed` "Failed to pull image …: why"
 *   and `ErrImagePull`.
 *
 * The back-off between failed pulls (`ImagePullBackOff`) is the sync loop's, as for other starts.
 */
export async function ensureImageExists(runtime: Pick<Runtime, 'imageStatus' | 'pullImage'>, requested: string, policy: ImagePullPolicy, opts: EnsureImageOptions): Promise<ImageInfo> {
  const { event, now = Date.now } = opts;
  if (requested.trim() === '') {
    const message = `Failed to apply default image tag "${requested}": couldn't parse image name "${requested}": invalid reference format`;
    event('Warning', 'InspectFailed', message);
    throw new ImageError('InvalidImageName', message);
  }
  const image = withDefaultTag(requested);
  const present = await runtime.imageStatus(image);
  if (present && policy !== 'Always') {
    event('Normal', 'Pulled', `Container image "${requested}" already present on machine`);
    return present;
  }
  if (policy === 'Never') {
    const message = `Container image "${requested}" is not present with pull policy of Never`;
    event('Warning', 'ErrImageNeverPull', message);
    throw new ImageError('ErrImageNeverPull', message);
  }

  let credentials;
  try {
    credentials = opts.credentials ? await opts.credentials() : [];
  } catch (err) {
    // A pull secret that cannot be read (the kubelet's MakeDockerKeyring error): no pull, no event.
    throw new ImageError('ErrImagePull', (err as Error).message);
  }
  event('Normal', 'Pulling', `Pulling image "${image}"`);
  const started = now();
  let pulled: ImageInfo;
  try {
    pulled = await runtime.pullImage(image, credentials);
  } catch (err) {
    const why = (err as Error).message;
    event('Warning', 'Failed', `Failed to pull image "${image}": ${why}`);
    throw new ImageError('ErrImagePull', why);
  }
  // nodelet pulls at once (no serialized-pull queue), so the time pulling is the time waited.
  const took = goDuration(now() - started);
  event('Normal', 'Pulled', `Successfully pulled image "${image}" in ${took} (${took} including waiting). Image size: ${pulled.sizeBytes} bytes.`);
  return pulled;
}
