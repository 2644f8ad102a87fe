import { EventEmitter } from 'node:events';
import type { Pod } from '../api/types.js';
import type { RuntimePod } from '../runtime/types.js';
import { isTerminalPhase } from '../status/transitions.js';
import { activeDeadlineLeft } from './active-deadline.js';
import { rejectedStatus, type AdmissionRefusal } from './admission.js';
import type { AdmissionNode } from './node-admission.js';
import { CONTAINER_GC_PERIOD_MS } from './container-gc.js';
import type { KubeletEvents, KubeletOptions } from './kubelet-options.js';
import { buildKubeletParts, containerSubject, nodeSubject, type KubeletParts } from './kubelet-parts.js';
import type { RelistHealth } from './pleg.js';
import { computePodActions } from './pod-actions.js';
import { deadlineExceeded, nodeShutdown, type PodFailure, type ShutdownGroup } from './pod-failure.js';
import type { ProberManager } from './prober/manager.js';
import { RESIZE_RETRY_MS } from './resize-manager.js';
import { attemptFromStatus, restartAllActions, restartingAllContainers } from './restart-all.js';
import { checkLimitsForResolvConf } from './sandbox-config.js';

export type { KubeletEvents, KubeletOptions } from './kubelet-options.js';

/** How long `stop` waits for the pod syncs in progress (any pod's kill that ends normally, not one waiting out a long grace period). */
const STOP_WAIT_MS = 10_000;

/**
 * The sync loop: one worker per pod UID, serialised (a sync requested while one runs sets `again`),
 * driven by pod source changes, PLEG events, back-off timers and a periodic resync. Each sync
 * publishes the pod's status to the status manager from the PLEG snapshot, then acts on the
 * runtime; the runtime change comes back as a PLEG event and the next sync reports it. Its parts
 * and modules (src/kubelet/kubelet-parts.ts) hold each concern's state; this class decides (the
 * kubelet's `SyncPod`, pkg/kubelet/kubelet.go).
 */
export class Kubelet {
  readonly #o: KubeletOptions;
  /** The parts and modules of src/kubelet/ it drives (src/kubelet/kubelet-parts.ts). */
  readonly #p: KubeletParts;
  readonly #events = new EventEmitter<KubeletEvents>();
  /** Liveness, readiness and startup probes of the running containers. */
  readonly prober: ProberManager;
  #sourcesReady = false;
  #resyncTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #lastSync = 0;

  constructor(opts: KubeletOptions) {
    this.#o = opts;
    this.#p = buildKubeletParts(opts, {
      sync: (uid) => this.#sync(uid),
      schedule: (uid) => this.#schedule(uid),
      scheduleAfter: (uid, ms) => this.#scheduleAfter(uid, ms),
      sourcesReady: () => this.#sourcesReady,
      stopped: () => this.#stopped,
      terminated: (uid) => this.#events.emit('podTerminated', uid),
      rejectPod: (pod, refusal) => this.rejectPod(pod, refusal),
    });
    this.prober = this.#p.prober;
  }

  /** Listens to what the kubelet tells (`KubeletEvents`); returns the function that stops listening. */
  on<K extends keyof KubeletEvents>(event: K, listener: (...args: KubeletEvents[K]) => void): () => void {
    const emitter = this.#events as unknown as EventEmitter;
    emitter.on(event, listener as (...args: unknown[]) => void);
    return () => void emitter.off(event, listener as (...args: unknown[]) => void);
  }

  /**
   * Adds an admission handler that runs before the kubelet's own, in the order added (the
   * eviction manager's `Admit` is the kubelet's first, pkg/kubelet/kubelet.go `NewMainKubelet`
   * `AddPodAdmitHandler`).
   */
  addPodAdmitHandler(handler: (pod: Pod) => AdmissionRefusal | undefined): void {
    this.#p.admission.addPodAdmitHandler(handler);
  }

  /**
   * The node was built (src/node/source.ts): its allocatable is what later pods are admitted
   * against, and its labels and taints (the ones it registers) stand in for the apiserver's
   * Node while there is none (`getNodeAnyWay` falls back to `initialNode`).
   */
  nodeBuilt(node: AdmissionNode & { readonly status?: { readonly allocatable?: Readonly<Record<string, string>> } }): void {
    this.#p.admission.allocatable = node.status?.allocatable;
    this.#p.admission.builtNode = node;
  }

  /**
   * The node's Node as the apiserver now holds it (src/cluster/node-watch.ts), undefined once
   * deleted: later pods are admitted against its labels and taints. Pods already admitted keep
   * running whatever changes (the kubelet re-checks at admission only).
   */
  nodeObserved(node: AdmissionNode | undefined): void {
    this.#p.admission.apiNode = node;
  }

  /** The pod `uid` as the runtime last listed it (the PLEG's cache), or undefined when it has nothing of it. */
  runtimePod(uid: string): RuntimePod | undefined {
    return this.#p.pleg.getPod(uid);
  }

  /** Every pod of this node as the runtime last listed it. */
  runtimePods(): RuntimePod[] {
    return this.#p.pleg.getPods();
  }

  /** When the runtime was last listed, whether that worked, and how many lists succeeded (for the Node's and /healthz's health). */
  relistHealth(): RelistHealth {
    return this.#p.pleg.health();
  }

  start(): void {
    if (this.#o.dns) void checkLimitsForResolvConf(this.#o.dns, (reason, message) => this.#o.recorder.record(nodeSubject(this.#o.nodeName), 'Warning', reason, message));
    this.#p.pleg.start((uid) => this.#schedule(uid));
    const resync = () => {
      this.#resyncTimer = setTimeout(() => {
        for (const pod of this.#o.podManager.getPods()) this.#schedule(pod.metadata?.uid ?? '');
        resync();
      }, this.#o.syncFrequencyMs);
      this.#resyncTimer.unref();
    };
    resync();
    this.#p.containerGC.start(this.#o.containerGC?.periodMs ?? CONTAINER_GC_PERIOD_MS);
  }

  /**
   * The container GC's `DeleteAllUnusedContainers` (for the eviction manager's reclaim): every
   * dead container and sandbox beyond the policy, and all of those of terminated pods. Rejects when
   * the runtime cannot be listed.
   */
  deleteAllUnusedContainers(): Promise<void> {
    return this.#p.containerGC.deleteAllUnusedContainers();
  }

  /**
   * Stops the loops and waits for running syncs, at most `STOP_WAIT_MS`: a sync killing a pod may
   * wait out its whole grace period, which must not hold nodelet's close (a kubelet that stops
   * does not wait either). Containers keep running, as with the kubelet.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#p.pleg.stop();
    this.prober.stop();
    if (this.#resyncTimer) clearTimeout(this.#resyncTimer);
    await this.#p.containerGC.stop();
    const left = await this.#p.workers.stop(STOP_WAIT_MS);
    if (left.length) this.#o.log.warn({ pods: left, waitedSeconds: STOP_WAIT_MS / 1000 }, 'Stopped without waiting for pod syncs still running (a kill waiting out its grace period)');
  }

  /**
   * Graceful node shutdown (the kubelet's shutdown manager `killPods`,
   * pkg/kubelet/nodeshutdown/nodeshutdown_manager.go; see `NodeShutdown.shutdownPods`): group by
   * group, lowest priority first; resolves when the last group is done.
   */
  shutdownPods(groups: readonly ShutdownGroup[]): Promise<void> {
    return this.#p.shutdown.shutdownPods(groups);
  }

  /** Pods were added, updated or removed by a source. */
  handlePodChanges(diff: { added: Pod[]; updated: Pod[]; removed: Pod[] }): void {
    this.#p.cleanup.podsChanged(diff);
    for (const pod of [...diff.added, ...diff.updated, ...diff.removed]) this.#schedule(pod.metadata?.uid ?? '');
  }

  /**
   * Every source has delivered its first snapshot: from now on, runtime pods that no source
   * knows are orphans and are removed. Before that, a restarted nodelet must not kill the pods it
   * is about to adopt.
   */
  markSourcesReady(): void {
    if (this.#sourcesReady) return;
    this.#sourcesReady = true;
    void this.#p.pleg.relist().then(() => {
      for (const rp of this.#p.pleg.getPods()) this.#schedule(rp.uid);
      // Allocations of pods that are gone from every source and the runtime (`RemoveOrphanedPods`).
      const live = new Set([...this.#o.podManager.getPods().map((p) => p.metadata?.uid ?? ''), ...this.#p.pleg.getPods().map((p) => p.uid)]);
      this.#p.resize.allocation.removeOrphans(live);
    });
  }

  /** When the sync loop last completed a pod sync or relist (for /healthz/syncloop). */
  lastActivity(): number {
    return Math.max(this.#lastSync, this.#p.pleg.health().lastSuccess);
  }

  /** Syncs the pod soon (a volume it waits for may now be set up: an issued pod certificate). */
  syncPodSoon(uid: string): void {
    if (!this.#stopped) this.#schedule(uid);
  }

  #schedule(uid: string): void {
    this.#p.workers.schedule(uid);
  }

  #scheduleAfter(uid: string, ms: number): void {
    this.#p.workers.scheduleAfter(uid, ms);
  }

  async #sync(uid: string): Promise<void> {
    this.#lastSync = Date.now();
    if (this.#p.pleg.health().relists === 0) {
      // Never act on a pod before the runtime was listed once: after a restart of nodelet its
      // containers exist, and creating them again would duplicate them.
      await this.#p.pleg.relist();
      if (this.#p.pleg.health().relists === 0) return this.#scheduleAfter(uid, 1000);
    }
    const pod = this.#o.podManager.getPodByUID(uid);
    const runtimePod = this.#p.pleg.getPod(uid);
    // A delete through the API (`restartPod`) runs here, inside the pod's worker, never beside a sync.
    if (this.#p.restarts.pending(uid)) return this.#p.restarts.restartNow(uid);
    if (!pod) return this.#p.cleanup.podGone(uid, runtimePod);
    const shutdownGrace = this.#p.shutdown.grace(uid);
    if (shutdownGrace !== undefined) return this.#p.terminator.terminate(pod, runtimePod, nodeShutdown, shutdownGrace);
    const eviction = this.#p.evictions.get(uid);
    if (eviction) return this.#p.terminator.terminate(pod, runtimePod, eviction.failure, eviction.graceSeconds);
    if (pod.metadata?.deletionTimestamp) return this.#p.terminator.terminate(pod, runtimePod);
    if (!runtimePod && this.#p.admission.refuse(pod)) return;
    this.#p.admission.admit(uid);
    // The pod as the node runs it: its allocated resources, a pending resize decided (resize-manager.ts).
    const allocated = this.#p.resize.allocate(pod, this.#p.admission.activeAdmitted(uid), this.#p.admission.allocatable);
    const deadlineLeft = activeDeadlineLeft(pod, this.#o.statusManager);
    if (deadlineLeft === 0) return this.#p.terminator.terminate(pod, runtimePod, deadlineExceeded);
    if (deadlineLeft !== undefined) this.#scheduleAfter(uid, deadlineLeft);

    const now = Date.now();
    if (!runtimePod) this.#p.statusPublisher.seen(uid, now);
    this.prober.syncPod(pod, runtimePod);
    // A RestartAllContainers reset due (its condition in the status last reported) replaces the
    // usual work: every container killed and removed; the next sync starts the pod over.
    const previous = this.#o.statusManager.getPodStatus(uid) ?? pod.status;
    const actions = restartingAllContainers(allocated, runtimePod, previous)
      ? restartAllActions(allocated, runtimePod)
      : computePodActions(allocated, runtimePod, this.#p.backoff, now, (name, id) => this.prober.failed(uid, name, id), {
          sameSpec: this.#p.resize.sameSpec(uid),
          resize: this.#p.resize.resizeAllowed(pod),
          actuatedMemoryRequest: this.#p.resize.actuatedMemoryRequest(uid),
          started: (name, id) => this.prober.isStarted(uid, name, id),
          firstAttempt: (name) => attemptFromStatus(previous, name),
        });
    this.#p.resize.observe(pod, allocated, runtimePod);
    this.#p.starter.holdFailedStarts(pod, actions, now);
    this.#p.statusPublisher.publish(pod, runtimePod, actions.waiting);
    if (isTerminalPhase(this.#o.statusManager.getPodStatus(uid)?.phase)) {
      // A pod in a terminal phase runs nothing again (the kubelet's SyncPod stops at a terminal
      // status), even when the container GC has removed the dead containers that said it finished.
      actions.createSandbox = undefined;
      actions.start = [];
    }
    if (actions.resyncAfterMs !== undefined) this.#scheduleAfter(uid, actions.resyncAfterMs);
    for (const [name, w] of actions.waiting) {
      if (w.reason === 'CrashLoopBackOff') this.#o.recorder.record(containerSubject(pod, name), 'Warning', 'BackOff', 'Back-off restarting failed container');
    }
    if (!actions.kill.length && !actions.start.length && !actions.remove.length && actions.createSandbox === undefined) {
      if ((await this.#resizeInPlace(allocated, runtimePod)) === 'applied') await this.#p.pleg.relist();
      return;
    }

    await this.#p.starter.syncPod(allocated, runtimePod, actions, () => this.#resizeInPlace(allocated, runtimePod));
    // The changes come back as PLEG events, which sync this pod again and publish its status.
    await this.#p.pleg.relist();
  }

  /**
   * Applies a pod's admitted resize to its running containers and cgroup (`ResizeManager.apply`).
   * After a change the pod is synced again to read the new values back; after a failure, once
   * now (its `Error` condition published) and once the retry hold is over.
   */
  async #resizeInPlace(pod: Pod, runtimePod: RuntimePod | undefined): Promise<'applied' | 'error' | 'none'> {
    const result = await this.#p.resize.apply(pod, runtimePod);
    const uid = pod.metadata?.uid ?? '';
    if (result !== 'none') this.#schedule(uid);
    if (result === 'error') this.#scheduleAfter(uid, RESIZE_RETRY_MS);
    return result;
  }

  /**
   * Reports a pod the node will not run as `Failed` (the kubelet's `rejectPod`): the one place
   * that status is made (`rejectedStatus`), for pods refused at admission and for apiserver pods
   * the pod config refused as invalid (whose event it recorded). A pod whose own status is
   * already terminal keeps it. Tells `podRejected` listeners.
   */
  rejectPod(pod: Pod, refusal: AdmissionRefusal): void {
    if (isTerminalPhase(pod.status?.phase)) return;
    this.#o.statusManager.setPodStatus(pod, rejectedStatus(pod, refusal));
    this.#events.emit('podRejected', pod, refusal);
  }

  // ---- Eviction (src/eviction/, the kubelet's `killPodFunc`) and deletes through the API ----

  /** Ends an admitted pod for the eviction manager (`PodEvictions.evictPod`): resolves true once it stopped. */
  evictPod(uid: string, eviction: Omit<PodFailure, 'eventRecorded'>, graceSeconds: number): Promise<boolean> {
    return this.#p.evictions.evictPod(uid, eviction, graceSeconds);
  }

  /** The pods the eviction manager may rank and evict (the kubelet's `GetActivePods`, `AdmittedPods.activePods`). */
  activePods(): Pod[] {
    return this.#p.admission.activePods();
  }

  /** Whether an evicted pod's resources are back (`podResourcesAreReclaimed`): nothing of it is left in the runtime. */
  podCleanedUp(uid: string): boolean {
    return this.#p.evictions.isReclaimed(uid) || !this.#p.pleg.getPod(uid);
  }

  /**
   * Kills the pod's current incarnation and lets the sync loop create it again from its source
   * (`PodRestarts.restartPod`: a delete through the node's API, `kubectl delete pod` on a static
   * pod); `onKilled` is called once the old incarnation is gone.
   */
  restartPod(uid: string, graceSeconds: number, onKilled: () => void): Promise<void> {
    return this.#p.restarts.restartPod(uid, graceSeconds, onKilled);
  }
}
