// The eviction manager (pkg/kubelet/eviction/eviction_manager.go): every monitoring interval it
// reads the node, tracks which thresholds are met and for how long, reports the pressure
// conditions, enforces local-storage limits, reclaims node-level resources (dead containers,
// unused images) and, if that is not enough, evicts at most one pod per pass. Everything it
// touches is injected (readings, usage, garbage collection, the kill path, events), so it runs
// without an engine in tests.
import { isMirrorPod, isStaticPod } from '../api/annotations.js';
import { getPodQOS } from '../api/qos.js';
import type { Pod } from '../api/types.js';
import type { Logger } from '../logging/index.js';
import { hasLocalStorageLimit, localStorageBreach } from './local-storage.js';
import { evictionMessage, rankPods, usageNeeds, type UsageByPod } from './ranking.js';
import {
  formatThreshold,
  getReclaimableThreshold,
  isHardEvictionThreshold,
  makeObservations,
  mergeThresholds,
  nodeConditions,
  nodeConditionsLastObservedAt,
  nodeConditionsObservedSince,
  sortByEvictionPriority,
  thresholdsFirstObservedAt,
  thresholdsMet,
  thresholdsMetGracePeriod,
  thresholdsUpdatedStats,
} from './thresholds.js';
import type { Eviction, NodeCondition, NodeReadings, Observations, PodUsage, Signal, StarvedResource, Threshold, UsageNeeds } from './types.js';

/** eviction_manager.go `immediateEvictionGracePeriodSeconds`: hard thresholds and local-storage limits. */
export const IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS = 1;
/** eviction_manager.go `podCleanupTimeout` / `podCleanupPollFreq`. */
export const POD_CLEANUP_TIMEOUT_MS = 30_000;
export const POD_CLEANUP_POLL_MS = 1_000;
/** The kubelet's default evictionMonitoringPeriod. */
export const DEFAULT_MONITORING_INTERVAL_MS = 10_000;
/** scheduling.SystemCriticalPriority. */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;
/** v1.TaintNodeMemoryPressure. */
const TAINT_NODE_MEMORY_PRESSURE = 'node.kubernetes.io/memory-pressure';

export interface EvictionManagerOptions {
  readonly thresholds: readonly Threshold[];
  readonly pressureTransitionPeriodMs: number; // evictionPressureTransitionPeriod (5m)
  readonly maxPodGracePeriodSeconds: number; // evictionMaxPodGracePeriod (0)
  readonly monitoringIntervalMs?: number; // 10 s (evictionMonitoringPeriod)
  /** LocalStorageCapacityIsolation (on): emptyDir sizeLimit, pod and container ephemeral-storage limits. */
  readonly localStorageCapacityIsolation?: boolean;
  readonly readNode: () => Promise<NodeReadings>;
  readonly podUsage: (pods: readonly Pod[], needs: UsageNeeds) => Promise<ReadonlyMap<string /*uid*/, PodUsage>>;
  /** The node's active pods (admitted, not terminal, not being deleted). */
  readonly activePods: () => readonly Pod[];
  /** Reclaim node-level resources before evicting (the kubelet's reclaimNodeLevelResources): */
  readonly deleteUnusedContainers: () => Promise<void>; // dead containers and sandboxes
  readonly deleteUnusedImages: () => Promise<void>; // image GC's delete-all-unused
  /** Kills the pod with the grace period; resolves true once it was asked to stop (false: it could not be). */
  readonly evict: (pod: Pod, eviction: Eviction, graceSeconds: number) => Promise<boolean>;
  /** Whether the pod's resources are reclaimed (containers stopped, volumes gone); the manager waits up to 30 s for it after an eviction (waitForPodsCleanup). */
  readonly podCleanedUp?: (pod: Pod) => boolean;
  readonly record: {
    readonly pod: (pod: Pod, type: 'Warning' | 'Normal', reason: string, message: string, annotations?: Readonly<Record<string, string>>) => void;
    readonly node: (type: 'Warning' | 'Normal', reason: string, message: string) => void;
  };
  /** Counts an eviction by its signal (`kubelet_evictions{eviction_signal}`; the local-storage limits' pseudo-signals). */
  readonly counted?: (signal: string) => void;
  readonly log: Logger;
  readonly now?: () => number;
}

/**
 * kubelettypes.IsCriticalPod: static pods (source annotation `kubernetes.io/config.source` other
 * than `api`), mirror pods (`kubernetes.io/config.mirror`), or priority ≥ SystemCriticalPriority.
 */
export function isCriticalPod(pod: Pod): boolean {
  if (isStaticPod(pod) || isMirrorPod(pod)) return true;
  const priority = pod.spec?.priority;
  return typeof priority === 'number' && priority >= SYSTEM_CRITICAL_PRIORITY;
}

type Toleration = NonNullable<NonNullable<Pod['spec']>['tolerations']>[number];

/** v1 Toleration.ToleratesTaint for a taint without value (1.34: Equal and Exists only). */
function toleratesTaint(t: Toleration, key: string, effect: string): boolean {
  if (t.effect && t.effect !== effect) return false;
  if (t.key && t.key !== key) return false;
  switch (t.operator ?? '') {
    case '':
    case 'Equal':
      return (t.value ?? '') === '';
    case 'Exists':
      return true;
    default:
      return false;
  }
}

const podRef = (pod: Pod): string => `${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''}`;

export class EvictionManager {
  private readonly opts: EvictionManagerOptions;
  private readonly now: () => number;
  private readonly localStorage: boolean;
  /** The conditions reported now (observed within the transition period). */
  private nodeConditions: NodeCondition[] = [];
  private firstObservedAt: Map<Threshold, number> = new Map();
  private conditionsLastObservedAt: Map<NodeCondition, number> = new Map();
  /** Thresholds met (grace period included) and not yet resolved: kept until their minimum reclaim is. */
  private thresholdsMet: Threshold[] = [];
  private lastObservations: Observations = new Map();
  /** The running (or last) pass: passes never overlap. */
  private pass: Promise<unknown> = Promise.resolve();
  private running = false;
  private timer: NodeJS.Timeout | undefined;
  private loop: Promise<void> = Promise.resolve();
  private wake: (() => void) | undefined;

  constructor(opts: EvictionManagerOptions) {
    this.opts = opts;
    this.now = opts.now ?? Date.now;
    this.localStorage = opts.localStorageCapacityIsolation ?? true;
  }

  /**
   * The monitoring loop (eviction_manager.go `Start`): a pass, then the interval; after an
   * eviction, the wait for the pod's cleanup (up to 30 s) and at once the next pass. Timers are
   * unref'd; a failing pass is logged, never thrown.
   */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.opts.log.info('Eviction manager: starting control loop');
    this.schedule(0);
  }

  /** Ends the loop; resolves once a running pass (or cleanup wait) is over. */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.wake?.();
    await this.loop;
    await this.pass;
  }

  private schedule(ms: number): void {
    if (!this.running) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.loop = this.tick();
    }, ms);
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    let evicted: Pod[] = [];
    try {
      evicted = await this.synchronize();
    } catch (err) {
      this.opts.log.error({ err }, 'Eviction manager: failed to synchronize');
    }
    if (evicted.length > 0 && this.running) {
      this.opts.log.info({ pods: evicted.map(podRef) }, 'Eviction manager: pods evicted, waiting for pod to be cleaned up');
      await this.waitForPodsCleanup(evicted);
      this.schedule(0);
    } else {
      this.schedule(this.opts.monitoringIntervalMs ?? DEFAULT_MONITORING_INTERVAL_MS);
    }
  }

  /** eviction_manager.go `waitForPodsCleanup`: polls every second, gives up after 30 s (or on stop). */
  private async waitForPodsCleanup(pods: readonly Pod[]): Promise<void> {
    const cleanedUp = this.opts.podCleanedUp;
    if (cleanedUp === undefined) return;
    for (let waited = 0; waited < POD_CLEANUP_TIMEOUT_MS && this.running; waited += POD_CLEANUP_POLL_MS) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, POD_CLEANUP_POLL_MS);
        t.unref();
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = undefined;
      if (!this.running) return;
      if (pods.every((p) => cleanedUp(p))) {
        this.opts.log.info({ pods: pods.map(podRef) }, 'Eviction manager: pods successfully cleaned up');
        return;
      }
    }
    if (this.running) this.opts.log.info({ pods: pods.map(podRef) }, 'Eviction manager: timed out waiting for pods to be cleaned up');
  }

  /** One pass (eviction_manager.go `synchronize`): the pods evicted by it. Passes run one at a time. */
  synchronize(): Promise<Pod[]> {
    const run = this.pass.then(() => this.synchronizeOnce());
    this.pass = run.catch(() => undefined);
    return run;
  }

  /** The pressure conditions now (true while observed within the transition period). */
  conditions(): ReadonlySet<NodeCondition> {
    return new Set(this.nodeConditions);
  }

  /**
   * eviction_manager.go `Admit`: under pressure, only critical pods are admitted — and, when the
   * only pressure is memory, pods that are not BestEffort or tolerate the memory-pressure taint.
   */
  admit(pod: Pod): { readonly reason: string; readonly message: string } | undefined {
    const conditions = this.nodeConditions;
    if (conditions.length === 0 || isCriticalPod(pod)) return undefined;
    if (conditions.length === 1 && conditions[0] === 'MemoryPressure') {
      if (getPodQOS(pod) !== 'BestEffort') return undefined;
      if ((pod.spec?.tolerations ?? []).some((t) => toleratesTaint(t, TAINT_NODE_MEMORY_PRESSURE, 'NoSchedule'))) return undefined;
    }
    this.opts.log.info({ pod: podRef(pod), nodeCondition: conditions }, 'Failed to admit pod to node');
    return { reason: 'Evicted', message: `The node had condition: [${conditions.join(' ')}]. ` };
  }

  private async synchronizeOnce(): Promise<Pod[]> {
    const { log } = this.opts;
    const configured = this.opts.thresholds;
    if (configured.length === 0 && !this.localStorage) return [];
    const activePods = this.opts.activePods();
    let readings: NodeReadings;
    try {
      readings = await this.opts.readNode();
    } catch (err) {
      log.error({ err }, 'Eviction manager: failed to get summary stats');
      return [];
    }
    const observations = makeObservations(readings);

    // The thresholds met now, and those met before whose minimum reclaim is not reached yet.
    let thresholds = thresholdsMet(configured, observations, false);
    if (this.thresholdsMet.length > 0) thresholds = mergeThresholds(thresholds, thresholdsMet(this.thresholdsMet, observations, true));
    const now = this.now();
    const firstObservedAt = thresholdsFirstObservedAt(thresholds, this.firstObservedAt, now);
    const observedConditions = nodeConditions(thresholds);
    if (observedConditions.length > 0) log.debug({ nodeCondition: observedConditions }, 'Eviction manager: node conditions - observed');
    const lastObservedAt = nodeConditionsLastObservedAt(observedConditions, this.conditionsLastObservedAt, now);
    const conditions = nodeConditionsObservedSince(lastObservedAt, this.opts.pressureTransitionPeriodMs, now);
    thresholds = thresholdsMetGracePeriod(firstObservedAt, now);
    for (const [t, at] of firstObservedAt) {
      if (now - at < t.gracePeriodMs) log.debug({ threshold: formatThreshold(t), durationMs: now - at }, 'Eviction manager: eviction criteria not yet met');
    }

    this.nodeConditions = conditions;
    this.firstObservedAt = firstObservedAt;
    this.conditionsLastObservedAt = lastObservedAt;
    this.thresholdsMet = thresholds;
    // Act only on readings newer than the last pass's.
    thresholds = thresholdsUpdatedStats(thresholds, observations, this.lastObservations);
    this.lastObservations = observations;

    if (this.localStorage) {
      const evicted = await this.localStorageEviction(activePods, readings.dedicatedImageFs);
      if (evicted.length > 0) return evicted;
    }
    if (thresholds.length === 0) {
      log.debug('Eviction manager: no resources are starved');
      return [];
    }

    thresholds = sortByEvictionPriority(thresholds);
    const reclaimable = getReclaimableThreshold(thresholds);
    /* c8 ignore next */
    if (reclaimable === undefined) return [];
    const { threshold, resource } = reclaimable;
    log.info({ resourceName: resource }, 'Eviction manager: attempting to reclaim');
    this.opts.record.node('Warning', 'EvictionThresholdMet', `Attempting to reclaim ${resource}`);

    if (await this.reclaimNodeLevelResources(threshold.signal, resource, readings.dedicatedImageFs)) {
      log.info({ resourceName: resource }, 'Eviction manager: able to reduce resource pressure without evicting pods.');
      return [];
    }
    log.info({ resourceName: resource }, 'Eviction manager: must evict pod(s) to reclaim');
    if (activePods.length === 0) {
      log.error('Eviction manager: eviction thresholds have been met, but no pods are active to evict');
      return [];
    }

    let stats: UsageByPod;
    try {
      stats = await this.opts.podUsage(activePods, usageNeeds(threshold.signal));
    } catch (err) {
      log.error({ err }, 'Eviction manager: failed to get pod stats');
      return [];
    }
    const ranked = rankPods(threshold.signal, activePods, stats, readings.dedicatedImageFs);
    log.info({ pods: ranked.map(podRef) }, 'Eviction manager: pods ranked for eviction');

    // At most one pod per pass.
    for (const pod of ranked) {
      let grace = IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS;
      if (!isHardEvictionThreshold(threshold)) {
        grace = this.opts.maxPodGracePeriodSeconds;
        const own = pod.spec?.terminationGracePeriodSeconds;
        if (typeof own === 'number') grace = Math.min(grace, own);
      }
      const { message, annotations } = evictionMessage(resource, pod, stats.get(pod.metadata?.uid ?? ''), thresholds, observations);
      if (await this.evictPod(pod, grace, { reason: 'Evicted', message, annotations, disruption: 'TerminationByKubelet' })) {
        this.opts.counted?.(threshold.signal);
        return [pod];
      }
    }
    log.info('Eviction manager: unable to evict any pods from the node');
    return [];
  }

  /**
   * eviction_manager.go `reclaimNodeLevelResources` with buildSignalToNodeReclaimFuncs' lists:
   * on one filesystem, disk signals delete dead containers then unused images; with a dedicated
   * imagefs only imagefs signals do (nodefs holds logs and volumes, nothing to collect). Then
   * reads the node again: true when no threshold is met any more, minimum reclaim included.
   */
  private async reclaimNodeLevelResources(signal: Signal, resource: StarvedResource, dedicatedImageFs: boolean): Promise<boolean> {
    const { log } = this.opts;
    const disk = signal !== 'memory.available' && signal !== 'pid.available';
    const funcs = !disk || (dedicatedImageFs && signal.startsWith('nodefs.')) ? [] : [this.opts.deleteUnusedContainers, this.opts.deleteUnusedImages];
    if (funcs.length === 0) return false;
    for (const reclaim of funcs) {
      try {
        await reclaim();
      } catch (err) {
        log.info({ resourceName: resource, err }, 'Eviction manager: unexpected error when attempting to reduce resource pressure');
      }
    }
    let readings: NodeReadings;
    try {
      readings = await this.opts.readNode();
    } catch (err) {
      log.error({ err }, 'Eviction manager: failed to get summary stats after resource reclaim');
      return false;
    }
    return thresholdsMet(this.opts.thresholds, makeObservations(readings), true).length === 0;
  }

  /**
   * eviction_manager.go `localStorageEviction`: every pod with a local-storage limit is measured;
   * each that exceeds one is evicted at once (several per pass, as upstream).
   */
  private async localStorageEviction(pods: readonly Pod[], dedicatedImageFs: boolean): Promise<Pod[]> {
    const limited = pods.filter(hasLocalStorageLimit);
    if (limited.length === 0) return [];
    let stats: UsageByPod;
    try {
      stats = await this.opts.podUsage(limited, { disk: true });
    } catch (err) {
      this.opts.log.error({ err }, 'Eviction manager: failed to get pod stats for local storage limits');
      return [];
    }
    const evicted: Pod[] = [];
    for (const pod of limited) {
      const usage = stats.get(pod.metadata?.uid ?? '');
      if (usage === undefined) continue;
      const breach = localStorageBreach(pod, usage, dedicatedImageFs);
      if (breach === undefined) continue;
      if (await this.evictPod(pod, IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS, { reason: 'Evicted', message: breach.message, annotations: {} })) {
        this.opts.counted?.(breach.signal);
        evicted.push(pod);
      }
    }
    return evicted;
  }

  /**
   * eviction_manager.go `evictPod`: never a critical pod; the `Evicted` event, then the kill.
   * A kill that throws is logged and counts as done, as upstream; one that resolves false (the
   * pod could not be asked to stop) lets the caller try the next pod.
   */
  private async evictPod(pod: Pod, graceSeconds: number, eviction: Eviction): Promise<boolean> {
    const { log } = this.opts;
    if (isCriticalPod(pod)) {
      log.error({ pod: podRef(pod) }, 'Eviction manager: cannot evict a critical pod');
      return false;
    }
    const annotations = Object.keys(eviction.annotations).length > 0 ? eviction.annotations : undefined;
    this.opts.record.pod(pod, 'Warning', 'Evicted', eviction.message, annotations);
    log.debug({ pod: podRef(pod), podUID: pod.metadata?.uid, message: eviction.message }, 'Evicting pod');
    try {
      if (!(await this.opts.evict(pod, eviction, graceSeconds))) {
        log.warn({ pod: podRef(pod) }, 'Eviction manager: pod could not be asked to stop');
        return false;
      }
      log.info({ pod: podRef(pod) }, 'Eviction manager: pod is evicted successfully');
    } catch (err) {
      log.error({ err, pod: podRef(pod) }, 'Eviction manager: pod failed to evict');
    }
    return true;
  }
}
