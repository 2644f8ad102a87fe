/**
 * The container statuses of a pod's API status from its runtime instances, the kubelet's
 * `convertToAPIContainerStatuses` (pkg/kubelet/kubelet_pods.go): state, last termination, restart
 * count, readiness and start from the probes, and what a RestartAllContainers reset removed carried
 * over from the last report. Pure; the pod status around them is pod-status.ts.
 */
import { containerShouldRestart } from '../api/restart.js';
import type { Container, ContainerState, ContainerStatus, PodSpec } from '../api/types.js';
import { rfc3339 } from '../api/time.js';
import type { RuntimeContainer } from '../runtime/types.js';
import { RESTARTING_ALL_CONTAINERS, RESTARTING_ALL_CONTAINERS_MESSAGE } from './restart-all.js';


/** Why a container is not running right now: the kubelet's `reasonCache` entry. */
export interface WaitingReason {
  readonly reason: string;
  readonly message?: string;
}

/** Probe results of running container instances (the prober); undefined: the container has no such probe. */
export interface ProbeResults {
  ready(container: string, containerId: string): boolean | undefined;
  started(container: string, containerId: string): boolean | undefined;
}

/** Runtime instances per container name, newest (highest attempt) first. */
export function instancesByName(containers: readonly RuntimeContainer[]): Map<string, RuntimeContainer[]> {
  const out = new Map<string, RuntimeContainer[]>();
  for (const c of containers) out.set(c.name, [...(out.get(c.name) ?? []), c]);
  for (const list of out.values()) list.sort((a, b) => b.attempt - a.attempt || b.createdAt.getTime() - a.createdAt.getTime());
  return out;
}

/** Regular container, run-to-completion init container, sidecar (init with `restartPolicy: Always`), or ephemeral (runs once). */
export type Kind = 'regular' | 'init' | 'sidecar' | 'ephemeral';

/** `ShouldContainerBeRestarted` for an exited container: will it run again? */
function restarts(kind: Kind, c: Container, spec: PodSpec, exitCode: number): boolean {
  if (kind === 'sidecar') return true;
  if (kind === 'ephemeral') return false;
  if (kind === 'init' && exitCode === 0) return false;
  return containerShouldRestart(c, spec, exitCode);
}

/** The container's previously reported status and whether a reset is under way (`podRestarting`). */
export interface Reported {
  readonly old: ContainerStatus | undefined;
  readonly podRestarting: boolean;
}

export function containerStatus(c: Container, spec: PodSpec, instances: readonly RuntimeContainer[], waiting: WaitingReason | undefined, kind: Kind, probes: ProbeResults | undefined, reported?: Reported): ContainerStatus {
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
