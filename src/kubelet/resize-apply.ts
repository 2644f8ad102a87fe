/**
 * In-place resize, applied: the kubelet's `doPodResizeAction` and `updatePodContainerResources`
 * (pkg/kubelet/kuberuntime/kuberuntime_manager.go) — a plan of resize.ts written to the pod cgroup
 * and the containers in the order that keeps every container's limit within its pod's. The node's
 * side (engine updates, cgroup writes) is the `ResizeExecutor` it is handed.
 */
import type { Pod } from '../api/types.js';
import type { CgroupResources } from '../cgroups/pod-resources.js';
import type { Resources } from './allocation-state.js';
import { memoryShrinkRefusal, resourcesFromAmounts, type ContainerAmounts, type PodResizePlan } from './resize.js';

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
  /** Container `name` now has its allocated memory (limit and request: `setActuatedContainerResources`). */
  memoryApplied?(name: string): void;
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
      exec.memoryApplied?.(u.name);
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
