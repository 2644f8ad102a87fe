/**
 * A pod's API status from a runtime snapshot: phase (`getPhase`), conditions, IPs and QoS class, the
 * kubelet's `generateAPIPodStatus` (pkg/kubelet/kubelet_pods.go). The container statuses inside it
 * are container-statuses.ts (`convertToAPIContainerStatuses`).
 */
import { allContainersCouldRestart, containerShouldRestart } from '../api/restart.js';
import { getPodQOS } from '../api/qos.js';
import type { Container, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus } from '../api/types.js';
import type { RuntimePod } from '../runtime/types.js';

import {
  KUBELET_POD_CONDITIONS,
  containersReadyCondition,
  hasAnyRegularContainerStarted,
  isRestartableInit,
  podInitializedCondition,
  podReadyCondition,
  podReadyToStartContainersCondition,
} from '../status/conditions.js';
import { observedGenerationOf } from '../status/generation.js';
import { rfc3339 } from '../api/time.js';
import { isTerminalPhase } from '../status/transitions.js';
import { ALL_CONTAINERS_RESTARTING, RESTARTING_ALL_CONTAINERS, allContainersRestartingCondition, shouldAllContainersRestart } from './restart-all.js';
import { containerStatus, instancesByName, type Kind, type ProbeResults, type WaitingReason } from './container-statuses.js';

export interface PodStatusOptions {
  /** The node's IP: `hostIP`, and the pod IP of host-network pods. */
  readonly hostIP: string;
  /** Container name → reason it waits (`CrashLoopBackOff`, `ErrImagePull`, `ImagePullBackOff`, `CreateContainerError`, …). */
  readonly waiting?: ReadonlyMap<string, WaitingReason>;
  /** Transition time of conditions whose status changed. */
  readonly now: Date;
  /**
   * The pod is done for good (deleted, and nothing runs any more): its phase becomes terminal —
   * Succeeded when every container exited 0, else Failed — as `getPhase` does for `podIsTerminal`.
   */
  readonly terminal?: boolean;
  /**
   * Probe results of running container instances (the prober): readiness drives `ready`, the
   * startup probe `started`; undefined means the container has no such probe.
   */
  readonly probes?: ProbeResults;
  /**
   * The status last reported for the pod (the kubelet's `oldPodStatus`: the status manager's).
   * Read for what the runtime no longer shows after a RestartAllContainers reset removed every
   * container: restart counts and last termination states are carried over from it
   * (`convertToAPIContainerStatuses`), and whether a reset is under way (src/kubelet/restart-all.ts).
   */
  readonly previous?: PodStatus;
}

/**
 * The API status of `pod` from a runtime snapshot: the seed's `DockerManager.GetPodStatus` with
 * the modern `generateAPIPodStatus` rules for container states, phase and conditions. Pure.
 * `startTime` is left out: the status manager owns it.
 */
export function generatePodStatus(pod: Pod, runtime: RuntimePod | undefined, opts: PodStatusOptions): PodStatus {
  const spec: PodSpec = pod.spec ?? { containers: [] };
  const instances = instancesByName(runtime?.containers ?? []);
  const previous = opts.previous;
  const reported = new Map<string, ContainerStatus>();
  for (const s of [...(previous?.initContainerStatuses ?? []), ...(previous?.containerStatuses ?? [])]) reported.set(s.name, s);
  // `podRestarting`: a RestartAllContainers reset is due or under way.
  const podRestarting = previous !== undefined && shouldAllContainersRestart(pod, runtime, previous);
  const statusOf = (c: Container, kind: Kind) =>
    containerStatus(c, spec, instances.get(c.name) ?? [], opts.waiting?.get(c.name), kind, opts.probes, kind === 'ephemeral' ? undefined : { old: reported.get(c.name), podRestarting });
  const initContainerStatuses = (spec.initContainers ?? []).map((c) => statusOf(c, isRestartableInit(c) ? 'sidecar' : 'init'));
  const containerStatuses = spec.containers.map((c) => statusOf(c, 'regular'));
  const ephemeralContainerStatuses = (spec.ephemeralContainers ?? []).map((c) => statusOf(c, 'ephemeral'));

  let phase = getPhase(spec, initContainerStatuses, containerStatuses);
  if (opts.terminal && !isTerminalPhase(phase)) {
    const allSucceeded = containerStatuses.length > 0 && containerStatuses.every((s) => s.state?.terminated?.exitCode === 0);
    phase = allSucceeded ? 'Succeeded' : 'Failed';
  }
  // generateAPIPodStatus: a phase the API already holds as terminal is never regressed.
  const recorded = pod.status?.phase;
  if (isTerminalPhase(recorded)) phase = recorded;

  const sandboxes = [...(runtime?.sandboxes ?? [])].sort((a, b) => b.attempt - a.attempt);
  const all = [...initContainerStatuses, ...containerStatuses];
  // Conditions owned by others (readiness gates) are carried over, first, as the kubelet does.
  const foreign = (pod.status?.conditions ?? []).filter((c) => !KUBELET_POD_CONDITIONS.has(c.type));
  const owned: PodCondition[] = [
    podReadyToStartContainersCondition(sandboxes[0]?.ready === true),
    podInitializedCondition(spec, all, phase, previous?.conditions),
    podReadyCondition(spec, foreign, all, phase),
    containersReadyCondition(spec, all, phase),
    { type: 'PodScheduled', status: 'True' },
    // Only on pods with a RestartAllContainers rule, as the kubelet adds it.
    ...(allContainersCouldRestart(spec) ? [allContainersRestartingCondition(pod, runtime, previous, phase)] : []),
  ];
  const now = rfc3339(opts.now);
  // Each condition of the kubelet's says which pod generation it was computed from
  // (`CalculatePodConditionObservedGeneration`, pkg/api/v1/pod/util.go; the gate is on since 1.34).
  const generation = observedGenerationOf(pod);
  const conditions = [
    ...foreign,
    ...owned.map((c) => {
      const prev = pod.status?.conditions?.find((p) => p.type === c.type);
      const at = prev?.lastTransitionTime && prev.status === c.status ? rfc3339(prev.lastTransitionTime) : now;
      // `GenerateAllContainersRestartingCondition` sets no generation.
      const observed = generation && c.type !== ALL_CONTAINERS_RESTARTING ? { observedGeneration: generation } : {};
      return { ...c, ...observed, lastTransitionTime: at };
    }),
  ];

  const podIPs = spec.hostNetwork ? (opts.hostIP ? [opts.hostIP] : []) : (sandboxes.find((s) => s.ready)?.ips ?? []);
  return {
    phase,
    conditions,
    ...(opts.hostIP ? { hostIP: opts.hostIP, hostIPs: [{ ip: opts.hostIP }] } : {}),
    ...(podIPs.length ? { podIP: podIPs[0], podIPs: podIPs.map((ip) => ({ ip })) } : {}),
    ...(initContainerStatuses.length ? { initContainerStatuses } : {}),
    containerStatuses,
    ...(ephemeralContainerStatuses.length ? { ephemeralContainerStatuses } : {}),
    qosClass: getPodQOS(pod),
  };
}

/**
 * Whether a stopped container with this termination runs again: its restart policy or rules say
 * so (`ContainerShouldRestart`), or a RestartAllContainers reset removed it (reason
 * `RestartingAllContainers`).
 */
function restartable(c: Container, spec: PodSpec, terminated: { readonly exitCode: number; readonly reason?: string }): boolean {
  return containerShouldRestart(c, spec, terminated.exitCode) || terminated.reason === RESTARTING_ALL_CONTAINERS;
}

/**
 * The kubelet's `getPhase` (for a pod not yet known to be terminal): Pending until every container
 * has started, Running while any runs or will restart, Succeeded/Failed once all have stopped for
 * good. An init container that failed and will not run again (its restart policy or rules, the
 * pod's `Never` by default) fails the pod.
 */
export function getPhase(spec: PodSpec, initStatuses: readonly ContainerStatus[], statuses: readonly ContainerStatus[]): string {
  let pendingInitialization = 0;
  /** Init containers that failed and will not run again (`failedInitializationNotRestartable`). */
  let failedInitialization = 0;
  for (const c of spec.initContainers ?? []) {
    const s = initStatuses.find((x) => x.name === c.name);
    if (isRestartableInit(c)) {
      if (!s?.started) pendingInitialization++;
      continue;
    }
    const terminated = s?.state?.terminated;
    const last = s?.lastState?.terminated;
    if (terminated) {
      if (terminated.exitCode !== 0 && !restartable(c, spec, terminated)) failedInitialization++;
    } else if (s?.state?.waiting && last) {
      if (last.exitCode !== 0 && !restartable(c, spec, last)) failedInitialization++;
    } else {
      pendingInitialization++;
    }
  }

  let unknown = 0;
  let running = 0;
  let waiting = 0;
  let stopped = 0;
  /** Stopped containers that will not run again (`ContainerShouldRestart` says no). */
  let stoppedForGood = 0;
  let succeeded = 0;
  for (const c of spec.containers) {
    const s = statuses.find((x) => x.name === c.name);
    if (s?.state?.running) running++;
    else if (s?.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
      if (!restartable(c, spec, s.state.terminated)) stoppedForGood++;
    } else if (s?.state?.waiting) {
      // A container waiting to restart has run before: it counts as stopped, not as never started.
      const last = s.lastState?.terminated;
      if (last) {
        stopped++;
        if (!restartable(c, spec, last)) stoppedForGood++;
      } else waiting++;
    } else unknown++;
  }

  if (failedInitialization > 0) return 'Failed';
  if ((pendingInitialization > 0 && !hasAnyRegularContainerStarted(spec, statuses)) || waiting > 0) return 'Pending';
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    // Some container is in the process of restarting (its own policy or rules, or the pod's).
    if (stopped !== stoppedForGood) return 'Running';
    return stopped === succeeded ? 'Succeeded' : 'Failed';
  }
  return 'Pending';
}
