import type { Pod, PodStatus } from 'kubernetes-types/core/v1.js';
import { isStaticPod } from '../api/annotations.js';
import type { Logger } from '../logging/index.js';
import type { PodManager } from '../pod/manager.js';
import { KUBELET_POD_CONDITIONS } from '../status/conditions.js';
import { DeliveryDeferred, type StatusManager, type StatusUpdate } from '../status/manager.js';
import { isTerminalPhase } from '../status/transitions.js';
import { ApiError, isConflict, isNotFound, type KubeClient } from '../apiserver/client.js';
import { RetryDelay } from './retry.js';

export interface StatusSyncOptions {
  client: KubeClient;
  statusManager: StatusManager;
  podManager: PodManager;
  /** True while the runtime may still run a container of the pod (`CouldHaveRunningContainers`). */
  hasRunningContainers: (uid: string) => boolean;
  log: Logger;
  /** Every pending status is retried at least this often (the kubelet's `syncBatch` period, 10 s). */
  resyncMs?: number;
}

const SMP = 'application/strategic-merge-patch+json' as const;

/**
 * Sends pod statuses to the apiserver: the seed's `syncBatch`/`syncPod`, with the modern rules.
 *
 * It is a consumer of the status manager, which hands it the newest status of each pod and
 * retries a pod whose delivery threw on the next signal — so memory stays one entry per pod
 * however long the apiserver is away, and afterwards exactly the newest status arrives. Each
 * status goes out as a strategic-merge PATCH of `pods/status` carrying the pod's UID as a
 * precondition and only the kubelet's own conditions; a static pod's status is written to its
 * mirror pod. After a transport failure or a 5xx/429 every call fails fast until a back-off
 * deadline, so an absent apiserver costs one timeout per back-off step, not one per pod.
 *
 * It also finishes graceful deletion (`canBeDeleted` → Delete): once a pod being deleted has no
 * running container and its terminal status has reached the apiserver, the pod object is deleted
 * with grace period 0 and a UID precondition.
 */
export class StatusSync {
  readonly #o: StatusSyncOptions;
  readonly #retry = new RetryDelay({ initialMs: 500, maxMs: 30_000 });
  #blockedUntil = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  #resyncTimer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  /** UID → status version the apiserver has; pruned to the pods the status manager still holds. */
  readonly #sent = new Map<string, number>();
  /** UIDs whose DELETE is in flight or done. */
  readonly #deleting = new Set<string>();
  /** Apiserver pods nodelet refused to run (UID → pod): their `Failed` status is sent like any other. */
  readonly #rejected = new Map<string, Pod>();
  /** Statuses sent (tests and metrics read it). */
  sent = 0;

  constructor(opts: StatusSyncOptions) {
    this.#o = opts;
  }

  start(): void {
    this.#unsubscribe = this.#o.statusManager.subscribe((update) => this.#deliver(update));
    const resync = () => {
      this.#resyncTimer = setTimeout(() => {
        this.#prune();
        this.#o.statusManager.resync();
        for (const pod of this.#o.podManager.getPods()) if (pod.metadata?.deletionTimestamp) void this.maybeDelete(pod.metadata.uid ?? '');
        resync();
      }, this.#o.resyncMs ?? 10_000);
      this.#resyncTimer.unref();
    };
    resync();
  }

  stop(): void {
    this.#unsubscribe?.();
    clearTimeout(this.#resyncTimer);
    clearTimeout(this.#retryTimer);
  }

  /**
   * Deletes the pod object when its deletion can complete: it is being deleted, no container
   * runs, and the apiserver holds its terminal status. Called after each delivery and by the
   * kubelet when a terminating pod's containers have stopped. Static pods are never deleted here.
   */
  async maybeDelete(uid: string): Promise<void> {
    const pod = this.#o.podManager.getPodByUID(uid);
    if (!pod?.metadata?.deletionTimestamp || isStaticPod(pod) || this.#deleting.has(uid)) return;
    const status = this.#o.statusManager.getPodStatus(uid);
    if (!isTerminalPhase(status?.phase) || this.#o.hasRunningContainers(uid)) return;
    if (this.#sent.get(uid) !== this.#o.statusManager.getVersion(uid)) return;
    this.#deleting.add(uid);
    const { namespace = 'default', name = '' } = pod.metadata;
    try {
      await this.#o.client.request('DELETE', podPath(namespace, name), {
        body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, preconditions: { uid } },
      });
      this.#o.log.info({ pod: `${namespace}/${name}`, podUID: uid }, 'Pod fully terminated and removed from the API server');
    } catch (err) {
      if (isNotFound(err) || isConflict(err)) return;
      this.#deleting.delete(uid);
      this.#o.log.warn({ err, pod: `${namespace}/${name}` }, 'Failed to delete terminated pod; retrying');
    }
  }

  /**
   * Reports an apiserver pod nodelet will not run as `Failed` with `reason` and `message` (the
   * kubelet's `rejectPod`). Forgotten again by `forgetRejected` once the apiserver drops the pod.
   */
  rejectPod(pod: Pod, reason: string, message: string): void {
    const uid = pod.metadata?.uid;
    if (!uid || isTerminalPhase(pod.status?.phase)) return;
    this.#rejected.set(uid, pod);
    this.#o.statusManager.setPodStatus(pod, { ...pod.status, phase: 'Failed', reason, message: `Pod was rejected: ${message}` });
  }

  /** Drops rejected pods the apiserver no longer lists. */
  forgetRejected(listed: ReadonlySet<string>): void {
    for (const uid of this.#rejected.keys()) {
      if (listed.has(uid)) continue;
      this.#rejected.delete(uid);
      this.#o.statusManager.deletePodStatus(uid);
    }
  }

  async #deliver(update: StatusUpdate): Promise<void> {
    const pod = this.#o.podManager.getPodByUID(update.uid) ?? this.#rejected.get(update.uid);
    // Gone from every source: the status manager drops it too, nothing to send.
    if (!pod) return;
    let target: Pod = pod;
    if (isStaticPod(pod)) {
      const mirror = this.#o.podManager.getMirrorPodByPod(pod);
      // The mirror pod controller creates it and resyncs; until then there is nowhere to write.
      if (!mirror) throw new DeliveryDeferred('mirror pod not created yet');
      target = mirror;
    }
    const meta = target.metadata ?? {};
    if (Date.now() < this.#blockedUntil) throw new DeliveryDeferred('apiserver unavailable; waiting for the back-off to end');
    try {
      await this.#o.client.request('PATCH', `${podPath(meta.namespace ?? 'default', meta.name ?? '')}/status`, {
        body: statusPatch(meta.uid ?? '', target.status, update.status),
        contentType: SMP,
      });
    } catch (err) {
      // The pod is gone, or the name now belongs to another pod: nothing of ours to update.
      if (isNotFound(err) || isConflict(err)) return;
      if (!(err instanceof ApiError) || err.code >= 500 || err.code === 429) {
        const first = !this.#retry.failing;
        this.#backOff(err);
        // One warning per outage, not one per pod and retry.
        if (!first) throw new DeliveryDeferred(err instanceof Error ? err.message : String(err));
      }
      throw err;
    }
    this.#retry.reset();
    this.#blockedUntil = 0;
    this.sent++;
    this.#sent.set(update.uid, update.version);
    if (pod.metadata?.deletionTimestamp) await this.maybeDelete(update.uid);
  }

  #backOff(err: unknown): void {
    const wait = err instanceof ApiError && err.retryAfterSeconds ? err.retryAfterSeconds * 1000 : this.#retry.next();
    this.#blockedUntil = Date.now() + wait;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => this.#o.statusManager.resync(), wait + 10);
    this.#retryTimer.unref();
  }

  #prune(): void {
    for (const uid of this.#sent.keys()) if (this.#o.statusManager.getVersion(uid) === 0) this.#sent.delete(uid);
    for (const uid of this.#deleting) if (!this.#o.podManager.getPodByUID(uid)) this.#deleting.delete(uid);
  }
}

const podPath = (namespace: string, name: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;

/**
 * The strategic-merge patch the kubelet sends (`PatchPodStatus`): the UID as a precondition and
 * the new status with only kubelet-owned conditions (conditions merge by `type`, so others'
 * conditions are left alone). Top-level fields the apiserver holds but the new status lacks are
 * set to null, so a cleared field (a `message`, a `nominatedNodeName` is not ours) really clears.
 */
export function statusPatch(uid: string, current: PodStatus | undefined, next: PodStatus): { metadata: { uid: string }; status: Record<string, unknown> } {
  const status: Record<string, unknown> = { ...next };
  // Conditions merge by type, field by field: a reason or message the new condition no longer
  // has must be cleared explicitly, or `Ready: True` would keep `reason: ContainersNotReady`.
  status.conditions = (next.conditions ?? [])
    .filter((c) => KUBELET_POD_CONDITIONS.has(c.type))
    .map((c) => {
      const old = current?.conditions?.find((o) => o.type === c.type);
      return { ...c, ...(old?.reason && !c.reason ? { reason: null } : {}), ...(old?.message && !c.message ? { message: null } : {}) };
    });
  const owned = ['message', 'reason', 'podIP', 'podIPs', 'hostIP', 'hostIPs', 'initContainerStatuses', 'ephemeralContainerStatuses', 'startTime', 'qosClass'];
  for (const key of owned) if (current && key in current && !(key in next)) status[key] = null;
  return { metadata: { uid }, status };
}
