import { RESTART_ALL_CONTAINERS } from '../api/restart.js';
import type { Container, Pod } from '../api/types.js';

/** Why a pod's sandbox is not created: the Warning event's reason and the containers' message. */
export interface SandboxRefusal {
  readonly reason: string;
  readonly message: string;
}

/**
 * Pod-spec fields nodelet cannot apply, checked before a sandbox is created (project rule: a
 * field is applied or refused, never accepted and ignored). The event reasons are those of the
 * kubelet step that would fail:
 *
 * - `runtimeClassName`: the kubelet looks the RuntimeClass's handler up before it creates the
 *   sandbox and fails it when there is none (`FailedCreatePodSandBox`). nodelet has one runtime,
 *   Docker, and no handlers: every RuntimeClass is unknown here.
 * - `overhead`: the apiserver sets it only from a RuntimeClass (its RuntimeClass admission rejects
 *   "Pod Overhead set without corresponding RuntimeClass"); without one it is refused the same way.
 *   With a runtimeClassName, that refusal comes first.
 * - `resourceClaims` (and a container's `resources.claims`): dynamic resource allocation, which the
 *   kubelet prepares before the sandbox (`FailedPrepareDynamicResources`); nodelet has no DRA.
 * - `restartPolicyRules` the kubelet would not read: without the container's own `restartPolicy`
 *   (where upstream never reads them), an action other than `Restart` and `RestartAllContainers`
 *   (RestartAllContainersOnContainerExits, on since 1.36: src/kubelet/restart-all.ts), exit codes
 *   without `In`/`NotIn` or with more than 255 values.
 * - `ports[].hostPort` on a pod without `hostNetwork`: the kubelet's network plugin publishes it
 *   when it sets up the sandbox's network (`FailedCreatePodSandBox` when it cannot). nodelet does
 *   too with `--network-plugin=cni` when the network declares the `portMappings` capability (the
 *   `portmap` plugin), for regular containers as the kubelet's `MakePortMappings` does; an init
 *   container's `hostPort`, which the kubelet never publishes, is refused. Without such a network
 *   (the Docker network `none` by default) no host port can be published at all. With
 *   `hostNetwork` the apiserver requires `hostPort` to equal `containerPort` (and defaults it to
 *   it), and the container listening on it is all there is to apply.
 */
export function unsupportedFieldRefusal(pod: Pod, network: { readonly hostPorts: boolean } = { hostPorts: false }): SandboxRefusal | undefined {
  const spec = pod.spec;
  if (!spec) return undefined;
  if (spec.runtimeClassName) {
    return {
      reason: 'FailedCreatePodSandBox',
      message: `runtimeClassName ${JSON.stringify(spec.runtimeClassName)}: nodelet has a single container runtime (Docker) and no RuntimeClass handlers; remove runtimeClassName to run the pod here`,
    };
  }
  if (spec.overhead && Object.keys(spec.overhead).length) {
    return {
      reason: 'FailedCreatePodSandBox',
      message: 'overhead: pod overhead is only set together with a RuntimeClass (runtimeClassName), which nodelet does not support',
    };
  }
  const containers: readonly Container[] = [...(spec.initContainers ?? []), ...(spec.containers ?? [])];
  const claim = spec.resourceClaims?.[0]?.name ?? containers.flatMap((c) => c.resources?.claims ?? [])[0]?.name;
  if (claim !== undefined) {
    return {
      reason: 'FailedPrepareDynamicResources',
      message: `resourceClaim ${JSON.stringify(claim)}: dynamic resource allocation (resourceClaims) is not supported by nodelet`,
    };
  }
  // ContainerRestartRules (beta, on since 1.35) and RestartAllContainersOnContainerExits (beta, on
  // since 1.36): applied (src/api/restart.ts, src/kubelet/restart-all.ts) on init, sidecar and
  // regular containers with a container-level restartPolicy; what the apiserver would not allow
  // (`validateContainerRestartPolicy`) is refused.
  for (const c of containers) {
    const rules = c.restartPolicyRules ?? [];
    if (!rules.length) continue;
    const unknownAction = rules.find((r) => r.action !== 'Restart' && r.action !== RESTART_ALL_CONTAINERS)?.action;
    const refusal = !c.restartPolicy
      ? 'restartPolicyRules need the container\'s own restartPolicy'
      : unknownAction !== undefined
        ? `restartPolicyRules action ${JSON.stringify(unknownAction)} is not supported (only "Restart" and "RestartAllContainers")`
        : rules.find((r) => !r.exitCodes || (r.exitCodes.operator !== 'In' && r.exitCodes.operator !== 'NotIn') || (r.exitCodes.values?.length ?? 0) > 255)
          ? 'restartPolicyRules exitCodes need the operator "In" or "NotIn" and at most 255 values'
          : undefined;
    if (refusal) return { reason: 'FailedCreatePodSandBox', message: `container ${JSON.stringify(c.name)}: ${refusal}` };
  }
  if (!spec.hostNetwork) {
    const inits = new Set(spec.initContainers ?? []);
    for (const c of containers) {
      if (network.hostPorts && !inits.has(c)) continue;
      const port = c.ports?.find((p) => p.hostPort !== undefined && p.hostPort !== null && p.hostPort !== 0);
      if (port) {
        const at = `${port.hostIP ? `${port.hostIP}:` : ''}${port.hostPort}`;
        const why = network.hostPorts
          ? 'the kubelet publishes the host ports of regular containers only, not of init containers'
          : 'the pod network maps no host ports (sandboxes run on Docker network none by default; with --network-plugin=cni the network needs the portMappings capability, e.g. the portmap plugin)';
        return {
          reason: 'FailedCreatePodSandBox',
          message: `container ${JSON.stringify(c.name)}: hostPort ${at} (containerPort ${port.containerPort}/${port.protocol ?? 'TCP'}) cannot be published: ${why}; use hostNetwork: true (hostPort equal to containerPort) or remove hostPort`,
        };
      }
    }
  }
  return undefined;
}
