/**
 * What one sync must do to a pod's sandbox and containers, the kubelet's `computePodActions`
 * (pkg/kubelet/kuberuntime/kuberuntime_manager.go); the init container walk it calls is
 * init-container-actions.ts (`computeInitContainerActions`).
 */
import { containerShouldRestart } from '../api/restart.js';
import type { Container, Pod } from '../api/types.js';
import { containerHashMatches } from '../runtime/hash.js';
import type { RuntimeContainer, RuntimePod } from '../runtime/types.js';
import { backoffKey, type Backoff } from './backoff.js';
import { exitedNonZero, formatDelay, initContainerActions, keepSidecarsRunning, probeKill, type InitContext } from './init-container-actions.js';
import { containerResizeAction } from './resize.js';
import { isRestartableInit } from '../status/conditions.js';

export interface ContainerStart {
  /** A regular, init or ephemeral container (`targetContainerName` is set only on the last). */
  container: Container & { targetContainerName?: string };
  /** Attempt and restart count of the new instance. */
  attempt: number;
  /** Why it starts: first start, restart after exit, spec change, new sandbox, failed probe, or a resize under `RestartContainer`. */
  reason: 'new' | 'restart' | 'changed' | 'sandbox' | 'unhealthy' | 'resize';
}

export interface ContainerKill {
  id: string;
  name: string;
  message: string;
  /**
   * The grace period of this kill when it is not the pod's: a failed liveness or startup probe's
   * own `terminationGracePeriodSeconds` (the kubelet's `ProbeTerminationGracePeriod`).
   */
  graceSeconds?: number;
}

export interface Waiting {
  reason: string;
  message: string;
}

/** What one sync must do to bring a pod's containers in line with its spec. */
export interface PodActions {
  /** Attempt number of a sandbox to create, or undefined to keep the current one. */
  createSandbox: number | undefined;
  /** Running containers to stop (spec changed, unknown name, sandbox replaced). */
  kill: ContainerKill[];
  /** Containers to start, in spec order, after `kill` and the sandbox. */
  start: ContainerStart[];
  /**
   * Containers to remove because the sync replaces them: one created but never started, a
   * running duplicate. Dead instances are the container GC's (src/kubelet/container-gc.ts).
   */
  remove: string[];
  /** Containers that stay down for now and why (CrashLoopBackOff). */
  waiting: Map<string, Waiting>;
  /** Milliseconds until a back-off ends and the pod must be synced again; undefined when none. */
  resyncAfterMs: number | undefined;
}


/** Which probe says a running container instance must be restarted (from the prober). */
export type ProbeVerdict = (containerName: string, containerId: string) => 'liveness' | 'startup' | undefined;

/** How `computePodActions` treats running containers beyond their state. */
export interface PodActionOptions {
  /**
   * Whether a running instance was created from this spec (default: its hash label is the
   * container's hash, or its legacy whole-spec hash; runtime/hash.ts `containerHashMatches`).
   */
  readonly sameSpec?: (container: Container, instance: RuntimeContainer) => boolean;
  /**
   * In-place resize is allowed for this pod (`IsInPlacePodVerticalScalingAllowed`): a running
   * container whose resources differ from the spec's (its allocation) under a `RestartContainer`
   * resize policy is restarted (`computePodResizeAction`); in-place updates are the caller's
   * (src/kubelet/resize.ts `planPodResize`).
   */
  readonly resize?: boolean;
  /**
   * The memory request (bytes) a running container runs with when a resize changed its
   * allocation since it started (allocation.ts `actuatedMemoryRequest`); undefined: the allocated one.
   */
  readonly actuatedMemoryRequest?: (containerName: string) => number | undefined;
  /**
   * Whether a running container instance passed its startup probe (the prober's startup result):
   * undefined without one. A sidecar whose startup probe has not passed holds the init
   * containers after it back (`computeInitContainerActions`).
   */
  readonly started?: (containerName: string, containerId: string) => boolean | undefined;
  /**
   * The attempt of a container that has no instance in the runtime (default 0): after a
   * RestartAllContainers reset removed them all, the count goes on (src/kubelet/restart-all.ts
   * `attemptFromStatus`, the kubelet's `calcRestartCountByLogDir`).
   */
  readonly firstAttempt?: (containerName: string) => number;
}

/**
 * The kubelet's `computePodActions` for Docker (the seed's SyncPod, with the modern rules):
 * a pod needs a ready sandbox; each spec container runs once, and after it exits it is
 * recreated with attempt+1 when the restart policy says so, subject to crash-loop back-off;
 * a running container whose spec hash changed is replaced; unknown containers are killed.
 * Dead instances and sandboxes stay: the container GC removes them by its policy (as the
 * kubelet's computePodActions, which only kills), keeping the previous one for `logs --previous`.
 *
 * Pure: it records the restart in `backoff` only for starts it decides on, and reads `now`.
 */
/** The exit code of a container killed by SIGKILL (128 + 9), what a liveness kill leaves. */
const KILLED_EXIT_CODE = 137;

export function computePodActions(pod: Pod, runtime: RuntimePod | undefined, backoff: Backoff, now: number, unhealthy: ProbeVerdict = () => undefined, opts: PodActionOptions = {}): PodActions {
  const actions: PodActions = { createSandbox: undefined, kill: [], start: [], remove: [], waiting: new Map(), resyncAfterMs: undefined };
  const sameSpec = opts.sameSpec ?? ((c: Container, instance: RuntimeContainer) => containerHashMatches(instance.hash, c));
  const firstAttempt = opts.firstAttempt ?? (() => 0);
  const actuatedMemoryRequest = opts.actuatedMemoryRequest ?? (() => undefined);
  const policy = pod.spec?.restartPolicy ?? 'Always';
  const specs = pod.spec?.containers ?? [];
  const inits = pod.spec?.initContainers ?? [];
  const sandboxes = runtime?.sandboxes ?? [];
  const instances = new Map<string, RuntimeContainer[]>();
  for (const c of runtime?.containers ?? []) {
    const list = instances.get(c.name) ?? [];
    list.push(c);
    instances.set(c.name, list);
  }

  const shouldRun = (c: Container): boolean => {
    const newest = instances.get(c.name)?.[0];
    if (!newest || newest.state === 'created') return true;
    if (newest.state === 'running') return true;
    return containerShouldRestart(c, pod.spec, newest.exitCode ?? 0);
  };

  const current = sandboxes[0];
  const needSandbox = !current?.ready;
  const regularStarted = specs.some((c) => (instances.get(c.name)?.length ?? 0) > 0);
  if (needSandbox) {
    // A pod whose containers are all done for good gets no new sandbox (kubelet: "all containers
    // have exited and the restart policy says not to restart them").
    const anyToRun = specs.some((c) => shouldRun(c) && instances.get(c.name)?.[0]?.state !== 'running');
    const initFailedForGood = !regularStarted && policy === 'Never' && inits.some((c) => !isRestartableInit(c) && exitedNonZero(instances.get(c.name)?.[0]));
    if ((anyToRun && !initFailedForGood) || specs.some((c) => instances.get(c.name)?.[0]?.state === 'running')) {
      actions.createSandbox = current ? current.attempt + 1 : 0;
    }
  }
  // Old sandboxes stop, the current one too when it is replaced (the kubelet's KillPod:
  // StopPodSandbox on each), when they run or still report IPs, i.e. their pod network is not torn
  // down yet (cri-dockerd tears it down once): the container GC removes a dead sandbox only once no
  // kept container names it, and its IP must not wait for that.
  for (const [i, sb] of sandboxes.entries()) {
    if ((i > 0 || actions.createSandbox !== undefined) && (sb.ready || sb.running === true || sb.ips.length > 0)) {
      actions.kill.push({ id: sb.id, name: 'POD', message: 'Pod sandbox changed, it will be killed and re-created.' });
    }
  }

  // Init containers run one at a time, in order, to completion (sidecars: until started) before
  // any regular container; a new sandbox runs them again. Once a regular container has started
  // in the current sandbox, initialisation is over.
  const initialised = inits.length === 0 || (regularStarted && actions.createSandbox === undefined);
  const initCtx: InitContext = { pod, instances, actions, backoff, now, unhealthy, started: opts.started ?? (() => undefined), sameSpec, resize: opts.resize === true, actuatedMemoryRequest, firstAttempt };
  // After initialisation the sidecars are still looked after: restarted after an exit or a failed
  // probe, replaced when their spec changed, resized.
  const initState = initialised ? keepSidecarsRunning(inits, initCtx) : initContainerActions(inits, initCtx);
  // Init containers that have not run yet wait with `PodInitializing`, as the kubelet reports them.
  if (initState !== 'done') {
    for (const c of inits) if (!instances.get(c.name)?.length && !actions.waiting.has(c.name)) actions.waiting.set(c.name, { reason: 'PodInitializing', message: '' });
  }

  for (const c of specs) {
    const list = instances.get(c.name) ?? [];
    const newest = list[0];
    if (initState !== 'done') {
      // Regular containers wait for initialisation; anything left of them from an old sandbox goes.
      if (newest?.state === 'running') actions.kill.push({ id: newest.id, name: c.name, message: 'Pod sandbox changed, it will be killed and re-created.' });
      actions.waiting.set(c.name, { reason: 'PodInitializing', message: '' });
      continue;
    }
    // Older instances that still run are duplicates: killed and removed. Dead ones are the GC's.
    for (const old of list.slice(1)) {
      if (old.state !== 'running') continue;
      actions.kill.push({ id: old.id, name: c.name, message: 'Duplicate container instance' });
      actions.remove.push(old.id);
    }
    const nextAttempt = newest ? newest.attempt + 1 : 0;
    const replaceCurrent = (reason: ContainerStart['reason']) => void actions.start.push({ container: c, attempt: nextAttempt, reason });

    if (!newest) {
      if (actions.createSandbox !== undefined || current?.ready) actions.start.push({ container: c, attempt: firstAttempt(c.name), reason: 'new' });
      continue;
    }
    if (actions.createSandbox !== undefined) {
      if (newest.state === 'running') actions.kill.push({ id: newest.id, name: c.name, message: 'Pod sandbox changed, it will be killed and re-created.' });
      if (shouldRun(c)) replaceCurrent('sandbox');
      continue;
    }
    switch (newest.state) {
      case 'running': {
        const probe = unhealthy(c.name, newest.id);
        const resize = opts.resize ? containerResizeAction(c, newest, pod.spec?.resources, actuatedMemoryRequest(c.name)) : undefined;
        if (newest.hash && !sameSpec(c, newest)) {
          actions.kill.push({ id: newest.id, name: c.name, message: `Container ${c.name} definition changed, will be restarted` });
          replaceCurrent('changed');
        } else if (probe) {
          // The seed's "restart when the container is unhealthy": kill it; whether it comes back
          // is the restart policy's call, as after any exit.
          actions.kill.push(probeKill(c, newest.id, probe));
          if (containerShouldRestart(c, pod.spec, KILLED_EXIT_CODE)) replaceCurrent('unhealthy');
        } else if (resize?.kind === 'restart') {
          // Restarted whatever the pod's restart policy: the container is meant to keep running.
          actions.kill.push({ id: newest.id, name: c.name, message: resize.message });
          replaceCurrent('resize');
        }
        break;
      }
      case 'created':
      case 'unknown':
        // Created but never started (a failed start): remove it and try again.
        actions.remove.push(newest.id);
        replaceCurrent('restart');
        break;
      case 'exited': {
        if (!shouldRun(c)) break;
        const key = backoffKey(pod, c);
        const finished = newest.finishedAt?.getTime() ?? now;
        if (backoff.isInBackOffSince(key, finished, now)) {
          const delay = backoff.delayOf(key);
          actions.waiting.set(c.name, {
            reason: 'CrashLoopBackOff',
            message: `back-off ${formatDelay(delay)} restarting failed container=${c.name} pod=${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})`,
          });
          const left = backoff.remaining(key, finished, now);
          actions.resyncAfterMs = Math.min(actions.resyncAfterMs ?? Infinity, left);
          break;
        }
        backoff.next(key, finished, now);
        replaceCurrent('restart');
        break;
      }
    }
  }

  // Every regular container is done for good: the sidecars must not keep the pod alive, so they
  // are stopped and not restarted (`computePodActions`: `keepCount == 0` → `KillPod`, no
  // `InitContainersToStart`); the kill keeps the termination order (termination-order.ts).
  const regularDone = specs.length > 0 && specs.every((c) => {
    const newest = instances.get(c.name)?.[0];
    return newest?.state === 'exited' && !shouldRun(c);
  });
  if (initState === 'done' && actions.createSandbox === undefined && regularDone) {
    const sidecars = new Set(inits.filter(isRestartableInit).map((c) => c.name));
    actions.start = actions.start.filter((s) => !sidecars.has(s.container.name));
    for (const name of sidecars) {
      actions.waiting.delete(name);
      const killed = new Set(actions.kill.map((k) => k.id));
      for (const instance of instances.get(name) ?? []) {
        if (instance.state === 'running' && !killed.has(instance.id)) actions.kill.push({ id: instance.id, name, message: `Stopping container ${name}` });
      }
    }
  }

  // Ephemeral containers (`kubectl debug`) start once each in the running sandbox, after
  // initialisation, and never again: not after they exit, not in a new sandbox.
  const ephemerals = pod.spec?.ephemeralContainers ?? [];
  if (initState === 'done' && actions.createSandbox === undefined && current?.ready) {
    for (const ec of ephemerals) {
      if (!instances.get(ec.name)?.length) actions.start.push({ container: ec, attempt: 0, reason: 'new' });
    }
  }

  // Containers whose name is not in the spec any more are killed (the GC removes them).
  const names = new Set([...specs, ...inits, ...ephemerals].map((c) => c.name));
  for (const [name, list] of instances) {
    if (names.has(name)) continue;
    for (const c of list) {
      if (c.state === 'running') actions.kill.push({ id: c.id, name, message: `Container ${name} is not in the pod spec any more` });
    }
  }
  return actions;
}
