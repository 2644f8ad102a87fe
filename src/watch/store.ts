import type { ObjectMeta } from '../api/types.js';
import { WatchHub, type Change, type HubOptions, type ResourceVersionClock } from './hub.js';

/** Anything with Kubernetes object metadata. */
export interface KubeObject {
  kind?: string;
  apiVersion?: string;
  metadata?: ObjectMeta;
}

/** A copy of `object` whose `metadata.resourceVersion` is `rv`. */
export function stampResourceVersion<T extends KubeObject>(object: T, rv: string): T {
  return { ...object, metadata: { ...object.metadata, resourceVersion: rv } };
}

/** The object a BOOKMARK event carries: `{kind, apiVersion, metadata: {resourceVersion}}`. */
export function bookmarkObject<T extends KubeObject>(kind: string, apiVersion: string): (rv: string, annotations?: Record<string, string>) => T {
  return (rv, annotations) => ({ kind, apiVersion, metadata: { resourceVersion: rv, ...(annotations ? { annotations } : {}) } }) as T;
}

export interface StoreOptions<T> extends Pick<HubOptions<T>, 'historySize' | 'maxQueue'> {
  clock: ResourceVersionClock;
  kind: string;
  apiVersion: string;
  /** Whether two unstamped versions of an object say the same (no change is published then). */
  equal: (a: T, b: T) => boolean;
}

/**
 * Keyed objects behind a watch hub: `upsert` and `delete` turn the newest state into ADDED,
 * MODIFIED and DELETED changes, and the stored copies carry the version of their last change, so a
 * list answers exactly the state at the hub's current version. Pure.
 */
export class WatchedStore<T extends KubeObject> {
  readonly hub: WatchHub<T>;
  readonly #items = new Map<string, { source: T; object: T }>();
  readonly #equal: (a: T, b: T) => boolean;

  constructor(opts: StoreOptions<T>) {
    this.#equal = opts.equal;
    this.hub = new WatchHub<T>({
      clock: opts.clock,
      ...(opts.historySize !== undefined ? { historySize: opts.historySize } : {}),
      ...(opts.maxQueue !== undefined ? { maxQueue: opts.maxQueue } : {}),
      snapshot: () => this.list(),
      stamp: stampResourceVersion,
      bookmark: bookmarkObject<T>(opts.kind, opts.apiVersion),
    });
  }

  /** Sets the object under `key`: ADDED when new, MODIFIED when it differs, nothing when equal. */
  upsert(key: string, object: T): Change<T> | undefined {
    const held = this.#items.get(key);
    if (held && this.#equal(held.source, object)) return undefined;
    const change = this.hub.publish(held ? 'MODIFIED' : 'ADDED', object, held?.object);
    this.#items.set(key, { source: object, object: change.object });
    return change;
  }

  /** Removes the object under `key`: a DELETED change carrying its last state. */
  delete(key: string): Change<T> | undefined {
    const held = this.#items.get(key);
    if (!held) return undefined;
    this.#items.delete(key);
    return this.hub.publish('DELETED', held.source, held.object);
  }

  /** The stored (stamped) object. */
  get(key: string): T | undefined {
    return this.#items.get(key)?.object;
  }

  has(key: string): boolean {
    return this.#items.has(key);
  }

  keys(): IterableIterator<string> {
    return this.#items.keys();
  }

  /** Every stored object, stamped, in insertion order. */
  list(): T[] {
    return [...this.#items.values()].map((i) => i.object);
  }

  get size(): number {
    return this.#items.size;
  }
}
