import type { Container, Pod, PodSecurityContext, SecurityContext } from 'kubernetes-types/core/v1.js';
import { readFileSync } from 'node:fs';
import type { ContainerSecurity, ImageInfo } from '../runtime/types.js';
import { normalizeSysctl } from '../runtime/sysctl.js';
import { ContainerConfigError } from '../volumes/errors.js';

/**
 * securityContext, pod and container level, as the kubelet applies it through the runtime
 * (`kuberuntime_container_linux.go`, `security_context.go`, dockershim's
 * `modifyContainerConfig`): every field is either turned into a runtime setting here or
 * refused with a reason. Pure apart from `appArmorEnabled`, which reads the host once.
 *
 * | field                                  | Docker                                   |
 * |----------------------------------------|------------------------------------------|
 * | runAsUser / runAsGroup                 | `User: "uid[:gid]"`                      |
 * | runAsNonRoot                           | refused when the container would be root |
 * | fsGroup, supplementalGroups            | `GroupAdd` (fsGroup also owns volumes)   |
 * | readOnlyRootFilesystem                 | `ReadonlyRootfs`                         |
 * | allowPrivilegeEscalation: false        | `SecurityOpt: no-new-privileges`         |
 * | capabilities.add / drop                | `CapAdd` / `CapDrop`                     |
 * | privileged                             | `Privileged`                             |
 * | seccompProfile RuntimeDefault/Unconfined | Docker's default profile / `seccomp=unconfined` (unset: Unconfined, the kubelet's default) |
 * | appArmorProfile RuntimeDefault/Unconfined | Docker's default profile / `apparmor=unconfined` |
 * | sysctls                                | `Sysctls` on the sandbox (safe set only) |
 * | seccomp/appArmor Localhost, procMount Unmasked, hostUsers: false | refused |
 * | windowsOptions | not applicable: a Linux node never reads it (the kubelet reads it only for Windows sandboxes and containers, `kuberuntime_sandbox_windows.go`, `kuberuntime_container_windows.go`; a pod with `os.name: windows` is refused at admission) |
 * | seLinuxOptions | Docker `label=` options (a no-op where the host has no SELinux) |
 */

/** The kubelet's safe sysctls (`SafeSysctlAllowlist`); others need `--allowed-unsafe-sysctls`, which nodelet does not offer. */
export const SAFE_SYSCTLS: ReadonlySet<string> = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
  'net.ipv4.tcp_rmem',
  'net.ipv4.tcp_wmem',
]);

/** Why the pod cannot get a sandbox, checked before one is created: user namespaces. */
export function sandboxRefusal(pod: Pod): { reason: string; message: string } | undefined {
  if ((pod.spec as { hostUsers?: boolean } | undefined)?.hostUsers === false) {
    return { reason: 'UserNamespacesUnsupported', message: 'hostUsers: false (user namespaces) is not supported by nodelet' };
  }
  return undefined;
}

/**
 * The kubelet's sysctl admission (`pkg/kubelet/sysctl`): an unsafe sysctl, a network sysctl with
 * `hostNetwork` or an IPC one with `hostIPC` is forbidden; the message is the kubelet's.
 */
export function sysctlRefusal(pod: Pod): string | undefined {
  const spec = pod.spec;
  for (const s of spec?.securityContext?.sysctls ?? []) {
    const name = normalizeSysctl(s.name);
    if (!SAFE_SYSCTLS.has(name)) return `forbidden sysctl: ${JSON.stringify(name)} not allowlisted`;
    if (name.startsWith('net.') && spec?.hostNetwork) return `forbidden sysctl: ${JSON.stringify(name)} not allowed with host net enabled`;
    if (name.startsWith('kernel.shm') && spec?.hostIPC) return `forbidden sysctl: ${JSON.stringify(name)} not allowed with host ipc enabled`;
  }
  return undefined;
}

let appArmor: boolean | undefined;

/** Whether the host enforces AppArmor (`/sys/module/apparmor/parameters/enabled` is `Y`), read once. */
export function appArmorEnabled(): boolean {
  if (appArmor === undefined) {
    try {
      appArmor = readFileSync('/sys/module/apparmor/parameters/enabled', 'utf8').trim() === 'Y';
    } catch {
      appArmor = false;
    }
  }
  return appArmor;
}

/** The kubelet's `format.Pod`: `name_namespace(uid)`. */
const podDesc = (pod: Pod) => `${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})`;

type Profile = { type: string; localhostProfile?: string } | undefined;

/** The AppArmor profile: container field, then the beta annotation, then the pod field. */
function appArmorProfile(pod: Pod, container: Container, sc: SecurityContext, psc: PodSecurityContext): Profile {
  const field = (sc as { appArmorProfile?: Profile }).appArmorProfile;
  if (field) return field;
  const annotation = pod.metadata?.annotations?.[`container.apparmor.security.beta.kubernetes.io/${container.name}`];
  if (annotation !== undefined) {
    if (annotation === 'runtime/default') return { type: 'RuntimeDefault' };
    if (annotation === 'unconfined') return { type: 'Unconfined' };
    if (annotation.startsWith('localhost/')) return { type: 'Localhost', localhostProfile: annotation.slice('localhost/'.length) };
    return { type: annotation };
  }
  return (psc as { appArmorProfile?: Profile }).appArmorProfile;
}

/**
 * The runtime settings for `container` from the effective security context (container fields
 * over pod fields), after the kubelet's `verifyRunAsNonRoot` against the image's user. Throws
 * `ContainerConfigError` for a refused field.
 */
export function containerSecurity(pod: Pod, container: Container, image: Pick<ImageInfo, 'user'>, host: { appArmorEnabled: boolean }): ContainerSecurity {
  const psc: PodSecurityContext = pod.spec?.securityContext ?? {};
  const sc: SecurityContext = container.securityContext ?? {};
  const refuse = (message: string): never => {
    throw new ContainerConfigError(message);
  };

  if (sc.procMount && sc.procMount !== 'Default') refuse(`securityContext.procMount ${sc.procMount} is not supported by nodelet (only Default)`);
  const groupsPolicy = (psc as { supplementalGroupsPolicy?: string }).supplementalGroupsPolicy;
  if (groupsPolicy && groupsPolicy !== 'Merge') refuse(`securityContext.supplementalGroupsPolicy ${groupsPolicy} is not supported by nodelet (only Merge)`);

  const seccomp = sc.seccompProfile ?? psc.seccompProfile;
  let seccompMode: ContainerSecurity['seccomp'] = 'Unconfined';
  if (seccomp?.type === 'RuntimeDefault') seccompMode = 'RuntimeDefault';
  else if (seccomp && seccomp.type !== 'Unconfined') refuse(`seccompProfile type ${seccomp.type} is not supported by nodelet (only RuntimeDefault and Unconfined)`);

  const apparmor = appArmorProfile(pod, container, sc, psc);
  let appArmorMode: ContainerSecurity['appArmor'] = 'RuntimeDefault';
  if (apparmor?.type === 'Unconfined') appArmorMode = 'Unconfined';
  else if (apparmor?.type === 'RuntimeDefault') {
    if (!host.appArmorEnabled) refuse('Cannot enforce AppArmor: AppArmor is not enabled on the host');
  } else if (apparmor) refuse(`appArmorProfile type ${apparmor.type} is not supported by nodelet (only RuntimeDefault and Unconfined)`);

  const privileged = sc.privileged === true;
  const noNewPrivileges = sc.allowPrivilegeEscalation === false;
  const capAdd = sc.capabilities?.add ?? [];
  if (noNewPrivileges && privileged) refuse('cannot set `allowPrivilegeEscalation` to false and `privileged` to true');
  if (noNewPrivileges && capAdd.some((c) => c.replace(/^CAP_/, '') === 'SYS_ADMIN')) refuse('cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN');

  const runAsUser = sc.runAsUser ?? psc.runAsUser;
  const runAsGroup = sc.runAsGroup ?? psc.runAsGroup;
  const runAsNonRoot = sc.runAsNonRoot ?? psc.runAsNonRoot;
  const imageUser = image.user.split(':')[0] ?? '';
  if (runAsNonRoot) {
    if (runAsUser !== undefined) {
      if (runAsUser === 0) refuse(`container's runAsUser breaks non-root policy (pod: ${JSON.stringify(podDesc(pod))}, container: ${container.name})`);
    } else if (imageUser === '' || /^\d+$/.test(imageUser)) {
      if (Number(imageUser || '0') === 0) refuse(`container has runAsNonRoot and image will run as root (pod: ${JSON.stringify(podDesc(pod))}, container: ${container.name})`);
    } else {
      refuse(`container has runAsNonRoot and image has non-numeric user (${imageUser}), cannot verify user is non-root (pod: ${JSON.stringify(podDesc(pod))}, container: ${container.name})`);
    }
  }
  let user: string | undefined;
  if (runAsUser !== undefined) user = runAsGroup !== undefined ? `${runAsUser}:${runAsGroup}` : String(runAsUser);
  // runAsGroup alone keeps the image's user (root when it names none), as the kubelet does.
  else if (runAsGroup !== undefined) user = `${imageUser || '0'}:${runAsGroup}`;

  const groupAdd = [...(psc.fsGroup !== undefined ? [psc.fsGroup] : []), ...(psc.supplementalGroups ?? [])];
  return {
    ...(user !== undefined ? { user } : {}),
    groupAdd: [...new Set(groupAdd)],
    privileged,
    readOnlyRootfs: sc.readOnlyRootFilesystem === true,
    noNewPrivileges,
    capAdd,
    capDrop: sc.capabilities?.drop ?? [],
    seccomp: seccompMode,
    appArmor: appArmorMode,
    seLinuxLabels: seLinuxLabels(sc.seLinuxOptions ?? psc.seLinuxOptions),
  };
}

/**
 * `seLinuxOptions` as dockershim passes them: Docker `label=` security options (container fields
 * over pod fields, field by field, as the kubelet merges them). On a host without SELinux Docker
 * accepts and ignores them, as the kubelet's runtime does — the label only means something where
 * the host enforces SELinux.
 */
function seLinuxLabels(o: { user?: string; role?: string; type?: string; level?: string } | undefined): string[] {
  if (!o) return [];
  return (['user', 'role', 'type', 'level'] as const).flatMap((k) => (o[k] ? [`label=${k}:${o[k]}`] : []));
}
