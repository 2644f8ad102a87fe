import type { Container, Pod } from '../api/types.js';
import type { EventSubject, EventType } from '../events/recorder.js';
import type { Logger } from '../logging/index.js';
import type { Runtime, RuntimeContainer, RuntimePod } from '../runtime/types.js';
import { graceAfterHook, runHook } from './lifecycle.js';
import { runtimeProbeIO } from './prober/runtime-io.js';
import { TerminationOrdering, needsTerminationOrdering } from './termination-order.js';

/** What killing needs of the runtime: stops and removals, and exec and port-forward for preStop hooks. */
export type KillRuntime = Pick<Runtime, 'stopContainer' | 'stopSandbox' | 'removeContainer' | 'exec' | 'portForward'>;

/** The pod a kill is about as the runtime lists it: who it is (the event's subject when no spec is known) and its sandboxes (where hooks run). */
export type KillTarget = Pick<RuntimePod, 'uid' | 'name' | 'namespace' | 'sandboxes'>;

/** The container to kill as the runtime lists it (`gracePeriodSeconds`: the label its creation recorded). */
export type KillContainer = Pick<RuntimeContainer, 'id' | 'name'> & Partial<Pick<RuntimeContainer, 'gracePeriodSeconds'>>;

export interface PodKillerOptions {
  runtime: KillRuntime;
  /** The event recorder's `record`. */
  record: (subject: EventSubject, type: EventType, reason: string, message: string) => void;
  log: Logger;
  /** Unmounts and deletes `<rootDir>/pods/<uid>` (`tearDown` kills); absent: pods have no volumes here. */
  tearDownVolumes?: (uid: string) => Promise<void>;
  /** Removes the pod's cgroup (`tearDown` kills); absent: pods have no cgroup of their own. */
  removePodCgroup?: (uid: string) => Promise<void>;
}

export interface KillContainerOptions {
  /**
   * The grace period override (a deletion's, an eviction's, the shutdown manager's, an API
   * delete's, a probe's `terminationGracePeriodSeconds`); absent: the pod's own
   * (`setTerminationGracePeriod`).
   */
  grace?: number | undefined;
  /** The `Killing` event's message; default "Stopping container <name>", as the kubelet's. */
  message?: string | undefined;
  /**
   * The termination order of the containers killed together with this one (a pod with sidecars,
   * src/kubelet/termination-order.ts): after its preStop hook, the container waits for its turn
   * within what is left of its grace period before SIGTERM.
   */
  ordering?: TerminationOrdering | undefined;
}

export interface KillPodOptions {
  /** The grace period override for every container (see `KillContainerOptions.grace`). */
  grace?: number | undefined;
  /**
   * Once everything is stopped, remove every container and sandbox of the pod: what the kubelet
   * leaves to its container GC, done at once for a pod gone from its source, deleted through the
   * API or evicted. Without it the dead containers stay (their logs readable) until the GC.
   */
  remove?: boolean;
  /** Then unmount and delete the pod's volumes and remove its cgroup (the volume manager's and `cleanupOrphanedPodCgroups`'s work, done at once). */
  tearDown?: boolean;
}

/** The kubelet's default `terminationGracePeriodSeconds` (the apiserver's default for a pod). */
export const DEFAULT_TERMINATION_GRACE_SECONDS = 30;

/** A container of the spec by name: regular or init (ephemeral containers have no lifecycle hooks). */
export function containerSpec(pod: Pod | undefined, name: string): Container | undefined {
  return [...(pod?.spec?.containers ?? []), ...(pod?.spec?.initContainers ?? [])].find((c) => c.name === name);
}

/**
 * The grace period a container is stopped with when no override is given
 * (`setTerminationGracePeriod`, pkg/kubelet/kuberuntime/kuberuntime_container.go): the pod's
 * deletion grace period, else its `terminationGracePeriodSeconds`, else the one recorded on the
 * container when it was created (the kubelet's `restoreSpecsFromContainerLabels` for a pod whose
 * spec is gone), else 30 s.
 */
export function terminationGrace(pod: Pod | undefined, container: KillContainer): number {
  return pod?.metadata?.deletionGracePeriodSeconds ?? pod?.spec?.terminationGracePeriodSeconds ?? container.gracePeriodSeconds ?? DEFAULT_TERMINATION_GRACE_SECONDS;
}

/** A container's events are about `spec.containers{name}` of its pod: the spec's, or one rebuilt from the runtime's labels. */
function containerSubject(target: KillTarget, pod: Pod | undefined, name: string): EventSubject {
  const subject: EventSubject = pod ?? { kind: 'Pod', apiVersion: 'v1', metadata: { name: target.name, namespace: target.namespace, uid: target.uid } };
  return { ...subject, fieldPath: `spec.containers{${name}}` };
}

/**
 * The kubelet's one way of killing (pkg/kubelet/kuberuntime/kuberuntime_container.go
 * `killContainer`, kuberuntime_manager.go `KillPod`): every kill of a container — a pod deleted,
 * evicted, failed, shut down, removed from its source, deleted through the API, a container
 * restarted by its probe, replaced by a new spec or failed by its postStart hook — records
 * `Killing`, runs the container's `preStop` hook when its spec is known, then stops it with what
 * is left of the grace period. Holds no state of its own: the runtime, the event recorder and
 * the teardowns are handed in, so it is tested without an engine.
 */
export class PodKiller {
  readonly #o: PodKillerOptions;

  constructor(opts: PodKillerOptions) {
    this.#o = opts;
  }

  /**
   * `killContainer`: the `Killing` event ("Stopping container <name>" unless a message says
   * why), the `preStop` hook when the spec is known, there is a grace period and a ready sandbox
   * to run it in (bounded by the grace period; a failure is a `FailedPreStopHook` event, never a
   * reason to skip the stop), then SIGTERM with what is left (at least 2 s after a hook), SIGKILL
   * after it. `pod` undefined: the spec is gone (a pod removed while nodelet was down), so there is
   * no hook to run — nodelet's labels do not carry it, unlike the kubelet's annotations.
   */
  async killContainer(target: KillTarget, pod: Pod | undefined, container: KillContainer, opts: KillContainerOptions = {}): Promise<void> {
    const { runtime, record, log } = this.#o;
    const subject = containerSubject(target, pod, container.name);
    const grace = opts.grace ?? terminationGrace(pod, container);
    record(subject, 'Normal', 'Killing', opts.message ?? `Stopping container ${container.name}`);
    const spec = containerSpec(pod, container.name);
    const hook = spec?.lifecycle?.preStop;
    const sandbox = target.sandboxes.find((s) => s.ready);
    let left = grace;
    let hookMs = 0;
    if (hook && spec && sandbox && grace > 0) {
      const started = Date.now();
      const failure = await runHook(hook, spec, runtimeProbeIO(runtime, container.id, sandbox.id, sandbox.ips[0]), grace * 1000);
      if (failure) {
        log.warn({ pod: `${target.namespace}/${target.name}`, container: container.name, error: failure }, 'PreStopHook failed');
        record(subject, 'Warning', 'FailedPreStopHook', failure);
      }
      hookMs = Date.now() - started;
      left = graceAfterHook(grace, hookMs);
    }
    const { ordering } = opts;
    if (ordering) {
      // `waitForTurn`: preStop hooks all run at once; only SIGTERM waits for the containers before this one.
      const unused = grace - hookMs / 1000;
      if (unused > 0) left = graceAfterHook(grace, hookMs + Math.trunc(await ordering.waitForTurn(container.name, unused)) * 1000);
    }
    log.info({ pod: `${target.namespace}/${target.name}`, podUID: target.uid, container: container.name, containerID: container.id, gracePeriod: left }, 'Killing container with a grace period');
    try {
      await runtime.stopContainer(container.id, left);
    } finally {
      ordering?.containerTerminated(container.name);
    }
  }

  /**
   * `KillPod`: every running container killed at once (`killContainer`), then the ready
   * sandboxes stopped; with `remove`, every container and sandbox removed, and with `tearDown`
   * the pod's volumes and cgroup after them. Removals are each tried (a failure is logged), the
   * teardown runs whatever they did, and the first failed removal is thrown at the end so the
   * caller knows the pod is not gone.
   */
  async killPod(runtimePod: RuntimePod, pod: Pod | undefined, opts: KillPodOptions = {}): Promise<void> {
    const { runtime, log } = this.#o;
    const plog = log.child({ pod: `${runtimePod.namespace}/${runtimePod.name}`, podUID: runtimePod.uid });
    const running = runtimePod.containers.filter((c) => c.state === 'running');
    const ready = runtimePod.sandboxes.filter((s) => s.ready);
    if (running.length || ready.length) plog.info({ gracePeriod: opts.grace }, 'Killing pod');
    // Regular containers first, then sidecars in reverse order of declaration (kuberuntime_termination_order.go).
    const ordering = needsTerminationOrdering(pod) && pod ? new TerminationOrdering(pod, running.map((c) => c.name)) : undefined;
    await Promise.all(running.map((c) => this.killContainer(runtimePod, pod, c, { grace: opts.grace, ordering })));
    await this.stopSandboxes(ready, plog);
    let failed: unknown;
    if (opts.remove) {
      for (const c of [...runtimePod.containers, ...runtimePod.sandboxes]) {
        await runtime.removeContainer(c.id).catch((err: unknown) => {
          failed ??= err;
          plog.warn({ err, containerID: c.id }, 'Failed to remove container');
        });
      }
    }
    if (opts.tearDown) {
      // No container holds the pod's volumes any more: unmount and delete <rootDir>/pods/<uid>.
      await this.#o.tearDownVolumes?.(runtimePod.uid).catch((err: unknown) => plog.warn({ err }, 'Failed to tear down pod volumes'));
      await this.removePodCgroup(runtimePod.uid, plog);
    }
    if (failed !== undefined) throw failed;
  }

  /**
   * Stops sandboxes, their pod networks torn down first (the runtime's `stopSandbox`). A failed
   * DEL is logged, not fatal: the sandbox is stopped anyway and its attachment stays cached, so
   * its removal (or the network GC) tries the DEL again.
   */
  async stopSandboxes(sandboxes: readonly { readonly id: string }[], log: Logger = this.#o.log): Promise<void> {
    await Promise.all(sandboxes.map((s) => this.#o.runtime.stopSandbox(s.id).catch((err: unknown) => log.warn({ err, sandbox: s.id }, 'Failed to tear down the pod network of a sandbox'))));
  }

  /** Once no container of the pod is left, its cgroup goes too (one with processes still exiting is retried). */
  async removePodCgroup(uid: string, log: Logger = this.#o.log): Promise<void> {
    await this.#o.removePodCgroup?.(uid).catch((err: unknown) => log.warn({ err, podUID: uid }, 'Failed to remove pod cgroup'));
  }
}
