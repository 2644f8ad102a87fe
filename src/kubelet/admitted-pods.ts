import type { Pod } from '../api/types.js';
import type { EventSubject, EventType } from '../events/recorder.js';
import type { Logger } from '../logging/index.js';
import type { PodManager } from '../pod/manager.js';
import type { StatusManager } from '../status/manager.js';
import { admissionRefusal, type AdmissionRefusal } from './admission.js';
import type { AdmissionNode } from './node-admission.js';
import type { AllocationManager } from './allocation.js';
import { nodeShutdownRefusal } from './pod-failure.js';

const podRef = (pod: { metadata?: { namespace?: string; name?: string } }) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;

export interface AdmittedPodsOptions {
  podManager: Pick<PodManager, 'getPodByUID' | 'getPods'>;
  statusManager: Pick<StatusManager, 'getPodStatus'>;
  /** The pods' allocated resources, which a new pod is fitted beside. */
  allocation: Pick<AllocationManager, 'allocatedPod'>;
  log: Logger;
  /** The event recorder's `record`. */
  record: (subject: EventSubject, type: EventType, reason: string, message: string) => void;
  /** Reports the refused pod `Failed` (`Kubelet.rejectPod`). */
  reject: (pod: Pod, refusal: AdmissionRefusal) => void;
  /** A graceful node shutdown is in progress: every new pod is refused (`NodeShutdown`). */
  shuttingDown: () => boolean;
  /** Whether the pod was evicted (src/kubelet/kill-now.ts): not active any more. */
  evicted: (uid: string) => boolean;
}

/**
 * Admission's bookkeeping (the kubelet's `canAdmitPod`, `rejectPod` and `GetActivePods`,
 * pkg/kubelet/kubelet.go and kubelet_pods.go): the handlers that run before the kubelet's own,
 * the node's allocatable, the pods refused and the pods admitted — forgotten together when a pod
 * leaves its source and the runtime.
 */
export class AdmittedPods {
  readonly #o: AdmittedPodsOptions;
  /** Admission handlers that run before the kubelet's own (`addPodAdmitHandler`). */
  readonly #admitHandlers: ((pod: Pod) => AdmissionRefusal | undefined)[] = [];
  /**
   * The node's `status.allocatable` as last built (the kubelet's `getNodeAnyWay`), which admission
   * fits each new pod into; undefined until the node is first built (`nodeBuilt`), and meanwhile
   * resources are not checked.
   */
  allocatable: Readonly<Record<string, string>> | undefined;
  /** The Node as last built (the labels and taints nodelet registers): the fallback of `node`. */
  builtNode: AdmissionNode | undefined;
  /** The node's Node as the apiserver's watch last saw it (cluster mode), undefined without one. */
  apiNode: AdmissionNode | undefined;
  /** Pods refused at admission, by UID (see `refuse`). */
  readonly #refused = new Set<string>();
  /** Pods admitted (or adopted running), by UID: what a later pod's host ports are checked against. */
  readonly #admitted = new Set<string>();

  constructor(opts: AdmittedPodsOptions) {
    this.#o = opts;
  }

  addPodAdmitHandler(handler: (pod: Pod) => AdmissionRefusal | undefined): void {
    this.#admitHandlers.push(handler);
  }

  /**
   * The Node a new pod's node affinity, `nodeName` and NoExecute taints are checked against: the
   * kubelet's `getNodeAnyWay` (pkg/kubelet/kubelet_getters.go) — the informer's copy, else the
   * node it would register.
   */
  get node(): AdmissionNode | undefined {
    return this.apiNode ?? this.builtNode;
  }

  isRefused(uid: string): boolean {
    return this.#refused.has(uid);
  }

  /** The pod runs (admitted, or adopted running). */
  admit(uid: string): void {
    this.#admitted.add(uid);
  }

  /** Forgets the pod (it left its source and the runtime). */
  forget(uid: string): void {
    this.#refused.delete(uid);
    this.#admitted.delete(uid);
  }

  /**
   * Admission (the kubelet's `canAdmitPod` then `rejectPod`), for a pod that has nothing running
   * yet: a refused pod gets a `Warning` event with the handler's reason and the `Failed` status
   * "Pod was rejected: …", once; it never gets a sandbox. True when `pod` is refused.
   */
  refuse(pod: Pod): boolean {
    const uid = pod.metadata?.uid ?? '';
    if (this.#refused.has(uid)) return true;
    const others = this.activeAdmitted(uid).map((p) => this.#o.allocation.allocatedPod(p));
    const refusal = this.#o.shuttingDown() ? nodeShutdownRefusal : (this.#admitHandlers.reduce<AdmissionRefusal | undefined>((refusal, admit) => refusal ?? admit(pod), undefined) ?? admissionRefusal(pod, others, this.allocatable, this.node));
    if (!refusal) return false;
    this.#refused.add(uid);
    this.#o.log.warn({ pod: podRef(pod), podUID: uid, reason: refusal.reason }, refusal.message);
    this.#o.record(pod, 'Warning', refusal.reason, refusal.message);
    this.#o.reject(pod, refusal);
    return true;
  }

  /**
   * The admitted pods other than `uid` that still hold the node's resources: not in a terminal
   * phase (a pod still terminating counts, as in the kubelet's `filterOutInactivePods`).
   */
  activeAdmitted(uid: string): Pod[] {
    const out: Pod[] = [];
    for (const id of this.#admitted) {
      if (id === uid) continue;
      const p = this.#o.podManager.getPodByUID(id);
      const phase = this.#o.statusManager.getPodStatus(id)?.phase;
      if (p && phase !== 'Succeeded' && phase !== 'Failed') out.push(p);
    }
    return out;
  }

  /**
   * The pods the eviction manager may rank and evict (the kubelet's `GetActivePods`): admitted,
   * not in a terminal phase, not being deleted, not already evicted.
   */
  activePods(): Pod[] {
    return this.#o.podManager.getPods().filter((pod) => {
      const uid = pod.metadata?.uid ?? '';
      const phase = this.#o.statusManager.getPodStatus(uid)?.phase;
      return this.#admitted.has(uid) && !this.#o.evicted(uid) && !pod.metadata?.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed';
    });
  }
}
