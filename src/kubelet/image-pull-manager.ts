import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logging/index.js';
import {
  mergePulledRecord,
  mustAttemptImagePull,
  type ImagePullCredentials,
  type ImagePulledRecord,
  type ImagePullSecretRef,
  type VerificationEnforcer,
} from './pull-records.js';

/** The kubelet config API group version its records are written in (`fs_pullrecords.go` `encodeVersion`). */
const API_VERSION = 'kubelet.config.k8s.io/v1beta1';

/** `cacheFilename`: `sha256-` and the hex sha256 of the image (intents) or image ref (records). */
export const cacheFilename = (key: string): string => `sha256-${createHash('sha256').update(key).digest('hex')}`;

/** An image the engine holds: its ID and the names it is known by (for turning intents into records). */
export interface StoredImageNames {
  readonly id: string;
  readonly tags: readonly string[];
}

export interface ImagePullManagerOptions {
  /** The node's root directory: records live in `<rootDir>/image_manager/{pulling,pulled}`. */
  readonly rootDir: string;
  readonly enforcer: VerificationEnforcer;
  readonly log: Logger;
  readonly now?: () => Date;
}

/**
 * The kubelet's `PullManager` (`pkg/kubelet/images/pullmanager/image_pull_manager.go`) over the
 * kubelet's own file layout (`fs_pullrecords.go`): a pull intent file per image being pulled
 * (so a pull cut short by a restart still counts as the kubelet's), a pulled record per image
 * ID naming the credentials that pulled it under each name. Records are mirrored in memory (one
 * per image on the node, pruned with the image GC) and written through, each file atomically
 * (temp file, rename). Every method resolves; a failing disk only costs extra pulls, as in the
 * kubelet, which fails safe towards verification.
 */
export class ImagePullManager {
  readonly #o: ImagePullManagerOptions;
  readonly #pullingDir: string;
  readonly #pulledDir: string;
  readonly #records = new Map<string, ImagePulledRecord>();
  /** In-flight pulls per image (`intentCounters`); its intent file is removed when it reaches 0. */
  readonly #intents = new Map<string, number>();
  /** Intents left by an earlier run that no image matched at start. */
  readonly #staleIntents = new Set<string>();
  /** One write at a time per file, in call order. */
  readonly #writes = new Map<string, Promise<void>>();

  private constructor(opts: ImagePullManagerOptions) {
    this.#o = opts;
    this.#pullingDir = join(opts.rootDir, 'image_manager', 'pulling');
    this.#pulledDir = join(opts.rootDir, 'image_manager', 'pulled');
  }

  /**
   * Reads the records and, as the kubelet's `initialize`, turns the intents of an earlier run whose
   * image the engine now holds into records with no credentials (verification forced next time).
   */
  static async open(opts: ImagePullManagerOptions, images: () => Promise<readonly StoredImageNames[]>): Promise<ImagePullManager> {
    const m = new ImagePullManager(opts);
    await mkdir(m.#pullingDir, { recursive: true, mode: 0o700 });
    await mkdir(m.#pulledDir, { recursive: true, mode: 0o700 });
    for (const record of await m.#readDir(m.#pulledDir, isPulledRecord)) m.#records.set(record.imageRef, stripped(record));
    const intents = (await m.#readDir(m.#pullingDir, isPullIntent)).map((i) => i.image);
    if (intents.length) {
      const held = await images().catch((err: unknown) => {
        opts.log.warn({ err }, 'failed to list images');
        return [];
      });
      for (const image of intents) {
        const found = held.find((i) => i.tags.includes(image));
        if (!found) {
          m.#staleIntents.add(image);
          continue;
        }
        await m.#putRecord(mergePulledRecord(m.#records.get(found.id), image, found.id, undefined, m.#now()));
        const path = join(m.#pullingDir, cacheFilename(image));
        await m.#queue(path, () => rm(path, { force: true }));
      }
    }
    return m;
  }

  /** `RecordPullIntent`: written before a pull starts. */
  async recordPullIntent(image: string): Promise<void> {
    this.#intents.set(image, (this.#intents.get(image) ?? 0) + 1);
    await this.#write(this.#pullingDir, cacheFilename(image), { kind: 'ImagePullIntent', apiVersion: API_VERSION, image });
  }

  /** `RecordImagePulled`: the pull succeeded with `credentials` (`undefined`: unknown). */
  async recordImagePulled(image: string, imageRef: string, credentials: ImagePullCredentials | undefined): Promise<void> {
    await this.#putRecord(mergePulledRecord(this.#records.get(imageRef), image, imageRef, credentials, this.#now()));
    await this.recordImagePullFailed(image);
  }

  /** `RecordImagePullFailed`: the intent is dropped when no other pull of the image is in flight. */
  async recordImagePullFailed(image: string): Promise<void> {
    const left = (this.#intents.get(image) ?? 0) - 1;
    if (left > 0) {
      this.#intents.set(image, left);
      return;
    }
    this.#intents.delete(image);
    this.#staleIntents.delete(image);
    const path = join(this.#pullingDir, cacheFilename(image));
    await this.#queue(path, () => rm(path, { force: true }));
  }

  /**
   * `MustAttemptImagePull`: whether a pod whose pull secrets `podSecrets` gives must pull `image`
   * (present as `imageRef`) again before using it.
   */
  async mustAttemptImagePull(image: string, imageRef: string, podSecrets: () => Promise<readonly ImagePullSecretRef[]>): Promise<boolean> {
    if (!imageRef) return true;
    const record = this.#records.get(imageRef);
    const pulledByKubelet = record !== undefined || (this.#intents.get(image) ?? 0) > 0 || this.#staleIntents.has(image);
    const decision = await mustAttemptImagePull(image, record, pulledByKubelet, this.#o.enforcer, podSecrets);
    if (decision.learn) await this.#putRecord(mergePulledRecord(this.#records.get(imageRef), image, imageRef, { kubernetesSecrets: [decision.learn] }, this.#now()));
    return decision.pull;
  }

  /**
   * `PruneUnknownRecords`, the image GC's hook: records of images no longer on the node, last
   * updated before the GC run began, are deleted.
   */
  async pruneUnknownRecords(remainingImageIds: readonly string[], until: Date): Promise<void> {
    const remaining = new Set(remainingImageIds);
    for (const [ref, record] of this.#records) {
      if (remaining.has(ref) || !(Date.parse(record.lastUpdatedTime) < until.getTime())) continue;
      this.#records.delete(ref);
      const path = join(this.#pulledDir, cacheFilename(ref));
      await this.#queue(path, () => rm(path, { force: true }));
    }
  }

  /** The record for an image ID, as written (for tests and `/configz`-style inspection). */
  record(imageRef: string): ImagePulledRecord | undefined {
    return this.#records.get(imageRef);
  }

  async #putRecord(record: ImagePulledRecord): Promise<void> {
    if (this.#records.get(record.imageRef) === record) return;
    this.#records.set(record.imageRef, record);
    await this.#write(this.#pulledDir, cacheFilename(record.imageRef), { kind: 'ImagePulledRecord', apiVersion: API_VERSION, ...record });
  }

  #now(): string {
    return (this.#o.now?.() ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z');
  }

  /** `writeFile`: a temp file beside the target, renamed over it. */
  #write(dir: string, name: string, content: object): Promise<void> {
    const path = join(dir, name);
    return this.#queue(path, async () => {
      const tmp = `${path}.tmp`;
      await writeFile(tmp, `${JSON.stringify(content)}\n`, { mode: 0o600 });
      await rename(tmp, path);
    });
  }

  #queue(path: string, op: () => Promise<unknown>): Promise<void> {
    const done = (this.#writes.get(path) ?? Promise.resolve())
      .then(op)
      .then(
        () => undefined,
        (err: unknown) => this.#o.log.warn({ err, path }, 'failed to write an image pull record'),
      );
    this.#writes.set(path, done);
    void done.then(() => {
      if (this.#writes.get(path) === done) this.#writes.delete(path);
    });
    return done;
  }

  async #readDir<T>(dir: string, valid: (v: unknown) => v is T): Promise<T[]> {
    const out: T[] = [];
    for (const name of await readdir(dir).catch(() => [])) {
      if (!name.startsWith('sha256-') || name.endsWith('.tmp')) continue;
      try {
        const parsed: unknown = JSON.parse(await readFile(join(dir, name), 'utf8'));
        if (valid(parsed)) out.push(parsed);
        else this.#o.log.warn({ file: join(dir, name) }, 'ignoring an image pull record that is not one');
      } catch (err) {
        this.#o.log.warn({ err, file: join(dir, name) }, 'ignoring an unreadable image pull record');
      }
    }
    return out;
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function isPullIntent(v: unknown): v is { image: string } {
  return isObject(v) && v.kind === 'ImagePullIntent' && typeof v.image === 'string';
}

function isPulledRecord(v: unknown): v is ImagePulledRecord {
  return isObject(v) && v.kind === 'ImagePulledRecord' && typeof v.imageRef === 'string' && typeof v.lastUpdatedTime === 'string' && (v.credentialMapping === undefined || isObject(v.credentialMapping));
}

const isSecretRef = (v: unknown): v is ImagePullSecretRef =>
  isObject(v) && typeof v.uid === 'string' && typeof v.namespace === 'string' && typeof v.name === 'string' && typeof v.credentialHash === 'string';

/**
 * A record as read, without its kind and apiVersion; a mapping entry of the wrong shape is
 * dropped, which only forces verification for that image name (failing safe, as the kubelet).
 */
function stripped(r: ImagePulledRecord): ImagePulledRecord {
  const mapping: Record<string, ImagePullCredentials> = {};
  for (const [name, c] of Object.entries(r.credentialMapping ?? {}) as [string, unknown][]) {
    if (!isObject(c)) continue;
    const secrets = c.kubernetesSecrets;
    if (secrets !== undefined && !(Array.isArray(secrets) && secrets.every(isSecretRef))) continue;
    mapping[name] = { ...(secrets ? { kubernetesSecrets: secrets } : {}), ...(c.nodePodsAccessible === true ? { nodePodsAccessible: true } : {}) };
  }
  return { lastUpdatedTime: r.lastUpdatedTime, imageRef: r.imageRef, credentialMapping: mapping };
}
