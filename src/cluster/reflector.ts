import type { ObjectMeta } from 'kubernetes-types/meta/v1.js';
import type { Logger } from '../logging/index.js';
import { isGone, query, type KubeClient, type WatchEvent } from '../apiserver/client.js';
import { RetryDelay, delay } from './retry.js';

/** An API object as a reflector keeps it. */
export interface ListedObject {
  metadata?: ObjectMeta;
}

export interface ReflectorOptions<T extends ListedObject> {
  client: KubeClient;
  log: Logger;
  /** The collection's path, e.g. `/api/v1/pods` (every namespace). */
  path: string;
  /** What the logs call the objects, e.g. `Pod`. */
  kind: string;
  /** A field selector sent with the list and every watch, e.g. `spec.nodeName=node-1`. */
  fieldSelector?: string;
  /** The key an object is kept under (a pod's UID, a service's namespace/name); undefined: not kept. */
  keyOf: (object: T) => string | undefined;
  /** Applied once to each object as it arrives (before it is kept). */
  transform?: (object: T) => T;
  /**
   * The complete set, after the first list and after every change; a burst of events (a relist,
   * many objects at once) is one call.
   */
  onChange?: (objects: T[]) => void;
  /** Server-side watch timeout range in seconds (the reflector picks at random in [min, 2·min]). */
  minWatchTimeoutSeconds?: number;
}

/**
 * client-go's reflector feeding an informer's store (k8s.io/client-go/tools/cache/reflector.go):
 * list, then watch from the list's resourceVersion with bookmarks; a watch that ends is resumed
 * from the last version seen, a 410 (version too old) relists, any other failure retries with
 * back-off, and a watch silent past its own timeout is abandoned as stalled. Every relist replaces
 * the whole store, so an add, update or delete that happened while the apiserver was unreachable
 * is never lost. The store holds what the apiserver lists for the path, the answer and each event
 * bounded by the client.
 */
export class Reflector<T extends ListedObject> {
  readonly #o: ReflectorOptions<T>;
  readonly #abort = new AbortController();
  readonly #store = new Map<string, T>();
  #resourceVersion = '';
  #emitScheduled = false;
  #loop: Promise<void> | undefined;
  /** Lists done (tests and metrics read it). */
  lists = 0;

  constructor(opts: ReflectorOptions<T>) {
    this.#o = opts;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }

  /** Whether the first list arrived (client-go's `HasSynced`): until then the store is empty, not the truth. */
  get hasSynced(): boolean {
    return this.lists > 0;
  }

  /** The object under `key` as the watch last saw it, or undefined. */
  get(key: string): T | undefined {
    return this.#store.get(key);
  }

  /** Every object kept. */
  list(): T[] {
    return [...this.#store.values()];
  }

  async #run(): Promise<void> {
    const signal = this.#abort.signal;
    const retry = new RetryDelay({ initialMs: 800, maxMs: 30_000 });
    let mustList = true;
    while (!signal.aborted) {
      try {
        if (mustList) {
          await this.#list();
          mustList = false;
        }
        await this.#watch(signal);
        retry.reset();
      } catch (err) {
        if (signal.aborted) break;
        if (isGone(err)) {
          this.#o.log.info({ resourceVersion: this.#resourceVersion }, `${this.#o.kind} watch expired (410); relisting`);
          mustList = true;
          continue;
        }
        // One warning per outage; the retries after it at debug.
        this.#o.log[retry.failing ? 'debug' : 'warn']({ err }, `${this.#o.kind} list/watch failed; retrying`);
        await delay(retry.next(), signal);
      }
    }
  }

  async #list(): Promise<void> {
    const list = await this.#o.client.request<{ items: T[]; metadata?: { resourceVersion?: string } }>('GET', `${this.#o.path}${query({ fieldSelector: this.#o.fieldSelector })}`, { timeoutMs: 60_000 });
    this.#store.clear();
    for (const object of list.items) this.#keep(object);
    this.#resourceVersion = list.metadata?.resourceVersion ?? '';
    this.lists++;
    this.#emitSoon();
  }

  async #watch(signal: AbortSignal): Promise<void> {
    const min = this.#o.minWatchTimeoutSeconds ?? 60;
    const timeoutSeconds = Math.floor(min * (1 + Math.random()));
    const path = `${this.#o.path}${query({
      fieldSelector: this.#o.fieldSelector,
      watch: 1,
      resourceVersion: this.#resourceVersion,
      allowWatchBookmarks: true,
      timeoutSeconds,
    })}`;
    // The server ends the watch after timeoutSeconds; past that plus a margin it has stalled.
    await this.#o.client.watch<T>(path, (event) => this.#apply(event), { signal, idleTimeoutMs: (timeoutSeconds + 15) * 1000 });
  }

  #apply(event: WatchEvent<T>): void {
    const rv = event.object.metadata?.resourceVersion;
    if (rv) this.#resourceVersion = rv;
    if (event.type === 'BOOKMARK') return;
    if (event.type === 'DELETED') {
      const key = this.#o.keyOf(event.object);
      if (key === undefined || !this.#store.delete(key)) return;
    } else if (!this.#keep(event.object)) return;
    this.#emitSoon();
  }

  #keep(object: T): boolean {
    const key = this.#o.keyOf(object);
    if (key === undefined) return false;
    this.#store.set(key, this.#o.transform ? this.#o.transform(object) : object);
    return true;
  }

  /**
   * Coalesces a burst of events into one snapshot. An object no event changed is the same object
   * in every snapshot (transformed once, when it arrived), so a consumer can skip it by identity:
   * a burst of N objects costs O(N) identity checks per snapshot, not N deep comparisons.
   */
  #emitSoon(): void {
    if (!this.#o.onChange || this.#emitScheduled) return;
    this.#emitScheduled = true;
    setImmediate(() => {
      this.#emitScheduled = false;
      if (this.#abort.signal.aborted) return;
      this.#o.onChange?.(this.list());
    });
  }
}
