import type { Pod } from '../api/types.js';
import type { EventSubject, EventType } from '../events/recorder.js';
import type { RuntimePod } from '../runtime/types.js';
import type { PodKiller } from './kill.js';
import type { PodFailure } from './pod-failure.js';
import type { StatusPublisher } from './status-publisher.js';

export interface PodTerminatorOptions {
  /** The event recorder's `record`. */
  record: (subject: EventSubject, type: EventType, reason: string, message: string) => void;
  /** Publishes the pod's status (`StatusPublisher.publish`). */
  publish: StatusPublisher['publish'];
  killer: Pick<PodKiller, 'killPod'>;
  /** Lists the runtime again. */
  relist: () => Promise<void>;
  /** A deleted pod has nothing left running and its terminal status is published (`podTerminated`). */
  terminated: (uid: string) => void;
  /** The evictions (src/kubelet/kill-now.ts): whether the pod was evicted, whether its content is gone, and its removal. */
  evictions: {
    has: (uid: string) => boolean;
    isReclaimed: (uid: string) => boolean;
    reclaim: (pod: Pod, runtimePod: RuntimePod) => Promise<void>;
  };
}

/**
 * Termination of a pod the node keeps in its source (the kubelet's `SyncTerminatingPod`,
 * pkg/kubelet/kubelet.go): a deletion, a passed deadline, an eviction or the node's shutdown.
 * Tells whoever waits for a pod's end (`onEnded`: the shutdown manager, an eviction) once its
 * containers all stopped.
 */
export class PodTerminator {
  readonly #o: PodTerminatorOptions;
  /** Pods failed on the node (their active deadline passed), by UID: the event is recorded once (a pod's end, not a start failure). */
  readonly #failed = new Set<string>();
  /** Pods the node is ending (shutdown, eviction) whose containers all stopped: resolved by `terminate`. */
  readonly #endingDone = new Map<string, () => void>();

  constructor(opts: PodTerminatorOptions) {
    this.#o = opts;
  }

  /** Calls `done` once the pod's containers all stopped (or it left its source, `ended`). */
  onEnded(uid: string, done: () => void): void {
    this.#endingDone.set(uid, done);
  }

  /** As `onEnded`, forgotten once called (an eviction's wait). */
  onceEnded(uid: string, done: () => void): void {
    this.#endingDone.set(uid, () => {
      this.#endingDone.delete(uid);
      done();
    });
  }

  /** The pod `uid` ended: tells who waits for it (`onEnded`). */
  ended(uid: string): void {
    this.#endingDone.get(uid)?.();
  }

  /** Forgets the pod's deadline event (the pod is gone). */
  forget(uid: string): void {
    this.#failed.delete(uid);
  }

  /**
   * Graceful deletion (the kubelet's `syncTerminatingPod`): stop every running container with the
   * deletion's grace period (SIGTERM, SIGKILL when it runs out) and the sandbox, start nothing;
   * once nothing runs, publish the terminal status. Containers are removed when the pod leaves
   * its source (after cluster mode deleted the object), so their logs stay readable meanwhile.
   * `failure` ends a pod that is not being deleted (its deadline passed): the pod fails with that
   * reason, an event says why, and nothing starts again.
   */
  async terminate(pod: Pod, runtimePod: RuntimePod | undefined, failure?: PodFailure, graceOverride?: number): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    // An evicted pod whose content is gone keeps the status it ended with.
    if (this.#o.evictions.isReclaimed(uid)) return;
    const running = runtimePod?.containers.filter((c) => c.state === 'running') ?? [];
    const sandboxes = runtimePod?.sandboxes.filter((s) => s.ready) ?? [];
    // An event says why the node failed the pod (its deadline); a shutdown says it in the status
    // only, and the eviction manager records its own.
    if (failure && !failure.disruption && !failure.eventRecorded && !this.#failed.has(uid)) {
      this.#failed.add(uid);
      this.#o.record(pod, 'Normal', failure.reason, failure.message);
    }
    this.#o.publish(pod, runtimePod, new Map(), running.length === 0, failure);
    if (running.length === 0) this.#endingDone.get(uid)?.();
    if (running.length === 0 && sandboxes.length === 0) {
      if (!failure) this.#o.terminated(uid);
      else if (this.#o.evictions.has(uid) && runtimePod) await this.#o.evictions.reclaim(pod, runtimePod);
      return;
    }
    // The containers and sandboxes stay: they are removed when the pod leaves its source.
    if (runtimePod) await this.#o.killer.killPod(runtimePod, pod, { grace: graceOverride });
    // The stops come back as PLEG events; the next sync publishes the terminal status.
    await this.#o.relist();
  }
}
