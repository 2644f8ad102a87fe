import type { Node } from 'kubernetes-types/core/v1.js';
import type { Event, Pod } from '../api/types.js';
import { nodeChanged } from '../node/source.js';
import { WatchHub, type ResourceVersionClock } from './hub.js';
import { WatchedStore, bookmarkObject, stampResourceVersion } from './store.js';

/**
 * The feeds behind `?watch=true` and behind the resourceVersions list answers carry: pods, events
 * and the node, each a hub on the node's one `ResourceVersionClock`. They are fed by change
 * notifications from the pod manager, the status manager, the event recorder and the node source
 * (see src/kubelet/host.ts), never by polling Docker.
 */

export interface FeedLimits {
  /** Changes kept per resource for resuming watches (default 1000). */
  historySize?: number;
  /** Events a watcher may lag behind before it is closed (default 1000). */
  maxQueue?: number;
}

/** Two versions of a pod say the same: the same parts (the host builds pods from shared parts), or the same JSON. */
export function samePod(a: Pod, b: Pod): boolean {
  if (a.metadata === b.metadata && a.spec === b.spec && a.status === b.status) return true;
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Where pods come from: the host's own view (pods with their cached statuses). */
export interface PodFeedSource {
  /** Every pod, with its status. */
  pods(): Pod[];
  /** One pod by UID, with its status; undefined when gone. */
  pod(uid: string): Pod | undefined;
}

/**
 * Pods keyed by UID. `changed(uid)` (a status) and `changed()` (the pod set) are coalesced and
 * reconciled on the next microtask; `sync()` reconciles at once, so a list answers the freshest
 * state at a version a watch can start from.
 */
export class PodFeed {
  readonly store: WatchedStore<Pod>;
  readonly #source: PodFeedSource;
  readonly #dirty = new Set<string>();
  #dirtyAll = false;
  #scheduled = false;

  constructor(clock: ResourceVersionClock, source: PodFeedSource, limits: FeedLimits = {}) {
    this.#source = source;
    this.store = new WatchedStore<Pod>({ clock, kind: 'Pod', apiVersion: 'v1', equal: samePod, ...limits });
  }

  get hub(): WatchHub<Pod> {
    return this.store.hub;
  }

  /** A pod's status changed (`uid`), or the pod set may have (no argument). */
  changed(uid?: string): void {
    if (uid === undefined) this.#dirtyAll = true;
    else this.#dirty.add(uid);
    if (this.#scheduled) return;
    this.#scheduled = true;
    queueMicrotask(() => {
      this.#scheduled = false;
      this.#flush();
    });
  }

  /** Reconciles every pod now. O(pods), no I/O. */
  sync(): void {
    this.#dirtyAll = false;
    this.#dirty.clear();
    const seen = new Set<string>();
    for (const pod of this.#source.pods()) {
      const uid = pod.metadata?.uid ?? '';
      if (uid === '') continue;
      seen.add(uid);
      this.store.upsert(uid, withPodKind(pod));
    }
    for (const uid of [...this.store.keys()]) if (!seen.has(uid)) this.store.delete(uid);
  }

  /**
   * The pod's old incarnation is gone (it was deleted and is being recreated from its source):
   * watchers see it DELETED now, and the new one ADDED at the next reconcile.
   */
  replaced(uid: string): void {
    this.#dirty.delete(uid);
    this.store.delete(uid);
  }

  /** The stamped pod, after reconciling it. */
  get(uid: string): Pod | undefined {
    this.#refresh(uid);
    return this.store.get(uid);
  }

  /** Every pod (stamped) and the version they are current at. */
  list(): { items: Pod[]; resourceVersion: string } {
    this.sync();
    return { items: this.store.list(), resourceVersion: this.hub.resourceVersion };
  }

  #flush(): void {
    if (this.#dirtyAll) {
      this.sync();
      return;
    }
    const uids = [...this.#dirty];
    this.#dirty.clear();
    for (const uid of uids) this.#refresh(uid);
  }

  #refresh(uid: string): void {
    const pod = this.#source.pod(uid);
    if (pod) this.store.upsert(uid, withPodKind(pod));
    else this.store.delete(uid);
  }
}

function withPodKind(pod: Pod): Pod {
  return pod.kind === 'Pod' && pod.apiVersion === 'v1' ? pod : { ...pod, kind: 'Pod', apiVersion: 'v1' };
}

/** Where events come from: the recorder. */
export interface EventFeedSource {
  list(namespace: string | undefined, fields: ReadonlyMap<string, string>): Event[];
}

/**
 * Events as the recorder emits them: a new event is ADDED, a repeat (its `count` bumped) MODIFIED.
 * The recorder keeps the objects (bounded); the feed keeps their stamped copies in a WeakMap, so
 * an event the recorder evicts costs nothing here.
 */
export class EventFeed {
  readonly hub: WatchHub<Event>;
  readonly #source: EventFeedSource;
  readonly #stamped = new WeakMap<Event, Event>();

  constructor(clock: ResourceVersionClock, source: EventFeedSource, limits: FeedLimits = {}) {
    this.#source = source;
    this.hub = new WatchHub<Event>({
      clock,
      ...limits,
      snapshot: () => this.#source.list(undefined, new Map()).map((e) => this.#stamp(e)),
      stamp: stampResourceVersion,
      bookmark: bookmarkObject<Event>('Event', 'v1'),
    });
  }

  /** The recorder recorded (or bumped) `event`. */
  recorded(event: Event): void {
    const repeat = (event.count ?? 1) > 1;
    // A repeat differs only in count and times: the selectable fields are the same before and after.
    const change = this.hub.publish(repeat ? 'MODIFIED' : 'ADDED', event, repeat ? event : undefined);
    this.#stamped.set(event, change.object);
  }

  /** The recorder's events, stamped, and the version they are current at. */
  list(namespace: string | undefined, fields: ReadonlyMap<string, string>): { items: Event[]; resourceVersion: string } {
    return { items: this.#source.list(namespace, fields).map((e) => this.#stamp(e)), resourceVersion: this.hub.resourceVersion };
  }

  /** Events recorded before the feed existed carry the feed's first version. */
  #stamp(event: Event): Event {
    let s = this.#stamped.get(event);
    if (!s) {
      s = stampResourceVersion(event, String(this.hub.oldestResumable));
      this.#stamped.set(event, s);
    }
    return s;
  }
}

/** This node's Node object, as the node source builds it. */
export class NodeFeed {
  readonly store: WatchedStore<Node>;

  constructor(clock: ResourceVersionClock, limits: FeedLimits = {}) {
    this.store = new WatchedStore<Node>({ clock, kind: 'Node', apiVersion: 'v1', equal: (a, b) => !nodeChanged(a, b), historySize: 100, ...limits });
  }

  get hub(): WatchHub<Node> {
    return this.store.hub;
  }

  /** The node source built `node`: MODIFIED when something besides heartbeat times changed. */
  updated(node: Node): Node {
    const name = node.metadata?.name ?? '';
    this.store.upsert(name, node);
    return this.store.get(name) ?? node;
  }
}

/** The feeds a host offers the watch routes. */
export interface WatchFeeds {
  readonly clock: ResourceVersionClock;
  readonly pods: PodFeed;
  readonly events: EventFeed;
  readonly nodes: NodeFeed;
}
