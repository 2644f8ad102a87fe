import type { Container, Pod } from '../api/types.js';
import { getPodQOS } from '../api/qos.js';
import { quantityOf } from '../api/quantity.js';
import { isStaticPod } from '../api/annotations.js';
import { containerMemoryRequests } from './pod-resources.js';

// pkg/kubelet/qos/policy.go
/** The sandbox (pause) container's score: below every container of its pod. */
export const POD_INFRA_OOM_ADJ = -998;
const GUARANTEED_OOM_ADJ = -997;
const BEST_EFFORT_OOM_ADJ = 1000;

/** `scheduling.SystemCriticalPriority`: priorities from here up are the system's critical ones. */
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/**
 * `types.IsNodeCriticalPod` (pkg/kubelet/types/pod_update.go): a critical pod (static, mirror, or
 * of a system-critical priority) of the `system-node-critical` priority class.
 */
export function isNodeCriticalPod(pod: Pod): boolean {
  const spec = pod.spec;
  const critical = isStaticPod(pod) || (spec?.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY;
  return critical && spec?.priorityClassName === 'system-node-critical';
}

const bytes = (v: string | number | undefined) => {
  const nano = quantityOf(v);
  return nano <= 0n ? 0n : (nano + 999_999_999n) / 1_000_000_000n;
};

/** A container's memory request, its limit standing in as the apiserver's defaulting copies it. */
const memoryRequest = (c: Container) => bytes(c.resources?.requests?.memory ?? c.resources?.limits?.memory);

/**
 * `GetContainerOOMScoreAdjust` (pkg/kubelet/qos/policy.go): node-critical and Guaranteed pods'
 * containers -997, BestEffort 1000, Burstable `1000 − 1000 × request / capacity` (with pod-level
 * requests, the part no container claims shared out equally), a sidecar no higher than the
 * pod's smallest regular container, clamped to 3…999 so Guaranteed stays below and BestEffort
 * above.
 */
export function containerOOMScoreAdjust(pod: Pod, container: Container, memoryCapacity: bigint): number {
  if (isNodeCriticalPod(pod)) return GUARANTEED_OOM_ADJ;
  const qos = getPodQOS(pod);
  if (qos === 'Guaranteed') return GUARANTEED_OOM_ADJ;
  if (qos === 'BestEffort') return BEST_EFFORT_OOM_ADJ;
  if (memoryCapacity <= 0n) return BEST_EFFORT_OOM_ADJ - 1;
  const remaining = remainingPodMemoryPerContainer(pod);
  const score = (request: bigint) => 1000n - (1000n * (request + remaining)) / memoryCapacity;
  let adjust = score(memoryRequest(container));
  const sidecar = (pod.spec?.initContainers ?? []).some((c) => c.name === container.name && c.restartPolicy === 'Always');
  if (sidecar) {
    // minRegularContainerMemory (pkg/kubelet/qos/helpers.go).
    const regular = (pod.spec?.containers ?? []).map(memoryRequest);
    const min = regular.length ? regular.reduce((a, b) => (b < a ? b : a)) : 0n;
    const minScore = score(min);
    if (adjust > minScore) adjust = minScore;
  }
  if (adjust < BigInt(1000 + GUARANTEED_OOM_ADJ)) return 1000 + GUARANTEED_OOM_ADJ;
  if (adjust === BigInt(BEST_EFFORT_OOM_ADJ)) return BEST_EFFORT_OOM_ADJ - 1;
  return Number(adjust);
}

/**
 * `remainingPodMemReqPerContainer` (pkg/kubelet/qos/helpers.go): the pod-level memory request
 * minus what its containers need together, split over all its containers, init ones included;
 * 0 without a pod-level request.
 */
function remainingPodMemoryPerContainer(pod: Pod): bigint {
  const podLevel = pod.spec?.resources;
  const podRequest = bytes(podLevel?.requests?.memory ?? podLevel?.limits?.memory);
  if (podRequest === 0n) return 0n;
  const count = BigInt((pod.spec?.containers ?? []).length + (pod.spec?.initContainers ?? []).length);
  if (count === 0n) return 0n;
  return (podRequest - containerMemoryRequests(pod)) / count;
}

/**
 * The score as the engine can set it: lowering a process's `oom_score_adj` below 0 needs
 * `CAP_SYS_RESOURCE` (proc(5), `oom_score_adj_min`), and without it runc's write fails and the
 * container with it. Where the host withholds that capability, negative scores become 0 — the
 * least a container can get there, still below every Burstable and BestEffort one.
 */
export function settableOOMScore(score: number, canLower: boolean): number {
  return !canLower && score < 0 ? 0 : score;
}
