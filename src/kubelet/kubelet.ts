import { EventEmitter } from 'node:events';
import type { Pod } from '../api/types.js';
import type { RuntimePod } from '../runtime/types.js';
import { isTerminalPhase } from '../status/transitions.js';
import { rejectedStatus, type AdmissionRefusal } from './admission.js';
import { AdmittedPods } from './admitted-pods.js';
import { CONTAINER_GC_PERIOD_MS } from './container-gc.js';
import { PodEvictions, PodRestarts } from './kill-now.js';
import type { KubeletEvents, KubeletOptions } from './kubelet-options.js';
import { buildKubeletParts, containerSubject, nodeSubject, type KubeletParts } from './kubelet-parts.js';
import type { RelistHealth } from './pleg.js';
import { computePodActions } from './pod-actions.js';
import { deadlineExceeded, nodeShutdown, type PodFailure, type ShutdownGroup } from './pod-failure.js';
import type { ProberManager } from './prober/manager.js';
import { RESIZE_RETRY_MS } from './resize-manager.js';
import { attemptFromStatus, restartAllActions, restartingAllContainers } from './restart-all.js';
import { checkLimitsForResolvConf } from './sandbox-config.js';
import { NodeShutdown } from './shutdown.js';
import { StatusPublisher } from './status-publisher.js';
import { PodTerminator, type PodTerminatorOptions } from './terminate.js';

export type { KubeletEvents, KubeletOptions } from './kubelet-options.js';

/** How long `stop` waits for the pod syncs in progress (any pod's kill that ends normally, not one waiting out a long grace period). */
const STOP_WAIT_MS = 10_000;

/**
 * The sync loop: one worker per pod UID, serialised (a sync requested while one runs sets `again`),
 * driven by pod source changes, PLEG events, back-off timers and a periodic resync. Each sync
 * publishes the pod's status to the status manager from the PLEG snapshot, then acts on the
 * runtime; the runtime change comes back as a PLEG event and the next sync reports it. Its parts
 * (src/kubelet/kubelet-parts.ts) and the modules below hold each concern's state; this class
 * decides (the kubelet's `SyncPod`, pkg/kubelet/kubelet.go).
 */
export class Kubelet {
  readonly #o: KubeletOptions;
  /** The PLEG, the pod workers, the back-offs, the resize manager, the killer, the starter, the container GC. */
  readonly #p: KubeletParts;
  readonly #events = new EventEmitter<KubeletEvents>();
  /** Liveness, readiness and startup probes of the running containers. */
  readonly prober: ProberManager;
  /** Admission handlers, the node's allocatable, the pods refused and admitted (src/kubelet/admitted-pods.ts). */
  readonly #admission: AdmittedPods;
  /** Each sync's status reaches the status manager through it (src/kubelet/status-publisher.ts). */
  readonly #statusPublisher: StatusPublisher;
  /** Deletion, deadline, eviction and shutdown of a pod still in its source (src/kubelet/terminate.ts). */
  readonly #terminator: PodTerminator;
  /** Graceful node shutdown (src/kubelet/shutdown.ts). */
  readonly #shutdown: NodeShutdown;
  /** Evictions and deletes through the API, done by the pod's worker (src/kubelet/kill-now.ts). */
  readonly #evictions: PodEvictions;
  readonly #restarts: PodRestarts;
  /** Pods removed from their source whose containers still run: their last spec, for preStop hooks. */
  readonly #removedSpecs = new Map<string, Pod>();
  #sourcesReady = false;
  #resyncTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #lastSync = 0;

  constructor(opts: KubeletOptions) {
    this.#o = opts;
    const p = buildKubeletParts(opts, {
      sync: (uid) => this.#sync(uid),
      schedule: (uid) => this.#schedule(uid),
      scheduleAfter: (uid, ms) => this.#scheduleAfter(uid, ms),
      sourcesReady: () => this.#sourcesReady,
    });
    this.#p = p;
    this.prober = p.prober;
    const relist = () => p.pleg.relist();
    const schedule = (uid: string) => this.#schedule(uid);
    const stopped = () => this.#stopped;
    const getPod = (uid: string) => opts.podManager.getPodByUID(uid);
    const record: PodTerminatorOptions['record'] = (subject, type, reason, message) => opts.recorder.record(subject, type, reason, message);
    this.#statusPublisher = new StatusPublisher({ nodeIP: opts.nodeIP, status: opts.statusManager, failures: p.failures, prober: p.prober, resize: p.resize, metrics: opts.metrics });
    this.#evictions = new PodEvictions({ getPod, stopped, schedule, killer: p.killer, relist, onEnded: (uid, done) => this.#terminator.onceEnded(uid, done), removeProbes: (uid) => p.prober.removePod(uid) });
    this.#terminator = new PodTerminator({
      record, publish: (...args) => this.#statusPublisher.publish(...args), killer: p.killer, relist,
      terminated: (uid) => this.#events.emit('podTerminated', uid), evictions: this.#evictions,
    });
    this.#shutdown = new NodeShutdown({
      pods: () => opts.podManager.getPods().filter((pod) => !this.#admission.isRefused(pod.metadata?.uid ?? '')),
      log: opts.log, onEnded: (uid, done) => this.#terminator.onEnded(uid, done), schedule, relist,
    });
    this.#restarts = new PodRestarts({
      getPod, stopped, schedule, killer: p.killer, relist, log: opts.log, runtimePod: (uid) => p.pleg.getPod(uid),
      deletePodStatus: (uid) => opts.statusManager.deletePodStatus(uid),
      forget: (uid) => {
        this.#forgetBackoffs(uid);
        this.#statusPublisher.forget(uid);
      },
      sync: (uid) => this.#sync(uid),
    });
    this.#admission = new AdmittedPods({
      podManager: opts.podManager, statusManager: opts.statusManager, allocation: p.resize.allocation, log: opts.log, record,
      reject: (pod, refusal) => this.rejectPod(pod, refusal), shuttingDown: () => this.#shutdown.inProgress, evicted: (uid) => this.#evictions.has(uid),
    });
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
    this.#admission.addPodAdmitHandler(handler);
  }

  /** The node was built (src/node/source.ts): its allocatable is what later pods are admitted against. */
  nodeBuilt(node: { readonly status?: { readonly allocatable?: Readonly<Record<string, string>> } }): void {
    this.#admission.allocatable = node.status?.allocatable;
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
    return this.#shutdown.shutdownPods(groups);
  }

  /** Pods were added, updated or removed by a source. */
  handlePodChanges(diff: { added: Pod[]; updated: Pod[]; removed: Pod[] }): void {
    // A removed pod's last spec is kept until its containers are gone, for its preStop hooks.
    for (const pod of diff.removed) this.#removedSpecs.set(pod.metadata?.uid ?? '', pod);
    for (const pod of [...diff.added, ...diff.updated]) this.#removedSpecs.delete(pod.metadata?.uid ?? '');
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
    if (this.#restarts.pending(uid)) return this.#restarts.restartNow(uid);
    if (!pod) {
      // A pod the node was ending (an eviction) that left its source is ended by the removal.
      this.#terminator.ended(uid);
      if (this.#sourcesReady && runtimePod) await this.#killPod(runtimePod, this.#removedSpecs.get(uid));
      if (!runtimePod) {
        this.#removedSpecs.delete(uid);
        this.#admission.forget(uid);
        this.#terminator.forget(uid);
        this.#statusPublisher.forget(uid);
        this.#evictions.forget(uid);
        this.#o.statusManager.deletePodStatus(uid);
        this.prober.removePod(uid);
        this.#forgetBackoffs(uid);
        this.#p.resize.removePod(uid);
        // Resources were freed: deferred resizes are tried again (`RetryPendingResizes`).
        for (const other of this.#p.resize.deferred()) this.#schedule(other);
      }
      return;
    }

    const shutdownGrace = this.#shutdown.grace(uid);
    if (shutdownGrace !== undefined) return this.#terminator.terminate(pod, runtimePod, nodeShutdown, shutdownGrace);
    const eviction = this.#evictions.get(uid);
    if (eviction) return this.#terminator.terminate(pod, runtimePod, eviction.failure, eviction.graceSeconds);
    if (pod.metadata?.deletionTimestamp) return this.#terminator.terminate(pod, runtimePod);
    if (!runtimePod && this.#admission.refuse(pod)) return;
    this.#admission.admit(uid);
    // The pod as the node runs it: its allocated resources, a pending resize decided (resize-manager.ts).
    const allocated = this.#p.resize.allocate(pod, this.#admission.activeAdmitted(uid), this.#admission.allocatable);
    const deadlineLeft = this.#activeDeadlineLeft(pod);
    if (deadlineLeft === 0) return this.#terminator.terminate(pod, runtimePod, deadlineExceeded);
    if (deadlineLeft !== undefined) this.#scheduleAfter(uid, deadlineLeft);

    const now = Date.now();
    if (!runtimePod) this.#statusPublisher.seen(uid, now);
    this.prober.syncPod(pod, runtimePod);
    // A RestartAllContainers reset due (its condition in the status last reported) replaces the
    // usual work: every container killed and removed; the next sync starts the pod over.
    const previous = this.#o.statusManager.getPodStatus(uid) ?? pod.status;
    const actions = restartingAllContainers(allocated, runtimePod, previous)
      ? restartAllActions(allocated, runtimePod)
      : computePodActions(allocated, runtimePod, this.#p.backoff, now, (name, id) => this.prober.failed(uid, name, id), {
          sameSpec: this.#p.resize.sameSpec(uid),
          resize: this.#p.resize.resizeAllowed(pod),
          started: (name, id) => this.prober.isStarted(uid, name, id),
          firstAttempt: (name) => attemptFromStatus(previous, name),
        });
    this.#p.resize.observe(pod, allocated, runtimePod);
    this.#p.starter.holdFailedStarts(pod, actions, now);
    this.#statusPublisher.publish(pod, runtimePod, actions.waiting);
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
   * `activeDeadlineSeconds` (the kubelet's `activeDeadlineHandler`): milliseconds left of the
   * pod's deadline counted from its start time, 0 once it passed, undefined without one.
   */
  #activeDeadlineLeft(pod: Pod): number | undefined {
    const seconds = pod.spec?.activeDeadlineSeconds;
    if (seconds == null) return undefined;
    const start = this.#o.statusManager.getPodStatus(pod.metadata?.uid ?? '')?.startTime ?? pod.status?.startTime;
    if (!start) return undefined;
    return Math.max(0, Date.parse(start) + seconds * 1000 - Date.now());
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
   * A pod gone from its source (or an orphan): killed (preStop hooks when its last spec is known),
   * then its containers, sandboxes, volumes and cgroup removed.
   */
  async #killPod(runtimePod: RuntimePod, lastSpec?: Pod): Promise<void> {
    await this.#p.killer.killPod(runtimePod, lastSpec, { remove: true, tearDown: true });
    await this.#p.pleg.relist();
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

  /** Forgets the back-offs and recorded failures of a pod that is gone. */
  #forgetBackoffs(uid: string): void {
    this.#p.backoff.forgetPrefix(`${uid}/`);
    this.#p.failures.forgetPod(uid);
  }

  // ---- Eviction (src/eviction/, the kubelet's `killPodFunc`) and deletes through the API ----

  /** Ends an admitted pod for the eviction manager (`PodEvictions.evictPod`): resolves true once it stopped. */
  evictPod(uid: string, eviction: Omit<PodFailure, 'eventRecorded'>, graceSeconds: number): Promise<boolean> {
    return this.#evictions.evictPod(uid, eviction, graceSeconds);
  }

  /** The pods the eviction manager may rank and evict (the kubelet's `GetActivePods`, `AdmittedPods.activePods`). */
  activePods(): Pod[] {
    return this.#admission.activePods();
  }

  /** Whether an evicted pod's resources are back (`podResourcesAreReclaimed`): nothing of it is left in the runtime. */
  podCleanedUp(uid: string): boolean {
    return this.#evictions.isReclaimed(uid) || !this.#p.pleg.getPod(uid);
  }

  /**
   * Kills the pod's current incarnation and lets the sync loop create it again from its source
   * (`PodRestarts.restartPod`: a delete through the node's API, `kubectl delete pod` on a static
   * pod); `onKilled` is called once the old incarnation is gone.
   */
  restartPod(uid: string, graceSeconds: number, onKilled: () => void): Promise<void> {
    return this.#restarts.restartPod(uid, graceSeconds, onKilled);
  }
}
