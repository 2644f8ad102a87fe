import type { Container, ContainerRestartRule, PodSpec } from './types.js';

/** The rule action that restarts every container of the pod (RestartAllContainersOnContainerExits). */
export const RESTART_ALL_CONTAINERS = 'RestartAllContainers';

/**
 * Whether a container that exited with `exitCode` runs again (ContainerRestartRules, on since 1.35;
 * pkg/api/v1/pod/util.go `ContainerShouldRestart`): with a container-level `restartPolicy`, the
 * first of its `restartPolicyRules` whose exit codes match decides (`Restart`, or
 * `RestartAllContainers`, on since 1.36: the whole pod starts over, this container with it), else
 * that policy; without one, the pod's `restartPolicy` (default `Always`). `OnFailure` restarts
 * after a non-zero exit only.
 */
export function containerShouldRestart(container: Pick<Container, 'restartPolicy' | 'restartPolicyRules'>, spec: Pick<PodSpec, 'restartPolicy'> | undefined, exitCode: number): boolean {
  if (container.restartPolicy) {
    const action = matchingRestartRule(container, exitCode)?.action;
    if (action === 'Restart' || action === RESTART_ALL_CONTAINERS) return true;
    return policyRestarts(container.restartPolicy, exitCode);
  }
  return policyRestarts(spec?.restartPolicy || 'Always', exitCode);
}

function policyRestarts(policy: string, exitCode: number): boolean {
  return policy === 'Always' || (policy === 'OnFailure' && exitCode !== 0);
}

/** `findMatchingContainerRestartRule`: the first rule whose `exitCodes` (`In`/`NotIn` its values) match. */
export function matchingRestartRule(container: Pick<Container, 'restartPolicyRules'>, exitCode: number): ContainerRestartRule | undefined {
  for (const rule of container.restartPolicyRules ?? []) {
    if (!rule.exitCodes) continue;
    const listed = (rule.exitCodes.values ?? []).includes(exitCode);
    if (rule.exitCodes.operator === 'In' ? listed : rule.exitCodes.operator === 'NotIn' ? !listed : false) return rule;
  }
  return undefined;
}


/**
 * `AllContainersCouldRestart` (pkg/api/v1/pod/util.go): some init or regular container has a
 * `RestartAllContainers` rule, so any container of the pod may run again whatever its own policy.
 */
export function allContainersCouldRestart(spec: Pick<PodSpec, 'initContainers' | 'containers'> | undefined): boolean {
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].some((c) => (c.restartPolicyRules ?? []).some((r) => r.action === RESTART_ALL_CONTAINERS));
}
