import type { Pod } from '../api/types.js';
import type { Logger } from '../logging/index.js';
import { shutdownGrace, shutdownPlan, type ShutdownGroup } from './pod-failure.js';

export interface NodeShutdownOptions {
  /** The pods to shut down: the pod manager's, less those refused at admission. */
  pods: () => Pod[];
  log: Logger;
  /** Calls `done` once the pod's containers all stopped (`PodTerminator.onEnded`). */
  onEnded: (uid: string, done: () => void) => void;
  /** Schedules the pod's sync, which terminates it with `grace(uid)`. */
  schedule: (uid: string) => void;
  /** Lists the runtime again. */
  relist: () => Promise<void>;
}

/**
 * Graceful node shutdown (the kubelet's shutdown manager `killPods`,
 * pkg/kubelet/nodeshutdown/nodeshutdown_manager.go): holds the grace period of each pod being shut
 * down, which the sync reads (`grace`) to terminate the pod with it, and which admission reads
 * (`inProgress`) to refuse new pods with `NodeShutdown`.
 */
export class NodeShutdown {
  readonly #o: NodeShutdownOptions;
  /** Graceful node shutdown in progress: the grace period each pod being shut down is stopped with, by UID. */
  #shutdown: Map<string, number> | undefined;

  constructor(opts: NodeShutdownOptions) {
    this.#o = opts;
  }

  /** Whether a shutdown started: pods arriving from now on are refused. */
  get inProgress(): boolean {
    return this.#shutdown !== undefined;
  }

  /** The grace period the pod `uid` is shut down with; undefined when it is not being shut down. */
  grace(uid: string): number | undefined {
    return this.#shutdown?.get(uid);
  }

  /**
   * The pods go group by group, lowest
   * priority first — each pod in the group whose lowest priority is the highest at or below its
   * own (`spec.priority`, 0 when unset; below every group, the first) — each stopped with the
   * group's grace period or its own `terminationGracePeriodSeconds` when shorter, preStop hooks
   * included; the next group starts once every pod of this one stopped or its grace period ran
   * out. Each pod ends `Failed` (`Succeeded` stays), reason `Terminated`, "Pod was terminated in
   * response to imminent node shutdown.", with `DisruptionTarget` (`TerminationByKubelet`); a pod
   * arriving meanwhile is rejected (`NodeShutdown`). Resolves when the last group is done.
   */
  async shutdownPods(groups: readonly ShutdownGroup[]): Promise<void> {
    const pods = this.#o.pods();
    const plan = shutdownPlan(groups, pods);
    if (!plan.length) return;
    const shutdown = new Map<string, number>();
    this.#shutdown = shutdown;
    for (const { group, pods } of plan) {
      if (!pods.length) continue;
      this.#o.log.info({ priority: group.priority, gracePeriod: group.graceSeconds, pods: pods.length }, 'Shutdown manager killing pods');
      const done = pods.map((pod) => {
        const uid = pod.metadata?.uid ?? '';
        shutdown.set(uid, shutdownGrace(pod, group));
        return new Promise<void>((resolve) => {
          this.#o.onEnded(uid, resolve);
          this.#o.schedule(uid);
        });
      });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(done), new Promise<void>((resolve) => (timer = setTimeout(resolve, group.graceSeconds * 1000)))]);
      clearTimeout(timer);
    }
    // The last statuses reach the status manager with the syncs the stops bring.
    await this.#o.relist();
  }
}
