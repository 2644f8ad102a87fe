import type { ContainerState, ContainerStatus, PodCondition, PodStatus } from '../api/types.js';
import { rfc3339 } from '../api/time.js';
import { STATUS_MESSAGE_LIMIT, truncateMessage } from '../api/truncate.js';

/** The kubelet's `MaxPodTerminationMessageLogLength`: a pod's termination messages share 12 KiB. */
export const MAX_POD_TERMINATION_MESSAGE_LENGTH = 12 * 1024;

const byName = (a: { name: string }, b: { name: string }) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const byType = (a: PodCondition, b: PodCondition) => (a.type < b.type ? -1 : a.type > b.type ? 1 : 0);

/**
 * A normalized copy of `status` (the kubelet's `normalizeStatus`), so statuses compare equal when
 * only representation differs: timestamps in RFC3339 seconds, regular and ephemeral container
 * statuses sorted by name (init containers keep their order, which is meaningful), termination
 * messages cut to an equal share of the pod's budget (by `truncateMessage`, so a cut one ends in
 * ` ...` where the kubelet just stops). Undefined fields are dropped, as on
 * the wire. The input is not modified.
 *
 * Every `message` (the pod's, a condition's, a container state's) is also cut to
 * `STATUS_MESSAGE_LIMIT`, during the copy, so an oversized message is never copied whole: what
 * the status cache, `/pods` and the apiserver PATCH carry stays bounded whatever a message held.
 */
export function normalizeStatus(status: PodStatus): PodStatus {
  const out = JSON.parse(JSON.stringify(status, boundMessages)) as PodStatus;
  if (out.startTime) out.startTime = rfc3339(out.startTime);
  for (const c of out.conditions ?? []) {
    if (c.lastProbeTime) c.lastProbeTime = rfc3339(c.lastProbeTime);
    if (c.lastTransitionTime) c.lastTransitionTime = rfc3339(c.lastTransitionTime);
  }
  const lists = [out.initContainerStatuses, out.containerStatuses, out.ephemeralContainerStatuses];
  const count = lists.reduce((n, l) => n + (l?.length ?? 0), 0);
  const share = Math.floor(MAX_POD_TERMINATION_MESSAGE_LENGTH / Math.max(1, count));
  for (const cs of lists.flatMap((l) => l ?? [])) {
    normalizeState(cs.state, share);
    normalizeState(cs.lastState, share);
  }
  out.containerStatuses?.sort(byName);
  out.ephemeralContainerStatuses?.sort(byName);
  return out;
}

/** `JSON.stringify`'s replacer: any string-valued `message` is cut to `STATUS_MESSAGE_LIMIT`. */
function boundMessages(key: string, value: unknown): unknown {
  return key === 'message' && typeof value === 'string' ? truncateMessage(value, STATUS_MESSAGE_LIMIT) : value;
}

function normalizeState(state: ContainerState | undefined, messageLimit: number): void {
  if (state?.running?.startedAt) state.running.startedAt = rfc3339(state.running.startedAt);
  const t = state?.terminated;
  if (!t) return;
  if (t.startedAt) t.startedAt = rfc3339(t.startedAt);
  if (t.finishedAt) t.finishedAt = rfc3339(t.finishedAt);
  if (t.message) t.message = truncateMessage(t.message, messageLimit);
}

/**
 * Whether two statuses say the same (the kubelet's `isPodStatusByKubeletEqual`): conditions are
 * compared by type, ignoring `lastProbeTime`; container status order does not matter.
 */
export function isStatusEqual(a: PodStatus, b: PodStatus): boolean {
  return jsonEqual(comparable(a), comparable(b));
}

function comparable(s: PodStatus): PodStatus {
  const sorted = (l: ContainerStatus[] | undefined) => (l ? [...l].sort(byName) : undefined);
  return {
    ...s,
    conditions: (s.conditions ?? []).map(({ lastProbeTime: _ignored, ...c }) => c).sort(byType),
    containerStatuses: sorted(s.containerStatuses),
    ephemeralContainerStatuses: sorted(s.ephemeralContainerStatuses),
  };
}

/** Deep equality of JSON values, where an undefined property is the same as an absent one. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = (r: Record<string, unknown>) => Object.keys(r).filter((k) => r[k] !== undefined);
  const ka = keys(ra);
  return ka.length === keys(rb).length && ka.every((k) => jsonEqual(ra[k], rb[k]));
}

/**
 * `value` as the apiserver gives it back: null, `''`, `[]` and `{}` — at any depth — are absent,
 * as Go's `omitempty` drops them (and a `metav1.Time` zero value is null). So an object nodelet
 * built compares equal to the copy the apiserver returns of it.
 */
export function withoutEmpty(value: unknown): unknown {
  if (value === null || value === '') return undefined;
  if (Array.isArray(value)) {
    const items = value.map(withoutEmpty);
    return items.length === 0 ? undefined : items;
  }
  if (typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const kept = withoutEmpty(v);
    if (kept !== undefined) out[k] = kept;
  }
  return Object.keys(out).length === 0 ? undefined : out;
}
