import { EventEmitter } from 'node:events';
import type { Pod } from '../api/types.js';
import type { RuntimePod } from '../runtime/types.js';
import { isTerminalPhase } from '../status/transitions.js';
import { admissionRefusal, rejectedStatus, type AdmissionRefusal } from './admission.js';
import type { Backoff } from './backoff.js';
import { CONTAINER_GC_PERIOD_MS, type ContainerGC } from './container-gc.js';
import type { PodKiller } from './kill.js';
import type { KubeletEvents, KubeletOptions } from './kubelet-options.js';
import { buildKubeletParts, containerSubject, nodeSubject } from './kubelet-parts.js';
import type { PLEG, RelistHealth } from './pleg.js';
import { computePodActions } from './pod-actions.js';
import { deadlineExceeded, nodeShutdown, nodeShutdownRefusal, shutdownGrace, shutdownPlan, type PodFailure, type ShutdownGroup } from './pod-failure.js';
import type { PodWorkers } from './pod-workers.js';
import type { ProberManager } from './prober/manager.js';
import { RESIZE_RETRY_MS, type ResizeManager } from './resize-manager.js';
import { attemptFromStatus, restartAllActions, restartingAllContainers } from './restart-all.js';
import { checkLimitsForResolvConf } from './sandbox-config.js';
import type { StartFailures } from './start-failures.js';
import { StatusPublisher } from './status-publisher.js';
import type { PodStarter } from './start.js';

const podRef = (pod: { metadata?: { namespace?: string; name?: string } }) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;

/**
 * The sync loop: one worker per pod UID, serialised (a sync requested while one runs sets `again`),
 * driven by pod source changes, PLEG events, back-off timers and a periodic resync. Each sync
 * publishes the pod's status to the status manager from the PLEG snapshot, then acts on the
 * runtime; the runtime change comes back as a PLEG event and the next sync reports it.
 */
/** How long `stop` waits for the pod syncs in progress (any pod's kill that ends normally, not one waiting out a long grace period). */
const STOP_WAIT_MS = 10_000;

export type { KubeletEvents, KubeletOptions } from './kubelet-options.js';

export class Kubelet {
  /** The runtime's pods as last listed; read through `runtimePod`, `runtimePods` and `relistHealth`. */
  readonly #pleg: PLEG;
  readonly #events = new EventEmitter<KubeletEvents>();
  /** Admission handlers that run before the kubelet's own (`addPodAdmitHandler`). */
  readonly #admitHandlers: ((pod: Pod) => AdmissionRefusal | undefined)[] = [];
  /**
   * The node's `status.allocatable` as last built (the kubelet's `getNodeAnyWay`), which admission
   * fits each new pod into; undefined until the node is first built (`nodeBuilt`), and meanwhile
   * resources are not checked.
   */
  #allocatable: Readonly<Record<string, string>> | undefined;
  /** Liveness, readiness and startup probes of the running containers. */
  readonly prober: ProberManager;
  /** Pods refused at admission, by UID (see `#refuse`). */
  readonly #refused = new Set<string>();
  /** Pods admitted (or adopted running), by UID: what a later pod's host ports are checked against. */
  readonly #admitted = new Set<string>();
  /** Pods failed on the node (their active deadline passed), by UID: the event is recorded once (a pod's end, not a start failure). */
  readonly #failed = new Set<string>();
  /** Pods removed from their source whose containers still run: their last spec, for preStop hooks. */
  readonly #removedSpecs = new Map<string, Pod>();
  readonly #o: KubeletOptions;
  /**
   * The crash-loop back-off, read by `computePodActions`: restarts of containers that ran and
   * exited, counted from their finish. Not the start-failure memory (`#failures`), which holds
   * starts that left nothing running.
   */
  readonly #backoff: Backoff;
  /** The one start-failure memory: failed starts and sandbox creations, their reasons and back-offs (src/kubelet/start-failures.ts). */
  readonly #failures: StartFailures;
  readonly #workers: PodWorkers;
  #sourcesReady = false;
  #resyncTimer: NodeJS.Timeout | undefined;
  #stopped = false;
  #lastSync = 0;
  /** Graceful node shutdown in progress: the grace period each pod being shut down is stopped with, by UID. */
  #shutdown: Map<string, number> | undefined;
  /** Pods the node is ending (shutdown, eviction) whose containers all stopped: resolved by `#terminate`. */
  readonly #endingDone = new Map<string, () => void>();
  /** Pods evicted (`evictPod`), by UID, until they leave their source: how they fail and their grace period. */
  readonly #evictions = new Map<string, { failure: PodFailure; graceSeconds: number }>();
  /** Evicted pods whose containers, volumes and cgroup were removed: their status is final. */
  readonly #reclaimed = new Set<string>();
  /** Dead containers and sandboxes go through it, never through a pod's sync (src/kubelet/container-gc.ts). */
  readonly #containerGC: ContainerGC;
  /** Allocated resources and in-place resizes (src/kubelet/resize-manager.ts). */
  readonly #resize: ResizeManager;
  /** Every kill of a container or a pod goes through it (src/kubelet/kill.ts). */
  readonly #killer: PodKiller;
  /** Sandboxes and containers are started through it (src/kubelet/start.ts). */
  readonly #starter: PodStarter;
  /** Each sync's status reaches the status manager through it (src/kubelet/status-publisher.ts). */
  readonly #statusPublisher: StatusPublisher;

  constructor(opts: KubeletOptions) {
    this.#o = opts;
    const parts = buildKubeletParts(opts, {
      sync: (uid) => this.#sync(uid),
      schedule: (uid) => this.#schedule(uid),
      scheduleAfter: (uid, ms) => this.#scheduleAfter(uid, ms),
      sourcesReady: () => this.#sourcesReady,
    });
    this.#pleg = parts.pleg;
    this.#workers = parts.workers;
    this.#backoff = parts.backoff;
    this.#failures = parts.failures;
    this.#resize = parts.resize;
    this.#killer = parts.killer;
    this.#starter = parts.starter;
    this.prober = parts.prober;
    this.#containerGC = parts.containerGC;
    this.#statusPublisher = new StatusPublisher({ nodeIP: opts.nodeIP, status: opts.statusManager, failures: parts.failures, prober: parts.prober, resize: parts.resize, metrics: opts.metrics });
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
    this.#admitHandlers.push(handler);
  }

  /** The node was built (src/node/source.ts): its allocatable is what later pods are admitted against. */
  nodeBuilt(node: { readonly status?: { readonly allocatable?: Readonly<Record<string, string>> } }): void {
    this.#allocatable = node.status?.allocatable;
  }

  /** The pod `uid` as the runtime last listed it (the PLEG's cache), or undefined when it has nothing of it. */
  runtimePod(uid: string): RuntimePod | undefined {
    return this.#pleg.getPod(uid);
  }

  /** Every pod of this node as the runtime last listed it. */
  runtimePods(): RuntimePod[] {
    return this.#pleg.getPods();
  }

  /** When the runtime was last listed, whether that worked, and how many lists succeeded (for the Node's and /healthz's health). */
  relistHealth(): RelistHealth {
    return this.#pleg.health();
  }

  start(): void {
    if (this.#o.dns) void checkLimitsForResolvConf(this.#o.dns, (reason, message) => this.#o.recorder.record(nodeSubject(this.#o.nodeName), 'Warning', reason, message));
    this.#pleg.start((uid) => this.#schedule(uid));
    const resync = () => {
      this.#resyncTimer = setTimeout(() => {
        for (const pod of this.#o.podManager.getPods()) this.#schedule(pod.metadata?.uid ?? '');
        resync();
      }, this.#o.syncFrequencyMs);
      this.#resyncTimer.unref();
    };
    resync();
    this.#containerGC.start(this.#o.containerGC?.periodMs ?? CONTAINER_GC_PERIOD_MS);
  }

  /**
   * The container GC's `DeleteAllUnusedContainers` (for the eviction manager's reclaim): every
   * dead container and sandbox beyond the policy, and all of those of terminated pods. Rejects when
   * the runtime cannot be listed.
   */
  deleteAllUnusedContainers(): Promise<void> {
    return this.#containerGC.deleteAllUnusedContainers();
  }

  /**
   * Stops the loops and waits for running syncs, at most `STOP_WAIT_MS`: a sync killing a pod may
   * wait out its whole grace period, which must not hold nodelet's close (a kubelet that stops
   * does not wait either). Containers keep running, as with the kubelet.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#pleg.stop();
    this.prober.stop();
    if (this.#resyncTimer) clearTimeout(this.#resyncTimer);
    await this.#containerGC.stop();
    const left = await this.#workers.stop(STOP_WAIT_MS);
    if (left.length) this.#o.log.warn({ pods: left, waitedSeconds: STOP_WAIT_MS / 1000 }, 'Stopped without waiting for pod syncs still running (a kill waiting out its grace period)');
  }

  /**
   * Graceful node shutdown (the kubelet's shutdown manager `killPods`,
   * pkg/kubelet/nodeshutdown/nodeshutdown_manager.go): the pods go group by group, lowest
   * priority first — each pod in the group whose lowest priority is the highest at or below its
   * own (`spec.priority`, 0 when unset; below every group, the first) — each stopped with the
   * group's grace period or its own `terminationGracePeriodSeconds` when shorter, preStop hooks
   * included; the next group starts once every pod of this one stopped or its grace period ran
   * out. Each pod ends `Failed` (`Succeeded` stays), reason `Terminated`, "Pod was terminated in
   * response to imminent node shutdown.", with `DisruptionTarget` (`TerminationByKubelet`); a pod
   * arriving meanwhile is rejected (`NodeShutdown`). Resolves when the last group is done.
   */
  async shutdownPods(groups: readonly ShutdownGroup[]): Promise<void> {
    const pods = this.#o.podManager.getPods().filter((p) => !this.#refused.has(p.metadata?.uid ?? ''));
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
          this.#endingDone.set(uid, resolve);
          this.#schedule(uid);
        });
      });
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(done), new Promise<void>((resolve) => (timer = setTimeout(resolve, group.graceSeconds * 1000)))]);
      clearTimeout(timer);
    }
    // The last statuses reach the status manager with the syncs the stops bring.
    await this.#pleg.relist();
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
    void this.#pleg.relist().then(() => {
      for (const rp of this.#pleg.getPods()) this.#schedule(rp.uid);
      // Allocations of pods that are gone from every source and the runtime (`RemoveOrphanedPods`).
      const live = new Set([...this.#o.podManager.getPods().map((p) => p.metadata?.uid ?? ''), ...this.#pleg.getPods().map((p) => p.uid)]);
      this.#resize.allocation.removeOrphans(live);
    });
  }

  /** When the sync loop last completed a pod sync or relist (for /healthz/syncloop). */
  lastActivity(): number {
    return Math.max(this.#lastSync, this.#pleg.health().lastSuccess);
  }

  #schedule(uid: string): void {
    this.#workers.schedule(uid);
  }

  #scheduleAfter(uid: string, ms: number): void {
    this.#workers.scheduleAfter(uid, ms);
  }

  async #sync(uid: string): Promise<void> {
    this.#lastSync = Date.now();
    if (this.#pleg.health().relists === 0) {
      // Never act on a pod before the runtime was listed once: after a restart of nodelet its
      // containers exist, and creating them again would duplicate them.
      await this.#pleg.relist();
      if (this.#pleg.health().relists === 0) return this.#scheduleAfter(uid, 1000);
    }
    const pod = this.#o.podManager.getPodByUID(uid);
    const runtimePod = this.#pleg.getPod(uid);
    // A delete through the API (`restartPod`) runs here, inside the pod's worker, never beside a sync.
    if (this.#restarts.has(uid)) return this.#restartNow(uid);
    if (!pod) {
      // A pod the node was ending (an eviction) that left its source is ended by the removal.
      this.#endingDone.get(uid)?.();
      if (this.#sourcesReady && runtimePod) await this.#killPod(runtimePod, this.#removedSpecs.get(uid));
      if (!runtimePod) {
        this.#removedSpecs.delete(uid);
        this.#refused.delete(uid);
        this.#admitted.delete(uid);
        this.#failed.delete(uid);
        this.#statusPublisher.forget(uid);
        this.#evictions.delete(uid);
        this.#reclaimed.delete(uid);
        this.#o.statusManager.deletePodStatus(uid);
        this.prober.removePod(uid);
        this.#forgetBackoffs(uid);
        this.#resize.removePod(uid);
        // Resources were freed: deferred resizes are tried again (`RetryPendingResizes`).
        for (const other of this.#resize.deferred()) this.#schedule(other);
      }
      return;
    }

    const shutdownGrace = this.#shutdown?.get(uid);
    if (shutdownGrace !== undefined) return this.#terminate(pod, runtimePod, nodeShutdown, shutdownGrace);
    const eviction = this.#evictions.get(uid);
    if (eviction) return this.#terminate(pod, runtimePod, eviction.failure, eviction.graceSeconds);
    if (pod.metadata?.deletionTimestamp) return this.#terminate(pod, runtimePod);
    if (!runtimePod && this.#refuse(pod)) return;
    this.#admitted.add(uid);
    // The pod as the node runs it: its allocated resources, a pending resize decided (resize-manager.ts).
    const allocated = this.#resize.allocate(pod, this.#activeAdmitted(uid), this.#allocatable);
    const deadlineLeft = this.#activeDeadlineLeft(pod);
    if (deadlineLeft === 0) return this.#terminate(pod, runtimePod, deadlineExceeded);
    if (deadlineLeft !== undefined) this.#scheduleAfter(uid, deadlineLeft);

    const now = Date.now();
    if (!runtimePod) this.#statusPublisher.seen(uid, now);
    this.prober.syncPod(pod, runtimePod);
    // A RestartAllContainers reset due (its condition in the status last reported) replaces the
    // usual work: every container killed and removed; the next sync starts the pod over.
    const previous = this.#o.statusManager.getPodStatus(uid) ?? pod.status;
    const actions = restartingAllContainers(allocated, runtimePod, previous)
      ? restartAllActions(allocated, runtimePod)
      : computePodActions(allocated, runtimePod, this.#backoff, now, (name, id) => this.prober.failed(uid, name, id), {
          sameSpec: this.#resize.sameSpec(uid),
          resize: this.#resize.resizeAllowed(pod),
          started: (name, id) => this.prober.isStarted(uid, name, id),
          firstAttempt: (name) => attemptFromStatus(previous, name),
        });
    this.#resize.observe(pod, allocated, runtimePod);
    this.#starter.holdFailedStarts(pod, actions, now);
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
      if ((await this.#resizeInPlace(allocated, runtimePod)) === 'applied') await this.#pleg.relist();
      return;
    }

    await this.#starter.syncPod(allocated, runtimePod, actions, () => this.#resizeInPlace(allocated, runtimePod));
    // The changes come back as PLEG events, which sync this pod again and publish its status.
    await this.#pleg.relist();
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
   * Admission (the kubelet's `canAdmitPod` then `rejectPod`), for a pod that has nothing running
   * yet: a refused pod gets a `Warning` event with the handler's reason and the `Failed` status
   * "Pod was rejected: …", once; it never gets a sandbox. True when `pod` is refused.
   */
  #refuse(pod: Pod): boolean {
    const uid = pod.metadata?.uid ?? '';
    if (this.#refused.has(uid)) return true;
    const others = this.#activeAdmitted(uid).map((p) => this.#resize.allocation.allocatedPod(p));
    const refusal = this.#shutdown ? nodeShutdownRefusal : (this.#admitHandlers.reduce<AdmissionRefusal | undefined>((refusal, admit) => refusal ?? admit(pod), undefined) ?? admissionRefusal(pod, others, this.#allocatable));
    if (!refusal) return false;
    this.#refused.add(uid);
    this.#o.log.warn({ pod: podRef(pod), podUID: uid, reason: refusal.reason }, refusal.message);
    this.#o.recorder.record(pod, 'Warning', refusal.reason, refusal.message);
    this.rejectPod(pod, refusal);
    return true;
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

  /**
   * The admitted pods other than `uid` that still hold the node's resources: not in a terminal
   * phase (a pod still terminating counts, as in the kubelet's `filterOutInactivePods`).
   */
  #activeAdmitted(uid: string): Pod[] {
    const out: Pod[] = [];
    for (const id of this.#admitted) {
      if (id === uid) continue;
      const p = this.#o.podManager.getPodByUID(id);
      const phase = this.#o.statusManager.getPodStatus(id)?.phase;
      if (p && phase !== 'Succeeded' && phase !== 'Failed') out.push(p);
    }
    return out;
  }

  /** Forgets the back-offs and recorded failures of a pod that is gone. */
  #forgetBackoffs(uid: string): void {
    this.#backoff.forgetPrefix(`${uid}/`);
    this.#failures.forgetPod(uid);
  }

  /**
   * Graceful deletion (the kubelet's `syncTerminatingPod`): stop every running container with the
   * deletion's grace period (SIGTERM, SIGKILL when it runs out) and the sandbox, start nothing;
   * once nothing runs, publish the terminal status. Containers are removed when the pod leaves
   * its source (after cluster mode deleted the object), so their logs stay readable meanwhile.
   * `failure` ends a pod that is not being deleted (its deadline passed): the pod fails with that
   * reason, an event says why, and nothing starts again.
   */
  async #terminate(pod: Pod, runtimePod: RuntimePod | undefined, failure?: PodFailure, graceOverride?: number): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    // An evicted pod whose content is gone keeps the status it ended with.
    if (this.#reclaimed.has(uid)) return;
    const running = runtimePod?.containers.filter((c) => c.state === 'running') ?? [];
    const sandboxes = runtimePod?.sandboxes.filter((s) => s.ready) ?? [];
    // An event says why the node failed the pod (its deadline); a shutdown says it in the status
    // only, and the eviction manager records its own.
    if (failure && !failure.disruption && !failure.eventRecorded && !this.#failed.has(uid)) {
      this.#failed.add(uid);
      this.#o.recorder.record(pod, 'Normal', failure.reason, failure.message);
    }
    this.#statusPublisher.publish(pod, runtimePod, new Map(), running.length === 0, failure);
    if (running.length === 0) this.#endingDone.get(uid)?.();
    if (running.length === 0 && sandboxes.length === 0) {
      if (!failure) this.#events.emit('podTerminated', uid);
      else if (this.#evictions.has(uid) && runtimePod) await this.#reclaimEvicted(pod, runtimePod);
      return;
    }
    // The containers and sandboxes stay: they are removed when the pod leaves its source.
    if (runtimePod) await this.#killer.killPod(runtimePod, pod, { grace: graceOverride });
    // The stops come back as PLEG events; the next sync publishes the terminal status.
    await this.#pleg.relist();
  }

  /**
   * Applies a pod's admitted resize to its running containers and cgroup (`ResizeManager.apply`).
   * After a change the pod is synced again to read the new values back; after a failure, once
   * now (its `Error` condition published) and once the retry hold is over.
   */
  async #resizeInPlace(pod: Pod, runtimePod: RuntimePod | undefined): Promise<'applied' | 'error' | 'none'> {
    const result = await this.#resize.apply(pod, runtimePod);
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
    await this.#killer.killPod(runtimePod, lastSpec, { remove: true, tearDown: true });
    await this.#pleg.relist();
  }

  // ---- Eviction (src/eviction/, the kubelet's `killPodFunc`) ----

  /**
   * Ends an admitted pod for the eviction manager: its containers are stopped with `graceSeconds`
   * (preStop hooks included, as every kill), it fails with the eviction's reason and message
   * (`DisruptionTarget` for pressure evictions), and once nothing of it runs its containers,
   * sandboxes, volumes and cgroup are removed — what the kubelet's container GC and volume manager
   * do for an evicted pod (`ShouldPodContentBeRemoved`), done at once so the space it held is free
   * for the manager's next observation. Resolves true once the pod stopped (false: not a pod of
   * this node, or already ending).
   */
  evictPod(uid: string, eviction: Omit<PodFailure, 'eventRecorded'>, graceSeconds: number): Promise<boolean> {
    const pod = this.#o.podManager.getPodByUID(uid);
    if (!pod || this.#evictions.has(uid) || this.#stopped) return Promise.resolve(false);
    const grace = Math.max(0, graceSeconds);
    this.#evictions.set(uid, { failure: { ...eviction, eventRecorded: true }, graceSeconds: grace });
    return new Promise<boolean>((resolve) => {
      // The kubelet's `killPodNow` waits at most max(10 s, 1.5 × grace) (pkg/kubelet/pod_workers.go):
      // the eviction manager's next pass never waits on a kill that cannot finish.
      const timer = setTimeout(done, Math.max(10_000, grace * 1500));
      timer.unref();
      function done(): void {
        clearTimeout(timer);
        resolve(true);
      }
      this.#endingDone.set(uid, () => {
        this.#endingDone.delete(uid);
        done();
      });
      this.#schedule(uid);
    });
  }

  /**
   * The pods the eviction manager may rank and evict (the kubelet's `GetActivePods`): admitted,
   * not in a terminal phase, not being deleted, not already evicted.
   */
  activePods(): Pod[] {
    return this.#o.podManager.getPods().filter((pod) => {
      const uid = pod.metadata?.uid ?? '';
      const phase = this.#o.statusManager.getPodStatus(uid)?.phase;
      return this.#admitted.has(uid) && !this.#evictions.has(uid) && !pod.metadata?.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed';
    });
  }

  /** Whether an evicted pod's resources are back (`podResourcesAreReclaimed`): nothing of it is left in the runtime. */
  podCleanedUp(uid: string): boolean {
    return this.#reclaimed.has(uid) || !this.#pleg.getPod(uid);
  }

  async #reclaimEvicted(pod: Pod, runtimePod: RuntimePod): Promise<void> {
    const uid = runtimePod.uid;
    // Nothing of it runs any more: this removes. A removal that failed was logged; the status is final anyway.
    await this.#killer.killPod(runtimePod, pod, { remove: true, tearDown: true }).catch(() => undefined);
    this.#reclaimed.add(uid);
    this.prober.removePod(uid);
    await this.#pleg.relist();
  }

  // ---- Deleting a pod through the API (`kubectl delete pod` on a static pod) ----

  /** Pending `restartPod` requests by UID, taken by the pod's worker. */
  readonly #restarts = new Map<string, { graceSeconds: number; onKilled: () => void; promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void }>();

  /**
   * Kills the pod's current incarnation and lets the sync loop create it again from its source,
   * which stays the truth — what deleting a static pod's mirror pod amounts to in a cluster. Runs
   * in the pod's worker (never beside a sync of the same pod): running containers are killed as
   * every kill (`Killing`, their preStop hooks, SIGTERM, SIGKILL once `graceSeconds` ran out), the
   * sandbox stops, every container of the pod is removed, its
   * volumes are torn down and its cached status and back-off are forgotten, so the new incarnation
   * starts from scratch (restart counts 0, a new start time). `onKilled` is called synchronously
   * once the old incarnation is gone, before the sync that creates the new one. A second request
   * while one is pending joins it.
   */
  restartPod(uid: string, graceSeconds: number, onKilled: () => void): Promise<void> {
    const pending = this.#restarts.get(uid);
    if (pending) return pending.promise;
    if (this.#stopped) return Promise.reject(new Error('nodelet is stopping'));
    let resolve!: () => void;
    let reject!: (err: unknown) => void;
    const promise = new Promise<void>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    this.#restarts.set(uid, { graceSeconds: Math.max(0, graceSeconds), onKilled, promise, resolve, reject });
    this.#schedule(uid);
    return promise;
  }

  async #restartNow(uid: string): Promise<void> {
    const req = this.#restarts.get(uid);
    if (!req) return;
    try {
      const pod = this.#o.podManager.getPodByUID(uid);
      const runtimePod = this.#pleg.getPod(uid);
      if (runtimePod) {
        this.#o.log.info({ pod: `${runtimePod.namespace}/${runtimePod.name}`, podUID: uid, gracePeriod: req.graceSeconds }, 'Deleting pod on request; it is recreated from its source');
        // As every kill of the kubelet: preStop hooks first, then the request's grace period.
        await this.#killer.killPod(runtimePod, pod, { grace: req.graceSeconds, remove: true, tearDown: true });
      }
      await this.#pleg.relist();
      this.#o.statusManager.deletePodStatus(uid);
      this.#forgetBackoffs(uid);
      this.#statusPublisher.forget(uid);
      this.#restarts.delete(uid);
      req.onKilled();
      req.resolve();
    } catch (err) {
      this.#restarts.delete(uid);
      req.reject(err);
      throw err;
    }
    // The pod is still in its source: create the new incarnation now.
    if (!this.#stopped) await this.#sync(uid);
  }
}
