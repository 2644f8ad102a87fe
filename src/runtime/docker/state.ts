import type Docker from 'dockerode';
import type { RuntimeContainer, RuntimeContainerState, RuntimeSandbox } from '../types.js';
import { Label } from './labels.js';
import type { ParsedName } from './naming.js';

const ZERO_TIME = '0001-01-01T00:00:00Z';

function time(value: string | undefined): Date | undefined {
  if (!value || value.startsWith('0001-01-01')) return undefined;
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/**
 * cri-dockerd's state mapping (core/container_status.go): running; else exited with reason
 * OOMKilled / Completed / Error when it has finished; else ContainerCannotRun when it failed to
 * start (non-zero exit, never finished); else created.
 */
export function containerFromInspect(info: Docker.ContainerInspectInfo, name: ParsedName): RuntimeContainer {
  const s = info.State;
  const labels = info.Config.Labels ?? {};
  let state: RuntimeContainerState;
  let reason: string | undefined;
  let startedAt = time(s.StartedAt);
  let finishedAt = time(s.FinishedAt);
  if (s.Running) {
    state = 'running';
  } else if (s.FinishedAt && s.FinishedAt !== ZERO_TIME && finishedAt) {
    state = 'exited';
    reason = s.OOMKilled ? 'OOMKilled' : s.ExitCode === 0 ? 'Completed' : 'Error';
  } else if (s.ExitCode !== 0) {
    state = 'exited';
    reason = 'ContainerCannotRun';
    startedAt = finishedAt = new Date(info.Created);
  } else {
    state = 'created';
  }
  return {
    id: info.Id,
    ...fromLabels(labels, name),
    image: info.Config.Image,
    imageID: info.Image,
    state,
    createdAt: new Date(info.Created),
    ...(startedAt ? { startedAt } : {}),
    ...(finishedAt && state === 'exited' ? { finishedAt } : {}),
    ...(state === 'exited' ? { exitCode: s.ExitCode } : {}),
    ...(reason ? { reason } : {}),
    ...(s.Error ? { message: s.Error } : {}),
    ...resourcesOf(info.HostConfig),
  };
}

/** Shares per core and the floor of shares (pkg/kubelet/cm/helpers_linux.go). */
const SHARES_PER_CPU = 1024;
const MIN_SHARES = 2;

/**
 * The cpu and memory settings of an inspected container in the API's units, as the kubelet reads
 * a container's resources back (pkg/kubelet/kuberuntime/kuberuntime_container_linux.go
 * `toKubeContainerResources`, `sharesToMilliCPU`, `quotaToMilliCPU`): the request from the shares
 * (rounded up), the limit from `NanoCpus` or the CFS quota over its period, the memory limit.
 */
export function resourcesOf(host: Docker.ContainerInspectInfo['HostConfig'] | undefined): Pick<RuntimeContainer, 'resources'> {
  if (!host) return {};
  const shares = host.CpuShares ?? 0;
  const cpuRequestMilli = shares >= MIN_SHARES ? Math.ceil((shares * 1000) / SHARES_PER_CPU) : 0;
  const nano = host.NanoCpus ?? 0;
  const quota = host.CpuQuota ?? 0;
  const period = host.CpuPeriod || 100_000;
  const cpuLimitMilli = nano > 0 ? Math.floor(nano / 1_000_000) : quota > 0 ? Math.floor((quota * 1000) / period) : 0;
  const memoryLimitBytes = host.Memory && host.Memory > 0 ? host.Memory : 0;
  return { resources: { cpuRequestMilli, cpuLimitMilli, memoryLimitBytes } };
}

/** What a container's name and labels say about it: identity, restart count, spec hash, grace period. */
function fromLabels(labels: Record<string, string>, name: ParsedName): Pick<RuntimeContainer, 'name' | 'attempt' | 'restartCount' | 'hash' | 'gracePeriodSeconds' | 'sandboxId'> {
  const restartCount = Number(labels[Label.restartCount] ?? name.attempt);
  const grace = Number(labels[Label.terminationGracePeriod]);
  return {
    name: name.container,
    attempt: name.attempt,
    restartCount: Number.isFinite(restartCount) ? restartCount : name.attempt,
    hash: labels[Label.hash] ?? '',
    ...(Number.isFinite(grace) && labels[Label.terminationGracePeriod] ? { gracePeriodSeconds: grace } : {}),
    ...(labels[Label.sandboxID] ? { sandboxId: labels[Label.sandboxID] } : {}),
  };
}

export function sandboxFromInspect(info: Docker.ContainerInspectInfo, name: ParsedName): RuntimeSandbox {
  const ips: string[] = [];
  // cri-dockerd: the sandbox's IPAddress, then GlobalIPv6Address, for each attached network.
  for (const n of Object.values(info.NetworkSettings?.Networks ?? {})) {
    for (const ip of [n.IPAddress, n.GlobalIPv6Address]) if (ip && !ips.includes(ip)) ips.push(ip);
  }
  return {
    id: info.Id,
    attempt: name.attempt,
    ready: info.State.Running,
    running: info.State.Running,
    createdAt: new Date(info.Created),
    ...podStartTimeOf(info.Config?.Labels),
    ips,
  };
}

/** The pod start time a sandbox's label recorded, when it holds a valid one. */
function podStartTimeOf(labels: Record<string, string> | undefined): Pick<RuntimeSandbox, 'podStartTime'> {
  const recorded = labels?.[Label.podStartTime];
  const at = recorded ? new Date(recorded) : undefined;
  return at && !Number.isNaN(at.getTime()) ? { podStartTime: at } : {};
}

/**
 * A container from its list entry alone, for when Docker is too busy to answer an inspect:
 * state and exit code from the list, times approximated by the creation time (the next
 * inspection corrects them).
 */
export function containerFromListEntry(entry: Docker.ContainerInfo, name: ParsedName): RuntimeContainer {
  const labels = entry.Labels ?? {};
  const createdAt = new Date(entry.Created * 1000);
  const exitCode = Number(/^Exited \((-?\d+)\)/.exec(entry.Status ?? '')?.[1]);
  const state: RuntimeContainerState = entry.State === 'running' ? 'running' : entry.State === 'exited' || entry.State === 'dead' ? 'exited' : 'created';
  return {
    id: entry.Id,
    ...fromLabels(labels, name),
    image: entry.Image,
    imageID: entry.ImageID,
    state,
    createdAt,
    ...(state !== 'created' ? { startedAt: createdAt } : {}),
    ...(state === 'exited' ? { exitCode: Number.isFinite(exitCode) ? exitCode : 0, reason: exitCode === 0 ? 'Completed' : 'Error' } : {}),
  };
}

export function sandboxFromListEntry(entry: Docker.ContainerInfo, name: ParsedName): RuntimeSandbox {
  return { id: entry.Id, attempt: name.attempt, ready: entry.State === 'running', running: entry.State === 'running', createdAt: new Date(entry.Created * 1000), ...podStartTimeOf(entry.Labels), ips: [] };
}
