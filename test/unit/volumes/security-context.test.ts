import t from 'tap';
import type { Container, Pod, PodSecurityContext } from 'kubernetes-types/core/v1.js';
import { containerSecurity, SAFE_SYSCTLS, sandboxRefusal } from '../../../src/kubelet/security-context.js';
import { admissionRefusal } from '../../../src/kubelet/admission.js';
import { dockerSecurity } from '../../../src/runtime/docker/security.js';
import { normalizeSysctl, sandboxSysctls } from '../../../src/runtime/sysctl.js';

const pod = (container: Partial<Container> = {}, psc: PodSecurityContext = {}, extra: Record<string, unknown> = {}): Pod => ({
  metadata: { name: 'web', namespace: 'ns', uid: 'u1' },
  spec: { securityContext: psc, containers: [{ name: 'main', image: 'i', ...container }], ...extra },
});
const root = { id: 'sha256:x', user: '' };
const host = { appArmorEnabled: false };
const sec = (p: Pod, image = root, h = host) => containerSecurity(p, p.spec!.containers[0]!, image, h);

t.test('defaults: the image user, no extra privileges, seccomp unconfined as the kubelet defaults', async (t) => {
  t.same(sec(pod()), { groupAdd: [], privileged: false, readOnlyRootfs: false, noNewPrivileges: false, capAdd: [], capDrop: [], seccomp: 'Unconfined', appArmor: 'RuntimeDefault', seLinuxLabels: [] });
  t.same(dockerSecurity(sec(pod())), { HostConfig: { SecurityOpt: ['seccomp=unconfined'] } });
});

t.test('runAsUser, runAsGroup, groups: container fields over pod fields', async (t) => {
  t.equal(sec(pod({}, { runAsUser: 1000 })).user, '1000');
  t.equal(sec(pod({}, { runAsUser: 1000, runAsGroup: 3000 })).user, '1000:3000');
  t.equal(sec(pod({ securityContext: { runAsUser: 2000 } }, { runAsUser: 1000, runAsGroup: 3000 })).user, '2000:3000');
  t.equal(sec(pod({}, { runAsGroup: 3000 })).user, '0:3000', 'runAsGroup alone: root when the image names no user');
  t.equal(sec(pod({}, { runAsGroup: 3000 }), { id: 'x', user: 'app:staff' }).user, 'app:3000', 'runAsGroup alone: the image user');
  t.same(sec(pod({}, { fsGroup: 2000, supplementalGroups: [5, 6, 2000] })).groupAdd, [2000, 5, 6], 'fsGroup first, no duplicates');
  const d = dockerSecurity(sec(pod({}, { runAsUser: 1000, runAsGroup: 3000, fsGroup: 2000 })));
  t.equal(d.User, '1000:3000');
  t.same(d.HostConfig.GroupAdd, ['2000']);
});

t.test('container-only fields', async (t) => {
  const s = sec(pod({ securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add: ['NET_BIND_SERVICE'] }, seccompProfile: { type: 'RuntimeDefault' } } }));
  t.same(dockerSecurity(s).HostConfig, { ReadonlyRootfs: true, CapAdd: ['NET_BIND_SERVICE'], CapDrop: ['ALL'], SecurityOpt: ['no-new-privileges'] }, 'RuntimeDefault: Docker default profile, no option');
  t.same(dockerSecurity(sec(pod({ securityContext: { privileged: true } }))).HostConfig, { Privileged: true, SecurityOpt: ['seccomp=unconfined'] });
  t.same(sec(pod({ securityContext: { allowPrivilegeEscalation: true } })).noNewPrivileges, false);
  t.equal(sec(pod({}, { seccompProfile: { type: 'RuntimeDefault' } })).seccomp, 'RuntimeDefault', 'pod-level seccomp');
  t.equal(sec(pod({ securityContext: { seccompProfile: { type: 'Unconfined' } } }, { seccompProfile: { type: 'RuntimeDefault' } })).seccomp, 'Unconfined', 'the container overrides');
  t.same(dockerSecurity(sec(pod({ securityContext: { appArmorProfile: { type: 'Unconfined' } } as never }))).HostConfig.SecurityOpt, ['seccomp=unconfined', 'apparmor=unconfined']);
  t.equal(sec(pod({ securityContext: { procMount: 'Default' } })).privileged, false, 'procMount Default is fine');
});

t.test('runAsNonRoot, with the kubelet messages', async (t) => {
  const desc = '(pod: "web_ns(u1)", container: main)';
  t.throws(() => sec(pod({}, { runAsNonRoot: true })), { reason: 'CreateContainerConfigError', message: `container has runAsNonRoot and image will run as root ${desc}` }, 'empty image user is root');
  t.throws(() => sec(pod({}, { runAsNonRoot: true }), { id: 'x', user: '0' }), { message: `container has runAsNonRoot and image will run as root ${desc}` });
  t.throws(() => sec(pod({}, { runAsNonRoot: true }), { id: 'x', user: '0:0' }), { message: `container has runAsNonRoot and image will run as root ${desc}` });
  t.throws(() => sec(pod({}, { runAsNonRoot: true }), { id: 'x', user: 'root' }), { message: `container has runAsNonRoot and image has non-numeric user (root), cannot verify user is non-root ${desc}` });
  t.throws(() => sec(pod({ securityContext: { runAsUser: 0 } }, { runAsNonRoot: true })), { message: `container's runAsUser breaks non-root policy ${desc}` });
  t.equal(sec(pod({}, { runAsNonRoot: true }), { id: 'x', user: '1000' }).user, undefined, 'a numeric non-root image user is fine');
  t.equal(sec(pod({}, { runAsNonRoot: true, runAsUser: 1000 })).user, '1000');
  t.equal(sec(pod({ securityContext: { runAsNonRoot: false } }, { runAsNonRoot: true })).user, undefined, 'the container may allow root');
});

t.test('seLinuxOptions become Docker label options, the container\'s over the pod\'s', async (t) => {
  t.same(sec(pod({ securityContext: { seLinuxOptions: { level: 's0:c1,c2' } } })).seLinuxLabels, ['label=level:s0:c1,c2']);
  t.same(sec(pod({}, { seLinuxOptions: { user: 'system_u', role: 'system_r', type: 'spc_t', level: 's0' } })).seLinuxLabels, ['label=user:system_u', 'label=role:system_r', 'label=type:spc_t', 'label=level:s0']);
  t.same(sec(pod({ securityContext: { seLinuxOptions: { level: 's1' } } }, { seLinuxOptions: { level: 's0' } })).seLinuxLabels, ['label=level:s1']);
});

t.test('windowsOptions do not apply to a Linux container: accepted and not read, as by the Linux kubelet', async (t) => {
  const windows = { hostProcess: true, runAsUserName: 'NT AUTHORITY\\SYSTEM' };
  const plain = sec(pod({ securityContext: { runAsUser: 5123 } }));
  t.same(sec(pod({ securityContext: { runAsUser: 5123, windowsOptions: windows } }, { windowsOptions: windows })), plain, 'the same runtime settings as without them');
});

t.test('refused fields are named, never ignored', async (t) => {
  const refused: Array<[Pod, RegExp | string, typeof host?]> = [
    [pod({ securityContext: { procMount: 'Unmasked' } }), 'securityContext.procMount Unmasked is not supported by nodelet (only Default)'],
    [pod({ securityContext: { seccompProfile: { type: 'Localhost', localhostProfile: 'p.json' } } }), 'seccompProfile type Localhost is not supported by nodelet (only RuntimeDefault and Unconfined)'],
    [pod({}, { appArmorProfile: { type: 'Localhost', localhostProfile: 'p' } } as never), 'appArmorProfile type Localhost is not supported by nodelet (only RuntimeDefault and Unconfined)'],
    [pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } as never }), 'Cannot enforce AppArmor: AppArmor is not enabled on the host'],
    [{ ...pod(), metadata: { ...pod().metadata, annotations: { 'container.apparmor.security.beta.kubernetes.io/main': 'localhost/p' } } }, /appArmorProfile type Localhost/],
    [pod({ securityContext: { privileged: true, allowPrivilegeEscalation: false } }), 'cannot set `allowPrivilegeEscalation` to false and `privileged` to true'],
    [pod({ securityContext: { allowPrivilegeEscalation: false, capabilities: { add: ['CAP_SYS_ADMIN'] } } }), /capabilities.Add` CAP_SYS_ADMIN/],
    [pod({}, { supplementalGroupsPolicy: 'Strict' } as never), /supplementalGroupsPolicy Strict is not supported/],
  ];
  for (const [p, message] of refused) t.throws(() => sec(p), { reason: 'CreateContainerConfigError', message }, String(message));
  t.equal(sec(pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } as never }), root, { appArmorEnabled: true }).appArmor, 'RuntimeDefault', 'enforced where the host has AppArmor');
});

t.test('sysctls: normalised, the safe set only, checked before a sandbox', async (t) => {
  t.equal(normalizeSysctl('kernel/shm_rmid_forced'), 'kernel.shm_rmid_forced');
  t.equal(normalizeSysctl('net.ipv4.conf.eno2/100.rp_filter'), 'net.ipv4.conf.eno2/100.rp_filter', 'dots first: left as is');
  t.equal(normalizeSysctl('net/ipv4/conf/eno2.100/rp_filter'), 'net.ipv4.conf.eno2/100.rp_filter', 'slashes first: swapped');
  t.same(sandboxSysctls(pod({}, { sysctls: [{ name: 'net/ipv4/ip_unprivileged_port_start', value: '0' }] })), { 'net.ipv4.ip_unprivileged_port_start': '0' });
  t.equal(admissionRefusal(pod({}, { sysctls: [{ name: 'net.ipv4.ip_local_port_range', value: '1024 65000' }] })), undefined);
  t.same(admissionRefusal(pod({}, { sysctls: [{ name: 'net.core.somaxconn', value: '1024' }] })), { reason: 'SysctlForbidden', message: 'forbidden sysctl: "net.core.somaxconn" not allowlisted' });
  t.same(admissionRefusal(pod({}, { sysctls: [{ name: 'net.ipv4.tcp_syncookies', value: '1' }] }, { hostNetwork: true }))?.message, 'forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host net enabled');
  t.same(admissionRefusal(pod({}, { sysctls: [{ name: 'kernel.shm_rmid_forced', value: '1' }] }, { hostIPC: true }))?.message, 'forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host ipc enabled');
  t.same(sandboxRefusal(pod({}, {}, { hostUsers: false }))?.message, 'hostUsers: false (user namespaces) is not supported by nodelet');
  t.equal(sandboxRefusal(pod({}, {}, { hostUsers: true })), undefined);
  t.equal(SAFE_SYSCTLS.size, 12);
});

t.test("admission: a pod for another OS is refused with the kubelet's reasons", async (t) => {
  t.same(admissionRefusal(pod({}, {}, { os: { name: 'windows' } })), { reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" });
  t.equal(admissionRefusal(pod({}, {}, { os: { name: 'linux' } })), undefined);
  t.equal(admissionRefusal(pod({}, {}, { nodeSelector: { 'kubernetes.io/os': 'windows' } }))?.reason, 'PodOSSelectorNodeLabelDoesNotMatch');
  t.equal(admissionRefusal(pod({}, {}, { nodeSelector: { 'kubernetes.io/os': 'linux' } })), undefined);
  t.equal(admissionRefusal(pod({}, { sysctls: [{ name: 'kernel.msgmax', value: '1' }] }, { os: { name: 'windows' } }))?.reason, 'PodOSNotSupported', 'the OS is checked first');
});
