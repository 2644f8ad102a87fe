import type { Pod, PodStatus } from 'kubernetes-types/core/v1.js';
import { isStaticPod } from '../api/annotations.js';
import type { Logger } from '../logging/index.js';
import type { PodManager } from '../pod/manager.js';
import { KUBELET_POD_CONDITIONS, RESIZE_POD_CONDITIONS } from '../status/conditions.js';
import { DeliveryDeferred, type StatusManager, type StatusUpdate, type Subscription } from '../status/manager.js';
import { jsonEqual, normalizeStatus, withoutEmpty } from '../status/normalize.js';
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
  /**
   * The apiserver's copy of a pod by UID, mirror pods too, as the pod watch last saw it (the
   * kubelet's informer cache), with its own resourceVersion.
   */
  apiserverPod: (uid: string) => Pod | undefined;
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
 * Every resync it also reconciles with the apiserver's copy of each pod, as the kubelet's periodic
 * `syncBatch` does (`needsReconcile`, pkg/kubelet/status/status_manager.go): a status already
 * delivered is sent again when the copy the pod watch last saw says otherwise in what nodelet
 * writes — the node lifecycle controller set `Ready: False` while the node was unreachable
 * (`MarkPodsNotReady`, pkg/controller/util/node/controller_utils.go), someone patched it. Only
 * a version of the pod nodelet neither wrote nor already answered counts (its resourceVersion is
 * not the one a send of ours produced or patched over), so a watch that lags behind our own patch
 * sends nothing, and each foreign version is answered at most once. The resend goes through the
 * status manager like any delivery: the newest status, once.
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
  #subscription: Subscription | undefined;
  /** UID → status version the apiserver has; pruned to the pods the status manager still holds. */
  readonly #sent = new Map<string, number>();
  /**
   * UID → resourceVersions of the apiserver's pod our last send answered: the copy it patched over
   * and the one it produced. A copy at one of them is no reason to send again.
   */
  readonly #answered = new Map<string, readonly (string | undefined)[]>();
  /** UID → the apiserver's pod our last send produced (its answer). */
  readonly #answer = new Map<string, Pod>();
  /** UIDs whose DELETE is in flight or done. */
  readonly #deleting = new Set<string>();
  /** Apiserver pods nodelet refused to run (UID → pod): their `Failed` status is sent like any other. */
  readonly #rejected = new Map<string, Pod>();
  /** Statuses sent (tests and metrics read it). */
  sent = 0;
  /** Statuses sent again because the apiserver's copy differed (tests read it). */
  reconciled = 0;
  /** Periodic resync passes done (tests read it). */
  resyncs = 0;

  constructor(opts: StatusSyncOptions) {
    this.#o = opts;
  }

  start(): void {
    // Up to STATUS_PATCHES_IN_FLIGHT pods' PATCHes at once: a burst of pod starts turns Running
    // together, and one PATCH at a time (a round trip of the apiserver's, 3–20 ms under load)
    // held the last of 30 pods' status back by the others'.
    this.#subscription = this.#o.statusManager.subscribe((update) => this.#deliver(update), { concurrency: STATUS_PATCHES_IN_FLIGHT });
    const resync = () => {
      this.#resyncTimer = setTimeout(() => {
        this.#prune();
        this.reconcile();
        this.resyncs++;
        this.#o.statusManager.resync();
        for (const pod of this.#o.podManager.getPods()) if (pod.metadata?.deletionTimestamp) void this.maybeDelete(pod.metadata.uid ?? '');
        resync();
      }, this.#o.resyncMs ?? 10_000);
      this.#resyncTimer.unref();
    };
    resync();
  }

  stop(): void {
    this.#subscription?.();
    clearTimeout(this.#resyncTimer);
    clearTimeout(this.#retryTimer);
  }

  /**
   * `syncBatch`'s `needsReconcile` pass: every pod whose delivered status the apiserver's copy
   * contradicts is handed to the delivery again (run by each resync; synchronous, no I/O).
   */
  reconcile(): void {
    const { statusManager } = this.#o;
    for (const [uid, version] of this.#sent) {
      const status = statusManager.getPodStatus(uid);
      if (!status || statusManager.getVersion(uid) !== version || this.#deleting.has(uid)) continue;
      const held = this.#apiserverCopy(uid);
      if (!held || this.#answered.get(uid)?.includes(held.metadata?.resourceVersion)) continue;
      if (!podStatusNeedsReconcile(held.status, status)) continue;
      this.#o.log.info({ pod: `${held.metadata?.namespace}/${held.metadata?.name}`, podUID: uid, resourceVersion: held.metadata?.resourceVersion }, "Pod status is inconsistent with the apiserver's; sending it again");
      this.#sent.delete(uid);
      this.reconciled++;
      this.#subscription?.redeliver(uid);
    }
  }

  /** The apiserver's pod a status of `uid` is written to (a static pod's mirror pod), as the watch last saw it. */
  #apiserverCopy(uid: string): Pod | undefined {
    const pod = this.#o.podManager.getPodByUID(uid) ?? this.#rejected.get(uid);
    if (!pod) return undefined;
    const target = isStaticPod(pod) ? this.#o.podManager.getMirrorPodByPod(pod) : pod;
    const targetUID = target?.metadata?.uid;
    if (!targetUID) return undefined;
    return this.#o.apiserverPod(targetUID);
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
   * An apiserver pod nodelet will not run, reported `Failed` by the kubelet (`Kubelet.rejectPod`,
   * the one producer of that status): kept so its status is delivered although the pod manager
   * may not hold it; forgotten again by `forgetRejected` once the apiserver drops the pod.
   */
  trackRejected(pod: Pod): void {
    const uid = pod.metadata?.uid;
    // A static pod's status goes to its mirror pod, as every static pod's: the apiserver never lists it.
    if (!uid || isStaticPod(pod) || isTerminalPhase(pod.status?.phase)) return;
    this.#rejected.set(uid, pod);
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
    // A watch that has not yet delivered our last patch's result holds an older copy: the patch is
    // computed against that result instead, or a resize condition sent a moment ago and gone
    // since would never be deleted (the kubelet diffs against its own last sent status).
    const watched = this.#o.apiserverPod(meta.uid ?? '') ?? target;
    const answer = this.#answer.get(update.uid);
    const before = answer && this.#answered.get(update.uid)?.[0] === watched.metadata?.resourceVersion ? answer : watched;
    let after: Pod | undefined;
    try {
      after = await this.#o.client.request<Pod>('PATCH', `${podPath(meta.namespace ?? 'default', meta.name ?? '')}/status`, {
        body: statusPatch(meta.uid ?? '', before.status, update.status),
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
    this.#answered.set(update.uid, [before.metadata?.resourceVersion, after?.metadata?.resourceVersion]);
    if (after?.metadata?.resourceVersion) this.#answer.set(update.uid, after);
    else this.#answer.delete(update.uid);
    if (pod.metadata?.deletionTimestamp) await this.maybeDelete(update.uid);
  }

  #backOff(err: unknown): void {
    // Another PATCH in flight failed first and set the back-off: this outage is the same one.
    if (Date.now() < this.#blockedUntil) return;
    const wait = err instanceof ApiError && err.retryAfterSeconds ? err.retryAfterSeconds * 1000 : this.#retry.next();
    this.#blockedUntil = Date.now() + wait;
    clearTimeout(this.#retryTimer);
    this.#retryTimer = setTimeout(() => this.#o.statusManager.resync(), wait + 10);
    this.#retryTimer.unref();
  }

  #prune(): void {
    for (const uid of this.#sent.keys()) if (this.#o.statusManager.getVersion(uid) === 0) this.#sent.delete(uid);
    for (const uid of this.#answered.keys()) if (this.#o.statusManager.getVersion(uid) === 0) this.#answered.delete(uid);
    for (const uid of this.#answer.keys()) if (!this.#answered.has(uid)) this.#answer.delete(uid);
    for (const uid of this.#deleting) if (!this.#o.podManager.getPodByUID(uid)) this.#deleting.delete(uid);
  }
}

/**
 * Status PATCHes in flight at once, each for a different pod (`StatusManager.subscribe`). The
 * kubelet's status manager sends one at a time (pkg/kubelet/status/status_manager.go `syncBatch`),
 * held to its client's 50 QPS; nodelet's client has no rate limit, so a few at once are enough.
 */
export const STATUS_PATCHES_IN_FLIGHT = 4;

const podPath = (namespace: string, name: string) => `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`;

/**
 * The strategic-merge patch the kubelet sends (`PatchPodStatus`): the UID as a precondition and
 * the new status with only kubelet-owned conditions, plus `DisruptionTarget` when the pod turns
 * terminal (conditions merge by `type`, so others' conditions are left alone). Top-level fields the apiserver holds but the new status lacks are
 * set to null, so a cleared field (a `message`, a `nominatedNodeName` is not ours) really clears.
 */
export function statusPatch(uid: string, current: PodStatus | undefined, next: PodStatus): { metadata: { uid: string }; status: Record<string, unknown> } {
  const status: Record<string, unknown> = { ...next };
  // `DisruptionTarget` is shared by the kubelet (`PodConditionsSharedByKubelet`): sent with the
  // patch that makes the pod terminal, as `mergePodStatus` does, never before or after.
  const toTerminal = !isTerminalPhase(current?.phase) && isTerminalPhase(next.phase);
  // Conditions merge by type, field by field: a reason or message the new condition no longer
  // has must be cleared explicitly, or `Ready: True` would keep `reason: ContainersNotReady`.
  status.conditions = (next.conditions ?? [])
    .filter((c) => KUBELET_POD_CONDITIONS.has(c.type) || (toTerminal && c.type === 'DisruptionTarget'))
    .map((c) => {
      const old = current?.conditions?.find((o) => o.type === c.type);
      return { ...c, ...(old?.reason && !c.reason ? { reason: null } : {}), ...(old?.message && !c.message ? { message: null } : {}) };
    });
  // A resize condition gone from ours is deleted (the kubelet's two-way patch does the same).
  for (const c of current?.conditions ?? []) {
    if (RESIZE_POD_CONDITIONS.has(c.type) && !next.conditions?.some((n) => n.type === c.type)) (status.conditions as unknown[]).push({ type: c.type, $patch: 'delete' });
  }
  // Containers' `allocatedResources` are sent, as the kubelet's `convertToAPIContainerStatuses`
  // does since 1.35 (kubelet_pods.go); an apiserver before that drops them (1.34:
  // InPlacePodVerticalScalingAllocatedStatus, off), as it drops the pod-level `resources` and
  // `allocatedResources` without InPlacePodLevelResourcesVerticalScaling.
  for (const key of OWNED_FIELDS) if (current && key in current && !(key in next)) status[key] = null;
  return { metadata: { uid }, status };
}

/** Top-level status fields nodelet owns: cleared on the apiserver when its status lacks them. */
const OWNED_FIELDS = ['message', 'reason', 'podIP', 'podIPs', 'hostIP', 'hostIPs', 'initContainerStatuses', 'ephemeralContainerStatuses', 'startTime', 'qosClass'] as const;

/**
 * Whether the apiserver's status `held` contradicts nodelet's `ours` in what `statusPatch` writes
 * (the kubelet's `needsReconcile`: `normalizeStatus` both, then `isPodStatusByKubeletEqual`, in
 * pkg/kubelet/status/status_manager.go). Each kubelet condition of ours must be there with the
 * same status, reason and message; each other field ours has, or nodelet owns, must be equal,
 * empty values counting as absent (Go's omitempty). What the patch leaves alone — others'
 * conditions, fields nodelet never writes (`nominatedNodeName`, `resize`) — is not compared,
 * since sending again would not change it.
 */
export function podStatusNeedsReconcile(held: PodStatus | undefined, ours: PodStatus): boolean {
  const h = normalizeStatus(held ?? {}) as Record<string, unknown> & PodStatus;
  const o = normalizeStatus(ours) as Record<string, unknown> & PodStatus;
  for (const c of o.conditions ?? []) {
    if (!KUBELET_POD_CONDITIONS.has(c.type)) continue;
    const hc = h.conditions?.find((x) => x.type === c.type);
    if (!hc || hc.status !== c.status || (hc.reason ?? '') !== (c.reason ?? '') || (hc.message ?? '') !== (c.message ?? '')) return true;
  }
  if (h.conditions?.some((c) => RESIZE_POD_CONDITIONS.has(c.type) && !o.conditions?.some((x) => x.type === c.type))) return true;
  for (const key of new Set<string>([...Object.keys(o), ...OWNED_FIELDS])) {
    // What an older apiserver drops (see `statusPatch`) is no difference: sending it again would not change it.
    if (DROPPABLE_FIELDS.has(key) && h[key] === undefined) continue;
    const list = key === 'containerStatuses' || key === 'initContainerStatuses';
    const [held, ours] = list ? withoutAllocated(h[key], o[key]) : [h[key], o[key]];
    if (key !== 'conditions' && !jsonEqual(withoutEmpty(held), withoutEmpty(ours))) return true;
  }
  return false;
}

/** Top-level status fields an apiserver without their feature gate drops. */
const DROPPABLE_FIELDS = new Set(['resources', 'allocatedResources']);

/**
 * Held and our container statuses, without `allocatedResources` where the held ones have none
 * (an apiserver before 1.35 drops them).
 */
function withoutAllocated(held: unknown, ours: unknown): [unknown, unknown] {
  const strip = (list: unknown) => (Array.isArray(list) ? list.map((s: Record<string, unknown>) => {
    const { allocatedResources: _a, ...rest } = s;
    return rest;
  }) : list);
  const heldHas = Array.isArray(held) && held.some((s: Record<string, unknown>) => s.allocatedResources !== undefined);
  return heldHas ? [held, ours] : [strip(held), strip(ours)];
}
