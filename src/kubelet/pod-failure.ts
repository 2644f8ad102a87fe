import type { Pod } from '../api/types.js';
import { rfc3339 } from '../api/time.js';
import type { generatePodStatus } from './pod-status.js';

/**
 * How the node itself ends a pod, apart from its containers exiting: its active deadline, and
 * graceful node shutdown — the failed status each leaves, and the shutdown's plan.
 */

/** The kubelet's `activeDeadlineHandler` verdict. */
export const deadlineExceeded: PodFailure = { reason: 'DeadlineExceeded', message: 'Pod was active on the node longer than the specified deadline' };

/** How a pod the node ends fails: its status reason and message, and the disruption condition it gets. */
export interface PodFailure {
  readonly reason: string;
  readonly message: string;
  /** `DisruptionTarget` True with this reason (the node, not the pod, ended it). */
  readonly disruption?: string;
  /** The caller recorded the pod's event itself (the eviction manager's `Evicted`, with annotations). */
  readonly eventRecorded?: boolean;
}

// pkg/kubelet/nodeshutdown/nodeshutdown_manager.go
const NODE_SHUTDOWN_MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
export const nodeShutdown: PodFailure = { reason: 'Terminated', message: NODE_SHUTDOWN_MESSAGE, disruption: 'TerminationByKubelet' };
export const nodeShutdownRefusal = { reason: 'NodeShutdown', message: 'Pod was rejected as the node is shutting down.' };

/**
 * The failed status of a pod the node ended: phase `Failed` (a pod that already Succeeded keeps
 * it, as the shutdown manager does), the reason and message, and `DisruptionTarget` when given.
 */
export function failedStatus(generated: ReturnType<typeof generatePodStatus>, failure: PodFailure, pod: Pod): ReturnType<typeof generatePodStatus> {
  const status = { ...generated, phase: generated.phase === 'Succeeded' && failure.disruption ? 'Succeeded' : 'Failed', reason: failure.reason, message: failure.message };
  if (!failure.disruption) return status;
  const previous = pod.status?.conditions?.find((c) => c.type === 'DisruptionTarget' && c.status === 'True');
  const condition = {
    type: 'DisruptionTarget',
    status: 'True',
    reason: failure.disruption,
    message: failure.message,
    lastTransitionTime: previous?.lastTransitionTime ?? rfc3339(new Date()),
    ...(pod.metadata?.generation !== undefined ? { observedGeneration: pod.metadata.generation } : {}),
  };
  return { ...status, conditions: [...(status.conditions ?? []).filter((c) => c.type !== 'DisruptionTarget'), condition] };
}

/** One priority group of graceful node shutdown: pods from `priority` up, stopped within `graceSeconds`. */
export interface ShutdownGroup {
  readonly priority: number;
  readonly graceSeconds: number;
}

/**
 * `groupByPriority` (nodeshutdown_manager.go): the groups lowest priority first, each with the
 * pods whose `spec.priority` (0 when unset) is at or above its priority and below the next
 * group's; pods below every group go to the first.
 */
export function shutdownPlan(groups: readonly ShutdownGroup[], pods: readonly Pod[]): { group: ShutdownGroup; pods: Pod[] }[] {
  const plan = [...groups].sort((a, b) => a.priority - b.priority).map((group) => ({ group, pods: [] as Pod[] }));
  for (const pod of pods) {
    const priority = pod.spec?.priority ?? 0;
    let index = 0;
    plan.forEach((g, i) => {
      if (g.group.priority <= priority) index = i;
    });
    plan[index]?.pods.push(pod);
  }
  return plan;
}

/** A pod's grace period in its group: the group's, or the pod's own when shorter. */
export function shutdownGrace(pod: Pod, group: ShutdownGroup): number {
  const own = pod.spec?.terminationGracePeriodSeconds;
  return own !== undefined && own !== null && own <= group.graceSeconds ? own : group.graceSeconds;
}
