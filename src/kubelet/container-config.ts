import type { Container, Pod } from '../api/types.js';
import type { ContainerConfig, ImageInfo } from '../runtime/types.js';
import { nodeAllocatable, type PodRuntimeInfo } from '../volumes/downward-api.js';
import { envList, expandCommandAndArgs, resolveEnv } from '../volumes/env.js';
import { ContainerConfigError } from '../volumes/errors.js';
import { ExpansionBudget, MAX_CONTAINER_EXPANSION_BYTES, MAX_EXPANDED_VALUE_BYTES } from '../volumes/expansion.js';
import type { VolumeManager } from '../volumes/manager.js';
import type { PodObjectSource } from '../volumes/source.js';
import { hookRefusal } from './lifecycle.js';
import { probeRefusal } from './prober/handlers.js';
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
 * `CreateContainerConfigError`) when something is missing or refused (a probe or hook nodelet
 * cannot run among them, before anything is set up), an expansion past its
 * caps included (refused before the text is built: the refusal is as cheap as the caps).
 */
export async function buildContainerConfig(pod: Pod, container: Container, image: Pick<ImageInfo, 'user'>, sandboxIPs: readonly string[], deps: ContainerConfigDeps): Promise<ContainerConfig> {
  const info = podRuntimeInfo(pod, deps.nodeIP, sandboxIPs);
  const device = container.volumeDevices?.[0];
  if (device) throw new ContainerConfigError(`volumeDevice ${JSON.stringify(device.name)} at ${device.devicePath}: raw block volumes are not supported by nodelet`, { mount: true });
  const handler = probeRefusal(container) ?? hookRefusal(container);
  if (handler) throw new ContainerConfigError(handler);
  const volumes = pod.spec?.volumes ?? [];
  if (volumes.length && !deps.volumes) throw new ContainerConfigError(`volume ${JSON.stringify(volumes[0]?.name)}: no volume manager is configured`, { mount: true });
  if (deps.volumes) await deps.volumes.setUpPod(pod, info);
  // One share of expansion for the whole container (env, subpaths, command, args): see expansion.ts.
  const budget = new ExpansionBudget(MAX_CONTAINER_EXPANSION_BYTES);
  const env = await resolveEnv(pod, container, {
    info,
    objects: deps.objects,
    budget,
    onInvalidKeys: (message) => deps.warn('InvalidEnvironmentVariableNames', message),
    emptyDirPath: (name) => deps.volumes?.emptyDirPath(pod, name),
  });
  const mounts = deps.volumes ? await deps.volumes.mountsFor(pod, container, env, budget) : [];
  const hosts = await deps.volumes?.etcHostsMount(pod, container, info.podIPs);
  if (hosts) mounts.push(hosts);
  const resolv = await deps.volumes?.resolvConfMount(pod, container);
  if (resolv) mounts.push(resolv);
  const security = containerSecurity(pod, container, image, { appArmorEnabled: appArmorEnabled() });
  const envStrings = envList(env);
  const commandAndArgs = expandCommandAndArgs(container, env, budget);
  checkExecLimits(envStrings, [...(commandAndArgs.command ?? []), ...(commandAndArgs.args ?? [])]);
  return { env: envStrings, mounts, ...commandAndArgs, security };
}

/** Linux's `MAX_ARG_STRLEN`: one argument or `NAME=value` string, its NUL included (32 pages; expansion.ts). */
export const MAX_ARG_STRLEN = MAX_EXPANDED_VALUE_BYTES;
/**
 * What execve(2) lets a process start with (`ARG_MAX` under the default 8 MiB stack limit, a
 * quarter of it): every argument and environment string with its NUL, plus a pointer each. The
 * same 2 MiB bounds `$(VAR)` expansion (expansion.ts), which keeps the text from being built;
 * this counts what execve counts, on the final strings, literal values included.
 */
export const MAX_EXEC_BYTES = MAX_CONTAINER_EXPANSION_BYTES;

/**
 * Refuses (`CreateContainerConfigError`, no Docker call) an environment and command line the
 * container's process could never be started with: execve fails with E2BIG past the kernel's
 * limits, after Docker stored the whole config. The container's image may add its own
 * entrypoint, so this is the lower bound of what fails.
 */
export function checkExecLimits(env: readonly string[], argv: readonly string[]): void {
  let total = 0;
  for (const [what, list] of [['environment variable', env], ['command or argument', argv]] as const) {
    for (const s of list) {
      const bytes = Buffer.byteLength(s) + 1;
      if (bytes > MAX_ARG_STRLEN) {
        const name = what === 'environment variable' ? ` ${JSON.stringify(s.slice(0, Math.min(64, Math.max(0, s.indexOf('=')))))}` : '';
        throw new ContainerConfigError(`${what}${name} is ${bytes} bytes, more than the ${MAX_ARG_STRLEN} bytes a process can be started with (MAX_ARG_STRLEN)`);
      }
      total += bytes + 8;
    }
  }
  if (total > MAX_EXEC_BYTES) throw new ContainerConfigError(`environment and command line take ${total} bytes, more than the ${MAX_EXEC_BYTES} bytes a process can be started with (ARG_MAX): ${env.length} environment variables, ${argv.length} arguments`);
}
