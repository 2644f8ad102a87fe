import t from 'tap';
import { chmod, lstat, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContainerStatus, Pod } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI, testDocker } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';

const docker = testDocker();

const podYaml = (name: string, spec: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 1
${spec}`;

const container = (name: string, extra = '', command = 'sleep 3600') => `    - name: ${name}
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", ${JSON.stringify(command)}]
${extra}`;

const running = (pod: Pod | undefined) =>
  pod?.status?.phase === 'Running' && pod.status.containerStatuses?.every((c) => c.state?.running) ? pod : undefined;
async function runningPod(node: TestNode, name: string): Promise<Pod> {
  let last: Pod | undefined;
  try {
    return await node.waitFor(`pod ${name} running`, async () => running((last = await node.pod(name))), 30_000);
  } catch (err) {
    throw new Error(`${(err as Error).message}; last statuses: ${JSON.stringify(last?.status?.containerStatuses?.map((c) => [c.name, c.state]))}`);
  }
}
const idOf = (pod: Pod, name: string) => pod.status?.containerStatuses?.find((c) => c.name === name)?.containerID?.replace('docker://', '') ?? '';
const exec = (id: string, script: string) => dockerCLI('exec', id, 'sh', '-c', script);
const statusLine = async (id: string, field: string) => (await exec(id, `grep '^${field}:' /proc/self/status`)).split(':')[1]?.trim();

async function waiting(node: TestNode, name: string): Promise<ContainerStatus> {
  return node.waitFor(`${name} waiting with CreateContainerConfigError`, async () => {
    const c = (await node.pod(name))?.status?.containerStatuses?.[0];
    return c?.state?.waiting?.reason === 'CreateContainerConfigError' ? c : undefined;
  });
}

/** Deletes the pods and waits until their directories (and any tmpfs) are gone. */
async function cleanUp(node: TestNode, files: Record<string, string>): Promise<void> {
  const uids = await Promise.all(Object.values(files).map(async (n) => (await node.pod(n))?.metadata?.uid));
  for (const f of Object.keys(files)) await node.removeManifest(f);
  await node.waitFor('pod directories removed', async () => {
    const left = await Promise.all(uids.map((u) => (u ? lstat(join(node.manifestDir, 'pods', u)).then(() => true, () => false) : false)));
    const mounts = (await readFile('/proc/self/mounts', 'utf8')).includes(join(node.manifestDir, 'pods'));
    return left.some(Boolean) || mounts ? undefined : true;
  }, 30_000);
}

t.test('runAsUser, runAsGroup, fsGroup, supplementalGroups, readOnlyRootFilesystem, capabilities, no-new-privileges, seccomp, sysctls', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('sc.yaml', podYaml('sc', `  securityContext:
    runAsUser: 1000
    runAsGroup: 3000
    fsGroup: 2000
    supplementalGroups: [4000]
    sysctls: [{ name: net.ipv4.ip_unprivileged_port_start, value: "0" }]
  volumes: [{ name: scratch, emptyDir: {} }]
  containers:
${container('locked', `      securityContext:
        readOnlyRootFilesystem: true
        allowPrivilegeEscalation: false
        capabilities: { drop: [ALL] }
        seccompProfile: { type: RuntimeDefault }
      volumeMounts: [{ name: scratch, mountPath: /scratch }]
`)}${container('plain', `      securityContext: { runAsUser: 0, capabilities: { add: [NET_ADMIN] } }
`)}`));
  const pod = await runningPod(node, 'sc');
  const locked = idOf(pod, 'locked');
  const plain = idOf(pod, 'plain');

  t.equal(await exec(locked, 'id -u'), '1000\n', 'runAsUser');
  t.equal(await exec(locked, 'id -g'), '3000\n', 'runAsGroup');
  t.same((await exec(locked, 'id -G')).trim().split(' ').sort(), ['2000', '3000', '4000'], 'fsGroup and supplementalGroups');
  t.equal(await exec(plain, 'id -u'), '0\n', 'the container overrides the pod');

  t.match(await exec(locked, 'touch /rootfs-file 2>&1; echo rc=$?'), /Read-only file system[\s\S]*rc=1/, 'readOnlyRootFilesystem');
  t.equal(await exec(locked, 'echo ok > /scratch/f && stat -c %g /scratch/f'), '2000\n', 'the fsGroup-owned emptyDir stays writable');
  t.equal(await exec(locked, 'stat -c %a:%g /scratch'), '2777:2000\n', 'setgid, group fsGroup');

  t.equal(await statusLine(locked, 'CapEff'), '0000000000000000', 'capabilities drop ALL');
  t.equal(await statusLine(locked, 'NoNewPrivs'), '1', 'allowPrivilegeEscalation: false');
  t.equal(await statusLine(locked, 'Seccomp'), '2', 'RuntimeDefault: filtered');
  t.equal(await statusLine(plain, 'Seccomp'), '0', 'unset: unconfined, the kubelet default');
  t.equal(await statusLine(plain, 'NoNewPrivs'), '0');
  const netAdmin = 1n << 12n;
  t.ok((BigInt(`0x${await statusLine(plain, 'CapEff')}`) & netAdmin) !== 0n, 'NET_ADMIN added');
  t.equal(await exec(plain, 'cat /proc/sys/net/ipv4/ip_unprivileged_port_start'), '0\n', 'sysctl set in the pod network namespace');

  // privileged is covered by the unit tests only: this test engine's own bounding set lacks
  // capabilities, so runc cannot start a privileged container here.
  const lockedInfo = await docker.getContainer(locked).inspect();
  // Podman answers the dropped capabilities one by one (runtime/docker/engine.ts, inspectForm).
  if (node.nodelet.runtime.currentEngine?.quirks.inspectForm === 'podman') t.ok((lockedInfo.HostConfig.CapDrop ?? []).includes('SYS_CHROOT'), 'Podman: the capabilities dropped, one by one');
  else t.same(lockedInfo.HostConfig.CapDrop, ['ALL']);
  t.equal(lockedInfo.Config.User, '1000:3000');

  await cleanUp(node, { 'sc.yaml': 'sc' });
});

t.test('runAsNonRoot with a root image, unsafe sysctls and unsupported fields are refused with a reason', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('nonroot.yaml', podYaml('nonroot', `  securityContext: { runAsNonRoot: true }
  containers:
${container('main')}`));
  const nonroot = await waiting(node, 'nonroot');
  t.equal(nonroot.state?.waiting?.message, `container has runAsNonRoot and image will run as root (pod: "nonroot-${node.nodeName}_default(${(await node.pod('nonroot'))?.metadata?.uid})", container: main)`);

  await node.writeManifest('nonroot-ok.yaml', podYaml('nonroot-ok', `  securityContext: { runAsNonRoot: true, runAsUser: 1234 }
  containers:
${container('main')}`));
  const ok = await runningPod(node, 'nonroot-ok');
  t.equal(await exec(idOf(ok, 'main'), 'id -u'), '1234\n', 'runAsNonRoot with a non-root runAsUser runs');

  await node.writeManifest('selinux.yaml', podYaml('selinux', `  containers:
${container('main', `      securityContext: { seLinuxOptions: { level: "s0:c1,c2" } }
`)}`));
  const labelled = await runningPod(node, 'selinux');
  const { testDocker } = await import('../helpers/docker.js');
  const info = await testDocker().getContainer(idOf(labelled, 'main')).inspect();
  t.ok(info.HostConfig.SecurityOpt?.includes('label=level:s0:c1,c2'), 'seLinuxOptions reach Docker as a label option (a no-op without SELinux, as on the kubelet)');

  await node.writeManifest('localhost.yaml', podYaml('localhost', `  securityContext: { seccompProfile: { type: Localhost, localhostProfile: my.json } }
  containers:
${container('main')}`));
  t.match((await waiting(node, 'localhost')).state?.waiting?.message, /seccompProfile type Localhost is not supported/);

  await node.writeManifest('sysctl.yaml', podYaml('sysctl', `  securityContext: { sysctls: [{ name: net.core.somaxconn, value: "1024" }] }
  containers:
${container('main')}`));
  const sysctlPod = await node.waitFor('pod sysctl rejected', async () => {
    const p = await node.pod('sysctl');
    return p?.status?.phase === 'Failed' ? p : undefined;
  });
  t.same([sysctlPod.status?.reason, sysctlPod.status?.message], ['SysctlForbidden', 'Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted'], 'admission fails the pod, as the kubelet does');
  const events = await node.get<{ items: { reason?: string; message?: string }[] }>('/api/v1/events');
  t.ok(events.body.items.some((e) => e.reason === 'SysctlForbidden'), 'SysctlForbidden event');

  await node.writeManifest('windows.yaml', podYaml('windows', `  os: { name: windows }
  containers:
${container('main')}`));
  const windows = await node.waitFor('pod windows rejected', async () => {
    const p = await node.pod('windows');
    return p?.status?.phase === 'Failed' ? p : undefined;
  });
  t.equal(windows.status?.reason, 'PodOSNotSupported');
  const sandboxes = await docker.listContainers({ all: true, filters: { label: [`io.kubernetes.pod.uid=${sysctlPod?.metadata?.uid}`] } });
  t.equal(sandboxes.length, 0, 'no sandbox was created for the refused pod');

  await cleanUp(node, { 'nonroot.yaml': 'nonroot', 'nonroot-ok.yaml': 'nonroot-ok', 'selinux.yaml': 'selinux', 'localhost.yaml': 'localhost', 'sysctl.yaml': 'sysctl', 'windows.yaml': 'windows' });
});

t.test('fsGroup on an emptyDir is applied once: restarts never re-walk it, links and a swapping container never reach the host', async (t) => {
  const node = await startTestNode(t);
  // What the host holds and a container must never change: a file, and a directory with the
  // names the container's directory has, as an attacker arranges.
  const hostDir = await mkdtemp(join(tmpdir(), 'nodelet-fsgroup-host-'));
  t.teardown(() => rm(hostDir, { recursive: true, force: true }));
  const names = Array.from({ length: 40 }, (_, i) => `f${i}`);
  for (const n of [...names, 'file']) {
    await writeFile(join(hostDir, n), 'host', { mode: 0o644 });
    await chmod(join(hostDir, n), 0o644);
  }
  await chmod(hostDir, 0o755);
  const hostState = async () => Promise.all([hostDir, ...[...names, 'file'].map((n) => join(hostDir, n))].map(async (p) => {
    const st = await lstat(p);
    return `${p.slice(hostDir.length) || '/'} ${(st.mode & 0o7777).toString(8)}:${st.gid}`;
  }));
  const hostBefore = await hostState();

  // planter: private files of its own group and links to the host, then waits to be killed.
  // swapper: /scratch/d is by turns a directory and a symlink to the host directory (rename(2)
  // in a loop, the RENAME_EXCHANGE attack without renameat2), for as long as the pod runs.
  const plant = `cd /scratch; if [ ! -e private ]; then echo secret > private; chmod 600 private; chgrp 3000 private; mkdir own; chgrp 3000 own; chmod 700 own; ln -s ${hostDir}/file file-link; ln -s ${hostDir} dir-link; touch planted; fi; sleep 3600`;
  const swap = `cd /scratch; mkdir -p d; for n in ${names.join(' ')}; do echo in > d/$n; done; ln -s ${hostDir} l; touch swapping; while :; do mv d t; mv l d; mv d l; mv t d; done`;
  await node.writeManifest('fsgroup.yaml', podYaml('fsgroup', `  securityContext: { fsGroup: 2000 }
  volumes: [{ name: scratch, emptyDir: {} }]
  containers:
${container('planter', '      volumeMounts: [{ name: scratch, mountPath: /scratch }]\n', plant)}${container('swapper', '      volumeMounts: [{ name: scratch, mountPath: /scratch }]\n', swap)}`));
  const pod = await runningPod(node, 'fsgroup');
  const uid = pod.metadata?.uid ?? '';
  const vol = join(node.manifestDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
  await node.waitFor('planted and swapping', async () => ((await lstat(join(vol, 'planted')).catch(() => undefined)) && (await lstat(join(vol, 'swapping')).catch(() => undefined)) ? true : undefined));
  const volState = async () => Promise.all(['.', 'private', 'own', 'file-link', 'dir-link'].map(async (p) => {
    const st = await lstat(join(vol, p));
    return `${p} ${(st.mode & 0o7777).toString(8)}:${st.gid}`;
  }));
  const planted = await volState();
  t.match(planted, ['. 2777:2000', 'private 600:3000', /^own \d+:3000$/], 'the emptyDir root got the fsGroup at creation; the container made its own files');

  // Each round: a new nodelet (its in-memory volume state empty), then a container start, which
  // sets the pod's volumes up again.
  for (let round = 1; round <= 3; round++) {
    await node.stop();
    await node.restart();
    const adopted = await node.waitFor(`round ${round}: adopted`, async () => {
      const p = running(await node.pod('fsgroup'));
      return p?.status?.containerStatuses?.find((c) => c.name === 'planter')?.restartCount === round - 1 ? p : undefined;
    }, 30_000);
    await dockerCLI('kill', idOf(adopted, 'planter'));
    const restarted = await node.waitFor(`round ${round}: planter started again`, async () => {
      const p = await node.pod('fsgroup');
      const c = p?.status?.containerStatuses?.find((s) => s.name === 'planter');
      if (c?.state?.waiting?.reason === 'CreateContainerConfigError') return c.state.waiting.message ?? 'CreateContainerConfigError';
      return c?.restartCount === round && c.state?.running ? 'running' : undefined;
    }, 30_000);
    t.equal(restarted, 'running', `round ${round}: the container started again`);
    t.same(await volState(), planted, `round ${round}: nothing in the ready emptyDir was walked again`);
    t.same(await hostState(), hostBefore, `round ${round}: the host file and directory are untouched`);
  }
  t.ok(await lstat(join(node.manifestDir, 'pods', uid, 'plugins', 'kubernetes.io~empty-dir', 'scratch', 'ready')).then((st) => st.isFile(), () => false), 'the kubelet\'s ready marker');
  await cleanUp(node, { 'fsgroup.yaml': 'fsgroup' });
  t.same(await hostState(), hostBefore, 'teardown left the host alone');
});
