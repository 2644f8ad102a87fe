import type { Container, Pod } from '../api/types.js';
import { computePodQOS, type PodQOSClass } from '../api/qos.js';
import { quantityOf } from '../api/quantity.js';
import { containersTotal, podLevelRequests, type Amounts as PodAmounts } from '../api/pod-requests.js';

/**
 * What one cgroup is given, in the kubelet's terms (`ResourceConfig`, pkg/kubelet/cm/types.go):
 * each field absent is left as the cgroup has it.
 */
export interface CgroupResources {
  /** cgroup v1 `cpu.shares` (v2 `cpu.weight` is derived from it, as runc does). */
  readonly cpuShares?: number;
  /** CFS quota in µs per `cpuPeriod`; -1: unlimited. */
  readonly cpuQuota?: number;
  readonly cpuPeriod?: number;
  /** Memory limit in bytes. */
  readonly memoryLimit?: bigint;
  /** Most processes (`pids.max`); -1: unlimited. */
  readonly pidsLimit?: number;
}

// pkg/kubelet/cm/helpers_linux.go
export const MIN_SHARES = 2;
export const MAX_SHARES = 262144;
const SHARES_PER_CPU = 1024;
const MILLI_CPU_TO_CPU = 1000;
/** The CFS period the kubelet uses unless CPUCFSQuotaPeriod (alpha, off) changes it: 100 ms. */
export const QUOTA_PERIOD = 100_000;
const MIN_QUOTA_PERIOD = 1000;

/** `MilliCPUToShares`: 2 for nothing requested (the kernel's floor), else 1024 per core, clamped. */
export function milliCPUToShares(milliCPU: bigint): number {
  if (milliCPU === 0n) return MIN_SHARES;
  const shares = (milliCPU * BigInt(SHARES_PER_CPU)) / BigInt(MILLI_CPU_TO_CPU);
  if (shares < BigInt(MIN_SHARES)) return MIN_SHARES;
  if (shares > BigInt(MAX_SHARES)) return MAX_SHARES;
  return Number(shares);
}

/** `MilliCPUToQuota`: 0 for no limit, else the limit over `period`, at least 1 ms. */
export function milliCPUToQuota(milliCPU: bigint, period = QUOTA_PERIOD): number {
  if (milliCPU === 0n) return 0;
  const quota = (milliCPU * BigInt(period)) / BigInt(MILLI_CPU_TO_CPU);
  return quota < BigInt(MIN_QUOTA_PERIOD) ? MIN_QUOTA_PERIOD : Number(quota);
}

/** cgroup v2 `cpu.weight` for v1 shares, as runc converts (`ConvertCPUSharesToCgroupV2Value`). */
export function sharesToWeight(shares: number): number {
  if (shares === 0) return 0;
  return 1 + Math.floor(((shares - 2) * 9999) / 262142);
}

type Amounts = PodAmounts<'cpu' | 'memory'>;

/** The resources of a pod's cgroup that the kubelet sums: cpu in millicores, memory in bytes. */
const POD_CGROUP_RESOURCES = ['cpu', 'memory'] as const;

function amountsOf(list: Readonly<Record<string, string | number>> | undefined): Amounts {
  const out: Amounts = new Map();
  for (const name of POD_CGROUP_RESOURCES) {
    const value = list?.[name];
    if (value === undefined) continue;
    const nano = quantityOf(value);
    // Quantity.MilliValue() for cpu, Value() for memory: both round up.
    const unit = name === 'cpu' ? 1_000_000n : 1_000_000_000n;
    out.set(name, nano <= 0n ? 0n : (nano + unit - 1n) / unit);
  }
  return out;
}

/**
 * `resource.PodRequests` / `PodLimits` (k8s.io/component-helpers/resource/helpers.go) of cpu and
 * memory: regular containers and sidecars summed, raised to what any init container needs while
 * it runs (its own plus the sidecars started before it); pod-level `spec.resources` replace the
 * sum for what they name; `overhead` is added (to limits only where a limit is set). `each` sees
 * every container's own list (an init container's with the sidecars before it), as `ContainerFn`.
 */
function aggregate(pod: Pod, pick: (c: Container) => Readonly<Record<string, string | number>> | undefined, podLevel: Readonly<Record<string, string | number>> | undefined, limits: boolean, each?: (a: Amounts) => void): Amounts {
  const total = containersTotal(pod, (c) => amountsOf(pick(c)), each);
  for (const [k, v] of amountsOf(podLevel)) total.set(k, v);
  const overhead = amountsOf(pod.spec?.overhead);
  for (const [k, v] of overhead) {
    if (!limits) total.set(k, (total.get(k) ?? 0n) + v);
    else if ((total.get(k) ?? 0n) > 0n) total.set(k, (total.get(k) ?? 0n) + v);
  }
  return total;
}

/** A container's requests, its limits standing in where the apiserver's defaulting would copy them. */
const requestsOf = (c: Container) => ({ ...c.resources?.limits, ...c.resources?.requests });

export interface PodCgroupOptions {
  /** `podPidsLimit`: the pod cgroup's `pids.max`; -1 (the default) leaves it unlimited. */
  readonly podPidsLimit: number;
  /** `cpuCFSQuota` (true): false leaves CPU limits unenforced (quota -1). */
  readonly enforceCPULimits?: boolean;
}

/**
 * The pod cgroup's resources, as the kubelet's `ResourceConfigForPod` (pkg/kubelet/cm/
 * helpers_linux.go) computes them: cpu shares from the summed requests for every class
 * (BestEffort: the floor of 2); Guaranteed: the CFS quota and the memory limit from the summed
 * limits; Burstable: each only when every container limits it (or the pod-level limits name
 * it), else none; plus `podPidsLimit`.
 */
export function podCgroupResources(pod: Pod, opts: PodCgroupOptions): CgroupResources & { readonly qos: PodQOSClass } {
  const podLevel = pod.spec?.resources;
  const requests = aggregate(pod, requestsOf, podLevelRequests(pod), false);
  let cpuLimitsDeclared = true;
  let memoryLimitsDeclared = true;
  const limits = aggregate(pod, (c) => c.resources?.limits, podLevel?.limits, true, (own) => {
    if (!own.get('cpu')) cpuLimitsDeclared = false;
    if (!own.get('memory')) memoryLimitsDeclared = false;
  });
  if (podLevel?.limits) {
    if (amountsOf(podLevel.limits).get('cpu')) cpuLimitsDeclared = true;
    if (amountsOf(podLevel.limits).get('memory')) memoryLimitsDeclared = true;
  }
  const qos = computePodQOS(pod);
  const pids = opts.podPidsLimit > 0 ? { pidsLimit: opts.podPidsLimit } : {};
  const cpuShares = milliCPUToShares(requests.get('cpu') ?? 0n);
  const cpuQuota = opts.enforceCPULimits === false ? -1 : milliCPUToQuota(limits.get('cpu') ?? 0n);
  const memoryLimit = limits.get('memory') ?? 0n;
  if (qos === 'Guaranteed') return { qos, cpuShares, cpuQuota, cpuPeriod: QUOTA_PERIOD, memoryLimit, ...pids };
  if (qos === 'Burstable') {
    return {
      qos,
      cpuShares,
      ...(cpuLimitsDeclared ? { cpuQuota, cpuPeriod: QUOTA_PERIOD } : {}),
      ...(memoryLimitsDeclared ? { memoryLimit } : {}),
      ...pids,
    };
  }
  return { qos, cpuShares: MIN_SHARES, ...pids };
}

/** `AggregateContainerRequests` of memory, in bytes: the containers' needs without pod-level requests or overhead. */
export function containerMemoryRequests(pod: Pod): bigint {
  return aggregate(pod, requestsOf, undefined, true).get('memory') ?? 0n;
}

/** The summed cpu requests in millicores (`resource.PodRequests`): the Burstable QoS cgroup's shares add them up. */
export function podCPURequestMilli(pod: Pod): bigint {
  return aggregate(pod, requestsOf, podLevelRequests(pod), false).get('cpu') ?? 0n;
}

/**
 * The cgroup of a pod, as a path below the node's `kubepods` cgroup (pkg/kubelet/cm/
 * pod_container_manager_linux.go `GetPodContainerName`): Guaranteed pods sit right in it, the
 * others in their QoS class's `burstable` or `besteffort`; the pod's is `pod<uid>`.
 */
export function podCgroupPath(qos: PodQOSClass, uid: string): readonly string[] {
  const leaf = `pod${uid}`;
  if (qos === 'Guaranteed') return [leaf];
  return [qos === 'Burstable' ? 'burstable' : 'besteffort', leaf];
}
