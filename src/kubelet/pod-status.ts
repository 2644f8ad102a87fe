import { allContainersCouldRestart, containerShouldRestart } from '../api/restart.js';
import { getPodQOS } from '../api/qos.js';
import type { Container, ContainerState, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus } from '../api/types.js';
import type { RuntimeContainer, RuntimePod } from '../runtime/types.js';
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
import { ALL_CONTAINERS_RESTARTING, RESTARTING_ALL_CONTAINERS, RESTARTING_ALL_CONTAINERS_MESSAGE, allContainersRestartingCondition, shouldAllContainersRestart } from './restart-all.js';

/** Why a container is not running right now: the kubelet's `reasonCache` entry. */
export interface WaitingReason {
  readonly reason: string;
  readonly message?: string;
}

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
  readonly probes?: {
    ready(container: string, containerId: string): boolean | undefined;
    started(container: string, containerId: string): boolean | undefined;
  };
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

/** Runtime instances per container name, newest (highest attempt) first. */
function instancesByName(containers: readonly RuntimeContainer[]): Map<string, RuntimeContainer[]> {
  const out = new Map<string, RuntimeContainer[]>();
  for (const c of containers) out.set(c.name, [...(out.get(c.name) ?? []), c]);
  for (const list of out.values()) list.sort((a, b) => b.attempt - a.attempt || b.createdAt.getTime() - a.createdAt.getTime());
  return out;
}

/** Regular container, run-to-completion init container, sidecar (init with `restartPolicy: Always`), or ephemeral (runs once). */
type Kind = 'regular' | 'init' | 'sidecar' | 'ephemeral';

/** `ShouldContainerBeRestarted` for an exited container: will it run again? */
function restarts(kind: Kind, c: Container, spec: PodSpec, exitCode: number): boolean {
  if (kind === 'sidecar') return true;
  if (kind === 'ephemeral') return false;
  if (kind === 'init' && exitCode === 0) return false;
  return containerShouldRestart(c, spec, exitCode);
}

/** The container's previously reported status and whether a reset is under way (`podRestarting`). */
interface Reported {
  readonly old: ContainerStatus | undefined;
  readonly podRestarting: boolean;
}

function containerStatus(c: Container, spec: PodSpec, instances: readonly RuntimeContainer[], waiting: WaitingReason | undefined, kind: Kind, probes: PodStatusOptions['probes'], reported?: Reported): ContainerStatus {
  const [newest, ...older] = instances;
  const old = reported?.old;
  if (!newest && old) {
    // Gone from the runtime (`convertToAPIContainerStatuses`' missing containers): removed by a
    // reset, it waits with RestartingAllContainers and one more restart; else a terminated
    // status stays as reported, and any other keeps its count and last termination.
    if (reported?.podRestarting === true && !old.state?.waiting) return restartingAllStatus(c, old);
    if (old.state?.terminated) return structuredClone(old);
  }
  const previousExit = older.find((x) => x.state === 'exited');
  let state: ContainerState;
  let lastState: ContainerState = previousExit ? { terminated: terminatedOf(previousExit) } : {};
  let restartCount = newest?.restartCount ?? 0;
  if (old && !newest) {
    restartCount = old.restartCount;
    lastState = old.lastState ?? {};
  } else if (old && newest) {
    // A reset removed the instances that held the history (`convertContainerStatus`): the count
    // never goes back, a running instance after a terminated report is one more restart, and the
    // last termination comes from the report when the runtime has no older instance.
    restartCount = Math.max(restartCount, old.restartCount);
    if (newest.state === 'running' && old.state?.terminated && old.restartCount >= newest.restartCount) restartCount = old.restartCount + 1;
    if (!previousExit) {
      if (old.containerID !== `docker://${newest.id}` && old.state?.terminated) lastState = { terminated: old.state.terminated };
      else if (old.lastState?.terminated) lastState = { terminated: old.lastState.terminated };
    }
  }
  switch (newest?.state) {
    case undefined:
    case 'created':
      state = waitingState(waiting ?? { reason: 'ContainerCreating' });
      break;
    case 'running':
      // The runtime's word wins over a stale waiting reason.
      state = { running: { startedAt: rfc3339(newest.startedAt ?? newest.createdAt) } };
      break;
    case 'exited': {
      const terminated = terminatedOf(newest);
      // A waiting reason (back-off) applies only to a container that will run again.
      if (waiting && restarts(kind, c, spec, terminated.exitCode)) {
        state = waitingState(waiting);
        lastState = { terminated };
      } else {
        state = { terminated };
      }
      break;
    }
    default:
      // `unknown` collapses to waiting, as in `convertToAPIContainerStatuses`.
      state = waiting ? waitingState(waiting) : { waiting: {} };
  }
  const running = state.running !== undefined;
  // Started once running and past its startup probe (the kubelet's `started`).
  const started = running && (probes?.started(c.name, newest?.id ?? '') ?? true);
  return {
    name: c.name,
    state,
    lastState,
    // Probes come later: a container is ready while running; an init container once it succeeded.
    ready: kind === 'init' ? state.terminated?.exitCode === 0 : running && started && (probes?.ready(c.name, newest?.id ?? '') ?? true),
    restartCount,
    image: c.image ?? '',
    imageID: newest ? imageRef(newest.imageID) : '',
    ...(newest ? { containerID: `docker://${newest.id}` } : {}),
    started,
  };
}

/** A container removed by a RestartAllContainers reset (`convertToAPIContainerStatuses`: exit code 137, one more restart). */
function restartingAllStatus(c: Container, old: ContainerStatus): ContainerStatus {
  return {
    name: c.name,
    state: { waiting: { reason: RESTARTING_ALL_CONTAINERS, message: RESTARTING_ALL_CONTAINERS_MESSAGE } },
    lastState: { terminated: { exitCode: 137, reason: RESTARTING_ALL_CONTAINERS, message: RESTARTING_ALL_CONTAINERS_MESSAGE } },
    ready: false,
    restartCount: old.restartCount + 1,
    image: c.image ?? '',
    imageID: '',
    started: false,
  };
}

function waitingState(w: WaitingReason): ContainerState {
  return { waiting: { reason: w.reason, ...(w.message ? { message: w.message } : {}) } };
}

type Terminated = NonNullable<ContainerState['terminated']>;

/** cri-dockerd's mapping of an exited Docker container; missing times fall back to creation. */
function terminatedOf(x: RuntimeContainer): Terminated {
  const exitCode = x.exitCode ?? 0;
  const startedAt = x.startedAt ?? x.createdAt;
  return {
    exitCode,
    reason: x.reason ?? (exitCode === 0 ? 'Completed' : 'Error'),
    ...(x.message ? { message: x.message } : {}),
    startedAt: rfc3339(startedAt),
    finishedAt: rfc3339(x.finishedAt ?? startedAt),
    containerID: `docker://${x.id}`,
  };
}

/** `docker-pullable://` for a repo digest, `docker://` for a bare image ID, as dockershim reports them. */
function imageRef(imageID: string): string {
  if (!imageID) return '';
  return imageID.includes('@') ? `docker-pullable://${imageID}` : `docker://${imageID}`;
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
