/**
 * Whether a resize the spec asks for can be admitted now, later or never: the allocation
 * manager's `handlePodResourcesResize` and `canResizePod` (pkg/kubelet/allocation/allocation_manager.go),
 * pure. Applying an admitted resize is resize.ts; recording it, allocation.ts.
 */
import type { Container, Pod } from '../api/types.js';
import { isStaticPod } from '../api/annotations.js';
import { computePodQOS } from '../api/qos.js';
import { quantityOf } from '../api/quantity.js';
import { resizableContainers, sameResources } from './allocation.js';
import type { Resources } from './allocation-state.js';
import { podRequests, resourceFitRefusal } from './resource-fit.js';

/** The kubelet's pod condition reasons for a resize it cannot (yet) admit (`v1.PodReasonInfeasible`, `PodReasonDeferred`). */
export type PendingReason = 'Infeasible' | 'Deferred';

/** What the allocation manager decides about a pod whose spec asks for other resources than it was allocated. */
export type ResizeDecision =
  | { readonly kind: 'unchanged' }
  | { readonly kind: 'admit' }
  | { readonly kind: 'pending'; readonly reason: PendingReason; readonly message: string };

export interface ResizeDecisionInput {
  /** The pod as its source has it now: the desired resources. */
  readonly desired: Pod;
  /** The same pod with its allocation applied (`UpdatePodFromAllocation`). */
  readonly allocated: Pod;
  /** The other admitted pods still holding resources, each with its allocation applied. */
  readonly others: readonly Pod[];
  /** The node's `status.allocatable`; undefined before it was first built. */
  readonly allocatable: Readonly<Record<string, string>> | undefined;
  /** Why the runtime cannot update a running container's resources; undefined when it can. */
  readonly runtimeRefusal?: string | undefined;
}

/**
 * `handlePodResourcesResize` + `canResizePod` (pkg/kubelet/allocation/allocation_manager.go):
 * `unchanged` when the desired resources are the allocated ones; else `pending` `Infeasible` for
 * a resize nodelet will never apply (a static pod, `IsInPlacePodVerticalScalingAllowed`; what
 * `unsupportedResize` refuses; requests beyond the node's allocatable at all, with the kubelet's
 * "Node didn't have enough capacity" message), `pending` `Deferred` when the new requests do not fit
 * beside the other pods' allocations now (the admission check's message; retried later), else
 * `admit`.
 */
export function resizeDecision(input: ResizeDecisionInput): ResizeDecision {
  const { desired, allocated } = input;
  if (desired === allocated || (sameResources(desired.spec?.resources, allocated.spec?.resources) && resizableContainers(desired).every((c, i) => sameResources(c.resources, resizableContainers(allocated)[i]?.resources)))) {
    return { kind: 'unchanged' };
  }
  if (isStaticPod(desired)) return { kind: 'pending', reason: 'Infeasible', message: 'In-place resize of static-pods is not supported' };
  const unsupported = unsupportedResize(desired, allocated);
  if (unsupported) return { kind: 'pending', reason: 'Infeasible', message: unsupported };
  if (input.runtimeRefusal) return { kind: 'pending', reason: 'Infeasible', message: input.runtimeRefusal };
  const allocatable = input.allocatable;
  if (!allocatable) return { kind: 'pending', reason: 'Deferred', message: 'the node\'s allocatable resources are not known yet' };
  const requests = podRequests(desired);
  const cpuRequests = requests.get('cpu') ?? 0n;
  const memRequests = requests.get('memory') ?? 0n;
  const cpuAvailable = ceilDiv(quantityOf(allocatable.cpu), 1_000_000n);
  const memAvailable = ceilDiv(quantityOf(allocatable.memory), 1_000_000_000n);
  if (cpuRequests > cpuAvailable || memRequests > memAvailable) {
    const what = memRequests > memAvailable ? `memory, requested: ${memRequests}, capacity: ${memAvailable}` : `cpu, requested: ${cpuRequests}, capacity: ${cpuAvailable}`;
    return { kind: 'pending', reason: 'Infeasible', message: `Node didn't have enough capacity: ${what}` };
  }
  const fit = resourceFitRefusal(desired, input.others, allocatable);
  if (fit) return { kind: 'pending', reason: 'Deferred', message: fit.message };
  return { kind: 'admit' };
}

const ceilDiv = (a: bigint, b: bigint) => (a <= 0n ? 0n : (a + b - 1n) / b);

/** The resources an in-place resize may change (the apiserver's `ValidatePodResize` allows no others). */
const RESIZABLE = new Set(['cpu', 'memory']);

/**
 * What nodelet refuses to resize in place, with the reason (`Infeasible`): the apiserver refuses
 * most of it already, but a static pod's manifest or an older apiserver may ask. A changed amount of
 * any resource but cpu and memory (the runtime has no update for it); a limit removed (neither
 * the kubelet — "This does not support removing limits" in `doPodResizeAction` — nor the engine's
 * update, where 0 means "unchanged", can lift one); a change of the pod's QoS class (its cgroup
 * lives under its class). The same for pod-level `spec.resources`. Every init container counts,
 * sidecar or not (`IsResizableContainer`), and the QoS class is the whole pod's, init containers
 * included (pkg/kubelet/allocation/handlers.go).
 */
export function unsupportedResize(desired: Pod, allocated: Pod): string | undefined {
  const before = new Map(resizableContainers(allocated).map((c) => [c.name, c] as const));
  for (const c of resizableContainers(desired)) {
    const old = before.get(c.name);
    if (!old) continue;
    const refusal = changedResource(c.resources, old.resources);
    if (refusal) return `container ${JSON.stringify(c.name)}: ${refusal}`;
  }
  const pod = changedResource(desired.spec?.resources, allocated.spec?.resources);
  if (pod) return `pod-level ${pod}`;
  if (computePodQOS(desired) !== computePodQOS(allocated)) return 'Pod QOS Class may not change as a result of resizing';
  return undefined;
}

/** Why `now` cannot replace `was` in place: a resource other than cpu and memory changed, or a limit was removed. */
function changedResource(nowResources: Resources | Container['resources'], wasResources: Resources | Container['resources']): string | undefined {
  for (const kind of ['limits', 'requests'] as const) {
    const now = (nowResources?.[kind] ?? {}) as Record<string, string>;
    const was = (wasResources?.[kind] ?? {}) as Record<string, string>;
    for (const name of new Set([...Object.keys(now), ...Object.keys(was)])) {
      if (quantityOf(now[name]) === quantityOf(was[name]) && (now[name] === undefined) === (was[name] === undefined)) continue;
      if (!RESIZABLE.has(name)) return `${kind} of ${name} cannot be resized in place, only cpu and memory`;
      if (kind === 'limits' && now[name] === undefined) return `removing the ${name} limit in place is not supported`;
    }
  }
  return undefined;
}
