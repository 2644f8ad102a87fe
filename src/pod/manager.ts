import { podFullName } from '../api/names.js';
import type { Pod } from '../api/types.js';
import { isMirrorPod } from '../api/annotations.js';

/**
 * The kubelet's `basicPodManager`: the desired pods, indexed by UID and by full name
 * (`name_namespace`), with mirror pods (apiserver copies of static pods) kept apart so a static
 * pod and its mirror can be paired by full name. Synchronous, O(1) lookups; nodelet is single-
 * threaded, so no lock is needed.
 */
export class PodManager {
  readonly #podByUID = new Map<string, Pod>();
  readonly #podByFullName = new Map<string, Pod>();
  readonly #mirrorPodByUID = new Map<string, Pod>();
  readonly #mirrorPodByFullName = new Map<string, Pod>();
  #revision = 0;
  readonly #listeners = new Set<() => void>();

  /** Bumped by every change, so readers can cache what they derive from the pod set. */
  get revision(): number {
    return this.#revision;
  }

  /**
   * Calls `listener` after every change of the pod set (synchronously, possibly several times per
   * source update: coalesce in the listener). The watch feeds use it. Returns the unsubscribe function.
   */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #changed(): void {
    for (const l of this.#listeners) l();
  }

  /** Replaces every pod (regular and mirror). */
  setPods(pods: readonly Pod[]): void {
    this.#podByUID.clear();
    this.#podByFullName.clear();
    this.#mirrorPodByUID.clear();
    this.#mirrorPodByFullName.clear();
    this.#revision++;
    for (const pod of pods) this.updatePod(pod);
    this.#changed();
  }

  addPod(pod: Pod): void {
    this.updatePod(pod);
  }

  /** Whether the manager holds this very object (not an equal copy) under its UID. */
  holds(pod: Pod): boolean {
    return this.#mapsFor(pod)[0].get(uidOf(pod)) === pod;
  }

  /** Adds or replaces the pod with this UID, in the mirror maps when it is a mirror pod. */
  updatePod(pod: Pod): void {
    this.#revision++;
    const [byUID, byFullName] = this.#mapsFor(pod);
    const uid = uidOf(pod);
    const previous = byUID.get(uid);
    // A renamed pod (same UID) must not stay findable under its old full name.
    if (previous && byFullName.get(podFullName(previous)) === previous) byFullName.delete(podFullName(previous));
    byUID.set(uid, pod);
    byFullName.set(podFullName(pod), pod);
    this.#changed();
  }

  deletePod(pod: Pod): void {
    this.#revision++;
    const [byUID, byFullName] = this.#mapsFor(pod);
    const uid = uidOf(pod);
    const stored = byUID.get(uid);
    byUID.delete(uid);
    for (const p of stored ? [stored, pod] : [pod]) {
      const full = podFullName(p);
      // Only drop the full-name entry if it still points at this UID, not at a newer pod.
      if (uidOf(byFullName.get(full)) === uid) byFullName.delete(full);
    }
    this.#changed();
  }

  /** The regular (non-mirror) pods. */
  getPods(): Pod[] {
    return [...this.#podByUID.values()];
  }

  getMirrorPods(): Pod[] {
    return [...this.#mirrorPodByUID.values()];
  }

  getPodByUID(uid: string): Pod | undefined {
    return this.#podByUID.get(uid);
  }

  getPodByFullName(fullName: string): Pod | undefined {
    return this.#podByFullName.get(fullName);
  }

  getPodByName(namespace: string, name: string): Pod | undefined {
    return this.#podByFullName.get(podFullName({ metadata: { name, namespace } }));
  }

  /** The mirror pod of a static pod, paired by full name. */
  getMirrorPodByPod(pod: Pod): Pod | undefined {
    return this.#mirrorPodByFullName.get(podFullName(pod));
  }

  /** The static pod a mirror pod stands for. */
  getPodByMirrorPod(mirrorPod: Pod): Pod | undefined {
    return this.#podByFullName.get(podFullName(mirrorPod));
  }

  /**
   * The kubelet's `TranslatePodUID`: a mirror pod's UID becomes its static pod's, since users may
   * quote the UID the apiserver shows while everything inside the kubelet keys by the static
   * UID. Any other UID (and `''`) is returned unchanged.
   */
  translatePodUID(uid: string): string {
    if (uid === '') return uid;
    const mirror = this.#mirrorPodByUID.get(uid);
    if (mirror) {
      const pod = this.#podByFullName.get(podFullName(mirror));
      if (pod) return uidOf(pod);
    }
    return uid;
  }

  #mapsFor(pod: Pod): [Map<string, Pod>, Map<string, Pod>] {
    return isMirrorPod(pod) ? [this.#mirrorPodByUID, this.#mirrorPodByFullName] : [this.#podByUID, this.#podByFullName];
  }
}

function uidOf(pod: Pod | undefined): string {
  return pod?.metadata?.uid ?? '';
}
