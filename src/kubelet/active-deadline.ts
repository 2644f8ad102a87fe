import type { Pod } from '../api/types.js';
import type { StatusManager } from '../status/manager.js';

/**
 * `activeDeadlineSeconds` (the kubelet's `activeDeadlineHandler`, pkg/kubelet/active_deadline.go):
 * milliseconds left of the pod's deadline counted from its start time (the status last published,
 * else the pod's own), 0 once it passed, undefined without one.
 */
export function activeDeadlineLeft(pod: Pod, status: Pick<StatusManager, 'getPodStatus'>): number | undefined {
  const seconds = pod.spec?.activeDeadlineSeconds;
  if (seconds == null) return undefined;
  const start = status.getPodStatus(pod.metadata?.uid ?? '')?.startTime ?? pod.status?.startTime;
  if (!start) return undefined;
  return Math.max(0, Date.parse(start) + seconds * 1000 - Date.now());
}
