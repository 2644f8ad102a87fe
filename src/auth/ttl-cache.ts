/** Milliseconds since some epoch; injectable so tests can move time. */
export type Clock = () => number;

/**
 * A bounded cache of values that expire: the least recently used entry is dropped once
 * `maxEntries` is reached (a Map keeps insertion order; a hit re-inserts). Expired entries are
 * dropped when read. A TTL of 0 stores nothing.
 */
export class TtlCache<V> {
  readonly #map = new Map<string, { value: V; expires: number }>();
  readonly #max: number;
  readonly #now: Clock;

  constructor(maxEntries: number, now: Clock = Date.now) {
    this.#max = Math.max(1, maxEntries);
    this.#now = now;
  }

  get(key: string): V | undefined {
    const hit = this.#map.get(key);
    if (hit === undefined) return undefined;
    this.#map.delete(key);
    if (hit.expires <= this.#now()) return undefined;
    this.#map.set(key, hit);
    return hit.value;
  }

  set(key: string, value: V, ttlMs: number): void {
    this.#map.delete(key);
    if (ttlMs <= 0) return;
    while (this.#map.size >= this.#max) {
      const oldest = this.#map.keys().next();
      if (oldest.done === true) break;
      this.#map.delete(oldest.value);
    }
    this.#map.set(key, { value, expires: this.#now() + ttlMs });
  }

  get size(): number {
    return this.#map.size;
  }
}
