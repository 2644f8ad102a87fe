import type { ReviewClient } from './apiserver.js';
import { TtlCache, type Clock } from './ttl-cache.js';

/** Where the webhooks report apiserver trouble; pino's logger fits. Never given a credential. */
export interface WebhookLog {
  warn(obj: object, msg: string): void;
}

/** What the TokenReview and SubjectAccessReview webhooks share; each adds its TTLs. */
export interface WebhookOptions {
  readonly client: ReviewClient;
  /** Bound on cached answers (default 10 000); the least recently used is dropped. */
  readonly maxEntries?: number;
  /** Per-review deadline (default 10 s). */
  readonly timeoutMs?: number;
  readonly now?: Clock;
  readonly log?: WebhookLog;
}

export const DEFAULT_REVIEW_TIMEOUT_MS = 10_000;

/** A review's answer and how long to keep it (0 = not at all). */
export interface Reviewed<V> {
  readonly value: V;
  readonly ttlMs: number;
}

/**
 * The webhooks' answers by key: a cached answer is returned synchronously (the security hook
 * answers a cached decision without a promise); otherwise one `review` runs per key at a time,
 * every concurrent `get` of that key sharing its promise, and its answer is cached for the TTL it
 * chose. A failed review is shared by the callers that waited on it but never cached: the next
 * `get` asks again. `V` must not be undefined (undefined is a miss).
 */
export class CachedReviews<V extends NonNullable<unknown>> {
  readonly #cache: TtlCache<V>;
  readonly #inflight = new Map<string, Promise<V>>();

  constructor(opts: { readonly maxEntries?: number; readonly now?: Clock } = {}) {
    this.#cache = new TtlCache(opts.maxEntries ?? 10_000, opts.now);
  }

  get size(): number {
    return this.#cache.size;
  }

  get(key: string, review: () => Promise<Reviewed<V>>): V | Promise<V> {
    const cached = this.#cache.get(key);
    if (cached !== undefined) return cached;
    let pending = this.#inflight.get(key);
    if (pending === undefined) {
      pending = (async () => {
        const { value, ttlMs } = await review();
        this.#cache.set(key, value, ttlMs);
        return value;
      })().finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, pending);
    }
    return pending;
  }
}
