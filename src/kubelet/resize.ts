import type { Container, ContainerStatus, Pod, PodCondition, PodStatus } from '../api/types.js';
import { quantityOf } from '../api/quantity.js';
import type { CgroupResources } from '../cgroups/pod-resources.js';
import { milliCPUToShares, podCgroupResources } from '../cgroups/pod-resources.js';
import type { RuntimeContainer, RuntimeContainerResources, RuntimePod } from '../runtime/types.js';
import { effectiveLimits } from '../api/pod-requests.js';
import { resizableContainers, sameResources } from './allocation.js';
import type { Resources } from './allocation-state.js';

// pkg/kubelet/cm/helpers_linux.go: the shares floor, and the smallest cpu limit a CFS quota can
// express (1 ms per 100 ms period): requests or limits at or below them count as equal.
const MIN_SHARES = 2;
const MIN_MILLI_CPU_LIMIT = 10;

/** A container's cpu and memory in the units the kubelet compares them in (`containerResources`). */
export interface ContainerAmounts {
  readonly cpuRequestMilli: number;
  readonly cpuLimitMilli: number;
  readonly memoryRequestBytes: number;
  readonly memoryLimitBytes: number;
}

const milli = (v: string | number | undefined) => Number((quantityOf(v) + 999_999n) / 1_000_000n);
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
 * What the runtime holds, with the memory request (never written to a cgroup) taken from the
 * spec, and the minimums folded as `computePodResizeAction` does: both at or below the shares
 * floor, or both at or below the smallest limit, count as equal.
 */
function currentAmounts(desired: ContainerAmounts, actual: RuntimeContainerResources): ContainerAmounts {
  const cpuRequestMilli = desired.cpuRequestMilli <= MIN_SHARES && actual.cpuRequestMilli <= MIN_SHARES ? desired.cpuRequestMilli : actual.cpuRequestMilli;
  const cpuLimitMilli = desired.cpuLimitMilli <= MIN_MILLI_CPU_LIMIT && actual.cpuLimitMilli <= MIN_MILLI_CPU_LIMIT ? desired.cpuLimitMilli : actual.cpuLimitMilli;
  return { cpuRequestMilli, cpuLimitMilli, memoryRequestBytes: desired.memoryRequestBytes, memoryLimitBytes: actual.memoryLimitBytes };
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
 * resources; else each of memory limit, cpu limit and cpu request that differs is resized, under
 * the resource's `resizePolicy` (default `NotRequired`: in place; `RestartContainer`: the
 * container restarts with the new values, and nothing is updated in place). The cpu moves by its
 * limit when that changes, else by its request. `podResources` are the pod-level ones: a limit
 * the container does not set is theirs, so a pod-level limit's resize resizes it too.
 */
export function containerResizeAction(container: Container, instance: RuntimeContainer | undefined, podResources?: PodResources): ContainerResizeAction {
  if (instance?.state !== 'running' || !instance.resources) return { kind: 'none' };
  const desired = desiredAmounts(container, podResources);
  const current = currentAmounts(desired, instance.resources);
  const differs = (name: 'cpu' | 'memory', want: number, have: number) => {
    if (want === have) return { resize: false, restart: false };
    const policy = container.resizePolicy?.find((p) => p.resourceName === name);
    return { resize: true, restart: policy?.restartPolicy === 'RestartContainer' };
  };
  const memLimit = differs('memory', desired.memoryLimitBytes, current.memoryLimitBytes);
  const cpuLimit = differs('cpu', desired.cpuLimitMilli, current.cpuLimitMilli);
  const cpuRequest = differs('cpu', desired.cpuRequestMilli, current.cpuRequestMilli);
  if (!memLimit.resize && !cpuLimit.resize && !cpuRequest.resize) return { kind: 'none' };
  if (memLimit.restart || cpuLimit.restart || cpuRequest.restart) return { kind: 'restart', message: `Container ${container.name} resize requires restart` };
  const dir = (want: number, have: number): Direction => (want > have ? 'grow' : 'shrink');
  return {
    kind: 'update',
    desired,
    current,
    ...(memLimit.resize ? { memory: dir(desired.memoryLimitBytes, current.memoryLimitBytes) } : {}),
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

const newestRunning = (runtime: RuntimePod | undefined, name: string) => runtime?.containers.find((c) => c.name === name);

/**
 * The in-place updates `allocated` (the pod with its allocation applied) needs against what
 * `runtime` runs; undefined when there are none. Containers that restart for their resize
 * policy are not in it (their new instance starts with the new values). The pod cgroup's values
 * before are computed from the running containers' read-back values, so an update that failed
 * half-way is taken up from where it stopped.
 */
export function planPodResize(allocated: Pod, runtime: RuntimePod | undefined, podPidsLimit = -1, actuatedPodLevel?: Resources): PodResizePlan | undefined {
  const memory: ContainerUpdate[] = [];
  const cpu: ContainerUpdate[] = [];
  const actual = new Map<string, Resources>();
  for (const c of resizableContainers(allocated)) {
    const instance = newestRunning(runtime, c.name);
    const action = containerResizeAction(c, instance, allocated.spec?.resources);
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
function withPodLevel(pod: Pod, actuated: Resources | undefined): Pod {
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

/** What applying a plan needs from the node. */
export interface ResizeExecutor {
  /** Updates a running container's cpu and memory to `resources` (the runtime's update). */
  updateContainer(id: string, name: string, resources: Resources): Promise<void>;
  /** Writes these fields of the pod's cgroup values, computed from the allocated pod. */
  setPodCgroup(fields: readonly (keyof CgroupResources)[]): Promise<void>;
  /** The memory the pod's containers use now, in bytes. */
  podMemoryUsage(): Promise<number>;
  /** `resource` of the pod-level resources is now in the pod cgroup (`updateActuatedPodLevelResources`). */
  podLevelApplied?(resource: 'cpu' | 'memory'): void;
}

/**
 * `doPodResizeAction` + `updatePodContainerResources`: memory first, then cpu. For each, a pod
 * cgroup value that grows is written before the containers are updated and one that shrinks
 * after, limits before requests when growing and after them when shrinking, so a container's
 * limit never exceeds its pod's (the kernel refuses a CFS quota above the parent's). A memory
 * limit lowered below what the pod uses now is not attempted (the kubelet's check; the resize
 * stays in progress with the error). A container's memory update keeps its current cpu values and
 * its cpu update keeps its (possibly just updated) memory values. The first failure stops the
 * rest and is thrown; the next sync takes it up again.
 */
export async function applyPodResize(pod: Pod, plan: PodResizePlan, exec: ResizeExecutor): Promise<void> {
  const before = plan.podCgroupBefore;
  const after = plan.podCgroupAfter;
  const updated = new Map<string, ContainerAmounts>();
  if (plan.memory.length || plan.podLevel) {
    const decreasing = after.memoryLimit !== undefined && after.memoryLimit !== 0n && (!before.memoryLimit || after.memoryLimit < before.memoryLimit);
    // validatePodResizeAction runs for container memory updates only, not for pod-level alone.
    const refusal = plan.memory.length && decreasing ? memoryShrinkRefusal(before.memoryLimit, after.memoryLimit, await exec.podMemoryUsage()) : undefined;
    if (refusal) throw new Error(refusal);
    // No pod memory limit after: the current one stays (the kubelet cannot remove limits either).
    const cur = before.memoryLimit ?? 0n;
    const next = after.memoryLimit ?? cur;
    if (next > cur) await exec.setPodCgroup(['memoryLimit']);
    for (const u of plan.memory) {
      const amounts = { ...u.current, memoryLimitBytes: u.desired.memoryLimitBytes, memoryRequestBytes: u.desired.memoryRequestBytes };
      await exec.updateContainer(u.id, u.name, resourcesFromAmounts(amounts));
      updated.set(u.name, amounts);
    }
    if (next < cur && after.memoryLimit) await exec.setPodCgroup(['memoryLimit']);
    if (plan.podLevel) exec.podLevelApplied?.('memory');
  }
  if (plan.cpu.length || plan.podLevel) {
    const curQuota = before.cpuQuota ?? 0;
    const nextQuota = after.cpuQuota ?? curQuota;
    const curShares = before.cpuShares ?? 0;
    const nextShares = after.cpuShares ?? curShares;
    const quota = ['cpuPeriod', 'cpuQuota'] as const;
    // A quota of 0 or -1 is no limit: the largest.
    const limitGrows = quotaRank(nextQuota) > quotaRank(curQuota);
    const limitShrinks = quotaRank(nextQuota) < quotaRank(curQuota);
    if (limitGrows && after.cpuQuota !== undefined) await exec.setPodCgroup(quota);
    if (nextShares > curShares) await exec.setPodCgroup(['cpuShares']);
    for (const u of plan.cpu) {
      const base = updated.get(u.name) ?? u.current;
      await exec.updateContainer(u.id, u.name, resourcesFromAmounts({ ...base, cpuLimitMilli: u.desired.cpuLimitMilli, cpuRequestMilli: u.desired.cpuRequestMilli }));
    }
    if (nextShares < curShares) await exec.setPodCgroup(['cpuShares']);
    if (limitShrinks && after.cpuQuota !== undefined) await exec.setPodCgroup(quota);
    if (plan.podLevel) exec.podLevelApplied?.('cpu');
  }
}

const quotaRank = (q: number) => (q <= 0 ? Infinity : q);

// pkg/kubelet/cm/helpers_linux.go `SharesToMilliCPU`, `QuotaToMilliCPU`.
const sharesToMilli = (shares: number) => (shares >= MIN_SHARES ? Math.ceil((shares * 1000) / 1024) : 0);
const quotaToMilli = (quota: number, period: number) => (quota <= 0 || period <= 0 ? 0 : Math.floor((quota * 1000) / period));

/** A resource amount as the API lists it: cpu in millicores, the others in units (bytes for memory). */
function formatAmount(name: string, amount: bigint): string {
  if (name === 'cpu') return formatMilli(Number(amount));
  return name === 'memory' || name === 'ephemeral-storage' || name.startsWith('hugepages-') ? formatBytes(Number(amount)) : String(amount);
}

/** `value`, spelled as `spelled` when that is the same amount (the spec's spelling is kept). */
const spelling = (value: string, spelled: string | number | undefined) => (spelled !== undefined && quantityOf(spelled) === quantityOf(value) ? String(spelled) : value);

/**
 * The pod-level status fields (kubelet_pods.go `generateAPIPodStatus` with
 * InPlacePodLevelResourcesVerticalScaling): `allocatedResources`, the allocated pod's requests
 * (`resource.PodRequests`: pod-level cpu and memory requests in place of the containers' sum);
 * `resources` (`convertToAPIPodLevelResourcesStatus`), the pod-level resources as the pod cgroup
 * holds them — computed from the pod-level resources last written to it (`actuated`), since
 * nodelet writes rather than reads it: the cpu request from its shares (the allocated one kept
 * when the shares are the allocated ones'), the memory request the allocated one (never in a
 * cgroup), the cpu and memory limits from its quota and memory limit where it has them (at or
 * below the smallest quota, the allocated cpu limit is kept). Amounts equal to the spec's keep
 * its spelling.
 */
export function withPodLevelStatus(status: PodStatus, allocated: Pod, actuated: Resources | undefined, podRequestsOf: (pod: Pod) => ReadonlyMap<string, bigint>): PodStatus {
  const spec = allocated.spec?.resources;
  const allocatedResources: Record<string, string> = {};
  for (const [name, amount] of podRequestsOf(allocated)) allocatedResources[name] = spelling(formatAmount(name, amount), spec?.requests?.[name]);
  const actual = withPodLevel(allocated, actuated);
  const held = actual.spec?.resources;
  const cg = podCgroupResources(actual, { podPidsLimit: -1 });
  const requests: Record<string, string> = { ...(held?.requests as Record<string, string> | undefined) };
  const limits: Record<string, string> = { ...(held?.limits as Record<string, string> | undefined) };
  const heldCpuRequest = requests.cpu !== undefined ? milli(requests.cpu) : 0;
  const cgShares = cg.cpuShares ?? MIN_SHARES;
  const cgCpuRequest = sharesToMilli(cgShares);
  if ((cgCpuRequest > MIN_SHARES || heldCpuRequest > MIN_SHARES) && cgShares !== milliCPUToShares(BigInt(heldCpuRequest))) requests.cpu = formatMilli(cgCpuRequest);
  const memoryRequest = podRequestsOf(actual).get('memory');
  if (requests.memory === undefined && memoryRequest !== undefined) requests.memory = formatBytes(Number(memoryRequest));
  const cgCpuLimit = cg.cpuQuota !== undefined ? quotaToMilli(cg.cpuQuota, cg.cpuPeriod ?? 0) : 0;
  if (cgCpuLimit > 0 && (cgCpuLimit > MIN_MILLI_CPU_LIMIT || milli(limits.cpu) > MIN_MILLI_CPU_LIMIT)) limits.cpu = spelling(formatMilli(cgCpuLimit), limits.cpu);
  if (cg.memoryLimit !== undefined && cg.memoryLimit > 0n) limits.memory = spelling(formatBytes(Number(cg.memoryLimit)), limits.memory);
  return {
    ...status,
    ...(Object.keys(allocatedResources).length ? { allocatedResources } : {}),
    resources: { ...(Object.keys(limits).length ? { limits } : {}), ...(Object.keys(requests).length ? { requests } : {}) },
  };
}

// ---- Conditions, events and status ----

/** The resize conditions of one pod (the status manager's `podResizeConditions`). */
export interface ResizeConditions {
  readonly pending?: PodCondition;
  readonly inProgress?: PodCondition;
}

/**
 * `updatedPodResizeCondition` (pkg/kubelet/status/status_manager.go): status True with the reason
 * and message, the pod's generation as `observedGeneration`; the old transition time is kept while
 * reason and message stay the same.
 */
export function resizeCondition(type: 'PodResizePending' | 'PodResizeInProgress', old: PodCondition | undefined, reason: string, message: string, generation: number | undefined, now: string): PodCondition {
  const same = old && (old.reason ?? '') === reason && (old.message ?? '') === message;
  return {
    type,
    status: 'True',
    ...(reason ? { reason } : {}),
    ...(message ? { message } : {}),
    ...(generation ? { observedGeneration: generation } : {}),
    lastTransitionTime: same && old.lastTransitionTime ? old.lastTransitionTime : now,
  };
}

/**
 * The message of the resize events (pkg/kubelet/events/event.go `podResizeMessage`): a prefix and
 * the pod's resources as JSON — its init containers' and containers' names and resources, the
 * generation, and the error when there is one.
 */
export function podResizeMessage(pod: Pod, prefix: string, generation: number, error = ''): string {
  const entry = (c: Container) => ({ name: c.name, resources: sortedResources(c.resources) });
  const inits = (pod.spec?.initContainers ?? []).map(entry);
  const containers = (pod.spec?.containers ?? []).map(entry);
  const summary = { ...(inits.length ? { initContainers: inits } : {}), ...(containers.length ? { containers } : {}), generation, ...(error ? { error } : {}) };
  return `${prefix}: ${JSON.stringify(summary)}`;
}

/** Go's `json.Marshal` of a `ResourceRequirements`: `limits` then `requests`, map keys sorted, empty ones left out. */
function sortedResources(r: Container['resources']): Record<string, Record<string, string>> {
  const out: Record<string, Record<string, string>> = {};
  for (const kind of ['limits', 'requests'] as const) {
    const list = r?.[kind] as Record<string, string> | undefined;
    if (list && Object.keys(list).length) out[kind] = Object.fromEntries(Object.keys(list).sort().map((k) => [k, String(list[k])]));
  }
  return out;
}

/**
 * The resize fields of the container statuses (`convertContainerStatusResources` in
 * pkg/kubelet/kubelet_pods.go): for each resizable container with an allocation,
 * `allocatedResources` (its allocated requests) and `resources` — the allocation, where the
 * container runs with the cpu request, cpu limit and memory limit the runtime read back (when both
 * are at or below the minimums the allocated value stays, and an amount equal to the allocated
 * one keeps the allocation's spelling). Conditions are added by `withResizeConditions`.
 */
export function withResizeStatus(status: PodStatus, allocated: Pod, runtime: RuntimePod | undefined): PodStatus {
  const byName = new Map(resizableContainers(allocated).map((c) => [c.name, c] as const));
  const decorate = (s: ContainerStatus): ContainerStatus => {
    const c = byName.get(s.name);
    if (!c) return s;
    const alloc = c.resources ?? {};
    const requests = { ...(alloc.requests as Record<string, string> | undefined) };
    const limits = { ...(alloc.limits as Record<string, string> | undefined) };
    const instance = newestRunning(runtime, c.name);
    const actual = instance?.state === 'running' ? instance.resources : undefined;
    if (actual && s.state?.running) {
      const want = desiredAmounts(c);
      if (alloc.limits && (actual.cpuLimitMilli > MIN_MILLI_CPU_LIMIT || want.cpuLimitMilli > MIN_MILLI_CPU_LIMIT) && actual.cpuLimitMilli !== want.cpuLimitMilli) {
        if (actual.cpuLimitMilli > 0) limits.cpu = formatMilli(actual.cpuLimitMilli);
        else delete limits.cpu;
      }
      if (alloc.limits && actual.memoryLimitBytes !== want.memoryLimitBytes) {
        if (actual.memoryLimitBytes > 0) limits.memory = formatBytes(actual.memoryLimitBytes);
        else delete limits.memory;
      }
      if (alloc.requests && (actual.cpuRequestMilli > MIN_SHARES || want.cpuRequestMilli > MIN_SHARES) && actual.cpuRequestMilli !== milli(alloc.requests.cpu)) {
        requests.cpu = formatMilli(actual.cpuRequestMilli);
      }
    }
    const resources = { ...(alloc.limits ? { limits } : {}), ...(alloc.requests ? { requests } : {}) };
    return {
      ...s,
      ...(alloc.requests && Object.keys(alloc.requests).length ? { allocatedResources: { ...(alloc.requests as Record<string, string>) } } : {}),
      resources,
    };
  };
  return {
    ...status,
    ...(status.containerStatuses ? { containerStatuses: status.containerStatuses.map(decorate) } : {}),
    ...(status.initContainerStatuses ? { initContainerStatuses: status.initContainerStatuses.map(decorate) } : {}),
  };
}

/** The pod's resize conditions added to its status (`generateAPIPodStatus` appends them), after the others. */
export function withResizeConditions(status: PodStatus, conditions: ResizeConditions | undefined): PodStatus {
  const extra = [conditions?.pending, conditions?.inProgress].filter((c): c is PodCondition => c !== undefined);
  if (!extra.length) return status;
  return { ...status, conditions: [...(status.conditions ?? []), ...extra] };
}
