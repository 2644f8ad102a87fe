import type Docker from 'dockerode';
import type { Container, Pod } from '../../api/types.js';
import { hashContainer } from '../hash.js';
import { quantityOf } from '../../api/quantity.js';
import { withPodLevelLimits } from '../../api/pod-requests.js';
import type { ContainerConfig, Mount, RuntimeSandbox } from '../types.js';
import { containerLabels, containerLogPath } from './labels.js';
import type { DockerUlimit } from './engine.js';

/**
 * The Docker create body of an app container, and the cgroup settings it shares with an in-place
 * resize and with the sandbox: pure, from the pod, the container, the kubelet side's
 * `ContainerConfig` and what the runtime decided for this engine and host (`ContainerCreateContext`).
 * Mirrors cri-dockerd's `core/container_create.go` (`CreateContainer`) with the resources of
 * `core/helpers_linux.go` and `core/container_update_resources.go`.
 */

/** What a container's create body takes beside its spec: decided by the runtime for this engine and host. */
export interface ContainerCreateContext {
  readonly nodeName: string;
  readonly sandbox: RuntimeSandbox;
  /** The container's restart count, in its name's attempt and its labels. */
  readonly attempt: number;
  /** `User` of its security context (security.ts), when it sets one. */
  readonly user?: string;
  /** The `HostConfig` of its security context as this host grants it (privileged.ts). */
  readonly securityHostConfig: Docker.HostConfig;
  /** `HostConfig.Ulimits`, or nothing: the engine's defaults (engine.ts). */
  readonly ulimits: { Ulimits?: DockerUlimit[] };
  /** `HostConfig.LogConfig`, or nothing: the engine's own log settings (log-config.ts). */
  readonly logConfig: { LogConfig?: Docker.HostConfig['LogConfig'] };
}

/** The body of `POST /containers/create` for an app container that joins `ctx.sandbox`'s namespaces. */
export function containerCreateConfig(pod: Pod, container: Container, config: ContainerConfig, ctx: ContainerCreateContext): Omit<Docker.ContainerCreateOptions, 'name'> {
  const sandboxMode = `container:${ctx.sandbox.id}`;
  return {
    Image: container.image,
    // Kubernetes `command` replaces the image ENTRYPOINT and `args` its CMD; an explicit
    // Entrypoint also stops Docker from appending the image's CMD, as Kubernetes specifies.
    ...(config.command ? { Entrypoint: [...config.command] } : {}),
    ...(config.args ? { Cmd: [...config.args] } : {}),
    Env: [...config.env],
    ...(ctx.user !== undefined ? { User: ctx.user } : {}),
    ...(container.workingDir ? { WorkingDir: container.workingDir } : {}),
    // ContainerStopSignals: the engine stops it with this signal instead of the image's STOPSIGNAL.
    ...(container.lifecycle?.stopSignal ? { StopSignal: container.lifecycle.stopSignal } : {}),
    Tty: container.tty === true,
    OpenStdin: container.stdin === true,
    StdinOnce: container.stdinOnce === true,
    AttachStdin: false,
    Labels: containerLabels(pod, container, {
      node: ctx.nodeName,
      sandboxID: ctx.sandbox.id,
      hash: hashContainer(container),
      restartCount: ctx.attempt,
      logPath: containerLogPath(pod, container.name, ctx.attempt),
    }),
    HostConfig: {
      ...ctx.securityHostConfig,
      NetworkMode: sandboxMode,
      IpcMode: sandboxMode,
      ...(config.pidNamespaceOf ? { PidMode: `container:${config.pidNamespaceOf}` } : pod.spec?.shareProcessNamespace ? { PidMode: sandboxMode } : pod.spec?.hostPID ? { PidMode: 'host' } : {}),
      RestartPolicy: { Name: 'no' },
      ...(config.mounts.length ? { Mounts: config.mounts.map(dockerMount) } : {}),
      // A pod-level limit stands in for one the container does not set (getCPULimit/getMemoryLimit).
      ...containerResourceConfig(withPodLevelLimits(pod, container)),
      ...cgroupHostConfig(config),
      ...ctx.ulimits,
      ...ctx.logConfig,
    },
  };
}

/**
 * A bind mount in Docker's `HostConfig.Mounts` form, private propagation (Kubernetes' `None`).
 * Read-only mounts say how submounts behave (Docker API 1.44+; older engines ignore the option
 * and keep submounts writable, which is Kubernetes' `Disabled`).
 */
export function dockerMount(m: Mount): Docker.MountSettings {
  const recursive = !m.readOnly ? {} : m.recursiveReadOnly === 'Enabled' ? { ReadOnlyForceRecursive: true } : m.recursiveReadOnly === 'IfPossible' ? {} : { ReadOnlyNonRecursive: true };
  return {
    Type: 'bind',
    Source: m.hostPath,
    Target: m.containerPath,
    ReadOnly: m.readOnly,
    BindOptions: { Propagation: 'rprivate', ...recursive } as Docker.MountSettings['BindOptions'],
  };
}

/**
 * The cgroup settings a container gets from its spec's resources, at creation and at an in-place
 * resize alike: the memory limit in bytes, the cpu limit as `NanoCpus` (the engine sets the CFS
 * quota over a 100 ms period from it) and the shares of its cpu request.
 */
export function containerResourceConfig(container: Container): { Memory?: number; NanoCpus?: number; CpuShares: number } {
  const limits = container.resources?.limits ?? {};
  return {
    ...(limits.memory ? { Memory: Number(ceilUnits(quantityOf(limits.memory))) } : {}),
    ...(limits.cpu ? { NanoCpus: Number(quantityOf(limits.cpu)) } : {}),
    CpuShares: cpuShares(container),
  };
}

/**
 * The kubelet's `MilliCPUToShares`: the CPU request (or, without one, the limit — the apiserver
 * defaults the request to it) as cgroup shares, 1024 per core, at least 2 (a BestEffort container).
 */
export function cpuShares(container: Container): number {
  const cpu = container.resources?.requests?.cpu ?? container.resources?.limits?.cpu;
  if (cpu === undefined) return 2;
  const milli = ceilDiv(quantityOf(cpu), 1_000_000n);
  return Math.max(2, Number((milli * 1024n) / 1000n));
}

/** Whole units of a nano-unit quantity, rounded up (a memory limit of `1.5` bytes is 2). */
function ceilUnits(nano: bigint): bigint {
  return ceilDiv(nano, 1_000_000_000n);
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

/** The pod's cgroup and the process's OOM score, where the kubelet side chose them. */
export function cgroupHostConfig(config: { readonly cgroupParent?: string; readonly oomScoreAdj?: number }): Pick<Docker.HostConfig, 'CgroupParent' | 'OomScoreAdj'> {
  return {
    ...(config.cgroupParent ? { CgroupParent: config.cgroupParent } : {}),
    ...(config.oomScoreAdj !== undefined ? { OomScoreAdj: config.oomScoreAdj } : {}),
  };
}
