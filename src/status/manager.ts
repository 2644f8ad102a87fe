import type { Pod, PodStatus } from '../api/types.js';
import { observedGenerationOf } from './generation.js';
import { isStatusEqual, normalizeStatus } from './normalize.js';
import { rfc3339 } from '../api/time.js';
import { illegalContainerTransition, isTerminalPhase } from './transitions.js';

/** What a consumer receives: the newest status of one pod. `status` is frozen. */
export interface StatusUpdate {
  readonly uid: string;
  readonly version: number;
  readonly status: PodStatus;
  readonly podName: string;
  readonly podNamespace: string;
}

export type StatusConsumer = (update: StatusUpdate) => void | Promise<void>;

/** What `subscribe` returns: call it to unsubscribe. */
export interface Subscription {
  (): void;
  /**
   * Hands the pod's newest status to this consumer once more, although it was delivered: the
   * receiver found it lost downstream (the kubelet's `syncBatch` deleting `apiStatusVersions` of a
   * pod that `needsReconcile`). Other consumers are not affected; a pod not yet delivered is
   * pending anyway.
   */
  redeliver(uid: string): void;
}

/**
 * Thrown by a consumer that cannot take a status yet for an expected reason (the apiserver is in
 * back-off, a mirror pod does not exist yet): retried like any failure, but logged at debug only.
 */
export class DeliveryDeferred extends Error {
  override name = 'DeliveryDeferred';
}

/** The slice of the logger this module needs (pino's `Logger` fits). */
export interface StatusLogger {
  warn(obj: object, msg: string): void;
  debug?(obj: object, msg: string): void;
}

/** The kubelet's `versionedPodStatus`: `version` grows by one on every change of the pod's status. */
interface VersionedStatus {
  readonly version: number;
  readonly status: PodStatus;
  readonly podName: string;
  readonly podNamespace: string;
}

interface Subscriber {
  readonly consumer: StatusConsumer;
  /**
   * UID → the entry last handed over successfully. Compared by identity rather than version, so
   * a pod deleted and re-added (whose version starts again at 1) is still seen as undelivered.
   */
  readonly delivered: Map<string, VersionedStatus>;
  /** The capacity-1 signal (`make(chan struct{}, 1)`): set by any change, cleared by a drain pass. */
  dirty: boolean;
  /** Calls of `consumer` in flight at once, each for a different pod (`subscribe`'s `concurrency`). */
  readonly concurrency: number;
  draining: boolean;
  closed: boolean;
}

/**
 * The status cache every read endpoint serves from, and the feed its consumers (apiserver sync,
 * metrics) read. Keeps the seed's guarantees (start time fixed once set, equal statuses not
 * re-sent) and the modern kubelet's guards (terminal phases are final, a terminated container
 * does not come back unless it will be restarted), without the seed's deadlock: `setPodStatus`
 * never waits on a consumer. Instead of queueing every update, each consumer has a dirty flag and
 * one drain loop that reads the newest status of each pod it is behind on, so a slow or failing
 * consumer costs at most one pending entry per pod.
 */
export class StatusManager {
  #revision = 0;
  readonly #statuses = new Map<string, VersionedStatus>();
  readonly #subscribers = new Set<Subscriber>();
  readonly #log: StatusLogger | undefined;
  readonly #now: () => Date;

  constructor(opts: { log?: StatusLogger; now?: () => Date } = {}) {
    this.#log = opts.log;
    this.#now = opts.now ?? (() => new Date());
  }

  /**
   * Records `status` for `pod` (the kubelet's `SetPodStatus` / `updateStatusInternal`).
   * Synchronous; consumers run later. The previous status is the cached one, or the pod's own
   * `status` after a restart of nodelet. `status` is not modified.
   */
  setPodStatus(pod: Pod, status: PodStatus): void {
    const uid = pod.metadata?.uid;
    const ref = `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;
    if (!uid) {
      this.#log?.warn({ pod: ref }, 'Ignoring status of a pod without UID');
      return;
    }
    const cached = this.#statuses.get(uid);
    const old: PodStatus = cached?.status ?? pod.status ?? {};

    const illegal = illegalContainerTransition(old, status, pod.spec);
    if (illegal !== undefined) {
      this.#log?.warn({ pod: ref, container: illegal }, 'Status update on pod aborted: terminated container attempted illegal transition to non-terminated state');
      return;
    }

    const next = normalizeStatus(status);
    if (isTerminalPhase(old.phase) && next.phase !== old.phase) {
      this.#log?.warn({ pod: ref, from: old.phase, to: next.phase }, 'Pod attempted illegal phase transition; keeping the terminal phase');
      next.phase = old.phase;
    }
    const now = rfc3339(this.#now());
    // The generation acted on (`SetPodStatus` sets it from the pod, `updateStatusInternal` never
    // lets it go back: pkg/kubelet/status/status_manager.go), so a status computed from an older
    // copy of the pod cannot undo a newer one's.
    const generation = Math.max(observedGenerationOf(pod) ?? 0, old.observedGeneration ?? 0, next.observedGeneration ?? 0);
    if (generation > 0) next.observedGeneration = generation;
    // The start time never changes once recorded (the seed's TestChangedStatusKeepsStartTime).
    next.startTime = old.startTime ? rfc3339(old.startTime) : (next.startTime ?? now);
    // A condition's transition time moves only when its status does (`updateLastTransitionTime`).
    for (const c of next.conditions ?? []) {
      const prev = old.conditions?.find((o) => o.type === c.type);
      if (prev?.lastTransitionTime && prev.status === c.status) c.lastTransitionTime = rfc3339(prev.lastTransitionTime);
      else c.lastTransitionTime ??= now;
    }

    if (cached && isStatusEqual(cached.status, next)) {
      this.#log?.debug?.({ pod: ref, version: cached.version }, 'Ignoring same pod status');
      return;
    }
    this.#revision++;
    this.#statuses.set(uid, {
      version: (cached?.version ?? 0) + 1,
      status: deepFreeze(next),
      podName: pod.metadata?.name ?? '',
      podNamespace: pod.metadata?.namespace ?? 'default',
    });
    this.#signal();
  }

  /** Bumped by every stored change or deletion, so readers can cache what they derive from statuses. */
  get revision(): number {
    return this.#revision;
  }

  /** The newest status, frozen: copy it before changing anything. O(1), no I/O. */
  getPodStatus(uid: string): PodStatus | undefined {
    return this.#statuses.get(uid)?.status;
  }

  /** The pod's status version; 0 when none is cached. A re-added pod starts again at 1, as in the kubelet. */
  getVersion(uid: string): number {
    return this.#statuses.get(uid)?.version ?? 0;
  }

  deletePodStatus(uid: string): void {
    if (!this.#statuses.delete(uid)) return;
    this.#revision++;
    for (const sub of this.#subscribers) sub.delivered.delete(uid);
  }

  /** Drops the statuses of pods no longer known (`RemoveOrphanedStatuses`). */
  removeOrphanedStatuses(knownUIDs: ReadonlySet<string>): void {
    for (const uid of [...this.#statuses.keys()]) if (!knownUIDs.has(uid)) this.deletePodStatus(uid);
  }

  /**
   * Feeds `consumer` the newest status of every pod, now and after each change: one call at a
   * time, or up to `concurrency` calls for different pods (never two for one pod, so each pod's
   * statuses still arrive in order, the newest last). A pod whose delivery threw is retried on
   * the next signal (any change, or `resync()`). Returns the unsubscribe function, which can also
   * ask for a redelivery.
   */
  subscribe(consumer: StatusConsumer, opts: { concurrency?: number } = {}): Subscription {
    const sub: Subscriber = { consumer, delivered: new Map(), dirty: false, draining: false, closed: false, concurrency: Math.max(1, Math.floor(opts.concurrency ?? 1)) };
    this.#subscribers.add(sub);
    if (this.#statuses.size > 0) this.#wake(sub);
    const unsubscribe = () => {
      sub.closed = true;
      this.#subscribers.delete(sub);
    };
    return Object.assign(unsubscribe, {
      redeliver: (uid: string) => {
        if (sub.closed || !sub.delivered.delete(uid)) return;
        this.#wake(sub);
      },
    });
  }

  /** Signals every consumer, so failed deliveries are retried (the kubelet's periodic `syncBatch`). */
  resync(): void {
    this.#signal();
  }

  /** (consumer, pod) pairs whose newest status is not delivered yet; at most consumers × pods. */
  pendingUpdates(): number {
    let n = 0;
    for (const sub of this.#subscribers) {
      for (const [uid, entry] of this.#statuses) if (sub.delivered.get(uid) !== entry) n++;
    }
    return n;
  }

  #signal(): void {
    for (const sub of this.#subscribers) this.#wake(sub);
  }

  #wake(sub: Subscriber): void {
    sub.dirty = true;
    if (sub.draining) return;
    sub.draining = true;
    // Never run a consumer inside setPodStatus: start on a later turn of the event loop.
    setImmediate(() => {
      this.#drain(sub).catch((err: unknown) => this.#log?.warn({ err }, 'Status drain loop failed'));
    });
  }

  async #drain(sub: Subscriber): Promise<void> {
    try {
      while (sub.dirty && !sub.closed) {
        sub.dirty = false;
        // One pass: each pod at most once, so never two calls for one pod at a time; the pass
        // ends when its calls have, and a change meanwhile makes another pass.
        const inFlight = new Set<Promise<void>>();
        for (const uid of [...this.#statuses.keys()]) {
          if (sub.closed) break;
          // Read at call time, not when the pass began: a pod updated meanwhile is sent once, newest.
          const entry = this.#statuses.get(uid);
          if (!entry || sub.delivered.get(uid) === entry) continue;
          const call: Promise<void> = this.#deliverOne(sub, uid, entry).finally(() => inFlight.delete(call));
          inFlight.add(call);
          if (inFlight.size >= sub.concurrency) await Promise.race(inFlight);
        }
        await Promise.all(inFlight);
      }
    } finally {
      sub.draining = false;
    }
  }

  /** One call of the consumer; never rejects (a failure is retried on the next signal). */
  async #deliverOne(sub: Subscriber, uid: string, entry: VersionedStatus): Promise<void> {
    try {
      await sub.consumer({ uid, version: entry.version, status: entry.status, podName: entry.podName, podNamespace: entry.podNamespace });
      // A pod deleted during the call must not leave an entry behind.
      if (this.#statuses.has(uid)) sub.delivered.set(uid, entry);
    } catch (err) {
      const fields = { err, pod: `${entry.podNamespace}/${entry.podName}`, uid, version: entry.version };
      if (err instanceof DeliveryDeferred) this.#log?.debug?.(fields, 'Status delivery deferred; retrying on the next update');
      else this.#log?.warn(fields, 'Status consumer failed; retrying on the next update');
    }
  }
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}
