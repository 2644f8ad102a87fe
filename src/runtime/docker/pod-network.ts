import type Docker from 'dockerode';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { PodNetworkIdentity, PortMapping } from '../../network/types.js';
import { Label } from './labels.js';

/**
 * What the Docker runtime hands its network plugin for one sandbox, read from the pod spec or
 * from the sandbox's own labels (so a sandbox of an earlier nodelet run can be torn down).
 */

/**
 * The pod's host ports in CNI `portMappings` form, as the kubelet's `MakePortMappings` builds them
 * for `generatePodSandboxConfig` (pkg/kubelet/container/helpers.go): regular containers only,
 * ports with a `hostPort`, protocol lower-cased (cri-dockerd `network/cni/cni.go`).
 */
export function portMappingsOf(pod: Pod): PortMapping[] {
  const out: PortMapping[] = [];
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort) continue;
      const protocol = (p.protocol ?? 'TCP').toLowerCase();
      if (protocol !== 'tcp' && protocol !== 'udp' && protocol !== 'sctp') continue;
      out.push({ hostPort: p.hostPort, containerPort: p.containerPort, protocol, ...(p.hostIP ? { hostIP: p.hostIP } : {}) });
    }
  }
  return out;
}

/** `CNI_CONTAINERID` and the `K8S_POD_*` args of a sandbox, from its labels. */
export function networkIdentityOf(info: Docker.ContainerInspectInfo): PodNetworkIdentity {
  const labels = info.Config.Labels ?? {};
  return {
    sandboxId: info.Id,
    podName: labels[Label.podName] ?? '',
    podNamespace: labels[Label.podNamespace] ?? '',
    podUID: labels[Label.podUID] ?? '',
  };
}

/** The sandbox's network namespace while it runs (`/proc/<pid>/ns/net`), else undefined. */
export function netnsPathOf(info: Docker.ContainerInspectInfo): string | undefined {
  return info.State.Running && info.State.Pid > 0 ? `/proc/${info.State.Pid}/ns/net` : undefined;
}

/** Whether a sandbox joined the host's network (no pod network to set up or tear down). */
export function usesHostNetwork(info: Docker.ContainerInspectInfo): boolean {
  return info.HostConfig.NetworkMode === 'host';
}

/**
 * cri-dockerd's error for a failed ADD (`RunPodSandbox`, core/sandbox_helpers.go and
 * network/plugins.go), which the kubelet wraps in `Failed to create pod sandbox: …`.
 */
export function setUpFailure(sandboxId: string, pod: Pod, plugin: string, err: unknown): Error {
  const name = pod.metadata?.name ?? '';
  const ns = pod.metadata?.namespace ?? '';
  const msg = err instanceof Error ? err.message : String(err);
  return new Error(`failed to set up sandbox container "${sandboxId}" network for pod "${name}": networkPlugin ${plugin} failed to set up pod "${name}_${ns}" network: ${msg}`, { cause: err });
}
