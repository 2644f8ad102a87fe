import { RESTART_ALL_CONTAINERS, allContainersCouldRestart, matchingRestartRule } from '../api/restart.js';
import type { Container, ContainerStatus, Pod, PodCondition, PodStatus } from '../api/types.js';
import type { RuntimeContainer, RuntimePod } from '../runtime/types.js';
import { isTerminalPhase } from '../status/transitions.js';
import type { ContainerKill, PodActions } from './pod-actions.js';

/**
 * RestartAllContainersOnContainerExits (beta, on since 1.36): a container that exits with a code
 * whose first matching `restartPolicyRules` entry says `RestartAllContainers` makes the whole pod
 * start over in place — every init, sidecar and regular container is killed and removed, the
 * sandbox and the volumes stay, and the pod runs again from its first init container.
 *
 * The kubelet keeps the state in the pod's status, not in memory: the kubelet-owned condition
 * `AllContainersRestarting` is True from the sync that sees the triggering exit until the sync that
 * sees every container gone (pkg/kubelet/status/generate.go `GenerateAllContainersRestartingCondition`),
 * and while it is True, `SyncPod` runs the reset instead of `computePodActions`' usual work
 * (pkg/kubelet/kuberuntime/kuberuntime_manager.go). This module holds those pure decisions.
 */

/** The pod condition type (`v1.AllContainersRestarting`). */
export const ALL_CONTAINERS_RESTARTING = 'AllContainersRestarting';
/** The condition's reason while the reset runs (pkg/kubelet/status/generate.go). */
export const RESTART_ALL_CONTAINERS_STARTED = 'RestartAllContainersStarted';
/** The reason of a removed container's waiting and last termination state (pkg/kubelet/kubelet_pods.go). */
export const RESTARTING_ALL_CONTAINERS = 'RestartingAllContainers';
/** Their message, the kubelet's word for word. */
export const RESTARTING_ALL_CONTAINERS_MESSAGE = 'The container is removed because RestartAllContainers in place';
/** The `Killing` event's message of a container killed by the reset (`SyncPod` passes "killing"). */
export const RESTART_ALL_KILL_MESSAGE = 'killing';

/** Whether `exitCode` makes `c` restart the whole pod: its first matching rule's action. */
export function triggersRestartAll(c: Pick<Container, 'restartPolicyRules'>, exitCode: number): boolean {
  return matchingRestartRule(c, exitCode)?.action === RESTART_ALL_CONTAINERS;
}

/** Init and regular containers, the ones a reset restarts (ephemeral containers are left alone). */
const resetContainers = (pod: Pod): readonly Container[] => [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];

/** The runtime's newest instance of a container (highest attempt, then latest created): `FindContainerStatusByName`. */
function newestInstance(runtime: RuntimePod | undefined, name: string): RuntimeContainer | undefined {
  let newest: RuntimeContainer | undefined;
  for (const c of runtime?.containers ?? []) {
    if (c.name !== name) continue;
    if (!newest || c.attempt > newest.attempt || (c.attempt === newest.attempt && c.createdAt.getTime() > newest.createdAt.getTime())) newest = c;
  }
  return newest;
}

/**
 * `ShouldAllContainersRestart` (pkg/kubelet/container/helpers.go): the previous status has
 * `AllContainersRestarting` True, or an init or regular container — its newest runtime instance, or
 * its terminated state in the previous status — exited with a code whose matching rule says
 * `RestartAllContainers`.
 */
export function shouldAllContainersRestart(pod: Pod, runtime: RuntimePod | undefined, previous: PodStatus | undefined): boolean {
  if (previous?.conditions?.some((c) => c.type === ALL_CONTAINERS_RESTARTING && c.status === 'True')) return true;
  const reported = new Map<string, ContainerStatus>();
  for (const s of [...(previous?.initContainerStatuses ?? []), ...(previous?.containerStatuses ?? [])]) reported.set(s.name, s);
  for (const c of resetContainers(pod)) {
    const newest = newestInstance(runtime, c.name);
    if (newest?.state === 'exited' && triggersRestartAll(c, newest.exitCode ?? 0)) return true;
    const terminated = reported.get(c.name)?.state?.terminated;
    if (terminated && triggersRestartAll(c, terminated.exitCode)) return true;
  }
  return false;
}

/** `AllContainersRestartCleanedUp`: no instance of any init or regular container is left in the runtime. */
export function allContainersRestartCleanedUp(pod: Pod, runtime: RuntimePod | undefined): boolean {
  const names = new Set(resetContainers(pod).map((c) => c.name));
  return !(runtime?.containers ?? []).some((c) => names.has(c.name));
}

/**
 * `GenerateAllContainersRestartingCondition`, which the kubelet adds only to pods where
 * `AllContainersCouldRestart`: False once the pod is terminal (reason `PodCompleted`/`PodFailed`),
 * False when no reset is due or its removals are done, else True with reason
 * `RestartAllContainersStarted`.
 */
export function allContainersRestartingCondition(pod: Pod, runtime: RuntimePod | undefined, previous: PodStatus | undefined, phase: string): PodCondition {
  if (phase === 'Succeeded') return { type: ALL_CONTAINERS_RESTARTING, status: 'False', reason: 'PodCompleted' };
  if (phase === 'Failed') return { type: ALL_CONTAINERS_RESTARTING, status: 'False', reason: 'PodFailed' };
  if (!shouldAllContainersRestart(pod, runtime, previous) || allContainersRestartCleanedUp(pod, runtime)) return { type: ALL_CONTAINERS_RESTARTING, status: 'False' };
  return { type: ALL_CONTAINERS_RESTARTING, status: 'True', reason: RESTART_ALL_CONTAINERS_STARTED, message: 'container exited with restart policy rule' };
}

/**
 * Whether this sync resets the pod (the kubelet reads `AllContainersRestarting` True from the
 * status it just generated and hands `restartAllContainers` to `SyncPod`): the condition's rule
 * above, with the phase the pod keeps once terminal.
 */
export function restartingAllContainers(pod: Pod, runtime: RuntimePod | undefined, previous: PodStatus | undefined): boolean {
  if (!allContainersCouldRestart(pod.spec) || isTerminalPhase(previous?.phase)) return false;
  return allContainersRestartingCondition(pod, runtime, previous, previous?.phase ?? 'Pending').status === 'True';
}

/**
 * `computePodActions` of a pod marked for RestartAllContainers (`getContainersToReset`): every
 * runtime instance of every init and regular container is removed (`ContainersToReset`), those
 * not exited killed first without a grace period (the `Killing` event says "killing"). Order:
 * the victims of the regular containers, then of the init containers, then the sources — the
 * instances whose exit triggered the reset — regular then init, so the trigger goes last. No
 * sandbox change, nothing started: the next sync, seeing every container gone, starts the pod
 * over from its first init container.
 */
export function restartAllActions(pod: Pod, runtime: RuntimePod | undefined): PodActions {
  const reset = (containers: readonly Container[]) => {
    const sources: RuntimeContainer[] = [];
    const targets: RuntimeContainer[] = [];
    for (const c of containers) {
      for (const instance of runtime?.containers ?? []) {
        if (instance.name !== c.name) continue;
        if (instance.state === 'exited' && triggersRestartAll(c, instance.exitCode ?? 0)) sources.push(instance);
        else targets.push(instance);
      }
    }
    return { sources, targets };
  };
  const inits = reset(pod.spec?.initContainers ?? []);
  const regular = reset(pod.spec?.containers ?? []);
  const ordered = [...regular.targets, ...inits.targets, ...regular.sources, ...inits.sources];
  const kill: ContainerKill[] = ordered.filter((c) => c.state !== 'exited').map((c) => ({ id: c.id, name: c.name, message: RESTART_ALL_KILL_MESSAGE, graceSeconds: 0 }));
  return { createSandbox: undefined, kill, start: [], remove: ordered.map((c) => c.id), waiting: new Map(), resyncAfterMs: undefined };
}

/**
 * The attempt (restart count) of a container that has no instance in the runtime. The kubelet
 * reads it from the log directory's `<n>.log` files, which outlive a reset's removals
 * (kuberuntime_container.go `calcRestartCountByLogDir`); nodelet's logs go with their containers,
 * so it reads the status it reported: one more than the last instance's count when that status
 * names an instance (`containerID`), else the count as reported (a container removed by a reset
 * is reported with its count already raised). 0 for a container never reported.
 */
export function attemptFromStatus(previous: PodStatus | undefined, name: string): number {
  const s = [...(previous?.initContainerStatuses ?? []), ...(previous?.containerStatuses ?? [])].find((x) => x.name === name);
  if (!s) return 0;
  return s.containerID ? s.restartCount + 1 : s.restartCount;
}
