import type { Container, Pod } from '../api/types.js';
import { hashContainer } from '../runtime/hash.js';

/**
 * Per-key exponential back-off, the kubelet's `flowcontrol.Backoff` as used for crash loops
 * (initial 10 s, doubling, capped at 5 min; an entry idle for twice the cap starts over).
 */
export class Backoff {
  readonly #entries = new Map<string, { delayMs: number; lastUpdate: number }>();
  readonly #initialMs: number;
  readonly #maxMs: number;

  constructor(opts: { initialMs?: number; maxMs?: number } = {}) {
    this.#initialMs = opts.initialMs ?? 10_000;
    this.#maxMs = opts.maxMs ?? 300_000;
  }

  /** True while `now` is less than the current delay after `eventTime` (e.g. the container's finish). */
  isInBackOffSince(key: string, eventTime: number, now: number): boolean {
    const entry = this.#entries.get(key);
    if (!entry || this.#expired(entry, eventTime)) return false;
    return now - eventTime < entry.delayMs;
  }

  /** Milliseconds left in the back-off that started at `eventTime`; 0 when none. */
  remaining(key: string, eventTime: number, now: number): number {
    const entry = this.#entries.get(key);
    if (!entry || this.#expired(entry, eventTime)) return 0;
    return Math.max(0, eventTime + entry.delayMs - now);
  }

  /** Records a restart: the first starts the delay at `initialMs`, each later one doubles it. */
  next(key: string, eventTime: number, now: number): void {
    const entry = this.#entries.get(key);
    if (!entry || this.#expired(entry, eventTime)) this.#entries.set(key, { delayMs: this.#initialMs, lastUpdate: now });
    else this.#entries.set(key, { delayMs: Math.min(entry.delayMs * 2, this.#maxMs), lastUpdate: now });
  }

  delayOf(key: string): number {
    return this.#entries.get(key)?.delayMs ?? 0;
  }

  /** Forgets `key`. */
  forget(key: string): void {
    this.#entries.delete(key);
  }

  /** Forgets every key with `prefix` (a removed pod's containers). */
  forgetPrefix(prefix: string): void {
    for (const key of this.#entries.keys()) if (key.startsWith(prefix)) this.#entries.delete(key);
  }

  #expired(entry: { lastUpdate: number }, eventTime: number): boolean {
    return eventTime - entry.lastUpdate > 2 * this.#maxMs;
  }
}

/**
 * A container's back-off key, the kubelet's `GetStableKey`: pod UID, container name and the spec's
 * hash, so a changed spec (a new image) starts from the initial delay instead of the crash loop's.
 */
export const backoffKey = (pod: Pod, container: Container) => `${pod.metadata?.uid}/${container.name}/${hashContainer(container)}`;
