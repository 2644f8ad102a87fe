import type Docker from 'dockerode';
import type { ContainerSecurity } from '../types.js';

/**
 * Docker's form of a container's security settings (dockershim's `modifyContainerConfig` and
 * `modifyHostConfig`): `User`, and `GroupAdd`, `Privileged`, `ReadonlyRootfs`, `CapAdd`,
 * `CapDrop` and `SecurityOpt` on the host config. Docker's default seccomp and AppArmor
 * profiles apply unless `seccomp=unconfined` / `apparmor=unconfined` is set.
 */
export function dockerSecurity(sec: ContainerSecurity): { User?: string; HostConfig: Docker.HostConfig } {
  const securityOpt = [
    ...(sec.noNewPrivileges ? ['no-new-privileges'] : []),
    ...(sec.seccomp === 'Unconfined' ? ['seccomp=unconfined'] : []),
    ...(sec.appArmor === 'Unconfined' ? ['apparmor=unconfined'] : []),
    ...(sec.seLinuxLabels ?? []),
  ];
  return {
    ...(sec.user !== undefined ? { User: sec.user } : {}),
    HostConfig: {
      ...(sec.groupAdd.length ? { GroupAdd: sec.groupAdd.map(String) } : {}),
      ...(sec.privileged ? { Privileged: true } : {}),
      ...(sec.readOnlyRootfs ? { ReadonlyRootfs: true } : {}),
      ...(sec.capAdd.length ? { CapAdd: [...sec.capAdd] } : {}),
      ...(sec.capDrop.length ? { CapDrop: [...sec.capDrop] } : {}),
      ...(securityOpt.length ? { SecurityOpt: securityOpt } : {}),
    },
  };
}
