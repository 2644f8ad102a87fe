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
  const restartCount = Number(labels[Label.restartCount] ?? name.attempt);
  const grace = Number(labels[Label.terminationGracePeriod]);
  return {
    id: info.Id,
    name: name.container,
    attempt: name.attempt,
    restartCount: Number.isFinite(restartCount) ? restartCount : name.attempt,
    hash: labels[Label.hash] ?? '',
    image: info.Config.Image,
    imageID: info.Image,
    state,
    createdAt: new Date(info.Created),
    ...(startedAt ? { startedAt } : {}),
    ...(finishedAt && state === 'exited' ? { finishedAt } : {}),
    ...(state === 'exited' ? { exitCode: s.ExitCode } : {}),
    ...(reason ? { reason } : {}),
    ...(s.Error ? { message: s.Error } : {}),
    ...(Number.isFinite(grace) && labels[Label.terminationGracePeriod] ? { gracePeriodSeconds: grace } : {}),
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
    createdAt: new Date(info.Created),
    ips,
  };
}
