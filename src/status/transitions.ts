import type { ContainerStatus, PodSpec, PodStatus } from '../api/types.js';
import { allContainersCouldRestart, containerShouldRestart } from '../api/restart.js';
import { isRestartableInit } from './conditions.js';

/** Succeeded and Failed are final: the kubelet never moves a pod out of them. */
export function isTerminalPhase(phase: string | undefined): phase is 'Succeeded' | 'Failed' {
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * The kubelet's `checkContainerStateTransition`: a terminated container may leave that state only
 * if it will be restarted, i.e. `restartPolicy` Always (the default), or OnFailure after a non-zero
 * exit, or a regular container's own `restartPolicy`/`restartPolicyRules` say so
 * (`ContainerShouldRestart`). Sidecars always restart, and in a pod where some container has a
 * `RestartAllContainers` rule every container may (`AllContainersCouldRestart`). Returns the first container that breaks the rule, else undefined.
 */
export function illegalContainerTransition(old: PodStatus, next: PodStatus, spec: PodSpec | undefined): string | undefined {
  const policy = spec?.restartPolicy || 'Always';
  if (policy === 'Always') return undefined;
  // A RestartAllContainers rule may bring any container back, whatever its own policy.
  if (allContainersCouldRestart(spec)) return undefined;
  const sidecars = new Set((spec?.initContainers ?? []).filter(isRestartableInit).map((c) => c.name));
  const regular = new Map((spec?.containers ?? []).map((c) => [c.name, c]));
  const check = (olds: readonly ContainerStatus[] | undefined, news: readonly ContainerStatus[] | undefined) => {
    for (const o of olds ?? []) {
      const terminated = o.state?.terminated;
      if (!terminated || sidecars.has(o.name)) continue;
      if (terminated.exitCode !== 0 && policy === 'OnFailure') continue;
      // A regular container's own restartPolicy or restartPolicyRules may restart it (ContainerRestartRules).
      const c = regular.get(o.name);
      if (c && containerShouldRestart(c, spec, terminated.exitCode)) continue;
      const n = news?.find((s) => s.name === o.name);
      if (n && n.state?.terminated === undefined) return o.name;
    }
    return undefined;
  };
  return check(old.containerStatuses, next.containerStatuses) ?? check(old.initContainerStatuses, next.initContainerStatuses);
}
