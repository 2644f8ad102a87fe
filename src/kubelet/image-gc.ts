import type { Logger } from '../logging/index.js';

/** One image as the engine lists it. */
export interface StoredImage {
  readonly id: string;
  readonly tags: readonly string[];
  readonly sizeBytes: number;
}

/** The engine's images and the filesystem holding them (the kubelet's `ImageService` + `ImageFsStats`). */
export interface ImageStore {
  listImages(): Promise<StoredImage[]>;
  /** Removes the image (every tag, then the ID); rejects when a container still uses it. */
  removeImage(id: string): Promise<void>;
  imageFsStats(): Promise<{ readonly capacityBytes: number; readonly availableBytes: number }>;
}

/** KubeletConfiguration's image GC policy. */
export interface ImageGCPolicy {
  /** `imageGCHighThresholdPercent` (85): GC runs when the image filesystem is this full; 100 turns it off. */
  readonly highThresholdPercent: number;
  /** `imageGCLowThresholdPercent` (80): it frees down to this. */
  readonly lowThresholdPercent: number;
  /** `imageMinimumGCAge` (2 min): an image seen more recently is never removed. */
  readonly minAgeMs: number;
  /** `imageMaximumGCAge` (0: off): an image unused this long is removed whatever the disk usage. */
  readonly maxAgeMs: number;
}

interface ImageRecord {
  firstDetected: number;
  /** 0 for an image never seen in use. */
  lastUsed: number;
  size: number;
}

export interface ImageGCOptions {
  readonly store: ImageStore;
  readonly policy: ImageGCPolicy;
  /** Image IDs of every container of this node's pods, exited ones included (the kubelet's `GetPods(all)`). */
  readonly imagesInUse: () => Promise<ReadonlySet<string>>;
  /** Names of images kept whatever happens (the sandbox image, pinned as the CRI pins it). */
  readonly pinned: readonly string[];
  /** A Warning event on the node. */
  readonly warn: (reason: string, message: string) => void;
  /** Counts a removed image (`kubelet_image_garbage_collected_total{reason}`). */
  readonly collected: (reason: 'age' | 'space') => void;
  readonly log: Logger;
  readonly now?: () => number;
  /**
   * `PostImageGCHook`s, run after images were freed for space: the IDs of the images left and when
   * the run began (the image pull manager prunes the records of the images gone).
   */
  readonly afterFree?: (remainingImageIds: readonly string[], began: Date) => Promise<void>;
}

/**
 * The kubelet's image garbage collector (pkg/kubelet/images/image_gc_manager.go, run every 5
 * minutes by `StartGarbageCollection`): each run records every image (first seen, last seen in
 * use, size); images used by a container of this node or pinned are never candidates, the others
 * go least recently used first (then first detected). With `imageMaximumGCAge`, once nodelet has
 * run that long, images unused longer are removed. When the image filesystem's usage reaches the
 * high threshold, images at least `imageMinimumGCAge` old are removed until it is back at the low
 * threshold; when that cannot be reached, `FreeDiskSpaceFailed` says by how much, and a second
 * failure in a row an `ImageGCFailed` event.
 *
 * An image another client's container uses (a shared engine) refuses removal, and is skipped.
 */
export class ImageGC {
  readonly #o: ImageGCOptions;
  readonly #records = new Map<string, ImageRecord>();
  readonly #began: number;
  #prevFailed = false;

  constructor(opts: ImageGCOptions) {
    this.#o = opts;
    this.#began = this.#now();
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }

  /** One run (`GarbageCollect`), with the kubelet's reporting of failures around it. */
  async run(): Promise<void> {
    try {
      await this.#collect();
      if (this.#prevFailed) this.#o.log.info('Image garbage collection succeeded');
      this.#prevFailed = false;
    } catch (err) {
      const message = (err as Error).message;
      if (this.#prevFailed) {
        this.#o.log.error({ err }, 'Image garbage collection failed multiple times in a row');
        this.#o.warn('ImageGCFailed', message);
      } else {
        this.#o.log.warn({ err }, 'Image garbage collection failed once');
      }
      this.#prevFailed = true;
    }
  }

  /**
   * `DeleteUnusedImages` (image_gc_manager.go), the eviction manager's reclaim: every unused,
   * unpinned image at least `imageMinimumGCAge` old is removed, whatever the disk usage.
   */
  async deleteUnusedImages(): Promise<void> {
    this.#o.log.info('Attempting to delete unused images');
    const freeTime = this.#now();
    await this.#freeSpace(Number.MAX_SAFE_INTEGER, freeTime, await this.#evictionOrder(freeTime));
  }

  async #collect(): Promise<void> {
    const { store, policy } = this.#o;
    // Turned off entirely: nothing to record.
    if (policy.highThresholdPercent >= 100 && policy.maxAgeMs === 0) return;
    const freeTime = this.#now();
    let candidates = await this.#evictionOrder(freeTime);
    if (policy.maxAgeMs > 0) candidates = await this.#freeOldImages(candidates, freeTime);
    if (policy.highThresholdPercent >= 100) return;
    const fs = await store.imageFsStats();
    const capacity = fs.capacityBytes;
    const available = Math.min(fs.availableBytes, capacity);
    if (capacity <= 0) {
      const message = 'invalid capacity 0 on image filesystem';
      this.#o.warn('InvalidDiskCapacity', message);
      throw new Error(message);
    }
    const usagePercent = 100 - Math.trunc((available * 100) / capacity);
    if (usagePercent < policy.highThresholdPercent) return;
    const amountToFree = Math.trunc((capacity * (100 - policy.lowThresholdPercent)) / 100) - available;
    this.#o.log.info({ usage: usagePercent, highThreshold: policy.highThresholdPercent, amountToFree, lowThreshold: policy.lowThresholdPercent }, 'Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold');
    const freed = await this.#freeSpace(amountToFree, freeTime, candidates);
    if (freed < amountToFree) {
      const message = `Failed to garbage collect required amount of images. Attempted to free ${amountToFree} bytes, but only found ${freed} bytes eligible to free.`;
      this.#o.warn('FreeDiskSpaceFailed', message);
      throw new Error(message);
    }
  }

  /** `detectImages` then `imagesInEvictionOrder`: the unused, unpinned images, least recently used first. */
  async #evictionOrder(now: number): Promise<{ id: string; record: ImageRecord }[]> {
    const images = await this.#o.store.listImages();
    const inUse = await this.#o.imagesInUse();
    const pinned = new Set(this.#o.pinned.flatMap((name) => [name, name.includes(':') ? name : `${name}:latest`]));
    const current = new Set<string>();
    const out: { id: string; record: ImageRecord }[] = [];
    for (const image of images) {
      current.add(image.id);
      let record = this.#records.get(image.id);
      if (!record) {
        record = { firstDetected: now, lastUsed: 0, size: image.sizeBytes };
        this.#records.set(image.id, record);
      }
      record.size = image.sizeBytes;
      if (inUse.has(image.id)) {
        record.lastUsed = now;
        continue;
      }
      if (image.tags.some((t) => pinned.has(t))) continue;
      out.push({ id: image.id, record });
    }
    for (const id of this.#records.keys()) if (!current.has(id)) this.#records.delete(id);
    return out.sort((a, b) => a.record.lastUsed - b.record.lastUsed || a.record.firstDetected - b.record.firstDetected);
  }

  async #freeOldImages(images: { id: string; record: ImageRecord }[], freeTime: number): Promise<{ id: string; record: ImageRecord }[]> {
    const maxAge = this.#o.policy.maxAgeMs;
    // Until nodelet has run that long, "unused since" is not known for long enough.
    if (freeTime - this.#began <= maxAge) return images;
    const remaining: { id: string; record: ImageRecord }[] = [];
    const errors: string[] = [];
    for (const image of images) {
      if (freeTime - image.record.lastUsed > maxAge && (await this.#free(image.id, 'age', errors))) continue;
      remaining.push(image);
    }
    if (errors.length) throw new Error(`wanted to free images older than ${maxAge / 1000}s, encountered errors in image deletion: [${errors.join(', ')}]`);
    return remaining;
  }

  async #freeSpace(bytesToFree: number, freeTime: number, images: { id: string; record: ImageRecord }[]): Promise<number> {
    let freed = 0;
    const errors: string[] = [];
    for (const { id, record } of images) {
      if (freeTime - record.firstDetected < this.#o.policy.minAgeMs) continue;
      if (!(await this.#free(id, 'space', errors))) continue;
      freed += record.size;
      if (freed >= bytesToFree) break;
    }
    if (errors.length) this.#o.log.warn({ errors }, 'Some images could not be removed');
    if (this.#o.afterFree) {
      const remaining = (await this.#o.store.listImages()).map((i) => i.id);
      await this.#o.afterFree(remaining, new Date(freeTime));
    }
    return freed;
  }

  async #free(id: string, reason: 'age' | 'space', errors: string[]): Promise<boolean> {
    this.#o.log.info({ imageID: id, reason }, 'Removing image to free bytes');
    try {
      await this.#o.store.removeImage(id);
    } catch (err) {
      errors.push(`${id}: ${(err as Error).message}`);
      return false;
    }
    this.#records.delete(id);
    this.#o.collected(reason);
    return true;
  }
}
