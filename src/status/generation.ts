import type { Pod } from '../api/types.js';

/**
 * The generation a status of `pod` reports having acted on (`status.observedGeneration` and each
 * kubelet condition's): its `metadata.generation`, which the apiserver sets to 1 on create and
 * bumps on every spec change (PodObservedGenerationTracking: beta and on in 1.34, GA in 1.35;
 * `CalculatePodStatusObservedGeneration` and `CalculatePodConditionObservedGeneration` in
 * pkg/api/v1/pod/util.go). `undefined` for a pod that has none (a static pod read from its
 * file), whose zero Go's omitempty leaves off the wire.
 */
export function observedGenerationOf(pod: Pod): number | undefined {
  const g = pod.metadata?.generation;
  return typeof g === 'number' && Number.isSafeInteger(g) && g > 0 ? g : undefined;
}
