import { isMirrorPod } from '../api/annotations.js';
import { isValidUID, podFullName } from '../api/names.js';
import type { Pod } from '../api/types.js';
import { aggregate, validatePod } from '../api/validation.js';
import type { EventRecorder } from '../events/recorder.js';
import type { Logger } from '../logging/index.js';

// Reporting pods a source sent that fail validation: api/validation.ts finds, this logs and records.

/** Where filterInvalidPods records its events; satisfied by EventRecorder. */
export type EventSink = Pick<EventRecorder, 'record'>;

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/**
 * The kubelet's `filterInvalidPods` (pkg/kubelet/config): drops pods failing validation or whose
 * full name repeats one earlier in the batch or one in `existingFullNames` (other sources' pods),
 * logging a warning and recording a `FailedValidation` event for each; keeps the rest in order.
 * `existingFullNames` holds regular (non-mirror) pods only. Unlike the apiserver, the kubelet
 * also needs a UID to key the pod by. Pods for which `incumbent` holds are checked first (see
 * `incumbentsFirst`); the result keeps the batch order.
 */
export function filterInvalidPods(
  pods: readonly Pod[],
  source: string,
  recorder: EventSink,
  log: Logger,
  existingFullNames: ReadonlySet<string> = new Set(),
  incumbent: (pod: Pod) => boolean = () => false,
): Pod[] {
  const names = new Set<string>();
  const mirrorNames = new Set<string>();
  const accepted = new Set<Pod>();
  for (const i of incumbentsFirst(pods, incumbent)) {
    const pod = pods[i] as Pod;
    const errs = [...podErrors(pod)];
    // If validation fails, don't trust the pod any further: even its name could be bad.
    if (errs.length === 0) {
      const full = podFullName(pod);
      // A mirror pod shares its static pod's full name by design; only mirrors clash with mirrors.
      const mirror = isMirrorPod(pod);
      const seen = mirror ? mirrorNames : names;
      if (seen.has(full) || (!mirror && existingFullNames.has(full))) errs.push(`metadata.name: Duplicate value: ${JSON.stringify(pod.metadata?.name ?? '')}`);
      else seen.add(full);
    }
    if (errs.length === 0) {
      accepted.add(pod);
      continue;
    }
    reportInvalidPod(pod, i, source, errs, recorder, log);
  }
  return pods.filter((pod) => accepted.has(pod));
}

/**
 * A pod's own errors (validation, then its UID), remembered per object: a source hands the same
 * object again while the pod is unchanged (ApiPodSource keeps it across snapshots), and pods are
 * never mutated once delivered, so each one is validated once rather than at every snapshot.
 */
const ownErrors = new WeakMap<Pod, readonly string[]>();
function podErrors(pod: Pod): readonly string[] {
  let errs = ownErrors.get(pod);
  if (errs === undefined) {
    const found = validatePod(pod);
    errs = found.length ? found : uidErrors(pod);
    ownErrors.set(pod, errs);
  }
  return errs;
}

/**
 * What the kubelet needs of a pod beyond the apiserver's validation: a UID to key it by. And
 * nodelet's own rule: the UID names the pod's directories and log paths, and the routes take only
 * such UIDs, so a manifest's own `metadata.uid` cannot hold `/`, `..` or a newline.
 */
export function uidErrors(pod: Pod): string[] {
  const uid: unknown = pod.metadata?.uid;
  if (!uid) return ['metadata.uid: Required value'];
  if (typeof uid === 'string' && !isValidUID(uid)) return [`metadata.uid: Invalid value: ${JSON.stringify(uid.length > 64 ? `${uid.slice(0, 64)}...` : uid)}: must be a UID (1-64 characters of [0-9a-zA-Z-])`];
  return [];
}

/**
 * The batch's indices with the `incumbent` pods (those the node already runs) first, each group
 * in batch order: of two pods claiming one name or UID the one running keeps it, wherever a new
 * manifest sorts. (The kubelet keeps the first in its source's order, so a new file sorting
 * earlier would replace a running pod.)
 */
export function incumbentsFirst(pods: readonly Pod[], incumbent: (pod: Pod) => boolean): number[] {
  const first: number[] = [];
  const rest: number[] = [];
  pods.forEach((pod, i) => (incumbent(pod) ? first : rest).push(i));
  return [...first, ...rest];
}

/**
 * Logs and records (reason `FailedValidation`) a pod a source sent that the kubelet ignores, in
 * `filterInvalidPods`' words. `index` is the pod's 0-based position in the source's batch.
 */
export function reportInvalidPod(pod: Pod, index: number, source: string, errs: readonly string[], recorder: EventSink, log: Logger): void {
  const meta: unknown = pod?.metadata;
  const m = isRecord(meta) ? meta : {};
  const name = str(m.name);
  const namespace = str(m.namespace);
  const ident = bestPodIdentString(name, namespace);
  const err = aggregate(errs);
  log.warn({ pod: `${namespace}/${name}`, source, errors: errs }, `Pod[${index + 1}] (${ident}) from ${source} failed validation, ignoring: ${err}`);
  // Only well-typed identity fields reach the event, whatever the pod held.
  const uid = str(m.uid);
  const subject = { metadata: { name, namespace: namespace || 'default', ...(uid ? { uid } : {}) } };
  recorder.record(subject, 'Warning', 'FailedValidation', `Error validating pod ${ident} from ${source}, ignoring: ${err}`);
}

/** The kubelet's `bestPodIdentString`: `name.namespace` with placeholders for empty parts. */
function bestPodIdentString(name: string, namespace: string): string {
  return `${name || '<empty-name>'}.${namespace || '<empty-namespace>'}`;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
