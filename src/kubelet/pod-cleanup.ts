import type { Pod } from '../api/types.js';
import type { RuntimePod } from '../runtime/types.js';
import type { PodKiller } from './kill.js';
import type { ResizeManager } from './resize-manager.js';

export interface PodCleanupOptions {
  /** Whether every source delivered its first snapshot: before that, a pod no source knows may be one to adopt. */
  sourcesReady: () => boolean;
  /** The pod left its source: whoever waits for its end is told (`PodTerminator.ended`). */
  ended: (uid: string) => void;
  killer: Pick<PodKiller, 'killPod'>;
  /** Lists the runtime again. */
  relist: () => Promise<void>;
  /** The per-pod memories forgotten together once nothing of the pod is left, in this order. */
  memories: readonly { forget: (uid: string) => void }[];
  /** Then its published status (`StatusManager.deletePodStatus`), its probes, its back-offs. */
  deletePodStatus: (uid: string) => void;
  removeProbes: (uid: string) => void;
  forgetBackoffs: (uid: string) => void;
  resize: Pick<ResizeManager, 'removePod' | 'deferred'>;
  schedule: (uid: string) => void;
}

/**
 * Pods gone from their source (the kubelet's `HandlePodRemoves` and `HandlePodCleanups`,
 * pkg/kubelet/kubelet.go and kubelet_pods.go): the last spec of each removed pod is kept for its
 * preStop hooks until its containers are gone; then the pod is killed and removed, and once the
 * runtime has nothing of it, everything the node remembered of it is forgotten.
 */
export class PodCleanup {
  readonly #o: PodCleanupOptions;
  /** Pods removed from their source whose containers still run: their last spec, for preStop hooks. */
  readonly #removedSpecs = new Map<string, Pod>();

  constructor(opts: PodCleanupOptions) {
    this.#o = opts;
  }

  /** Pods were added, updated or removed by a source. */
  podsChanged(diff: { added: Pod[]; updated: Pod[]; removed: Pod[] }): void {
    // A removed pod's last spec is kept until its containers are gone, for its preStop hooks.
    for (const pod of diff.removed) this.#removedSpecs.set(pod.metadata?.uid ?? '', pod);
    for (const pod of [...diff.added, ...diff.updated]) this.#removedSpecs.delete(pod.metadata?.uid ?? '');
  }

  /** The sync of a pod no source has (gone, or an orphan), with what the runtime has of it. */
  async podGone(uid: string, runtimePod: RuntimePod | undefined): Promise<void> {
    // A pod the node was ending (an eviction) that left its source is ended by the removal.
    this.#o.ended(uid);
    if (this.#o.sourcesReady() && runtimePod) await this.#killPod(runtimePod, this.#removedSpecs.get(uid));
    if (!runtimePod) {
      this.#removedSpecs.delete(uid);
      for (const memory of this.#o.memories) memory.forget(uid);
      this.#o.deletePodStatus(uid);
      this.#o.removeProbes(uid);
      this.#o.forgetBackoffs(uid);
      this.#o.resize.removePod(uid);
      // Resources were freed: deferred resizes are tried again (`RetryPendingResizes`).
      for (const other of this.#o.resize.deferred()) this.#o.schedule(other);
    }
  }

  /**
   * A pod gone from its source (or an orphan): killed (preStop hooks when its last spec is known),
   * then its containers, sandboxes, volumes and cgroup removed.
   */
  async #killPod(runtimePod: RuntimePod, lastSpec?: Pod): Promise<void> {
    await this.#o.killer.killPod(runtimePod, lastSpec, { remove: true, tearDown: true });
    await this.#o.relist();
  }
}
