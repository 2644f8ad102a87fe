import type { PodStatus } from '../api/types.js';
import type { Logger } from '../logging/index.js';
import type { Runtime, RuntimeContainer, RuntimePod, RuntimeSandbox } from '../runtime/types.js';
import { isTerminalPhase } from '../status/transitions.js';

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

/** What the GC asks of the kubelet about a pod (the kuberuntime `podStateProvider`). */
export interface PodStateProvider {
  /**
   * `ShouldPodContentBeRemoved`: nothing of the pod is needed any more — it was evicted, or it is
   * deleted and nothing of it runs, or (once every source is ready) no source knows it.
   */
  shouldPodContentBeRemoved(uid: string): boolean;
  /** `ShouldPodRuntimeBeRemoved`: the pod is terminated (nothing runs and nothing will), or unknown once sources are ready. */
  shouldPodRuntimeBeRemoved(uid: string): boolean;
}

export interface ContainerGCInput {
  /** Every runtime pod of the node, exited containers and dead sandboxes included. */
  readonly pods: readonly RuntimePod[];
  readonly policy: ContainerGCPolicy;
  readonly now: number;
  /** Every pod source has delivered its first snapshot (`SourcesReady.AllReady`). */
  readonly allSourcesReady: boolean;
  /** `DeleteAllUnusedContainers` (the eviction manager's reclaim): terminated pods lose their dead containers too. */
  readonly evictNonDeletedPods: boolean;
  readonly state: PodStateProvider;
}

/** What one GC run removes, by ID: dead containers, then sandboxes (removed in that order). */
export interface ContainerGCPlan {
  readonly containers: string[];
  readonly sandboxes: string[];
}

interface GCInfo {
  readonly id: string;
  readonly attempt: number;
  readonly createdAt: Date;
}

/** Newest first: higher attempt, then later creation (kuberuntime_gc.go `byAttempt`, `sandboxByAttempt`). */
const byAttempt = (a: GCInfo, b: GCInfo) => b.attempt - a.attempt || b.createdAt.getTime() - a.createdAt.getTime();

/**
 * The oldest `toRemove` of `items` (kuberuntime_gc.go `removeOldestN`): sorted newest first, the
 * tail goes. Returns the kept head and the removed tail.
 */
function splitOldest<T extends GCInfo>(items: readonly T[], toRemove: number): { keep: T[]; remove: T[] } {
  const numToKeep = Math.max(0, items.length - toRemove);
  const sorted = [...items].sort(byAttempt);
  return { keep: sorted.slice(0, numToKeep), remove: sorted.slice(numToKeep) };
}

/**
 * One run of the kubelet's container GC, planned (pkg/kubelet/kuberuntime/kuberuntime_gc.go
 * `GarbageCollect`): pure, it returns what to remove.
 *
 * `evictContainers`: the dead (not running) containers created at least `minAgeMs` ago, grouped in
 * evict units per (pod UID, container name). Once all sources are ready, every unit of a pod whose
 * content should be removed (or, with `evictNonDeletedPods`, whose runtime should be) goes entirely.
 * Each remaining unit keeps its newest `maxPerPodContainer`; then, over `maxContainers` in all,
 * each unit keeps an equal share (at least 1), and if still over, the oldest across units go.
 *
 * `evictSandboxes`: a sandbox is active while ready (or running) or while a container that is kept names it;
 * a pod whose content (or runtime) should be removed loses every inactive sandbox, any other pod
 * every inactive sandbox but its newest.
 *
 * One difference: a container `created` but never started that is the newest instance of its name
 * is not a candidate. nodelet creates and starts a container in one step, so the snapshot may show
 * one being started right now; the pod's sync removes and replaces one that failed to start.
 */
export function planContainerGC(input: ContainerGCInput): ContainerGCPlan {
  const { policy, state, evictNonDeletedPods } = input;
  const removePod = (uid: string) => state.shouldPodContentBeRemoved(uid) || (evictNonDeletedPods && state.shouldPodRuntimeBeRemoved(uid));
  const removed: RuntimeContainer[] = [];

  // evictableContainers
  const newestGCTime = input.now - policy.minAgeMs;
  const units = new Map<string, { uid: string; containers: RuntimeContainer[] }>();
  for (const pod of input.pods) {
    const newest = new Map<string, RuntimeContainer>();
    for (const c of [...pod.containers].sort(byAttempt)) if (!newest.has(c.name)) newest.set(c.name, c);
    for (const c of pod.containers) {
      if (c.state === 'running') continue;
      if (c.state === 'created' && newest.get(c.name) === c) continue;
      if (c.createdAt.getTime() > newestGCTime) continue;
      const key = JSON.stringify([pod.uid, c.name]);
      const unit = units.get(key) ?? { uid: pod.uid, containers: [] };
      unit.containers.push(c);
      units.set(key, unit);
    }
  }

  // evictContainers: deleted pods' containers first, once every source is ready.
  if (input.allSourcesReady) {
    for (const [key, unit] of units) {
      if (!removePod(unit.uid)) continue;
      removed.push(...unit.containers);
      units.delete(key);
    }
  }
  const enforcePerUnit = (max: number) => {
    for (const unit of units.values()) {
      const toRemove = unit.containers.length - max;
      if (toRemove <= 0) continue;
      const { keep, remove } = splitOldest(unit.containers, toRemove);
      unit.containers = keep;
      removed.push(...remove);
    }
  };
  if (policy.maxPerPodContainer >= 0) enforcePerUnit(policy.maxPerPodContainer);
  const count = () => [...units.values()].reduce((n, u) => n + u.containers.length, 0);
  if (policy.maxContainers >= 0 && count() > policy.maxContainers) {
    // An equal number per evict unit (min: 1), then the oldest across units.
    enforcePerUnit(Math.max(1, Math.floor(policy.maxContainers / units.size)));
    const numContainers = count();
    if (numContainers > policy.maxContainers) {
      const flattened = [...units.values()].flatMap((u) => u.containers);
      removed.push(...splitOldest(flattened, numContainers - policy.maxContainers).remove);
    }
  }

  // evictSandboxes: against the containers that are kept.
  const gone = new Set(removed.map((c) => c.id));
  const sandboxes: string[] = [];
  for (const pod of input.pods) {
    const kept = pod.containers.filter((c) => !gone.has(c.id));
    // A container that does not say its sandbox (made before the label) keeps all of its pod's.
    const holdsAll = kept.some((c) => c.sandboxId === undefined);
    const held = new Set(kept.map((c) => c.sandboxId));
    const active = (s: RuntimeSandbox) => s.ready || s.running === true || holdsAll || held.has(s.id);
    const toRemove = removePod(pod.uid) ? pod.sandboxes.length : pod.sandboxes.length - 1;
    for (const s of splitOldest(pod.sandboxes, toRemove).remove) if (!active(s)) sandboxes.push(s.id);
  }
  return { containers: removed.map((c) => c.id), sandboxes };
}

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
