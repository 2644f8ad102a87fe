/**
 * In-place resize, planned (pure): what each running container needs for its allocated resources
 * (`computePodResizeAction`, pkg/kubelet/kuberuntime/kuberuntime_manager.go) and, per pod, the
 * container updates in their order and the pod cgroup's values before and after. Applying a plan
 * is resize-apply.ts; the status fields, conditions and event messages are resize-status.ts.
 */
import type { Container, Pod } from '../api/types.js';
import { quantityOf } from '../api/quantity.js';
import type { CgroupResources } from '../cgroups/pod-resources.js';
import { podCgroupResources } from '../cgroups/pod-resources.js';
import type { RuntimeContainer, RuntimeContainerResources, RuntimePod } from '../runtime/types.js';
import { effectiveLimits } from '../api/pod-requests.js';
import { resizableContainers, sameResources } from './allocation.js';
import type { Resources } from './allocation-state.js';


// pkg/kubelet/cm/helpers_linux.go: the shares floor, and the smallest cpu limit a CFS quota can
// express (1 ms per 100 ms period): requests or limits at or below them count as equal.
export const MIN_SHARES = 2;
export const MIN_MILLI_CPU_LIMIT = 10;

/** A container's cpu and memory in the units the kubelet compares them in (`containerResources`). */
export interface ContainerAmounts {
  readonly cpuRequestMilli: number;
  readonly cpuLimitMilli: number;
  readonly memoryRequestBytes: number;
  readonly memoryLimitBytes: number;
}

/** A quantity in thousandths, rounded up (`MilliValue`). */
export const milli = (v: string | number | undefined) => Number((quantityOf(v) + 999_999n) / 1_000_000n);
const units = (v: string | number | undefined) => Number((quantityOf(v) + 999_999_999n) / 1_000_000_000n);

/** The pod-level `spec.resources` a container's limits fall back to. */
type PodResources = NonNullable<Pod['spec']>['resources'];

/**
 * What the spec asks of a container: a missing request is its limit, as the apiserver's
 * defaulting makes it; a limit it does not set is the pod-level one (`containerResourcesFromRequirements`
 * with `kubeutil.GetLimits`, as the container was created).
 */
export function desiredAmounts(c: Pick<Container, 'resources'>, podResources?: PodResources): ContainerAmounts {
  const limits = effectiveLimits(podResources as { limits?: Record<string, string> } | undefined, c) ?? {};
  const requests = { ...limits, ...c.resources?.requests };
  return { cpuRequestMilli: milli(requests.cpu), cpuLimitMilli: milli(limits.cpu), memoryRequestBytes: units(requests.memory), memoryLimitBytes: units(limits.memory) };
}

/**
 * What the runtime holds, with the memory request (never written to a cgroup, so no runtime
 * reports it) the one the container was started or last updated with — `actuatedMemoryRequest`,
 * recorded when a resize changed it (allocation.ts), else the allocated one — and the minimums
 * folded as `computePodResizeAction` does: both at or below the shares floor, or both at or below
 * the smallest limit, count as equal.
 */
function currentAmounts(desired: ContainerAmounts, actual: RuntimeContainerResources, actuatedMemoryRequest: number | undefined): ContainerAmounts {
  const cpuRequestMilli = desired.cpuRequestMilli <= MIN_SHARES && actual.cpuRequestMilli <= MIN_SHARES ? desired.cpuRequestMilli : actual.cpuRequestMilli;
  const cpuLimitMilli = desired.cpuLimitMilli <= MIN_MILLI_CPU_LIMIT && actual.cpuLimitMilli <= MIN_MILLI_CPU_LIMIT ? desired.cpuLimitMilli : actual.cpuLimitMilli;
  return { cpuRequestMilli, cpuLimitMilli, memoryRequestBytes: actuatedMemoryRequest ?? desired.memoryRequestBytes, memoryLimitBytes: actual.memoryLimitBytes };
}

/** Which way a resource of one container moves: decreases are applied before increases. */
export type Direction = 'grow' | 'shrink';

/** What one running container needs for its allocated resources (`computePodResizeAction`). */
export type ContainerResizeAction =
  | { readonly kind: 'none' }
  /** A resource that changes has `restartPolicy: RestartContainer`: killed and started again. */
  | { readonly kind: 'restart'; readonly message: string }
  | { readonly kind: 'update'; readonly memory?: Direction; readonly cpu?: Direction; readonly desired: ContainerAmounts; readonly current: ContainerAmounts };

/**
 * `computePodResizeAction` (pkg/kubelet/kuberuntime/kuberuntime_manager.go) for a container whose
 * spec holds its allocated resources: nothing unless it runs and the runtime reported its
 * resources; else each of memory limit, memory request, cpu limit and cpu request that differs is
 * resized, under the resource's `resizePolicy` (default `NotRequired`: in place;
 * `RestartContainer`: the container restarts with the new values, and nothing is updated in
 * place). Each resource moves by its limit when that changes, else by its request. `podResources`
 * are the pod-level ones: a limit the container does not set is theirs, so a pod-level limit's
 * resize resizes it too. `actuatedMemoryRequest`: the memory request (bytes) the container runs
 * with when a resize changed its allocation since (undefined: the allocated one).
 */
export function containerResizeAction(container: Container, instance: RuntimeContainer | undefined, podResources?: PodResources, actuatedMemoryRequest?: number): ContainerResizeAction {
  if (instance?.state !== 'running' || !instance.resources) return { kind: 'none' };
  const desired = desiredAmounts(container, podResources);
  const current = currentAmounts(desired, instance.resources, actuatedMemoryRequest);
  const differs = (name: 'cpu' | 'memory', want: number, have: number) => {
    if (want === have) return { resize: false, restart: false };
    const policy = container.resizePolicy?.find((p) => p.resourceName === name);
    return { resize: true, restart: policy?.restartPolicy === 'RestartContainer' };
  };
  const memLimit = differs('memory', desired.memoryLimitBytes, current.memoryLimitBytes);
  const memRequest = differs('memory', desired.memoryRequestBytes, current.memoryRequestBytes);
  const cpuLimit = differs('cpu', desired.cpuLimitMilli, current.cpuLimitMilli);
  const cpuRequest = differs('cpu', desired.cpuRequestMilli, current.cpuRequestMilli);
  const all = [memLimit, memRequest, cpuLimit, cpuRequest];
  if (!all.some((r) => r.resize)) return { kind: 'none' };
  if (all.some((r) => r.restart)) return { kind: 'restart', message: `Container ${container.name} resize requires restart` };
  const dir = (want: number, have: number): Direction => (want > have ? 'grow' : 'shrink');
  return {
    kind: 'update',
    desired,
    current,
    ...(memLimit.resize ? { memory: dir(desired.memoryLimitBytes, current.memoryLimitBytes) } : memRequest.resize ? { memory: dir(desired.memoryRequestBytes, current.memoryRequestBytes) } : {}),
    ...(cpuLimit.resize ? { cpu: dir(desired.cpuLimitMilli, current.cpuLimitMilli) } : cpuRequest.resize ? { cpu: dir(desired.cpuRequestMilli, current.cpuRequestMilli) } : {}),
  };
}

/** One running container to update for one resource. */
export interface ContainerUpdate {
  readonly name: string;
  readonly id: string;
  readonly desired: ContainerAmounts;
  readonly current: ContainerAmounts;
}

/**
 * A pod's in-place resize (the kubelet's `podActions.ContainersToUpdate` and `doPodResizeAction`'s
 * inputs): per resource, the containers to update, decreases first; the pod cgroup's values now
 * (from what its running containers hold) and after.
 */
export interface PodResizePlan {
  readonly memory: readonly ContainerUpdate[];
  readonly cpu: readonly ContainerUpdate[];
  /** The pod-level resources differ from those in the pod cgroup (`UpdatePodLevelResources`). */
  readonly podLevel: boolean;
  readonly podCgroupBefore: CgroupResources;
  readonly podCgroupAfter: CgroupResources;
}

export const newestRunning = (runtime: RuntimePod | undefined, name: string) => runtime?.containers.find((c) => c.name === name);

/**
 * The in-place updates `allocated` (the pod with its allocation applied) needs against what
 * `runtime` runs; undefined when there are none. Containers that restart for their resize
 * policy are not in it (their new instance starts with the new values). The pod cgroup's values
 * before are computed from the running containers' read-back values, so an update that failed
 * half-way is taken up from where it stopped.
 */
export function planPodResize(
  allocated: Pod,
  runtime: RuntimePod | undefined,
  podPidsLimit = -1,
  actuatedPodLevel?: Resources,
  actuatedMemoryRequest: (name: string) => number | undefined = () => undefined,
): PodResizePlan | undefined {
  const memory: ContainerUpdate[] = [];
  const cpu: ContainerUpdate[] = [];
  const actual = new Map<string, Resources>();
  for (const c of resizableContainers(allocated)) {
    const instance = newestRunning(runtime, c.name);
    const action = containerResizeAction(c, instance, allocated.spec?.resources, actuatedMemoryRequest(c.name));
    if (action.kind !== 'update' || !instance) continue;
    const update = { name: c.name, id: instance.id, desired: action.desired, current: action.current };
    // Decreases are prepended, increases appended: every container's share shrinks before another grows.
    if (action.memory === 'shrink') memory.unshift(update);
    else if (action.memory === 'grow') memory.push(update);
    if (action.cpu === 'shrink') cpu.unshift(update);
    else if (action.cpu === 'grow') cpu.push(update);
    actual.set(c.name, resourcesFromAmounts(action.current));
  }
  const podLevel = podLevelResizeInProgress(allocated, actuatedPodLevel);
  if (!memory.length && !cpu.length && !podLevel) return undefined;
  const actualPod = withPodLevel(withContainerResources(allocated, actual), actuatedPodLevel);
  const opts = { podPidsLimit };
  const { qos: _b, ...podCgroupBefore } = podCgroupResources(actualPod, opts);
  const { qos: _a, ...podCgroupAfter } = podCgroupResources(allocated, opts);
  return { memory, cpu, podLevel, podCgroupBefore, podCgroupAfter };
}

/**
 * `isPodLevelResourcesResizeInProgress` (kuberuntime_manager.go): the allocated pod-level cpu or
 * memory differs from what was written to the pod cgroup (`actuated`; undefined: not recorded,
 * nothing in progress).
 */
export function podLevelResizeInProgress(allocated: Pod, actuated: Resources | undefined): boolean {
  if (!actuated) return false;
  const pick = (r: Resources | undefined) => {
    const only = (l: Readonly<Record<string, string>> | undefined) => Object.fromEntries(Object.entries(l ?? {}).filter(([k]) => k === 'cpu' || k === 'memory'));
    return { limits: only(r?.limits), requests: only(r?.requests) };
  };
  return !sameResources(pick(actuated), pick(allocated.spec?.resources as Resources | undefined));
}

/** `pod` with the pod-level resources `actuated` (unchanged when undefined). */
export function withPodLevel(pod: Pod, actuated: Resources | undefined): Pod {
  if (!actuated || !pod.spec) return pod;
  const { resources: _r, ...spec } = pod.spec;
  return { ...pod, spec: { ...spec, ...(actuated.limits || actuated.requests ? { resources: { ...actuated } } : {}) } };
}

function withContainerResources(pod: Pod, resources: ReadonlyMap<string, Resources>): Pod {
  const swap = (c: Container) => {
    const r = resources.get(c.name);
    return r ? { ...c, resources: r } : c;
  };
  const spec = pod.spec;
  if (!spec) return pod;
  return { ...pod, spec: { ...spec, containers: spec.containers.map(swap), ...(spec.initContainers ? { initContainers: spec.initContainers.map(swap) } : {}) } };
}
/** A container spec's resources for the given amounts (what the runtime's update converts, as at creation). */
export function resourcesFromAmounts(a: ContainerAmounts): Resources {
  const limits: Record<string, string> = {};
  const requests: Record<string, string> = {};
  if (a.cpuLimitMilli > 0) limits.cpu = formatMilli(a.cpuLimitMilli);
  if (a.memoryLimitBytes > 0) limits.memory = formatBytes(a.memoryLimitBytes);
  if (a.cpuRequestMilli > 0) requests.cpu = formatMilli(a.cpuRequestMilli);
  if (a.memoryRequestBytes > 0) requests.memory = formatBytes(a.memoryRequestBytes);
  return { ...(Object.keys(limits).length ? { limits } : {}), ...(Object.keys(requests).length ? { requests } : {}) };
}

/** Millicores as `resource.NewMilliQuantity(…, DecimalSI)` prints them: `250m`, `2`. */
export function formatMilli(m: number): string {
  return m % 1000 === 0 ? String(m / 1000) : `${m}m`;
}

/** Bytes as `resource.NewQuantity(…, BinarySI)` prints them: the largest exact binary suffix, else the number. */
export function formatBytes(bytes: number): string {
  const suffixes = ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'];
  for (const [i, s] of suffixes.entries()) {
    const unit = 2 ** (10 * (6 - i));
    if (bytes >= unit && bytes % unit === 0) return `${bytes / unit}${s}`;
  }
  return String(bytes);
}

/**
 * The pod-level part of `validateMemoryResizeAction` (kuberuntime_manager.go), made before any
 * memory limit is written: a pod memory limit set or lowered to at or below what the pod uses
 * now is refused with the kubelet's message.
 */
export function memoryShrinkRefusal(currentPodLimit: bigint | undefined, newPodLimit: bigint | undefined, usage: number): string | undefined {
  if (newPodLimit === undefined || newPodLimit === 0n) return undefined;
  const decreasing = !currentPodLimit || newPodLimit < currentPodLimit;
  if (decreasing && BigInt(usage) >= newPodLimit) return `cannot decrease memory limits: attempting to set pod memory limit (${newPodLimit}) below current usage (${usage})`;
  return undefined;
}
