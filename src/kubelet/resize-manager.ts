import type { Container, Pod, PodStatus } from '../api/types.js';
import { isStaticPod } from '../api/annotations.js';
import { rfc3339 } from '../api/time.js';
import type { CgroupResources } from '../cgroups/pod-resources.js';
import { observedGenerationOf } from '../status/generation.js';
import { containerHashMatches, hashContainer, legacyHashContainer } from '../runtime/hash.js';
import type { Runtime, RuntimeContainer, RuntimePod } from '../runtime/types.js';
import { UpdateUnsupportedError } from '../runtime/update-unsupported.js';
import { resizableContainers, type AllocationManager } from './allocation.js';
import { resizeDecision } from './resize-decision.js';
import { podRequests } from './resource-fit.js';
import { containerResizeAction, desiredAmounts, planPodResize, podLevelResizeInProgress } from './resize.js';
import { applyPodResize } from './resize-apply.js';
import { podResizeMessage, resizeCondition, withPodLevelStatus, withResizeConditions, withResizeStatus, type ResizeConditions } from './resize-status.js';

/** The slice of the event recorder and logger the resize manager uses. */
export interface ResizeManagerOptions {
  readonly allocation: AllocationManager;
  readonly runtime: Pick<Runtime, 'updateContainerResources' | 'containerStats'>;
  /** Writes fields of a resized pod's cgroup (src/cgroups/node-cgroups.ts); absent: pods have no cgroups of their own. */
  readonly podCgroups?: { resizePod(pod: Pod, fields: readonly (keyof CgroupResources)[]): Promise<void> } | undefined;
  readonly record: (pod: Pod, type: 'Normal' | 'Warning', reason: string, message: string) => void;
  readonly log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  readonly now?: () => Date;
}

// pkg/kubelet/events/event.go
const RESIZE_STARTED = 'ResizeStarted';
const RESIZE_COMPLETED = 'ResizeCompleted';
const RESIZE_ERROR = 'ResizeError';
const RESIZE_DEFERRED = 'ResizeDeferred';
const RESIZE_INFEASIBLE = 'ResizeInfeasible';

/** How long a failed in-place resize waits before it is tried again (the pod worker's back-off after a failed sync). */
export const RESIZE_RETRY_MS = 10_000;

/**
 * In-place pod resize on the kubelet side: the allocation manager's admission of a resize
 * (`handlePodResourcesResize`), the resize conditions the status manager keeps
 * (`PodResizePending`, `PodResizeInProgress`), the resize events, and applying a resize to the
 * running containers and the pod cgroup (`doPodResizeAction`). One instance per node; every call
 * for a pod comes from that pod's worker.
 */
export class ResizeManager {
  readonly #o: ResizeManagerOptions;
  readonly #conditions = new Map<string, ResizeConditions>();
  /** The engine turned out to have no container update (`UpdateUnsupportedError`): why. */
  #unsupported: string | undefined;
  /** Pods whose last resize attempt failed: when the next may be made. */
  readonly #retryAt = new Map<string, number>();

  constructor(opts: ResizeManagerOptions) {
    this.#o = opts;
  }

  get allocation(): AllocationManager {
    return this.#o.allocation;
  }

  #now(): string {
    return rfc3339(this.#o.now?.() ?? new Date());
  }

  /**
   * The pod as the node runs it, called at each sync of an admitted pod: a pod seen for the first
   * time gets its spec's resources allocated (the allocation manager's `AddPod`); a pod whose spec
   * asks for other resources than allocated has its resize decided (`resizeDecision`) — admitted
   * (allocation updated, `PodResizeInProgress` set anew, `ResizeStarted`), or left pending with
   * `PodResizePending` (`Deferred` or `Infeasible`, a Warning event when it changes) while the
   * pod keeps its allocation. `others` are the other admitted pods holding resources.
   */
  allocate(pod: Pod, others: readonly Pod[], allocatable: Readonly<Record<string, string>> | undefined): Pod {
    const uid = pod.metadata?.uid ?? '';
    const allocation = this.#o.allocation;
    if (!allocation.isAllocated(uid)) {
      allocation.setAllocated(pod);
      return pod;
    }
    allocation.adoptPodLevel(pod);
    allocation.adoptContainers(pod);
    const allocated = allocation.allocatedPod(pod);
    const decision = resizeDecision({
      desired: pod,
      allocated,
      others: others.map((p) => allocation.allocatedPod(p)),
      allocatable,
      runtimeRefusal: this.#runtimeRefusal(),
    });
    const generation = observedGenerationOf(pod);
    const current = this.#conditions.get(uid);
    if (decision.kind === 'unchanged') {
      if (current?.pending) this.#set(uid, { ...current, pending: undefined });
      return allocated;
    }
    if (decision.kind === 'admit') {
      this.#keepActuatedMemoryRequests(uid, allocated, pod);
      allocation.setAllocated(pod);
      // A new allocation is applied at once, not after the back-off of an earlier one that failed.
      this.#retryAt.delete(uid);
      this.#set(uid, { inProgress: resizeCondition('PodResizeInProgress', undefined, '', '', generation, this.#now()) });
      this.#o.log.info({ pod: podRef(pod) }, 'Pod resize admitted');
      this.#o.record(pod, 'Normal', RESIZE_STARTED, podResizeMessage(pod, 'Pod resize started', generation ?? 0));
      return pod;
    }
    const pending = resizeCondition('PodResizePending', current?.pending, decision.reason, decision.message, generation, this.#now());
    const changed = current?.pending?.reason !== decision.reason || current.pending.message !== decision.message || current.pending.observedGeneration !== pending.observedGeneration;
    this.#set(uid, { ...current, pending });
    if (changed) {
      this.#o.log.info({ pod: podRef(pod), reason: decision.reason, message: decision.message }, 'Pod resize pending');
      this.#o.record(pod, 'Warning', decision.reason === 'Infeasible' ? RESIZE_INFEASIBLE : RESIZE_DEFERRED, podResizeMessage(pod, `Pod resize ${decision.reason}`, generation ?? 0, decision.message));
    }
    return allocated;
  }

  /**
   * Before a resize from `allocated` to `desired` is admitted: each container whose memory
   * request changes keeps, as its actuated one, the request it runs with now — the one thing
   * about it the runtime cannot report — so the change is seen and applied (the kubelet reads it
   * from its actuated-state checkpoint). A request resized back to what runs is no change.
   */
  #keepActuatedMemoryRequests(uid: string, allocated: Pod, desired: Pod): void {
    const allocation = this.#o.allocation;
    const now = new Map(resizableContainers(allocated).map((c) => [c.name, desiredAmounts(c, allocated.spec?.resources).memoryRequestBytes]));
    for (const c of resizableContainers(desired)) {
      const was = now.get(c.name);
      if (was === undefined) continue;
      const running = allocation.actuatedMemoryRequest(uid, c.name) ?? was;
      const next = desiredAmounts(c, desired.spec?.resources).memoryRequestBytes;
      allocation.setActuatedMemoryRequest(uid, c.name, next === running ? undefined : running);
    }
  }

  /** The memory request container `name` of pod `uid` runs with, when a resize changed it since (see allocation.ts). */
  actuatedMemoryRequest(uid: string): (name: string) => number | undefined {
    return (name) => this.#o.allocation.actuatedMemoryRequest(uid, name);
  }

  /** Container `name` of `pod` was started from its allocation: it runs with the allocated resources. */
  containerStarted(pod: Pod, name: string): void {
    this.#o.allocation.setActuatedMemoryRequest(pod.metadata?.uid ?? '', name, undefined);
  }

  /**
   * Whether a running container was created from `container`'s spec (its hash label): the hash
   * without resources, or the legacy whole-spec one — recorded on first sight with the resources
   * the spec had, so it is still recognised after a resize.
   */
  sameSpec(uid: string): (container: Container, instance: RuntimeContainer) => boolean {
    const allocation = this.#o.allocation;
    return (container, instance) => {
      const legacy = allocation.get(uid)?.legacy?.[container.name];
      if (!containerHashMatches(instance.hash, container, legacy)) return false;
      if (!legacy && instance.hash !== hashContainer(container) && instance.hash === legacyHashContainer(container)) allocation.recordLegacy(uid, container);
      return true;
    };
  }

  /** Why in-place resizes cannot be applied on this node's runtime, or undefined. */
  #runtimeRefusal(): string | undefined {
    if (!this.#o.runtime.updateContainerResources) return 'the container runtime cannot update the resources of a running container';
    return this.#unsupported;
  }

  /** Whether the pod may be resized in place at all (`IsInPlacePodVerticalScalingAllowed`: not a static pod). */
  resizeAllowed(pod: Pod): boolean {
    return !isStaticPod(pod);
  }

  /**
   * At each sync, before the status is published: the `PodResizeInProgress` condition follows
   * whether any running resizable container still differs from its allocation
   * (`IsPodResizeInProgress`) — set when it does (an `Error` one is kept), cleared with
   * `ResizeCompleted` once none does.
   */
  observe(pod: Pod, allocated: Pod, runtime: RuntimePod | undefined): void {
    const uid = pod.metadata?.uid ?? '';
    const generation = observedGenerationOf(pod);
    const current = this.#conditions.get(uid);
    const running = runtime?.containers.some((c) => c.state === 'running') === true;
    const inProgress = this.resizeAllowed(pod) && (resizableContainers(allocated).some((c) => {
      const instance = runtime?.containers.find((x) => x.name === c.name);
      return containerResizeAction(c, instance, allocated.spec?.resources, this.#o.allocation.actuatedMemoryRequest(uid, c.name)).kind !== 'none';
    }) || (running && podLevelResizeInProgress(allocated, this.#o.allocation.actuatedPodLevel(uid))));
    if (inProgress) {
      if (!current?.inProgress) this.#set(uid, { ...current, inProgress: resizeCondition('PodResizeInProgress', undefined, '', '', generation, this.#now()) });
      return;
    }
    this.#retryAt.delete(uid);
    if (!current?.inProgress) return;
    this.#set(uid, { ...current, inProgress: undefined });
    this.#o.log.info({ pod: podRef(pod) }, 'Pod resize completed');
    this.#o.record(pod, 'Normal', RESIZE_COMPLETED, podResizeMessage(allocated, 'Pod resize completed', generation ?? 0));
  }

  /**
   * Applies the in-place updates `allocated` needs against what `runtime` runs
   * (`doPodResizeAction`). A failure sets `PodResizeInProgress` reason `Error` with its message,
   * records `ResizeError`, and holds further attempts for `RESIZE_RETRY_MS`. Returns `applied`
   * when the runtime was changed (the caller lists it again and syncs the pod: a resize changes
   * no container state the PLEG would notice), `error`, or `none` (nothing to do, or held).
   */
  async apply(allocated: Pod, runtime: RuntimePod | undefined): Promise<'applied' | 'error' | 'none'> {
    const uid = allocated.metadata?.uid ?? '';
    const update = this.#o.runtime.updateContainerResources?.bind(this.#o.runtime);
    if (!update || this.#unsupported !== undefined || !this.resizeAllowed(allocated)) return 'none';
    const hold = this.#retryAt.get(uid);
    if (hold !== undefined && Date.now() < hold) return 'none';
    // Pod-level resources are resized while the pod runs (a new sandbox's cgroup gets the allocation).
    const running = runtime?.containers.some((c) => c.state === 'running') === true;
    const plan = planPodResize(allocated, runtime, -1, running ? this.#o.allocation.actuatedPodLevel(uid) : undefined, this.actuatedMemoryRequest(uid));
    if (!plan) return 'none';
    const generation = observedGenerationOf(allocated);
    try {
      await applyPodResize(allocated, plan, {
        updateContainer: async (id, name, resources) => {
          const spec = resizableContainers(allocated).find((c) => c.name === name);
          if (!spec) return;
          this.#o.log.info({ pod: podRef(allocated), container: name, resources }, 'Updating container resources');
          await update(id, { ...spec, resources });
        },
        setPodCgroup: async (fields) => {
          this.#o.log.info({ pod: podRef(allocated), fields }, 'Updating pod cgroup resources');
          await this.#o.podCgroups?.resizePod(allocated, fields);
        },
        podLevelApplied: (resource) => this.#o.allocation.recordActuatedPodLevel(allocated, resource),
        memoryApplied: (name) => this.#o.allocation.setActuatedMemoryRequest(uid, name, undefined),
        podMemoryUsage: async () => {
          // The pod cgroup's usage, as the sum of its running containers'. One stopped since the
          // listing (killed by this sync for its own resize policy) uses nothing.
          let total = 0;
          for (const c of runtime?.containers ?? []) {
            if (c.state !== 'running') continue;
            total += await this.#o.runtime.containerStats(c.id).then((s) => s.memoryUsageBytes, () => 0);
          }
          return total;
        },
      });
    } catch (err) {
      const message = (err as Error).message;
      if (err instanceof UpdateUnsupportedError) this.#unsupported = message;
      const was = this.#conditions.get(uid);
      this.#set(uid, { ...was, inProgress: resizeCondition('PodResizeInProgress', was?.inProgress, 'Error', message, generation, this.#now()) });
      this.#retryAt.set(uid, Date.now() + RESIZE_RETRY_MS);
      this.#o.log.warn({ pod: podRef(allocated), error: message }, 'Pod resize failed');
      this.#o.record(allocated, 'Warning', RESIZE_ERROR, podResizeMessage(allocated, 'Pod resize error', generation ?? 0, message));
      return 'error';
    }
    this.#retryAt.delete(uid);
    return 'applied';
  }

  /** `status` with the pod's resize fields: container resources and the resize conditions. */
  status(pod: Pod, runtime: RuntimePod | undefined, status: PodStatus): PodStatus {
    const uid = pod.metadata?.uid ?? '';
    if (!this.#o.allocation.isAllocated(uid)) return status;
    const allocated = this.#o.allocation.allocatedPod(pod);
    const podLevel = withPodLevelStatus(status, allocated, this.#o.allocation.actuatedPodLevel(uid), podRequests);
    return withResizeConditions(withResizeStatus(podLevel, allocated, runtime), this.#conditions.get(uid));
  }

  /** The pod's cgroup was (re)made from `allocated`: its pod-level resources are in it. */
  podCgroupMade(allocated: Pod): void {
    this.#o.allocation.recordActuatedPodLevel(allocated, 'memory');
    this.#o.allocation.recordActuatedPodLevel(allocated, 'cpu');
  }

  /** Pods with a `Deferred` resize, to be tried again when resources are freed. */
  deferred(): string[] {
    return [...this.#conditions].filter(([, c]) => c.pending?.reason === 'Deferred').map(([uid]) => uid);
  }

  /** Forgets a pod that is gone: its allocation and its conditions. */
  removePod(uid: string): void {
    this.#conditions.delete(uid);
    this.#retryAt.delete(uid);
    this.#o.allocation.removePod(uid);
  }

  #set(uid: string, conditions: ResizeConditions): void {
    if (!conditions.pending && !conditions.inProgress) this.#conditions.delete(uid);
    else this.#conditions.set(uid, { ...(conditions.pending ? { pending: conditions.pending } : {}), ...(conditions.inProgress ? { inProgress: conditions.inProgress } : {}) });
  }
}

const podRef = (pod: Pod) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;
