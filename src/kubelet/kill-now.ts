import type { Pod } from '../api/types.js';
import type { Logger } from '../logging/index.js';
import type { RuntimePod } from '../runtime/types.js';
import type { PodKiller } from './kill.js';
import type { PodFailure } from './pod-failure.js';

/**
 * Kills the node decides outside a pod's own sync, each done by the pod's worker and awaited by
 * the caller (the kubelet's `killPodNow`, pkg/kubelet/pod_workers.go): an eviction
 * (`PodEvictions`, the eviction manager's `killPodFunc`) and a delete through the node's API
 * (`PodRestarts`).
 */

/** What both need of the kubelet: its pods, whether it stops, the worker's schedule, the kill, and the relist. */
interface KillNowDeps {
  /** The pod manager's pod `uid`. */
  getPod: (uid: string) => Pod | undefined;
  /** The kubelet stops: nothing new is accepted. */
  stopped: () => boolean;
  schedule: (uid: string) => void;
  killer: Pick<PodKiller, 'killPod'>;
  relist: () => Promise<void>;
}

export interface PodEvictionsOptions extends KillNowDeps {
  /** Calls `done` once, when the pod's containers all stopped (`PodTerminator.onceEnded`). */
  onEnded: (uid: string, done: () => void) => void;
  /** Forgets the pod's probes (`ProberManager.removePod`). */
  removeProbes: (uid: string) => void;
}

/** An eviction as the sync terminates the pod with it. */
export interface Eviction {
  failure: PodFailure;
  graceSeconds: number;
}

/** Pods evicted by the eviction manager (src/eviction/), until they leave their source. */
export class PodEvictions {
  readonly #o: PodEvictionsOptions;
  /** Pods evicted (`evictPod`), by UID, until they leave their source: how they fail and their grace period. */
  readonly #evictions = new Map<string, Eviction>();
  /** Evicted pods whose containers, volumes and cgroup were removed: their status is final. */
  readonly #reclaimed = new Set<string>();

  constructor(opts: PodEvictionsOptions) {
    this.#o = opts;
  }

  /** The pod's eviction, undefined when it was not evicted. */
  get(uid: string): Eviction | undefined {
    return this.#evictions.get(uid);
  }

  has(uid: string): boolean {
    return this.#evictions.has(uid);
  }

  /** Whether the evicted pod's containers, volumes and cgroup were removed (`reclaim`). */
  isReclaimed(uid: string): boolean {
    return this.#reclaimed.has(uid);
  }

  /** Forgets the pod (it left its source and the runtime). */
  forget(uid: string): void {
    this.#evictions.delete(uid);
    this.#reclaimed.delete(uid);
  }

  /**
   * Ends an admitted pod for the eviction manager: its containers are stopped with `graceSeconds`
   * (preStop hooks included, as every kill), it fails with the eviction's reason and message
   * (`DisruptionTarget` for pressure evictions), and once nothing of it runs its containers,
   * sandboxes, volumes and cgroup are removed — what the kubelet's container GC and volume manager
   * do for an evicted pod (`ShouldPodContentBeRemoved`), done at once so the space it held is free
   * for the manager's next observation. Resolves true once the pod stopped (false: not a pod of
   * this node, or already ending).
   */
  evictPod(uid: string, eviction: Omit<PodFailure, 'eventRecorded'>, graceSeconds: number): Promise<boolean> {
    const pod = this.#o.getPod(uid);
    if (!pod || this.#evictions.has(uid) || this.#o.stopped()) return Promise.resolve(false);
    const grace = Math.max(0, graceSeconds);
    this.#evictions.set(uid, { failure: { ...eviction, eventRecorded: true }, graceSeconds: grace });
    return new Promise<boolean>((resolve) => {
      // The kubelet's `killPodNow` waits at most max(10 s, 1.5 × grace) (pkg/kubelet/pod_workers.go):
      // the eviction manager's next pass never waits on a kill that cannot finish.
      const timer = setTimeout(done, Math.max(10_000, grace * 1500));
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        resolve(true);
      }
      this.#o.onEnded(uid, done);
      this.#o.schedule(uid);
    });
  }

  /** Removes what is left of an evicted pod that stopped (called by the termination). */
  async reclaim(pod: Pod, runtimePod: RuntimePod): Promise<void> {
    const uid = runtimePod.uid;
    // Nothing of it runs any more: this removes. A removal that failed was logged; the status is final anyway.
    await this.#o.killer.killPod(runtimePod, pod, { remove: true, tearDown: true }).catch(() => undefined);
    this.#reclaimed.add(uid);
    this.#o.removeProbes(uid);
    await this.#o.relist();
  }
}

export interface PodRestartsOptions extends KillNowDeps {
  /** The runtime's pod `uid` as last listed. */
  runtimePod: (uid: string) => RuntimePod | undefined;
  log: Logger;
  /** Forgets the pod's published status (`StatusManager.deletePodStatus`). */
  deletePodStatus: (uid: string) => void;
  /** Forgets the pod's back-offs, start failures and start clock: the new incarnation starts from scratch. */
  forget: (uid: string) => void;
  /** Syncs the pod in its worker (the new incarnation). */
  sync: (uid: string) => Promise<void>;
}

/** Deleting a pod through the API (`kubectl delete pod` on a static pod). */
export class PodRestarts {
  readonly #o: PodRestartsOptions;
  /** Pending `restartPod` requests by UID, taken by the pod's worker. */
  readonly #restarts = new Map<string, { graceSeconds: number; onKilled: () => void; promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void }>();

  constructor(opts: PodRestartsOptions) {
    this.#o = opts;
  }

  /** Whether a restart of the pod is pending: its worker runs `restartNow` instead of a sync. */
  pending(uid: string): boolean {
    return this.#restarts.has(uid);
  }

  /**
   * Kills the pod's current incarnation and lets the sync loop create it again from its source,
   * which stays the truth — what deleting a static pod's mirror pod amounts to in a cluster. Runs
   * in the pod's worker (never beside a sync of the same pod): running containers are killed as
   * every kill (`Killing`, their preStop hooks, SIGTERM, SIGKILL once `graceSeconds` ran out), the
   * sandbox stops, every container of the pod is removed, its
   * volumes are torn down and its cached status and back-off are forgotten, so the new incarnation
   * starts from scratch (restart counts 0, a new start time). `onKilled` is called synchronously
   * once the old incarnation is gone, before the sync that creates the new one. A second request
   * while one is pending joins it.
   */
  restartPod(uid: string, graceSeconds: number, onKilled: () => void): Promise<void> {
    const pending = this.#restarts.get(uid);
    if (pending) return pending.promise;
    if (this.#o.stopped()) return Promise.reject(new Error('nodelet is stopping'));
    let resolve!: () => void;
    let reject!: (err: unknown) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.#restarts.set(uid, { graceSeconds: Math.max(0, graceSeconds), onKilled, promise, resolve, reject });
    this.#o.schedule(uid);
    return promise;
  }

  /** The pending restart of `uid`, run by its worker (in place of a sync). */
  async restartNow(uid: string): Promise<void> {
    const req = this.#restarts.get(uid);
    if (!req) return;
    try {
      const pod = this.#o.getPod(uid);
      const runtimePod = this.#o.runtimePod(uid);
      if (runtimePod) {
        this.#o.log.info({ pod: `${runtimePod.namespace}/${runtimePod.name}`, podUID: uid, gracePeriod: req.graceSeconds }, 'Deleting pod on request; it is recreated from its source');
        // As every kill of the kubelet: preStop hooks first, then the request's grace period.
        await this.#o.killer.killPod(runtimePod, pod, { grace: req.graceSeconds, remove: true, tearDown: true });
      }
      await this.#o.relist();
      this.#o.deletePodStatus(uid);
      this.#o.forget(uid);
      this.#restarts.delete(uid);
      req.onKilled();
      req.resolve();
    } catch (err) {
      this.#restarts.delete(uid);
      req.reject(err);
      throw err;
    }
    // The pod is still in its source: create the new incarnation now.
    if (!this.#o.stopped()) await this.#o.sync(uid);
  }
}
