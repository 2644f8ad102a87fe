import { StatusError } from '../api/errors.js';
import { parseResourceVersion, tooLargeResourceVersion } from './resource-version.js';

/**
 * The watch hub: the apiserver's watch semantics over objects nodelet holds in memory. Pure — no
 * I/O, no timers, no clock reads except the resourceVersion counter — so it is unit-tested on its
 * own, and the HTTP layer (src/server/watch.ts) only encodes and writes what a watcher queues.
 *
 * - One global, monotonically increasing resourceVersion (`ResourceVersionClock`), shared by every
 *   hub of a node like etcd's revision: a list answers the current value, every change takes the
 *   next one, and a watch started from a list's version misses nothing and repeats nothing.
 * - A bounded history (ring) of recent changes, so a watch can resume from a version it saw
 *   (`resourceVersion=N` replays the changes after N). Older than the ring → `410 Expired`, and the
 *   client relists; newer than anything issued → the apiserver's `504 Timeout`
 *   (`ResourceVersionTooLarge`).
 * - Per-watcher bounded queues: a watcher whose consumer falls `maxQueue` events behind is closed
 *   (`overflow`), never buffered without limit; its client resumes from its last version.
 * - Selectors as the apiserver's watch cache applies them: an object that starts matching arrives as
 *   ADDED, one that stops matching as DELETED (its previous state at the new version).
 * - Bookmarks on demand (`bookmark()`), for watchers that allowed them.
 */

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';
export type WatchEventType = ChangeType | 'BOOKMARK';

/** One change as the hub recorded it. */
export interface Change<T> {
  readonly type: ChangeType;
  readonly rv: number;
  /** The object after the change, stamped with `rv`; for DELETED its last state, stamped with `rv`. */
  readonly object: T;
  /** The object before the change (MODIFIED, DELETED); undefined for ADDED. */
  readonly prev: T | undefined;
}

/**
 * What a watcher receives. An event that is exactly a hub change is the same object for every
 * watcher that gets it, so encoders can cache its bytes per event (see `WeakMap` use in
 * src/server/watch.ts); events a selector rewrote are the watcher's own.
 */
export interface WatchEvent<T> {
  readonly type: WatchEventType;
  readonly rv: number;
  readonly object: T;
}

/** Why a watcher ended. */
export type CloseReason = 'stopped' | 'timeout' | 'overflow' | 'shutdown';

/**
 * The apiserver's resourceVersion counter. It starts at the wall clock in microseconds, so the
 * versions of a restarted nodelet are larger than any it issued before (the old process would have
 * needed more than one change per microsecond to overtake it): a client resuming with a version from
 * the previous process gets `410 Expired` and relists instead of silently missing changes.
 */
export class ResourceVersionClock {
  #rv: number;

  constructor(start: number = Date.now() * 1000) {
    if (!Number.isSafeInteger(start) || start < 0) throw new RangeError(`invalid start resourceVersion ${start}`);
    this.#rv = start;
  }

  /** The newest version issued (what a list answers). */
  get current(): number {
    return this.#rv;
  }

  next(): number {
    return ++this.#rv;
  }
}

/** A watcher's queue and state. Created by `WatchHub.watch`, drained by the HTTP layer. */
export class Watcher<T> {
  readonly bookmarks: boolean;
  readonly #filter: ((object: T) => boolean) | undefined;
  #queue: WatchEvent<T>[] = [];
  #head = 0;
  /** Events beyond this many queued close the watcher; raised by the initial burst. */
  #limit: number;
  readonly #maxQueue: number;
  #closed: CloseReason | undefined;
  #listener: (() => void) | undefined;
  readonly #onClose: (w: Watcher<T>) => void;
  #lastRV: number;

  /** @internal use `WatchHub.watch`. */
  constructor(opts: { filter: ((object: T) => boolean) | undefined; bookmarks: boolean; maxQueue: number; startRV: number; onClose: (w: Watcher<T>) => void }) {
    this.#filter = opts.filter;
    this.bookmarks = opts.bookmarks;
    this.#maxQueue = opts.maxQueue;
    this.#limit = opts.maxQueue;
    this.#lastRV = opts.startRV;
    this.#onClose = opts.onClose;
  }

  /** The version of the newest event queued (or the start version): where a client would resume. */
  get lastResourceVersion(): number {
    return this.#lastRV;
  }

  /** Events queued and not yet taken. */
  get pending(): number {
    return this.#queue.length - this.#head;
  }

  /** Why the watcher ended, or undefined while it runs. Queued events may still be taken after a non-overflow close. */
  get closed(): CloseReason | undefined {
    return this.#closed;
  }

  /** Whether an object passes this watcher's selectors. */
  matches(object: T): boolean {
    return this.#filter === undefined || this.#filter(object);
  }

  /** Called (synchronously) whenever an event is queued or the watcher closes. One listener. */
  onChange(listener: () => void): void {
    this.#listener = listener;
  }

  /** The next queued event, or undefined. */
  shift(): WatchEvent<T> | undefined {
    if (this.#head >= this.#queue.length) return undefined;
    const ev = this.#queue[this.#head] as WatchEvent<T>;
    this.#queue[this.#head] = undefined as unknown as WatchEvent<T>;
    this.#head++;
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
      // Once the initial burst is drained, the normal bound applies again.
      this.#limit = this.#maxQueue;
    } else if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    return ev;
  }

  /**
   * Ends the watcher. `overflow` drops what is queued (the client was too slow for it anyway and
   * resumes from its last version); any other reason leaves the queue to be drained first.
   */
  close(reason: CloseReason): void {
    if (this.#closed !== undefined) return;
    this.#closed = reason;
    if (reason === 'overflow') {
      this.#queue = [];
      this.#head = 0;
    }
    this.#onClose(this);
    this.#listener?.();
  }

  /** @internal Queues an event; closes the watcher (overflow) when its consumer is too far behind. */
  push(ev: WatchEvent<T>): void {
    if (this.#closed !== undefined) return;
    if (this.pending >= this.#limit) {
      this.close('overflow');
      return;
    }
    this.#queue.push(ev);
    if (ev.rv > this.#lastRV) this.#lastRV = ev.rv;
    this.#listener?.();
  }

  /** @internal Lets the initial events exceed `maxQueue` (they are queued in one go). */
  allowBurst(n: number): void {
    this.#limit = this.#maxQueue + n;
  }
}

export interface HubOptions<T> {
  clock: ResourceVersionClock;
  /** Changes kept for resuming (default 1000). */
  historySize?: number;
  /** Events a watcher may have queued before it is closed as too slow (default 1000). */
  maxQueue?: number;
  /** The objects as they are now (stamped), for watches that begin with synthetic ADDED events. */
  snapshot: () => Iterable<T>;
  /** A copy of `object` with `metadata.resourceVersion` set to `rv`. */
  stamp: (object: T, rv: string) => T;
  /** The object a BOOKMARK carries: the kind with only `metadata.resourceVersion` (and annotations). */
  bookmark: (rv: string, annotations?: Record<string, string>) => T;
}

export interface WatchOptions<T> {
  /** `resourceVersion`: unset, '' or '0' start with the current state as ADDED events; N resumes after N. */
  resourceVersion?: string | undefined;
  /** Label and field selectors, compiled. */
  filter?: ((object: T) => boolean) | undefined;
  /** `allowWatchBookmarks=true`. */
  bookmarks?: boolean;
  /**
   * `sendInitialEvents=true` (the streaming list, KEP-3157): the current state as ADDED events,
   * then a BOOKMARK annotated `k8s.io/initial-events-end`, then changes. Needs `bookmarks`.
   */
  sendInitialEvents?: boolean;
  /** Overrides the hub's `maxQueue` for this watcher. */
  maxQueue?: number;
}

/** The annotation on the bookmark that ends a streaming list's initial events. */
export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

export class WatchHub<T> {
  readonly #o: Required<Omit<HubOptions<T>, 'historySize' | 'maxQueue'>> & { historySize: number; maxQueue: number };
  /** Ring of the newest changes: `#history[(#start + i) % size]` for i < `#count`. */
  readonly #history: (Change<T> | undefined)[];
  #start = 0;
  #count = 0;
  /** Every change of this hub with a version above this is in the history. */
  #horizon: number;
  readonly #watchers = new Set<Watcher<T>>();

  constructor(opts: HubOptions<T>) {
    const historySize = opts.historySize ?? 1000;
    const maxQueue = opts.maxQueue ?? 1000;
    if (!(historySize >= 1) || !(maxQueue >= 1)) throw new RangeError('historySize and maxQueue must be at least 1');
    this.#o = { ...opts, historySize, maxQueue };
    this.#history = new Array<Change<T> | undefined>(historySize);
    // Nothing of this hub happened before it existed; versions before now may come from an earlier
    // process (or another hub), whose changes this one cannot replay.
    this.#horizon = opts.clock.current;
  }

  /** The version a list answers: the newest issued on this node. */
  get resourceVersion(): string {
    return String(this.#o.clock.current);
  }

  /** The oldest version a watch can resume from. */
  get oldestResumable(): number {
    return this.#horizon;
  }

  /** Watchers currently open. */
  get watcherCount(): number {
    return this.#watchers.size;
  }

  /** Records a change at the next version and hands it to every watcher it concerns. */
  publish(type: ChangeType, object: T, prev?: T): Change<T> {
    const rv = this.#o.clock.next();
    const change: Change<T> = { type, rv, object: this.#o.stamp(object, String(rv)), prev };
    this.#remember(change);
    if (this.#watchers.size > 0) {
      const shared: WatchEvent<T> = { type, rv, object: change.object };
      for (const w of this.#watchers) {
        const ev = this.#eventFor(w, change, shared);
        if (ev) w.push(ev);
      }
    }
    return change;
  }

  /**
   * Opens a watcher. Throws a `StatusError`: 410 Expired for a version older than the history,
   * 504 Timeout (ResourceVersionTooLarge) for one never issued, 400 for one that does not parse.
   */
  watch(opts: WatchOptions<T> = {}): Watcher<T> {
    const rvParam = opts.resourceVersion ?? '';
    const current = this.#o.clock.current;
    const fromState = rvParam === '' || rvParam === '0' || opts.sendInitialEvents === true;
    let from = current;
    if (rvParam !== '' && rvParam !== '0') {
      const requested = parseResourceVersion(rvParam);
      if (requested > BigInt(current)) throw tooLargeResourceVersion(requested, current);
      // At most `current`, so exact as a number.
      from = Number(requested);
      if (!fromState && from < this.#horizon) {
        throw new StatusError('Expired', `too old resource version: ${from} (${this.#horizon})`);
      }
    }
    if (opts.sendInitialEvents && !opts.bookmarks) {
      throw invalidWatch('sendInitialEvents', 'sendInitialEvents requires allowWatchBookmarks=true');
    }
    const watcher = new Watcher<T>({
      filter: opts.filter,
      bookmarks: opts.bookmarks === true,
      maxQueue: opts.maxQueue ?? this.#o.maxQueue,
      startRV: fromState ? current : from,
      onClose: (w) => this.#watchers.delete(w),
    });
    const initial: WatchEvent<T>[] = [];
    if (fromState) {
      for (const object of this.#o.snapshot()) {
        if (watcher.matches(object)) initial.push({ type: 'ADDED', rv: current, object });
      }
      if (opts.sendInitialEvents) {
        initial.push({ type: 'BOOKMARK', rv: current, object: this.#o.bookmark(String(current), { [INITIAL_EVENTS_END]: 'true' }) });
      }
    } else {
      for (let i = 0; i < this.#count; i++) {
        const change = this.#history[(this.#start + i) % this.#o.historySize] as Change<T>;
        if (change.rv <= from) continue;
        const ev = this.#eventFor(watcher, change, { type: change.type, rv: change.rv, object: change.object });
        if (ev) initial.push(ev);
      }
    }
    watcher.allowBurst(initial.length);
    for (const ev of initial) watcher.push(ev);
    this.#watchers.add(watcher);
    return watcher;
  }

  /** Queues a BOOKMARK at the current version for every watcher that allowed bookmarks. */
  bookmark(): void {
    if (this.#watchers.size === 0) return;
    const rv = this.#o.clock.current;
    const ev: WatchEvent<T> = { type: 'BOOKMARK', rv, object: this.#o.bookmark(String(rv)) };
    for (const w of this.#watchers) if (w.bookmarks) w.push(ev);
  }

  /** Closes every watcher (nodelet is stopping). */
  closeAll(reason: CloseReason = 'shutdown'): void {
    for (const w of [...this.#watchers]) w.close(reason);
  }

  #remember(change: Change<T>): void {
    const size = this.#o.historySize;
    if (this.#count < size) {
      this.#history[(this.#start + this.#count) % size] = change;
      this.#count++;
      return;
    }
    const evicted = this.#history[this.#start] as Change<T>;
    this.#horizon = evicted.rv;
    this.#history[this.#start] = change;
    this.#start = (this.#start + 1) % size;
  }

  /**
   * The event `w` gets for `change` (the cacher's `convertToWatchEvent`): the shared event when
   * the selector's answer did not flip, ADDED when the object starts matching, DELETED (with its
   * previous state at the change's version) when it stops, nothing when it never matched.
   */
  #eventFor(w: Watcher<T>, change: Change<T>, shared: WatchEvent<T>): WatchEvent<T> | undefined {
    switch (change.type) {
      case 'ADDED':
        return w.matches(change.object) ? shared : undefined;
      case 'DELETED':
        return w.matches(change.object) ? shared : undefined;
      case 'MODIFIED': {
        const now = w.matches(change.object);
        const before = change.prev !== undefined && w.matches(change.prev);
        if (now && before) return shared;
        if (now) return { type: 'ADDED', rv: change.rv, object: change.object };
        if (before && change.prev !== undefined) return { type: 'DELETED', rv: change.rv, object: this.#o.stamp(change.prev, String(change.rv)) };
        return undefined;
      }
    }
  }
}

function invalidWatch(field: string, message: string): StatusError {
  return new StatusError('Invalid', `ListOptions.meta.k8s.io "" is invalid: ${field}: Forbidden: ${message}`, {
    kind: 'ListOptions',
    group: 'meta.k8s.io',
    causes: [{ reason: 'FieldValueForbidden', message: `Forbidden: ${message}`, field }],
  });
}
