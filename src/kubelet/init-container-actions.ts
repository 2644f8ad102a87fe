/**
 * The init container walk of one sync, the kubelet's `computeInitContainerActions`
 * (pkg/kubelet/kuberuntime/kuberuntime_manager.go), and the per-container pieces `computePodActions`
 * (pod-actions.ts) shares with it: a probe's kill, the crash-loop delay's spelling. It writes its
 * decisions into the `PodActions` it is handed; pure otherwise, as `computePodActions`.
 */
import { containerShouldRestart } from '../api/restart.js';
import type { Container, Pod } from '../api/types.js';
import type { RuntimeContainer } from '../runtime/types.js';
import { backoffKey, type Backoff } from './backoff.js';
import type { ContainerKill, ContainerStart, PodActions, ProbeVerdict } from './pod-actions.js';
import { containerResizeAction } from './resize.js';
import { isRestartableInit } from '../status/conditions.js';

/**
 * The kill of a container whose `probe` (liveness or startup) failed, with the kubelet's message
 * (a sidecar's: "Init container <name> failed liveness probe").
 */
export function probeKill(c: Container, id: string, probe: 'liveness' | 'startup', message = `Container ${c.name} failed ${probe} probe, will be restarted`): ContainerKill {
  const grace = (probe === 'liveness' ? c.livenessProbe : c.startupProbe)?.terminationGracePeriodSeconds;
  return { id, name: c.name, message, ...(grace != null ? { graceSeconds: grace } : {}) };
}

export const exitedNonZero = (c: RuntimeContainer | undefined) => c?.state === 'exited' && c.exitCode !== 0;

/** What the init container walk reads and writes. */
export interface InitContext {
  readonly pod: Pod;
  readonly instances: ReadonlyMap<string, RuntimeContainer[]>;
  readonly actions: PodActions;
  readonly backoff: Backoff;
  readonly now: number;
  readonly unhealthy: ProbeVerdict;
  readonly started: (containerName: string, containerId: string) => boolean | undefined;
  readonly sameSpec: (container: Container, instance: RuntimeContainer) => boolean;
  readonly resize: boolean;
  /** The memory request (bytes) a running container runs with, when a resize changed it since (see `PodActionOptions`). */
  readonly actuatedMemoryRequest: (containerName: string) => number | undefined;
  readonly firstAttempt: (containerName: string) => number;
}

/**
 * The kubelet's `computeInitContainerActions` (pkg/kubelet/kuberuntime/kuberuntime_manager.go)
 * before the pod is initialised: walks the init containers in order and schedules the first one
 * that is not done — starts it, restarts it after a failure (restart policy and crash-loop
 * back-off permitting), or waits while it runs. A sidecar (`restartPolicy: Always`) is done once
 * it runs and its startup probe, if any, has passed; it is kept running. Returns `done` when
 * regular containers may start, `failed` when an init container failed for good
 * (its restart policy or rules say it does not run again, `ShouldContainerBeRestarted`).
 */
export function initContainerActions(inits: readonly Container[], ctx: InitContext): 'done' | 'pending' | 'failed' {
  for (const c of inits) {
    const state = initContainerAction(c, ctx, false);
    if (state !== 'done') return state;
  }
  return 'done';
}

/**
 * The same walk once the pod is initialised: run-to-completion init containers are over, and
 * every sidecar is kept running on its own (an exited one restarts, after its back-off), none
 * holding another back.
 */
export function keepSidecarsRunning(inits: readonly Container[], ctx: InitContext): 'done' {
  for (const c of inits) if (isRestartableInit(c)) initContainerAction(c, ctx, true);
  return 'done';
}

/** One init container's step of the walk: `done` when the walk may go on past it. */
function initContainerAction(c: Container, ctx: InitContext, initialised: boolean): 'done' | 'pending' | 'failed' {
  const { pod, actions, backoff, now } = ctx;
  const fresh = actions.createSandbox !== undefined;
  const list = ctx.instances.get(c.name) ?? [];
  const newest = fresh ? undefined : list[0];
  if (fresh && list[0]?.state === 'running') actions.kill.push({ id: list[0].id, name: c.name, message: 'Pod sandbox changed, it will be killed and re-created.' });
  const attempt = list[0] ? list[0].attempt + 1 : ctx.firstAttempt(c.name);
  const start = (reason: ContainerStart['reason']) => void actions.start.push({ container: c, attempt, reason });
  const sidecar = isRestartableInit(c);
  if (!newest || newest.state === 'created' || newest.state === 'unknown') {
    if (newest) actions.remove.push(newest.id);
    start(newest ? 'restart' : fresh && list.length ? 'sandbox' : 'new');
    return 'pending';
  }
  if (newest.state === 'running') {
    if (!sidecar) {
      // A running run-to-completion init container is resized too (`computeInitContainerActions`
      // calls `computePodResizeAction` for it with InPlacePodVerticalScalingInitContainers): in
      // place by the sync's update (resize.ts `planPodResize`), or — a `RestartContainer` policy,
      // which the apiserver refuses to resize — killed and started again.
      const resize = ctx.resize ? containerResizeAction(c, newest, ctx.pod.spec?.resources, ctx.actuatedMemoryRequest(c.name)) : undefined;
      if (resize?.kind === 'restart') {
        actions.kill.push({ id: newest.id, name: c.name, message: resize.message });
        start('resize');
      }
      return 'pending';
    }
    // A failed startup or liveness probe restarts the sidecar, with the probe's own grace period.
    const probe = ctx.unhealthy(c.name, newest.id);
    if (probe) {
      actions.kill.push(probeKill(c, newest.id, probe, `Init container ${c.name} failed ${probe} probe`));
      start('unhealthy');
      return 'pending';
    }
    // Not started yet (its startup probe has not passed): the init containers after it wait.
    if (c.startupProbe && ctx.started(c.name, newest.id) === false) return 'pending';
    if (newest.hash && !ctx.sameSpec(c, newest)) {
      actions.kill.push({ id: newest.id, name: c.name, message: `Init container ${c.name} definition changed` });
      start('changed');
      return 'pending';
    }
    // A sidecar resizes as a regular container does (`computePodResizeAction`).
    const resize = ctx.resize ? containerResizeAction(c, newest, ctx.pod.spec?.resources, ctx.actuatedMemoryRequest(c.name)) : undefined;
    if (resize?.kind === 'restart') {
      actions.kill.push({ id: newest.id, name: c.name, message: resize.message });
      start('resize');
      const previous = list[1];
      if (initialised && previous && previous.state !== 'running') actions.remove.push(previous.id);
      return 'pending';
    }
    return 'done';
  }
  // Exited.
  if (!sidecar && newest.exitCode === 0) return 'done';
  // A failed init container runs again when its restart policy or rules say so
  // (`ShouldContainerBeRestarted` in `computeInitContainerActions`), the pod's policy by default.
  if (!sidecar && !containerShouldRestart(c, pod.spec, newest.exitCode ?? 0)) return 'failed';
  const key = backoffKey(pod, c);
  const finished = newest.finishedAt?.getTime() ?? now;
  if (backoff.isInBackOffSince(key, finished, now)) {
    actions.waiting.set(c.name, {
      reason: 'CrashLoopBackOff',
      message: `back-off ${formatDelay(backoff.delayOf(key))} restarting failed container=${c.name} pod=${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})`,
    });
    actions.resyncAfterMs = Math.min(actions.resyncAfterMs ?? Infinity, backoff.remaining(key, finished, now));
    return 'pending';
  }
  backoff.next(key, finished, now);
  start('restart');
  return 'pending';
}

export function formatDelay(ms: number): string {
  const s = Math.round(ms / 1000);
  return s >= 60 ? `${Math.floor(s / 60)}m${s % 60}s` : `${s}s`;
}
