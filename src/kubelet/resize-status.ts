/**
 * In-place resize in the pod's status: the pod-level and container resize fields
 * (`generateAPIPodStatus`, `convertContainerStatusResources`, pkg/kubelet/kubelet_pods.go), the
 * resize conditions (pkg/kubelet/status/status_manager.go) and the resize events' message
 * (pkg/kubelet/events/event.go). Pure; what a resize needs and how it is applied are resize.ts
 * and resize-apply.ts.
 */
import type { Container, ContainerStatus, Pod, PodCondition, PodStatus } from '../api/types.js';
import { quantityOf } from '../api/quantity.js';
import { milliCPUToShares, podCgroupResources } from '../cgroups/pod-resources.js';
import type { RuntimePod } from '../runtime/types.js';
import { resizableContainers } from './allocation.js';
import type { Resources } from './allocation-state.js';
import { MIN_MILLI_CPU_LIMIT, MIN_SHARES, desiredAmounts, formatBytes, formatMilli, milli, newestRunning, withPodLevel } from './resize.js';

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
 * its spelling; pod-level requests are reported as the spec has them.
 */
export function withPodLevelStatus(status: PodStatus, allocated: Pod, actuated: Resources | undefined, podRequestsOf: (pod: Pod) => ReadonlyMap<string, bigint>): PodStatus {
  const spec = allocated.spec?.resources;
  const allocatedResources: Record<string, string> = {};
  // resource.PodRequests takes a pod-level request as the spec holds it (a Quantity: its spelling
  // and a sub-unit amount such as memory "10m" kept, which nodelet's byte count would round).
  for (const [name, amount] of podRequestsOf(allocated)) {
    const own = spec?.requests?.[name];
    allocatedResources[name] = own !== undefined ? String(own) : formatAmount(name, amount);
  }
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
