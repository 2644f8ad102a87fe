import t from 'tap';
import { lstat, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContainerStatus, Pod } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';

const podYaml = (name: string, spec: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
  labels: { app: ${name}, tier: back-end }
  annotations: { example.com/note: "say \\"hi\\"" }
spec:
  terminationGracePeriodSeconds: 1
${spec}`;

const container = (name: string, command: string, extra = '') => `    - name: ${name}
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", ${JSON.stringify(command)}]
${extra}`;

const running = (pod: Pod | undefined) =>
  pod?.status?.phase === 'Running' && pod.status.containerStatuses?.every((c) => c.state?.running) ? pod : undefined;

async function runningPod(node: TestNode, name: string): Promise<Pod> {
  return node.waitFor(`pod ${name} running`, async () => running(await node.pod(name)), 30_000);
}

async function waitingStatus(node: TestNode, name: string, container = 'main'): Promise<ContainerStatus> {
  return node.waitFor(`${name}/${container} waiting with CreateContainerConfigError`, async () => {
    const c = (await node.pod(name))?.status?.containerStatuses?.find((s) => s.name === container);
    return c?.state?.waiting?.reason === 'CreateContainerConfigError' ? c : undefined;
  });
}

const idOf = (pod: Pod, name: string) => pod.status?.containerStatuses?.find((c) => c.name === name)?.containerID?.replace('docker://', '') ?? '';
const exec = (id: string, script: string) => dockerCLI('exec', id, 'sh', '-c', script);
const mounts = async () => (await readFile('/proc/self/mounts', 'utf8')).split('\n').map((l) => l.split(' ')[1] ?? '');

/** Removes the manifest and waits until the pod's directory and every mount under it are gone. */
async function removeAndWaitTeardown(node: TestNode, file: string, uid: string): Promise<void> {
  await node.removeManifest(file);
  const dir = join(node.manifestDir, 'pods', uid);
  await node.waitFor('pod volumes torn down', async () => {
    const left = (await mounts()).filter((m) => m.startsWith(dir));
    const exists = await lstat(dir).then(() => true, () => false);
    return left.length === 0 && !exists ? true : undefined;
  }, 30_000);
}

t.test('emptyDir (disk and Memory) shared by two containers, downwardAPI volume and env, hostPath, subPath', async (t) => {
  const node = await startTestNode(t);
  const hostDir = await mkdtemp(join(tmpdir(), 'nodelet-hostpath-'));
  t.teardown(() => rm(hostDir, { recursive: true, force: true }));
  await writeFile(join(hostDir, 'from-host'), 'host data');
  const spec = `  volumes:
    - name: shared
      emptyDir: {}
    - name: ram
      emptyDir: { medium: Memory, sizeLimit: 16Mi }
    - name: podinfo
      downwardAPI:
        items:
          - { path: labels, fieldRef: { fieldPath: metadata.labels } }
          - { path: annotations, fieldRef: { fieldPath: metadata.annotations } }
          - { path: name, fieldRef: { fieldPath: metadata.name } }
          - { path: mem, resourceFieldRef: { containerName: writer, resource: limits.memory, divisor: 1Mi } }
    - name: host
      hostPath: { path: ${hostDir}, type: Directory }
    - name: made
      hostPath: { path: ${hostDir}/made/here, type: DirectoryOrCreate }
  containers:
${container('writer', '[ -f /shared/msg ] || echo disk > /shared/msg; [ -f /ram/msg ] || echo ram > /ram/msg; echo $(GREETING) > /shared/greeting; sleep 3600', `      resources: { limits: { memory: 64Mi } }
      env:
        - { name: POD_NAME, valueFrom: { fieldRef: { fieldPath: metadata.name } } }
        - { name: GREETING, value: "hello $(POD_NAME)" }
      volumeMounts:
        - { name: shared, mountPath: /shared }
        - { name: ram, mountPath: /ram }
        - { name: host, mountPath: /host }
`)}${container('reader', 'sleep 3600', `      env:
        - { name: POD_NAME, valueFrom: { fieldRef: { fieldPath: metadata.name } } }
        - { name: POD_NS, valueFrom: { fieldRef: { fieldPath: metadata.namespace } } }
        - { name: POD_UID, valueFrom: { fieldRef: { fieldPath: metadata.uid } } }
        - { name: APP, valueFrom: { fieldRef: { fieldPath: "metadata.labels['app']" } } }
        - { name: HOST_IP, valueFrom: { fieldRef: { fieldPath: status.hostIP } } }
        - { name: NODE, valueFrom: { fieldRef: { fieldPath: spec.nodeName } } }
        - { name: MEM_LIMIT, valueFrom: { resourceFieldRef: { containerName: writer, resource: limits.memory, divisor: 1Mi } } }
        - { name: COMPOSED, value: "$(POD_NS)/$(POD_NAME) $$(POD_NAME) $(UNDEFINED)" }
      volumeMounts:
        - { name: shared, mountPath: /shared, readOnly: true }
        - { name: ram, mountPath: /ram }
        - { name: podinfo, mountPath: /etc/podinfo }
        - { name: shared, mountPath: /sub, subPath: nested/dir }
        - { name: host, mountPath: /host-file, subPath: from-host }
        - { name: made, mountPath: /made }
`)}`;
  await node.writeManifest('vols.yaml', podYaml('vols', spec));
  const pod = await runningPod(node, 'vols');
  const uid = pod.metadata?.uid ?? '';
  const reader = idOf(pod, 'reader');
  const writer = idOf(pod, 'writer');
  const fullName = `vols-${node.nodeName}`;

  // The writer's files appear in the reader (same host directories).
  const shared = await node.waitFor('writer output visible', async () => {
    const out = await exec(reader, 'cat /shared/msg /ram/msg /shared/greeting').catch(() => '');
    return out.split('\n').length >= 3 ? out : undefined;
  });
  t.equal(shared, `disk\nram\nhello ${fullName}\n`, '$(VAR) expanded in command and env');
  const readerMounts = await exec(reader, 'cat /proc/mounts');
  t.match(readerMounts, /^tmpfs \/ram tmpfs /m, 'Memory emptyDir is a tmpfs');
  t.notMatch(readerMounts, /^tmpfs \/shared /m, 'disk emptyDir is not');
  t.match(await exec(reader, 'touch /shared/x 2>&1; echo rc=$?'), /Read-only file system[\s\S]*rc=1/, 'readOnly mount');
  t.equal(await exec(writer, 'cat /host/from-host'), 'host data', 'hostPath directory');
  t.equal(await exec(reader, 'cat /host-file'), 'host data', 'subPath of a file');
  await exec(reader, 'echo made > /made/file');
  t.equal(await readFile(join(hostDir, 'made/here/file'), 'utf8'), 'made\n', 'DirectoryOrCreate created the host directory');
  t.equal(await exec(writer, 'ls /shared/nested'), 'dir\n', 'subPath created inside the volume');
  const sources = await dockerCLI('inspect', '--format', '{{range .Mounts}}{{.Destination}}={{.Source}} {{end}}', reader);
  const subpaths = join(node.manifestDir, 'pods', uid, 'volume-subpaths');
  t.match(sources, `/sub=${subpaths}/shared/reader/3 `, 'Docker binds the subPath target, not a path in the volume');
  t.match(sources, `/host-file=${subpaths}/host/reader/4 `);

  // Downward API volume, formatted as the kubelet does.
  t.equal(await exec(reader, 'cat /etc/podinfo/labels'), 'app="vols"\ntier="back-end"');
  t.match(await exec(reader, 'cat /etc/podinfo/annotations'), /^example\.com\/note="say \\"hi\\""$/m);
  t.equal(await exec(reader, 'cat /etc/podinfo/name'), fullName);
  t.equal(await exec(reader, 'cat /etc/podinfo/mem'), '64');
  t.match(await exec(reader, 'ls -la /etc/podinfo'), /labels -> \.\.data\/labels/, 'the atomic writer layout');

  // Env from the downward API.
  const env = await exec(reader, 'env');
  for (const line of [`POD_NAME=${fullName}`, 'POD_NS=default', `POD_UID=${uid}`, 'APP=vols', 'HOST_IP=127.0.0.1', `NODE=${node.nodeName}`, 'MEM_LIMIT=64', `COMPOSED=default/${fullName} $(POD_NAME) $(UNDEFINED)`]) {
    t.match(env, new RegExp(`^${line.replace(/[$()/.]/g, '\\$&')}$`, 'm'), line);
  }

  // On the host: the kubelet's layout, and the tmpfs sized by sizeLimit.
  const base = join(node.manifestDir, 'pods', uid, 'volumes');
  const ramLine = (await readFile('/proc/self/mounts', 'utf8')).split('\n').find((l) => l.split(' ')[1] === join(base, 'kubernetes.io~empty-dir', 'ram'));
  t.match(ramLine, /^tmpfs \S+ tmpfs \S*size=16384k/, 'tmpfs on the host under kubernetes.io~empty-dir');
  t.ok(await lstat(join(base, 'kubernetes.io~downward-api', 'podinfo', '..data')));

  // A restarted container finds the emptyDir as it was: its command writes the two files only
  // where they are missing, so they are the first run's (and an exec never races a rewrite).
  await dockerCLI('kill', writer);
  const restarted = await node.waitFor('writer restarted', async () => {
    const p = running(await node.pod('vols'));
    return p?.status?.containerStatuses?.find((c) => c.name === 'writer')?.restartCount === 1 ? p : undefined;
  });
  t.equal(await exec(idOf(restarted, 'writer'), 'cat /ram/msg /shared/msg'), 'ram\ndisk\n');

  await removeAndWaitTeardown(node, 'vols.yaml', uid);
  t.pass('tmpfs unmounted and pod directory removed after the pod is deleted');
  t.equal(await readFile(join(hostDir, 'from-host'), 'utf8'), 'host data', 'hostPath contents untouched by teardown');
});

t.test('static pods that reference API objects (a secret volume, a secret env, a token, a PVC) are refused at decode, as the kubelet does', async (t) => {
  const node = await startTestNode(t);
  const files: [string, string, string][] = [
    ['sec.yaml', podYaml('sec', `  volumes:
    - name: creds
      secret: { secretName: db-creds }
  containers:
${container('main', 'sleep 3600', `      volumeMounts: [{ name: creds, mountPath: /creds }]
`)}`), 'secrets'],
    ['senv.yaml', podYaml('senv', `  containers:
${container('main', 'sleep 3600', `      env: [{ name: PASS, valueFrom: { secretKeyRef: { name: db-creds, key: password } } }]
`)}`), 'secrets'],
    ['tok.yaml', podYaml('tok', `  volumes:
    - name: kube-api-access-x1y2z
      projected:
        sources:
          - serviceAccountToken: { path: token, expirationSeconds: 3607 }
          - downwardAPI: { items: [{ path: namespace, fieldRef: { fieldPath: metadata.namespace } }] }
  containers:
${container('main', 'sleep 3600', `      volumeMounts: [{ name: kube-api-access-x1y2z, mountPath: /var/run/secrets/kubernetes.io/serviceaccount }]
`)}`), 'serviceaccounts (via projected volumes)'],
    ['pvc.yaml', podYaml('pvc', `  volumes:
    - name: data
      persistentVolumeClaim: { claimName: my-claim }
  containers:
${container('main', 'sleep 3600', `      volumeMounts: [{ name: data, mountPath: /data }]
`)}`), 'persistentvolumeclaims'],
  ];
  for (const [file, yaml] of files) await node.writeManifest(file, yaml);
  // A plain pod written last: once it runs, the scans that saw the others are done.
  await node.writeManifest('plain.yaml', podYaml('plain', `  containers:
${container('main', 'sleep 3600')}`));
  await runningPod(node, 'plain');
  const events = await node.waitFor('a FailedValidation event per refused file', async () => {
    const res = await node.get<{ items: { reason?: string; type?: string; message?: string; involvedObject?: { kind?: string } }[] }>('/api/v1/events');
    const refused = res.body.items.filter((e) => e.reason === 'FailedValidation' && e.involvedObject?.kind === 'Node');
    return refused.length >= files.length ? refused : undefined;
  }, 30_000);
  for (const [file, , resource] of files) {
    const name = file.replace('.yaml', '');
    t.ok(events.some((e) => e.type === 'Warning' && e.message === `Error reading static pod file ${join(node.manifestDir, file)}, ignoring: ${join(node.manifestDir, file)}: pod "${name}" static pods may not reference ${resource}`), `${file}: static pods may not reference ${resource}`);
    t.equal(await node.pod(name), undefined, `${file}: no pod`);
  }
  t.notOk((await mounts()).some((m) => m.startsWith(join(node.manifestDir, 'pods'))), 'nothing was mounted for the refused pods');
});

t.test('unsupported volume types and mount options are refused, never ignored', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('nfs.yaml', podYaml('nfs', `  volumes:
    - name: data
      nfs: { server: 127.0.0.1, path: /export }
  containers:
${container('main', 'sleep 3600', `      volumeMounts: [{ name: data, mountPath: /data }]
`)}${container('other', 'sleep 3600')}`));
  const main = await waitingStatus(node, 'nfs', 'main');
  t.equal(main.state?.waiting?.message, 'volume "data": nfs volumes are not supported by nodelet');
  const other = await waitingStatus(node, 'nfs', 'other');
  t.equal(other.state?.waiting?.message, main.state?.waiting?.message, 'the whole pod is refused');
  const events = await node.get<{ items: { reason?: string; message?: string }[] }>('/api/v1/events');
  t.ok(events.body.items.some((e) => e.reason === 'FailedMount' && e.message === 'volume "data": nfs volumes are not supported by nodelet'));

  await node.writeManifest('prop.yaml', podYaml('prop', `  volumes: [{ name: data, emptyDir: {} }]
  containers:
${container('main', 'sleep 3600', `      volumeMounts: [{ name: data, mountPath: /data, mountPropagation: HostToContainer }]
`)}`));
  t.equal((await waitingStatus(node, 'prop')).state?.waiting?.message, 'volumeMount "data" at /data: mountPropagation HostToContainer is not supported by nodelet (only None)');

  // Refused pods retry with back-off: fixing the manifest (a new pod) runs.
  const nfsUID = (await node.pod('nfs'))?.metadata?.uid ?? '';
  const propUID = (await node.pod('prop'))?.metadata?.uid ?? '';
  await removeAndWaitTeardown(node, 'nfs.yaml', nfsUID);
  await removeAndWaitTeardown(node, 'prop.yaml', propUID);
});

t.test('/etc/hosts: the kubelet-managed file with hostAliases, unless the container mounts its own; hostNetwork copies the node\'s', async (t) => {
  const node = await startTestNode(t);
  const spec = `  hostAliases:
    - { ip: 123.45.67.89, hostnames: [foo, bar] }
  volumes:
    - name: node-hosts
      hostPath: { path: /etc/hosts, type: File }
  containers:
${container('managed', 'sleep 3600')}
${container('own', 'sleep 3600', `      volumeMounts:
        - { name: node-hosts, mountPath: /etc/hosts }
`)}`;
  await node.writeManifest('hosts.yaml', podYaml('hosts', spec));
  const pod = await runningPod(node, 'hosts');
  const managed = await exec(idOf(pod, 'managed'), 'cat /etc/hosts');
  t.match(managed, /^# Kubernetes-managed hosts file\.\n127\.0\.0\.1\tlocalhost\n/, 'the managed header and localhost lines');
  t.match(managed, /\n# Entries added by HostAliases\.\n123\.45\.67\.89\tfoo\tbar\n$/, 'the host aliases at the end');
  t.equal(await exec(idOf(pod, 'own'), 'cat /etc/hosts'), await readFile('/etc/hosts', 'utf8'), 'a container mounting /etc/hosts keeps its own');

  await node.writeManifest('hosts-net.yaml', podYaml('hosts-net', `  hostNetwork: true
  hostAliases:
    - { ip: 123.45.67.89, hostnames: [foo] }
  containers:
${container('main', 'sleep 3600')}`));
  const hostPod = await runningPod(node, 'hosts-net');
  t.equal(
    await exec(idOf(hostPod, 'main'), 'cat /etc/hosts'),
    `# Kubernetes-managed hosts file (host network).\n${await readFile('/etc/hosts', 'utf8')}\n# Entries added by HostAliases.\n123.45.67.89\tfoo\n`,
  );
});
