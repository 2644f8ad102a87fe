import t from 'tap';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContainerStatus, Pod } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';

// subPath is resolved by nodelet on the host while the pod's own containers can change the
// volume under it (CVE-2021-25741, kubernetes/kubernetes#104980). These tests play the attacker
// with a second container of the same pod and check that no container ever sees a host path.

const container = (name: string, command: string, extra = '') => `    - name: ${name}
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", ${JSON.stringify(command)}]
${extra}`;

const manifest = (name: string, spec: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 1
${spec}`;

const mounts = async () => (await readFile('/proc/self/mounts', 'utf8')).split('\n').map((l) => l.split(' ')[1] ?? '');
const idOf = (s: ContainerStatus | undefined) => s?.containerID?.replace('docker://', '') ?? '';

/** A host directory no pod may see, holding a marker file with a random secret. */
async function hostSecret(t: { teardown(fn: () => Promise<void>): void }): Promise<{ dir: string; secret: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-host-secret-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const secret = `secret-${randomBytes(8).toString('hex')}`;
  await writeFile(join(dir, 'marker'), secret);
  return { dir, secret };
}

async function removeAndWaitTeardown(node: TestNode, file: string, uid: string): Promise<void> {
  await node.removeManifest(file);
  const dir = join(node.manifestDir, 'pods', uid);
  await node.waitFor('pod volumes torn down', async () => {
    const left = (await mounts()).filter((m) => m === dir || m.startsWith(`${dir}/`));
    const exists = await lstat(dir).then(() => true, () => false);
    return left.length === 0 && !exists ? true : undefined;
  }, 60_000);
}

const VICTIMS = 10;
const ROUNDS = 6;

t.test('subPath race: a container swapping the directory for a symlink never gets a host path mounted', async (t) => {
  const node = await startTestNode(t);
  const { dir: hostDir, secret } = await hostSecret(t);
  const victims = Array.from({ length: VICTIMS }, (_, i) => `v${i}`);
  const spec = `  volumes:
    - { name: shared, emptyDir: {} }
  containers:
${container('swapper', `cd /shared; while true; do mkdir x; usleep 3000; rmdir x && ln -s ${hostDir} x; usleep 3000; rm -f x; done`, `      volumeMounts: [{ name: shared, mountPath: /shared }]
`)}${victims
    .map((v) => container(v, 'cat /mnt/marker 2>&1; echo; ls -a /mnt; echo listed; sleep 3600', `      volumeMounts: [{ name: shared, mountPath: /mnt, subPath: x }]
`))
    .join('')}`;
  let ran = 0;
  let refused = 0;
  let escaped = 0;
  let byRuntime = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const name = `race${round}`;
    await node.writeManifest(`${name}.yaml`, manifest(name, spec));
    // Every victim either ran (its listing in its log) or is refused with a waiting reason: a
    // refusal by nodelet (CreateContainerConfigError), or by the runtime when the directory
    // nodelet bound was deleted before the container started (CreateContainerError).
    const outcome = await node.waitFor(`${name}: every victim ran or was refused`, async () => {
      const pod = await node.pod(name);
      const statuses = victims.map((v) => pod?.status?.containerStatuses?.find((s) => s.name === v));
      const results: Array<{ name: string; log?: string; waiting?: string }> = [];
      for (const [i, s] of statuses.entries()) {
        const id = idOf(s);
        if (s?.state?.running && id) {
          const log = await dockerCLI('logs', id).catch(() => '');
          if (!log.includes('listed')) return undefined;
          results.push({ name: victims[i] ?? '', log });
        } else if (s?.state?.waiting?.reason && !['ContainerCreating', 'PodInitializing'].includes(s.state.waiting.reason)) {
          results.push({ name: victims[i] ?? '', waiting: `${s.state.waiting.reason}: ${s.state.waiting.message ?? ''}` });
        } else {
          return undefined;
        }
      }
      return { pod: pod as Pod, results };
    }, 90_000);
    for (const r of outcome.results) {
      if (r.log !== undefined) {
        ran++;
        if (r.log.includes(secret)) escaped++;
        t.notMatch(r.log, secret, `${name}/${r.name}: the host's marker is not visible`);
        t.notMatch(r.log, /\bmarker\b\n/, `${name}/${r.name}: no host file is listed`);
      } else {
        refused++;
        const waiting = r.waiting ?? '';
        if (waiting.startsWith('CreateContainerError: ')) {
          byRuntime++;
          // The swapper removed the directory after nodelet bound it: runc cannot bind a deleted
          // directory (the kubelet's targets behave the same). Docker was given the target.
          t.match(waiting, /volume-subpaths\/shared\/v\d+\/0[\s\S]*no such file or directory/, `${name}/${r.name}: the runtime found the bound directory deleted`);
          t.notOk(waiting.includes(hostDir), `${name}/${r.name}: the host directory is not named`);
        } else {
          t.match(waiting, /^CreateContainerConfigError: failed to (prepare|create) subPath (directory )?for volumeMount "shared" of container "v\d+"/, `${name}/${r.name}: refused with the kubelet's reason`);
          t.notOk(waiting.includes(hostDir) || waiting.includes(node.manifestDir), `${name}/${r.name}: the refusal names no host path`);
        }
      }
    }
    // The mounts given to Docker are the stable targets under volume-subpaths, never the volume.
    const uid = outcome.pod.metadata?.uid ?? '';
    const subpaths = join(node.manifestDir, 'pods', uid, 'volume-subpaths');
    for (const r of outcome.results.filter((x) => x.log !== undefined)) {
      const id = idOf(outcome.pod.status?.containerStatuses?.find((s) => s.name === r.name));
      const source = (await dockerCLI('inspect', '--format', '{{range .Mounts}}{{if eq .Destination "/mnt"}}{{.Source}}{{end}}{{end}}', id)).trim();
      t.ok(source.startsWith(`${subpaths}/shared/${r.name}/`), `${name}/${r.name}: Docker binds the subpath target`);
      t.notMatch(await dockerCLI('exec', id, 'sh', '-c', 'ls -a /mnt; cat /mnt/marker 2>&1; true'), secret, `${name}/${r.name}: still not visible`);
    }
    await removeAndWaitTeardown(node, `${name}.yaml`, uid);
  }
  t.equal(await readFile(join(hostDir, 'marker'), 'utf8'), secret, 'the host directory is untouched');
  t.same((await readdir(hostDir)).sort(), ['marker'], 'nothing was created in the host directory');
  t.comment(`${ran} victims ran (${escaped} of them saw the host's marker), ${refused} were refused (${byRuntime} by the runtime: directory deleted)`);
});

t.test('a symlink planted before the subPath is created never creates directories outside the volume', async (t) => {
  const node = await startTestNode(t);
  const { dir: hostDir, secret } = await hostSecret(t);
  await mkdir(join(hostDir, 'existing'));
  const missing = join(hostDir, 'missing');
  const spec = `  volumes:
    - { name: shared, emptyDir: {} }
  initContainers:
${container('plant', `ln -s ${hostDir}/existing /shared/link && ln -s ${missing} /shared/dangling && ln -s ${hostDir} /shared/whole`, `      volumeMounts: [{ name: shared, mountPath: /shared }]
`)}  containers:
${container('through-link', 'sleep 3600', `      volumeMounts: [{ name: shared, mountPath: /mnt, subPath: link/made }]
`)}${container('through-dangling', 'sleep 3600', `      volumeMounts: [{ name: shared, mountPath: /mnt, subPath: dangling/made }]
`)}${container('dangling', 'sleep 3600', `      volumeMounts: [{ name: shared, mountPath: /mnt, subPath: dangling }]
`)}${container('whole', 'sleep 3600', `      volumeMounts: [{ name: shared, mountPath: /mnt, subPath: whole }]
`)}${container('inside', 'ls -a /shared/ok; sleep 3600', `      volumeMounts:
        - { name: shared, mountPath: /shared }
        - { name: shared, mountPath: /mnt, subPath: ok/deeper }
`)}`;
  await node.writeManifest('plant.yaml', manifest('plant', spec));
  const refused = ['through-link', 'through-dangling', 'dangling', 'whole'];
  const pod = await node.waitFor('planted symlinks refused, the in-volume subPath running', async () => {
    const p = await node.pod('plant');
    const st = (n: string) => p?.status?.containerStatuses?.find((s) => s.name === n);
    const done = refused.every((n) => st(n)?.state?.waiting?.reason === 'CreateContainerConfigError') && st('inside')?.state?.running;
    return done ? p : undefined;
  }, 60_000);
  for (const n of refused) {
    const message = pod.status?.containerStatuses?.find((s) => s.name === n)?.state?.waiting?.message ?? '';
    t.match(message, new RegExp(`^failed to (prepare|create) subPath (directory )?for volumeMount "shared" of container "${n}"`), `${n}: refused`);
    t.notOk(message.includes(hostDir) || message.includes(node.manifestDir), `${n}: the refusal names no host path (${message})`);
  }
  t.same(await readdir(join(hostDir, 'existing')), [], 'nothing created through a symlink to an existing host directory');
  t.notOk(await lstat(missing).catch(() => undefined), 'nothing created through a dangling symlink');
  t.same((await readdir(hostDir)).sort(), ['existing', 'marker']);
  const inside = idOf(pod.status?.containerStatuses?.find((s) => s.name === 'inside'));
  t.equal(await dockerCLI('exec', inside, 'sh', '-c', 'echo hi > /mnt/f; cat /shared/ok/deeper/f'), 'hi\n', 'an in-volume subPath is created and writable');
  t.equal(await readFile(join(hostDir, 'marker'), 'utf8'), secret);
  await removeAndWaitTeardown(node, 'plant.yaml', pod.metadata?.uid ?? '');
});
