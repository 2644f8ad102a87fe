import type Docker from 'dockerode';
import type { Logger } from '../../logging/index.js';
import type { ImageInfo, PulledImage, RegistryAuth } from '../types.js';
import { aggregate } from '../../api/validation.js';
import { statusCodeOf } from './client.js';

/**
 * The engine's images, as cri-dockerd's `core/image.go` serves them to the kubelet: listed for
 * image GC, inspected, pulled (anonymously or with each of a pod's pull credentials in turn) and
 * removed; and the infra image every sandbox is created from, looked up (pulled when missing)
 * once for all sandboxes until a create says it is gone (sandbox.ts).
 */

export interface DockerImagesOptions {
  docker: Docker;
  /** The sandboxes' image (`--pod-infra-container-image`). */
  infraImage: string;
  log: Logger;
}

export class DockerImages {
  readonly #docker: Docker;
  readonly #infraImageName: string;
  readonly #log: Logger;
  /** The infra image found (or pulled), or being looked for: sandboxes share it (`infraImage`). */
  #infraImageReady: Promise<void> | undefined;

  constructor(opts: DockerImagesOptions) {
    this.#docker = opts.docker;
    this.#infraImageName = opts.infraImage;
    this.#log = opts.log;
  }

  /** Every image of the engine (image GC). */
  async listImages(): Promise<{ id: string; tags: string[]; sizeBytes: number }[]> {
    const list = await this.#docker.listImages();
    return list.map((i) => ({ id: i.Id, tags: (i.RepoTags ?? []).filter((t) => t !== '<none>:<none>'), sizeBytes: i.Size }));
  }

  /**
   * Removes an image as cri-dockerd's `RemoveImage` does: each tag, then the ID, never forced,
   * so an image a container still uses (any client's: the engine may be shared) is refused (409).
   */
  async removeImage(id: string): Promise<void> {
    const info = await this.#docker.getImage(id).inspect().catch((err: unknown) => {
      if (statusCodeOf(err) === 404) return undefined;
      throw err;
    });
    if (!info) return;
    // Untagging succeeds while other tags remain, even under a container: ask first, so an image
    // in use by any container of the engine keeps its names.
    const users = await this.#docker.listContainers({ all: true, filters: { ancestor: [info.Id] } });
    if (users.length) throw new Error(`image ${info.Id} is in use by container ${users[0]?.Id.slice(0, 12)}`);
    for (const tag of info.RepoTags ?? []) {
      await this.#docker.getImage(tag).remove({ noprune: false }).catch((err: unknown) => {
        if (statusCodeOf(err) !== 404) throw err;
      });
    }
    await this.#docker.getImage(id).remove({ noprune: false }).catch((err: unknown) => {
      if (statusCodeOf(err) !== 404) throw err;
    });
  }

  async pullImage(image: string, credentials: readonly RegistryAuth[]): Promise<PulledImage> {
    const credentialIndex = await this.#pullWith(image, credentials);
    const pulled = await this.imageStatus(image);
    if (!pulled) throw new Error(`image "${image}" not present after its pull`);
    return credentialIndex === undefined ? pulled : { ...pulled, credentialIndex };
  }

  /** The image as the engine has it, or undefined when it has none by that name. */
  async imageStatus(image: string): Promise<ImageInfo | undefined> {
    try {
      const info = await this.#docker.getImage(image).inspect();
      return { id: info.Id, user: info.Config?.User ?? '', sizeBytes: info.Size ?? 0 };
    } catch (err) {
      if (statusCodeOf(err) === 404) return undefined;
      throw err;
    }
  }

  /**
   * The kubelet's `PullImage`: anonymously without credentials, else with each in turn until one
   * pull succeeds; when all fail, the error lists each failure (`[a, b]`, as Go's aggregate).
   * Resolves to the index of the credential that pulled, undefined for an anonymous pull.
   */
  async #pullWith(image: string, credentials: readonly RegistryAuth[]): Promise<number | undefined> {
    if (!credentials.length) {
      await this.#pull(image, undefined);
      return undefined;
    }
    const failures: string[] = [];
    for (const [i, auth] of credentials.entries()) {
      try {
        await this.#pull(image, auth, i);
        return i;
      } catch (err) {
        failures.push((err as Error).message);
      }
    }
    throw new Error(aggregate(failures));
  }

  async #pull(image: string, auth: RegistryAuth | undefined, credential?: number): Promise<void> {
    // Never the credentials themselves: which of the pod's credentials (by position) is tried.
    const log = this.#log.child({ image, ...(credential !== undefined ? { credential } : {}) });
    log.info(auth ? 'Pulling image with credentials' : 'Pulling image');
    // dockerode sends `authconfig` as the X-Registry-Auth header, never in the query.
    const stream = await this.#docker.pull(image, auth ? { authconfig: { username: auth.username, password: auth.password, ...(auth.email ? { email: auth.email } : {}) } } : {});
    let lastLogged = 0;
    await new Promise<void>((resolve, reject) => {
      this.#docker.modem.followProgress(
        stream,
        (err: Error | null) => (err ? reject(err) : resolve()),
        (event: { status?: string; progress?: string; id?: string }) => {
          // Progress events arrive many times a second; one line per second is plenty.
          const now = Date.now();
          if (now - lastLogged < 1000) return;
          lastLogged = now;
          log.info({ layer: event.id, progress: event.progress ?? event.status }, 'Pull progress');
        },
      );
    });
    log.info('Pulled image');
  }

  /** The sandbox's image, pulled when missing (as the CRI runtime does for its pause image). */
  async #ensureInfraImage(): Promise<void> {
    const image = this.#infraImageName;
    if (await this.imageStatus(image)) return;
    try {
      await this.#pull(image, undefined);
    } catch (err) {
      throw new Error(`failed to pull image "${image}": ${(err as Error).message}`, { cause: err });
    }
  }

  /** `#ensureInfraImage`, one at a time for all the sandboxes of a burst, remembered once it succeeded. */
  infraImage(): Promise<void> {
    const ready = (this.#infraImageReady ??= this.#ensureInfraImage());
    ready.catch(() => {
      if (this.#infraImageReady === ready) this.#infraImageReady = undefined;
    });
    return ready;
  }

  /** Forgets that the infra image was found: the next `infraImage` asks the engine again. */
  forgetInfraImage(): void {
    this.#infraImageReady = undefined;
  }
}
