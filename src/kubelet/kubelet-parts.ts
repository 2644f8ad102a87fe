import type { Pod } from '../api/types.js';
import type { AdmissionRefusal } from './admission.js';
import { AdmittedPods } from './admitted-pods.js';
import { AllocationManager } from './allocation.js';
import { Backoff } from './backoff.js';
import { ContainerGC, DEFAULT_CONTAINER_GC_POLICY, podStateProvider } from './container-gc.js';
import { PodKiller } from './kill.js';
import { PodEvictions, PodRestarts } from './kill-now.js';
import type { KubeletOptions } from './kubelet-options.js';
import { PLEG } from './pleg.js';
import { PodCleanup } from './pod-cleanup.js';
import { PodWorkers } from './pod-workers.js';
import { ProberManager } from './prober/manager.js';
import { runtimeProbeIO } from './prober/runtime-io.js';
import { ResizeManager } from './resize-manager.js';
import { NodeShutdown } from './shutdown.js';
import { StartFailures } from './start-failures.js';
import { PodStarter } from './start.js';
import { StatusPublisher } from './status-publisher.js';
import { PodTerminator, type PodTerminatorOptions } from './terminate.js';

const podRef = (pod: { metadata?: { namespace?: string; name?: string } }) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;
/** A container of `pod` as an event's subject. */
export const containerSubject = (pod: Pod, name: string) => ({ ...pod, fieldPath: `spec.containers{${name}}` });
/** The node as an event's subject (the kubelet's nodeRef: its name as UID, no namespace). */
export const nodeSubject = (name: string) => ({ kind: 'Node', metadata: { name, uid: name, namespace: '' } });

/**
 * What the parts call back into the sync loop for: a pod's sync, scheduling, whether every source
 * delivered its first snapshot, whether the kubelet stops, and what it tells its listeners.
 */
export interface KubeletLoop {
  sync: (uid: string) => Promise<void>;
  schedule: (uid: string) => void;
  scheduleAfter: (uid: string, ms: number) => void;
  sourcesReady: () => boolean;
  stopped: () => boolean;
  /** A deleted pod has nothing left running and its terminal status is published (`podTerminated`). */
  terminated: (uid: string) => void;
  /** Reports a refused pod `Failed` (`Kubelet.rejectPod`). */
  rejectPod: (pod: Pod, refusal: AdmissionRefusal) => void;
}

/** The parts `Kubelet` drives, each with only what it needs of the options and the loop. */
export interface KubeletParts {
  /** The runtime's pods as last listed. */
  pleg: PLEG;
  /** One serialised worker per pod UID (src/kubelet/pod-workers.ts). */
  workers: PodWorkers;
  /**
   * The crash-loop back-off, read by `computePodActions`: restarts of containers that ran and
   * exited, counted from their finish. Not the start-failure memory (`failures`), which holds
   * starts that left nothing running.
   */
  backoff: Backoff;
  /** The one start-failure memory: failed starts and sandbox creations, their reasons and back-offs (src/kubelet/start-failures.ts). */
  failures: StartFailures;
  /** Allocated resources and in-place resizes (src/kubelet/resize-manager.ts). */
  resize: ResizeManager;
  /** Every kill of a container or a pod goes through it (src/kubelet/kill.ts). */
  killer: PodKiller;
  /** Sandboxes and containers are started through it (src/kubelet/start.ts). */
  starter: PodStarter;
  /** Liveness, readiness and startup probes of the running containers. */
  prober: ProberManager;
  /** Dead containers and sandboxes go through it, never through a pod's sync (src/kubelet/container-gc.ts). */
  containerGC: ContainerGC;
  /** Forgets the back-offs and recorded failures of a pod that is gone. */
  forgetBackoffs: (uid: string) => void;
  /** Admission handlers, the node's allocatable, the pods refused and admitted (src/kubelet/admitted-pods.ts). */
  admission: AdmittedPods;
  /** Each sync's status reaches the status manager through it (src/kubelet/status-publisher.ts). */
  statusPublisher: StatusPublisher;
  /** Deletion, deadline, eviction and shutdown of a pod still in its source (src/kubelet/terminate.ts). */
  terminator: PodTerminator;
  /** Graceful node shutdown (src/kubelet/shutdown.ts). */
  shutdown: NodeShutdown;
  /** Evictions and deletes through the API, done by the pod's worker (src/kubelet/kill-now.ts). */
  evictions: PodEvictions;
  restarts: PodRestarts;
  /** Pods gone from their source (src/kubelet/pod-cleanup.ts). */
  cleanup: PodCleanup;
}

/**
 * Wires the kubelet's parts from its options (what pkg/kubelet/kubelet.go `NewMainKubelet` does
 * for the real kubelet): the resize manager, the killer, the back-offs, the pod workers, the PLEG,
 * the starter, the prober and the container GC, in that order; then the modules the sync loop
 * decides with (`kubeletModules`).
 */
export function buildKubeletParts(opts: KubeletOptions, loop: KubeletLoop): KubeletParts {
  const cgroups = opts.podCgroups;
  const resize = new ResizeManager({
    allocation: new AllocationManager({ ...(opts.rootDir ? { rootDir: opts.rootDir } : {}), log: opts.log }),
    runtime: opts.runtime,
    podCgroups: cgroups?.resizePod ? { resizePod: (pod, fields) => cgroups.resizePod?.(pod, fields) ?? Promise.resolve() } : undefined,
    record: (pod, type, reason, message) => opts.recorder.record(pod, type, reason, message),
    log: opts.log,
  });
  const killer = new PodKiller({
    runtime: opts.runtime,
    record: (subject, type, reason, message) => opts.recorder.record(subject, type, reason, message),
    log: opts.log,
    ...(opts.volumes ? { tearDownVolumes: (uid: string) => opts.volumes?.tearDown(uid) ?? Promise.resolve() } : {}),
    ...(cgroups ? { removePodCgroup: (uid: string) => cgroups.removePod(uid) } : {}),
  });
  const backoff = opts.backoff ?? new Backoff();
  const failures = new StartFailures(opts.sandboxBackoff ? { sandboxBackoff: opts.sandboxBackoff } : {});
  const workers = new PodWorkers({
    sync: loop.sync,
    onError: (err, uid) => opts.log.error({ err, podUID: uid }, 'Error syncing pod'),
    isGone: (uid) => !opts.podManager.getPodByUID(uid) && !pleg.getPod(uid),
  });
  const pleg = new PLEG({ runtime: opts.runtime, log: opts.log, ...(opts.relistPeriodMs ? { relistPeriodMs: opts.relistPeriodMs } : {}) });
  const starter = new PodStarter({
    nodeIP: opts.nodeIP, runtime: opts.runtime, log: opts.log, metrics: opts.metrics, volumes: opts.volumes, objects: opts.objects,
    imagePullManager: opts.imagePullManager, rootDir: opts.rootDir, dns: opts.dns, podCgroups: opts.podCgroups, oomScores: opts.oomScores,
    podCgroupMade: (pod) => resize.podCgroupMade(pod),
    containerStarted: (pod, name) => resize.containerStarted(pod, name),
    record: (subject, type, reason, message) => opts.recorder.record(subject, type, reason, message),
    nodeSubject: nodeSubject(opts.nodeName),
    failures,
    pods: pleg,
    status: opts.statusManager,
    killer,
    schedule: loop.schedule,
    scheduleAfter: loop.scheduleAfter,
  });
  /** The pod IP of a sandbox as last listed, where probes and hooks connect by default. */
  const podIP = (pod: Pod, sandboxId: string): string | undefined => pleg.getPod(pod.metadata?.uid ?? '')?.sandboxes.find((s) => s.id === sandboxId)?.ips[0];
  const prober = new ProberManager({
    io: (pod, containerId, sandboxId) => runtimeProbeIO(opts.runtime, containerId, sandboxId, podIP(pod, sandboxId)),
    onChange: loop.schedule,
    onFailure: (pod, container, kind, output) => {
      const probe = `${kind[0]?.toUpperCase()}${kind.slice(1)} probe`;
      opts.log.info({ pod: podRef(pod), container, probe: kind, output }, 'Probe failed');
      opts.recorder.record(containerSubject(pod, container), 'Warning', 'Unhealthy', `${probe} failed: ${output}`);
    },
    // pkg/kubelet/prober/prober.go: "%s probe warning: %s", reason ProbeWarning.
    onWarning: (pod, container, kind, warning) => {
      opts.recorder.record(containerSubject(pod, container), 'Warning', 'ProbeWarning', `${kind[0]?.toUpperCase()}${kind.slice(1)} probe warning: ${warning}`);
    },
  });
  const containerGC = new ContainerGC({
    runtime: opts.runtime,
    policy: opts.containerGC?.policy ?? DEFAULT_CONTAINER_GC_POLICY,
    pods: async () => {
      await pleg.relist();
      const { lastError } = pleg.health();
      if (lastError !== undefined) throw new Error(`failed to list containers: ${lastError}`);
      return pleg.getPods();
    },
    allSourcesReady: loop.sourcesReady,
    state: podStateProvider({
      known: (uid) => {
        const pod = opts.podManager.getPodByUID(uid);
        return pod && { deleting: !!pod.metadata?.deletionTimestamp };
      },
      status: (uid) => opts.statusManager.getPodStatus(uid) ?? opts.podManager.getPodByUID(uid)?.status,
      runtimePod: (uid) => pleg.getPod(uid),
      allSourcesReady: loop.sourcesReady,
    }),
    warn: (reason, message) => opts.recorder.record(nodeSubject(opts.nodeName), 'Warning', reason, message),
    log: opts.log.child({ component: 'container-gc' }),
  });
  const forgetBackoffs = (uid: string): void => {
    backoff.forgetPrefix(`${uid}/`);
    failures.forgetPod(uid);
  };
  const parts = { pleg, workers, backoff, failures, resize, killer, starter, prober, containerGC, forgetBackoffs };
  return { ...parts, ...kubeletModules(opts, parts, loop) };
}

type Modules = Omit<KubeletParts, 'pleg' | 'workers' | 'backoff' | 'failures' | 'resize' | 'killer' | 'starter' | 'prober' | 'containerGC' | 'forgetBackoffs'>;

/** The modules of the sync loop, each given only the callbacks it needs of the parts and of each other. */
function kubeletModules(opts: KubeletOptions, p: Omit<KubeletParts, keyof Modules>, loop: KubeletLoop): Modules {
  const relist = () => p.pleg.relist();
  const { schedule, stopped } = loop;
  const getPod = (uid: string) => opts.podManager.getPodByUID(uid);
  const record: PodTerminatorOptions['record'] = (subject, type, reason, message) => opts.recorder.record(subject, type, reason, message);
  const statusPublisher = new StatusPublisher({ nodeIP: opts.nodeIP, status: opts.statusManager, failures: p.failures, prober: p.prober, resize: p.resize, metrics: opts.metrics });
  const evictions = new PodEvictions({ getPod, stopped, schedule, killer: p.killer, relist, onEnded: (uid, done) => terminator.onceEnded(uid, done), removeProbes: (uid) => p.prober.removePod(uid) });
  const terminator = new PodTerminator({
    record, publish: (...args) => statusPublisher.publish(...args), killer: p.killer, relist, terminated: loop.terminated, evictions,
  });
  const shutdown: NodeShutdown = new NodeShutdown({
    pods: () => opts.podManager.getPods().filter((pod) => !admission.isRefused(pod.metadata?.uid ?? '')),
    log: opts.log, onEnded: (uid, done) => terminator.onEnded(uid, done), schedule, relist,
  });
  const restarts = new PodRestarts({
    getPod, stopped, schedule, killer: p.killer, relist, log: opts.log, runtimePod: (uid) => p.pleg.getPod(uid),
    deletePodStatus: (uid) => opts.statusManager.deletePodStatus(uid),
    forget: (uid) => {
      p.forgetBackoffs(uid);
      statusPublisher.forget(uid);
    },
    sync: loop.sync,
  });
  const admission: AdmittedPods = new AdmittedPods({
    podManager: opts.podManager, statusManager: opts.statusManager, allocation: p.resize.allocation, log: opts.log, record,
    reject: loop.rejectPod, shuttingDown: () => shutdown.inProgress, evicted: (uid) => evictions.has(uid),
  });
  const cleanup = new PodCleanup({
    sourcesReady: loop.sourcesReady, ended: (uid) => terminator.ended(uid), killer: p.killer, relist,
    memories: [admission, terminator, statusPublisher, evictions],
    deletePodStatus: (uid) => opts.statusManager.deletePodStatus(uid), removeProbes: (uid) => p.prober.removePod(uid),
    forgetBackoffs: p.forgetBackoffs, resize: p.resize, schedule,
  });
  return { admission, statusPublisher, terminator, shutdown, evictions, restarts, cleanup };
}
