import type { Container, Pod } from '../api/types.js';
import type { ContainerConfig, ImageInfo } from '../runtime/types.js';
import { nodeAllocatable, type PodRuntimeInfo } from '../volumes/downward-api.js';
import { envList, expandCommandAndArgs, resolveEnv } from '../volumes/env.js';
import { ContainerConfigError } from '../volumes/errors.js';
import { ExpansionBudget, MAX_CONTAINER_EXPANSION_BYTES } from '../volumes/expansion.js';
import type { VolumeManager } from '../volumes/manager.js';
import type { PodObjectSource } from '../volumes/source.js';
import { appArmorEnabled, containerSecurity } from './security-context.js';

export interface ContainerConfigDeps {
  readonly volumes: VolumeManager | undefined;
  readonly objects: PodObjectSource | undefined;
  readonly nodeIP: string;
  /** Records a Warning event on the pod (`InvalidEnvironmentVariableNames`). */
  readonly warn: (reason: string, message: string) => void;
}

/** The downward API's view of a pod running in `sandboxIPs` on this node. */
export function podRuntimeInfo(pod: Pod, nodeIP: string, sandboxIPs: readonly string[]): PodRuntimeInfo {
  const hostIPs = nodeIP ? [nodeIP] : [];
  return { hostIPs, podIPs: pod.spec?.hostNetwork ? hostIPs : sandboxIPs, allocatable: nodeAllocatable() };
}

/**
 * What the kubelet resolves before it creates a container (`generateContainerConfig`): the pod's
 * volumes set up, the pod's hosts file written (mounted at /etc/hosts) and its resolv.conf mounted, the environment with every `valueFrom` and `envFrom` read, mounts,
 * `$(VAR)`-expanded command and args, and the security settings (runAsNonRoot checked against
 * the image's user). Throws `ContainerConfigError` (waiting reason
 * `CreateContainerConfigError`) when something is missing or refused, an expansion past its
 * caps included (refused before the text is built: the refusal is as cheap as the caps).
 */
export async function buildContainerConfig(pod: Pod, container: Container, image: Pick<ImageInfo, 'user'>, sandboxIPs: readonly string[], deps: ContainerConfigDeps): Promise<ContainerConfig> {
  const info = podRuntimeInfo(pod, deps.nodeIP, sandboxIPs);
  const device = container.volumeDevices?.[0];
  if (device) throw new ContainerConfigError(`volumeDevice ${JSON.stringify(device.name)} at ${device.devicePath}: raw block volumes are not supported by nodelet`, { mount: true });
  const volumes = pod.spec?.volumes ?? [];
  if (volumes.length && !deps.volumes) throw new ContainerConfigError(`volume ${JSON.stringify(volumes[0]?.name)}: no volume manager is configured`, { mount: true });
  if (deps.volumes) await deps.volumes.setUpPod(pod, info);
  // One share of expansion for the whole container (env, subpaths, command, args): see expansion.ts.
  const budget = new ExpansionBudget(MAX_CONTAINER_EXPANSION_BYTES);
  const env = await resolveEnv(pod, container, { info, objects: deps.objects, budget, onInvalidKeys: (message) => deps.warn('InvalidEnvironmentVariableNames', message) });
  const mounts = deps.volumes ? await deps.volumes.mountsFor(pod, container, env, budget) : [];
  const hosts = await deps.volumes?.etcHostsMount(pod, container, info.podIPs);
  if (hosts) mounts.push(hosts);
  const resolv = await deps.volumes?.resolvConfMount(pod, container);
  if (resolv) mounts.push(resolv);
  const security = containerSecurity(pod, container, image, { appArmorEnabled: appArmorEnabled() });
  return { env: envList(env), mounts, ...expandCommandAndArgs(container, env, budget), security };
}
