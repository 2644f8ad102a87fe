/**
 * The kubelet's container GC (pkg/kubelet/container/container_gc.go): its policy, the kubelet's
 * answers about pods (`podStateProvider`) and the collector that runs on a period and removes what
 * the pure plan of container-gc-plan.ts (pkg/kubelet/kuberuntime/kuberuntime_gc.go) selects.
 */
import type { PodStatus } from '../api/types.js';
import type { Logger } from '../logging/index.js';
import type { Runtime, RuntimePod } from '../runtime/types.js';
import { isTerminalPhase } from '../status/transitions.js';
import { planContainerGC, type PodStateProvider } from './container-gc-plan.js';

/**
 * The kubelet's container GC policy (`ContainerGCPolicy`, pkg/kubelet/container/container_gc.go),
 * from its deprecated flags `--minimum-container-ttl-duration`, `--maximum-dead-containers-per-container`
 * and `--maximum-dead-containers`.
 */
export interface ContainerGCPolicy {
  /** `MinAge` (0): a dead container created more recently than this is never removed. */
  readonly minAgeMs: number;
  /** `MaxPerPodContainer` (1): dead instances kept per (pod, container name); negative: no limit. */
  readonly maxPerPodContainer: number;
  /** `MaxContainers` (-1): dead containers kept on the node in all; negative: no limit. */
  readonly maxContainers: number;
}

/** The kubelet's defaults (cmd/kubelet/app/options/options.go `NewKubeletFlags`). */
export const DEFAULT_CONTAINER_GC_POLICY: ContainerGCPolicy = Object.freeze({ minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 });

/** The kubelet's `ContainerGCPeriod` (pkg/kubelet/kubelet.go). */
export const CONTAINER_GC_PERIOD_MS = 60_000;

/** What the kubelet knows of a pod, for `podStateProvider`. */
export interface PodStateSources {
  /** Whether some source knows the pod (the pod manager). */
  readonly known: (uid: string) => { readonly deleting: boolean } | undefined;
  /** The pod's status as last published (the status manager's, else the source's). */
  readonly status: (uid: string) => PodStatus | undefined;
  /** The pod as the runtime last listed it. */
  readonly runtimePod: (uid: string) => RuntimePod | undefined;
  readonly allSourcesReady: () => boolean;
}

/**
 * The kubelet's answers (pkg/kubelet/pod_workers.go `ShouldPodContentBeRemoved`,
 * `ShouldPodRuntimeBeRemoved`), from what nodelet keeps instead of pod workers' sync statuses: a pod
 * is evicted when its status is `Failed` with reason `Evicted`; it is terminated when none of its
 * containers runs and it is being deleted or its phase is terminal (nodelet leaves a finished
 * pod's sandbox running; the GC never removes a running sandbox anyway). A pod no source knows is removed only once every source is ready (the pod workers'
 * `podsSynced`): before that, a restarted nodelet has not yet been told about the pods it will adopt.
 */
export function podStateProvider(src: PodStateSources): PodStateProvider {
  const nothingRuns = (uid: string) => !src.runtimePod(uid)?.containers.some((c) => c.state === 'running');
  return {
    shouldPodContentBeRemoved(uid) {
      const pod = src.known(uid);
      if (!pod) return src.allSourcesReady();
      const status = src.status(uid);
      if (status?.phase === 'Failed' && status.reason === 'Evicted') return true;
      return pod.deleting && nothingRuns(uid);
    },
    shouldPodRuntimeBeRemoved(uid) {
      const pod = src.known(uid);
      if (!pod) return src.allSourcesReady();
      return (pod.deleting || isTerminalPhase(src.status(uid)?.phase)) && nothingRuns(uid);
    },
  };
}

export interface ContainerGCOptions {
  readonly runtime: Pick<Runtime, 'removeContainer'>;
  readonly policy: ContainerGCPolicy;
  /** The node's runtime pods, as fresh as can be (the PLEG relisted); rejects when the runtime cannot be listed. */
  readonly pods: () => Promise<readonly RuntimePod[]>;
  readonly allSourcesReady: () => boolean;
  readonly state: PodStateProvider;
  /** A Warning event on the node (`ContainerGCFailed`). */
  readonly warn: (reason: string, message: string) => void;
  readonly log: Logger;
  readonly now?: () => number;
}

/**
 * The kubelet's container GC (pkg/kubelet/container/container_gc.go `realContainerGC`, run every
 * minute by `StartGarbageCollection` in pkg/kubelet/kubelet.go): each run plans with
 * `planContainerGC` and removes through the runtime, dead containers then sandboxes. A removal
 * that fails is logged and left for the next run; a sandbox still named by a container that could
 * not be removed stays too. A run that cannot list the runtime fails: a `ContainerGCFailed` event
 * on the node and an error in the log. Runs never overlap.
 */
export class ContainerGC {
  readonly #o: ContainerGCOptions;
  #chain: Promise<unknown> = Promise.resolve();
  #timer: NodeJS.Timeout | undefined;
  #loggedFailure = false;

  constructor(opts: ContainerGCOptions) {
    if (!(opts.policy.minAgeMs >= 0)) throw new Error(`invalid minimum garbage collection age: ${opts.policy.minAgeMs}ms`);
    this.#o = opts;
  }

  /** Runs now, then every `periodMs` (unref'd: it never keeps the process alive). */
  start(periodMs: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    const tick = () => {
      void this.run().finally(() => {
        if (this.#timer === undefined) return;
        this.#timer = setTimeout(tick, periodMs);
        this.#timer.unref();
      });
    };
    this.#timer = setTimeout(tick, 0);
    this.#timer.unref();
  }

  /** No more runs; resolves when the one in flight (if any) is done. */
  async stop(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#chain.catch(() => undefined);
  }

  /** `GarbageCollect`: one run; failures are logged (and an event), never thrown. */
  async run(): Promise<void> {
    try {
      await this.#serialised(false);
      this.#o.log[this.#loggedFailure ? 'info' : 'debug']('Container garbage collection succeeded');
      this.#loggedFailure = false;
    } catch (err) {
      this.#o.log.error({ err }, 'Container garbage collection failed');
      this.#o.warn('ContainerGCFailed', (err as Error).message);
      this.#loggedFailure = true;
    }
  }

  /**
   * `DeleteAllUnusedContainers` (the eviction manager's node-level reclaim): one run that also
   * removes every dead container and sandbox of terminated pods. Rejects when the runtime cannot be
   * listed; removals that fail are logged, as in a periodic run.
   */
  deleteAllUnusedContainers(): Promise<void> {
    this.#o.log.info('Attempting to delete unused containers');
    return this.#serialised(true);
  }

  #serialised(evictNonDeletedPods: boolean): Promise<void> {
    const next = this.#chain.catch(() => undefined).then(() => this.#collect(evictNonDeletedPods));
    this.#chain = next;
    return next;
  }

  async #collect(evictNonDeletedPods: boolean): Promise<void> {
    const pods = await this.#o.pods();
    const plan = planContainerGC({
      pods,
      policy: this.#o.policy,
      now: (this.#o.now ?? Date.now)(),
      allSourcesReady: this.#o.allSourcesReady(),
      evictNonDeletedPods,
      state: this.#o.state,
    });
    const { runtime, log } = this.#o;
    const failed = new Set<string>();
    for (const id of plan.containers) {
      log.debug({ containerID: id }, 'Removing container');
      try {
        await runtime.removeContainer(id);
      } catch (err) {
        failed.add(id);
        log.error({ err, containerID: id }, 'Failed to remove container');
      }
    }
    // A container left behind still holds its sandbox (all of its pod's when it does not say which).
    const stillHeld = new Set<string>();
    for (const p of pods) {
      for (const c of p.containers) {
        if (!failed.has(c.id)) continue;
        for (const id of c.sandboxId === undefined ? p.sandboxes.map((s) => s.id) : [c.sandboxId]) stillHeld.add(id);
      }
    }
    for (const id of plan.sandboxes) {
      if (stillHeld.has(id)) continue;
      log.debug({ sandbox: id }, 'Removing sandbox');
      await runtime.removeContainer(id).catch((err: unknown) => log.error({ err, sandbox: id }, 'Failed to remove sandbox'));
    }
  }
}
