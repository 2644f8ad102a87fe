import { podFullName } from '../api/names.js';
import type { Pod } from '../api/types.js';
import { aggregate, validatePod } from '../api/validation.js';
import { filterInvalidPods, incumbentsFirst, reportInvalidPod, uidErrors, type EventSink } from './invalid.js';
import type { Logger } from '../logging/index.js';
import { isMirrorPod, localAnnotations } from '../api/annotations.js';
import type { PodManager } from './manager.js';
import { jsonEqual } from '../status/normalize.js';

/** What one `PodConfig.update` changed, by UID. */
export interface PodDiff {
  added: Pod[];
  updated: Pod[];
  removed: Pod[];
}

export interface PodConfigOptions {
  manager: PodManager;
  recorder: EventSink;
  log: Logger;
  onChange: (diff: PodDiff) => void;
  /**
   * A pod of `source` was refused (invalid, or a duplicate name or UID), with the reason. Cluster
   * mode reports such apiserver pods as `Failed`, as the kubelet does with pods it rejects.
   */
  onRejected?: (source: string, pod: Pod, message: string) => void;
}

/**
 * The kubelet's config merger (`PodConfig`/`podStorage` in pkg/kubelet/config/config.go) in
 * snapshot mode: each source (`file`, `http`, `api`) reports its complete pod set, invalid and
 * duplicate pods are dropped with an event, and the difference to that source's previous set is
 * applied to the pod manager and reported.
 */
export class PodConfig {
  readonly #o: PodConfigOptions;
  readonly #listeners = new Set<(diff: PodDiff) => void>();
  readonly #snapshotListeners = new Set<(source: string) => void>();
  /** Per source: its accepted pods by UID. */
  readonly #sources = new Map<string, Map<string, Pod>>();
  /**
   * Per source: the objects it delivered last, by UID. The stored pod may be another object (the
   * first one kept, with a newer status), so an unchanged pod is recognised by this one.
   */
  readonly #delivered = new Map<string, Map<string, Pod>>();

  constructor(opts: PodConfigOptions) {
    this.#o = opts;
  }

  /** Also tells `listener` of every change, after `onChange`. Returns the function that stops it. */
  onPodsChanged(listener: (diff: PodDiff) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Tells `listener` of every snapshot a source delivered (changed or not), after it was applied. Returns the function that stops it. */
  onSnapshot(listener: (source: string) => void): () => void {
    this.#snapshotListeners.add(listener);
    return () => this.#snapshotListeners.delete(listener);
  }

  /** Sets the complete pod set of `source`. */
  update(source: string, pods: readonly Pod[]): void {
    const otherNames = new Set<string>();
    const otherUIDs = new Set<string>();
    for (const [name, set] of this.#sources) {
      if (name === source) continue;
      for (const [uid, pod] of set) {
        otherUIDs.add(uid);
        if (!isMirrorPod(pod)) otherNames.add(podFullName(pod));
      }
    }
    const previous = this.#sources.get(source) ?? new Map<string, Pod>();
    const lastDelivered = this.#delivered.get(source) ?? new Map<string, Pod>();
    // A pod this source already delivered, under the same UID and full name: it keeps its name
    // and UID against a newcomer claiming either (a new manifest copying its `metadata.uid`).
    const incumbent = (pod: Pod) => {
      const old = previous.get(pod.metadata?.uid ?? '');
      return old !== undefined && podFullName(old) === podFullName(pod);
    };
    const valid = this.#uniqueUIDs(filterInvalidPods(pods, source, this.#o.recorder, this.#o.log, otherNames, incumbent), pods, source, otherUIDs, incumbent);

    if (this.#o.onRejected) {
      const accepted = new Set(valid);
      for (const pod of pods) {
        if (accepted.has(pod)) continue;
        // aggregate([]) is "[]": a pod that is valid and has a good UID was refused as a duplicate.
        const errs = validatePod(pod);
        const why = errs.length ? errs : uidErrors(pod);
        this.#o.onRejected(source, pod, why.length ? aggregate(why) : 'Duplicate value: the name or UID is taken by another pod on this node');
      }
    }

    const next = new Map<string, Pod>();
    const diff: PodDiff = { added: [], updated: [], removed: [] };
    for (const pod of valid) {
      const uid = pod.metadata?.uid ?? '';
      const old = previous.get(uid);
      if (old && lastDelivered.get(uid) === pod) {
        // The very object this source delivered last time (a source that keeps unchanged pods,
        // as ApiPodSource does): nothing to compare.
        next.set(uid, old);
      } else if (!old) {
        diff.added.push(pod);
        next.set(uid, pod);
      } else if (podsDifferSemantically(old, pod)) {
        diff.updated.push(pod);
        next.set(uid, pod);
      } else {
        // Unchanged for the kubelet: keep the stored object (and so its first-seen time), as
        // checkAndUpdatePod does, but take a new status.
        next.set(uid, jsonEqual(old.status, pod.status) ? old : { ...old, status: pod.status });
      }
    }
    for (const [uid, old] of previous) if (!next.has(uid)) diff.removed.push(old);
    this.#sources.set(source, next);
    this.#delivered.set(source, new Map(valid.map((pod) => [pod.metadata?.uid ?? '', pod])));

    const m = this.#o.manager;
    for (const pod of diff.removed) m.deletePod(pod);
    // Only what changed: a pod the manager holds as this very object stays (every watch event of a
    // source re-delivers its whole set; re-adding each pod made every event cost O(pods) updates
    // and change notifications).
    for (const pod of next.values()) if (!m.holds(pod)) m.updatePod(pod);
    if (diff.added.length + diff.updated.length + diff.removed.length > 0) {
      this.#o.onChange(diff);
      for (const listener of this.#listeners) listener(diff);
    }
    for (const listener of this.#snapshotListeners) listener(source);
  }

  /** Sources that have reported at least once (the kubelet's `SeenAllSources` input). */
  seenSources(): ReadonlySet<string> {
    return new Set(this.#sources.keys());
  }

  /**
   * The pod manager keys by UID, so a UID may appear once across all sources. File pods get
   * hash UIDs, but a manifest may set `metadata.uid` itself: a second pod with a UID taken is
   * refused (`reportInvalidPod`: a warning and a `FailedValidation` event), the pod running with it
   * (`incumbent`) keeps it.
   */
  #uniqueUIDs(valid: Pod[], batch: readonly Pod[], source: string, otherUIDs: ReadonlySet<string>, incumbent: (pod: Pod) => boolean): Pod[] {
    const holders = new Map<string, Pod>();
    const accepted = new Set<Pod>();
    for (const i of incumbentsFirst(valid, incumbent)) {
      const pod = valid[i] as Pod;
      const uid = pod.metadata?.uid ?? '';
      if (!holders.has(uid) && !otherUIDs.has(uid)) {
        holders.set(uid, pod);
        accepted.add(pod);
        continue;
      }
      reportInvalidPod(pod, batch.indexOf(pod), source, [`metadata.uid: Duplicate value: ${JSON.stringify(uid)}`], this.#o.recorder, this.#o.log);
    }
    return valid.filter((pod) => accepted.has(pod));
  }
}

/**
 * The kubelet's `podsDifferSemantically`: spec, labels, deletion fields and annotations other
 * than the kubelet's own (source, seen, mirror) count; status and first-seen time do not.
 */
export function podsDifferSemantically(a: Pod, b: Pod): boolean {
  // Compared as JSON values (key order and undefined properties aside), without serialising both.
  const view = (p: Pod) => ({
    spec: p.spec,
    labels: p.metadata?.labels ?? {},
    deletionTimestamp: p.metadata?.deletionTimestamp,
    deletionGracePeriodSeconds: p.metadata?.deletionGracePeriodSeconds,
    annotations: Object.fromEntries(Object.entries(p.metadata?.annotations ?? {}).filter(([k]) => !localAnnotations.has(k))),
    // Not compared by the kubelet (it never renames by UID), but a rename must reach the manager.
    name: p.metadata?.name,
    namespace: p.metadata?.namespace,
  });
  return !jsonEqual(view(a), view(b));
}
