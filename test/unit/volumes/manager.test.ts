import t from 'tap';
import { chown, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ConfigMap, Pod, Secret } from 'kubernetes-types/core/v1.js';
import { createLogger } from '../../../src/logging/index.js';
import { mountPoints } from '../../../src/volumes/host.js';
import { VolumeManager } from '../../../src/volumes/manager.js';
import { configMapPayload, downwardAPIPayload, secretPayload } from '../../../src/volumes/payloads.js';
import type { PodObjectSource } from '../../../src/volumes/source.js';
import type { PodRuntimeInfo } from '../../../src/volumes/downward-api.js';
import { encodeCertificatePem, selectBySigner, trustAnchorsOfBundle, trustAnchorsOfSigner, type ClusterTrustBundle } from '../../../src/volumes/trust-anchors.js';

const log = createLogger({ verbosity: 0, format: 'json' });
const info: PodRuntimeInfo = { hostIPs: ['10.0.0.1'], podIPs: ['172.17.0.9'], allocatable: { cpuMilli: 2000n, memoryBytes: 1n << 30n, ephemeralStorageBytes: 0n } };
const b64 = (s: string) => Buffer.from(s).toString('base64');
const root = process.getuid?.() === 0;

/** An in-memory apiserver whose objects tests change, with a token counter. */
function memorySource() {
  const configMaps = new Map<string, ConfigMap>();
  const secrets = new Map<string, Secret>();
  const tokens: Array<{ sa: string; audience?: string; expirationSeconds: number; pod: string }> = [];
  let clock = Date.now();
  const source: PodObjectSource = {
    getConfigMap: async (ns, name) => configMaps.get(`${ns}/${name}`),
    getSecret: async (ns, name) => secrets.get(`${ns}/${name}`),
    async requestServiceAccountToken(pod, sa, opts) {
      tokens.push({ sa, ...opts, pod: pod.metadata?.name ?? '' });
      return { token: `token-${tokens.length}`, expirationTimestamp: new Date(clock + opts.expirationSeconds * 1000) };
    },
  };
  return { source, configMaps, secrets, tokens, now: () => clock, advance: (ms: number) => (clock += ms) };
}

async function setup(t: { teardown(fn: () => Promise<void>): void }, objects?: PodObjectSource, now?: () => number) {
  const rootDir = await mkdtemp(join(tmpdir(), 'nodelet-vm-'));
  let current: Pod | undefined;
  const vm = new VolumeManager({ rootDir, ...(objects ? { objects } : {}), log, getPod: () => current, refreshPeriodMs: 3_600_000, ...(now ? { now } : {}) });
  t.teardown(async () => {
    await vm.tearDown('uid-1').catch(() => undefined);
    await rm(rootDir, { recursive: true, force: true });
  });
  return { vm, rootDir, setPod: (p: Pod) => (current = p) };
}

const podWith = (volumes: Pod['spec'] extends infer S ? (S extends { volumes?: infer V } ? V : never) : never, extra: Partial<NonNullable<Pod['spec']>> = {}): Pod => ({
  metadata: { name: 'web', namespace: 'ns', uid: 'uid-1', labels: { app: 'web' } },
  spec: { containers: [{ name: 'main', image: 'i', volumeMounts: (volumes ?? []).map((v) => ({ name: v.name, mountPath: `/mnt/${v.name}` })) }], volumes, ...extra },
});

t.test('payload builders', async (t) => {
  const secret: Secret = { data: { a: b64('1'), b: b64('2') } };
  t.same([...secretPayload(secret, undefined, 0o600, false)].map(([k, v]) => [k, String(v.data), v.mode]), [['a', '1', 0o600], ['b', '2', 0o600]]);
  t.same([...secretPayload(secret, [{ key: 'b', path: 'dir/b.txt', mode: 0o400 }], 0o644, false)].map(([k, v]) => [k, String(v.data), v.mode]), [['dir/b.txt', '2', 0o400]]);
  t.throws(() => secretPayload(secret, [{ key: 'c', path: 'c' }], 0o644, false), { message: 'references non-existent secret key: c' });
  t.same(secretPayload(secret, [{ key: 'c', path: 'c' }], 0o644, true).size, 0, 'optional: a missing key is skipped');
  const cm: ConfigMap = { data: { 'app.conf': 'x=1' }, binaryData: { blob: b64('\x00\x01') } };
  t.same([...configMapPayload(cm, undefined, 0o644, false).keys()], ['app.conf', 'blob']);
  t.same(configMapPayload(cm, undefined, 0o644, false).get('blob')?.data, Buffer.from([0, 1]));
  t.throws(() => configMapPayload(cm, [{ key: 'nope', path: 'n' }], 0o644, false), { message: 'configmap references non-existent config key: nope' });
  const pod = podWith([]);
  const files = downwardAPIPayload(pod, [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }, { path: 'ip', fieldRef: { fieldPath: 'status.podIP' }, mode: 0o400 }], 0o644, info);
  t.same([...files].map(([k, v]) => [k, v.data, v.mode]), [['labels', 'app="web"', 0o644], ['ip', '172.17.0.9', 0o400]]);
  t.throws(() => downwardAPIPayload(pod, [{ path: 'a', fieldRef: { fieldPath: 'spec.x' } }, { path: 'b', fieldRef: { fieldPath: 'spec.y' } }], 0o644, info), {
    message: '[unsupported fieldPath: spec.x, unsupported fieldPath: spec.y]',
  });
});

t.test('configMap and downwardAPI volumes: the kubelet layout, read-only mounts, refresh', async (t) => {
  const mem = memorySource();
  mem.configMaps.set('ns/cfg', { data: { 'app.conf': 'v1' } });
  const { vm, rootDir, setPod } = await setup(t, mem.source);
  const pod = podWith([
    { name: 'conf', configMap: { name: 'cfg' } },
    { name: 'meta', downwardAPI: { items: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] } },
    { name: 'scratch', emptyDir: {} },
  ]);
  setPod(pod);
  await vm.setUpPod(pod, info);
  const base = join(rootDir, 'pods', 'uid-1', 'volumes');
  const confDir = join(base, 'kubernetes.io~configmap', 'conf');
  t.equal(await readFile(join(confDir, 'app.conf'), 'utf8'), 'v1');
  t.equal(await readlink(join(confDir, 'app.conf')), '..data/app.conf');
  t.equal(await readFile(join(base, 'kubernetes.io~downward-api', 'meta', 'labels'), 'utf8'), 'app="web"');
  t.equal((await stat(join(base, 'kubernetes.io~empty-dir', 'scratch'))).mode & 0o777, 0o777, 'emptyDir is world-writable');

  const mounts = await vm.mountsFor(pod, pod.spec!.containers[0]!, new Map());
  t.same(mounts, [
    { hostPath: confDir, containerPath: '/mnt/conf', readOnly: true, recursiveReadOnly: 'Disabled' },
    { hostPath: join(base, 'kubernetes.io~downward-api', 'meta'), containerPath: '/mnt/meta', readOnly: true, recursiveReadOnly: 'Disabled' },
    { hostPath: join(base, 'kubernetes.io~empty-dir', 'scratch'), containerPath: '/mnt/scratch', readOnly: false },
  ]);

  mem.configMaps.set('ns/cfg', { data: { 'app.conf': 'v2', extra: 'e' } });
  setPod({ ...pod, metadata: { ...pod.metadata, labels: { app: 'web', rev: '2' } } });
  await vm.refresh();
  t.equal(await readFile(join(confDir, 'app.conf'), 'utf8'), 'v2', 'configMap change picked up');
  t.equal(await readFile(join(confDir, 'extra'), 'utf8'), 'e');
  t.equal(await readFile(join(base, 'kubernetes.io~downward-api', 'meta', 'labels'), 'utf8'), 'app="web"\nrev="2"', 'label change picked up');

  mem.configMaps.delete('ns/cfg');
  await vm.refresh();
  t.equal(await readFile(join(confDir, 'app.conf'), 'utf8'), 'v2', 'a failed refresh keeps the last contents');

  await vm.tearDown('uid-1');
  t.notOk(await lstat(join(rootDir, 'pods', 'uid-1')).catch(() => undefined), 'pod directory removed');
});

t.test('missing objects and standalone mode refuse with the kubelet messages', async (t) => {
  const mem = memorySource();
  const { vm } = await setup(t, mem.source);
  const pod = podWith([{ name: 'creds', secret: { secretName: 'db' } }, { name: 'conf', configMap: { name: 'cfg', optional: true } }]);
  await t.rejects(vm.setUpPod(pod, info), { reason: 'CreateContainerConfigError', event: 'FailedMount', message: 'MountVolume.SetUp failed for volume "creds" : secret "db" not found' });

  const standalone = await setup(t);
  await t.rejects(standalone.vm.setUpPod(pod, info), { message: 'MountVolume.SetUp failed for volume "creds" : secret "db" needs cluster mode (--kubeconfig); MountVolume.SetUp failed for volume "conf" : configmap "cfg" needs cluster mode (--kubeconfig)' });
  await t.rejects(standalone.vm.setUpPod(podWith([{ name: 'data', persistentVolumeClaim: { claimName: 'c' } }]), info), {
    event: 'FailedMount',
    message: 'volume "data": persistentVolumeClaim volumes are not supported by nodelet',
  });
});

t.test('subPath: created when missing, expanded from env, bound on a stable target, never escaping the volume', { skip: !root && 'needs root (mount)' }, async (t) => {
  const { vm, rootDir } = await setup(t);
  const pod = podWith([{ name: 'scratch' }]);
  await vm.setUpPod(pod, info);
  const dir = join(rootDir, 'pods', 'uid-1', 'volumes', 'kubernetes.io~empty-dir', 'scratch');
  const target = (i: number) => join(rootDir, 'pods', 'uid-1', 'volume-subpaths', 'scratch', 'main', String(i));
  const c = (...ms: Record<string, unknown>[]) => ({ name: 'main', volumeMounts: ms.map((m) => ({ name: 'scratch', mountPath: '/m', ...m })) });
  const [m1, m2] = await vm.mountsFor(pod, c({ subPath: 'a/b' }, { subPathExpr: 'logs/$(POD_NAME)' }), new Map([['POD_NAME', 'web']]));
  t.equal(m1?.hostPath, target(0), 'Docker binds the target, not a path inside the volume');
  t.equal(m2?.hostPath, target(1));
  t.ok((await stat(join(dir, 'a/b'))).isDirectory(), 'created');
  t.equal((await stat(join(dir, 'a/b'))).mode & 0o7777, 0o777, "with the volume root's mode");
  t.equal((await stat(target(0))).ino, (await stat(join(dir, 'a/b'))).ino, 'the target shows the subPath');
  t.equal((await stat(target(1))).ino, (await stat(join(dir, 'logs/web'))).ino);
  t.same(await vm.mountsFor(pod, c({ subPath: 'a/b' }), new Map()), [m1], 'a restarted container reuses the target');
  t.equal((await mountPoints()).filter((m) => m === target(0)).length, 1);
  await t.rejects(vm.mountsFor(pod, c({ subPathExpr: '$(NOPE)' }), new Map()), /missing value for NOPE/);
  await t.rejects(vm.mountsFor(pod, c({ subPath: '/etc' }), new Map()), /must not be an absolute path/);
  await t.rejects(vm.mountsFor(pod, c({ subPath: '../x' }), new Map()), /must not contain '\.\.'/);
  // A container planted a symlink to the host's root: the mount is refused, naming no host path.
  await symlink('/', join(dir, 'evil'));
  await t.rejects(vm.mountsFor(pod, c({ subPath: 'evil' }), new Map()), {
    reason: 'CreateContainerConfigError',
    message: 'failed to prepare subPath for volumeMount "scratch" of container "main": subpath "evil" not within volume path',
  });
  await t.rejects(vm.mountsFor(pod, c({ subPath: 'evil/made' }), new Map()), {
    message: 'failed to create subPath directory for volumeMount "scratch" of container "main": subpath "evil/made" not within volume path',
  });
  t.notOk(await lstat('/made').catch(() => undefined), 'nothing created through it');
  await t.rejects(vm.mountsFor(pod, c({ mountPropagation: 'Bidirectional' }), new Map()), /Bidirectional is not supported/);

  await vm.tearDown('uid-1');
  t.notOk((await mountPoints()).some((m) => m.startsWith(join(rootDir, 'pods'))), 'subPath targets unmounted');
  t.notOk(await lstat(join(rootDir, 'pods', 'uid-1')).catch(() => undefined), 'pod directory removed');
  await t.rejects(vm.mountsFor(pod, c({ subPath: 'a/b' }), new Map()), /volume is not set up/, 'nothing is bound after teardown');
});

t.test('teardown unmounts a subPath of a hostPath volume before removing anything: the host files stay', { skip: !root && 'needs root (mount)' }, async (t) => {
  const { vm, rootDir } = await setup(t);
  const host = join(rootDir, 'host');
  await mkdir(join(host, 'data'), { recursive: true });
  await writeFile(join(host, 'data', 'precious'), 'keep');
  await writeFile(join(host, 'file'), 'keep too');
  const pod = podWith([{ name: 'h', hostPath: { path: host } }]);
  await vm.setUpPod(pod, info);
  const mounts = await vm.mountsFor(pod, { name: 'main', volumeMounts: [{ name: 'h', mountPath: '/d', subPath: 'data' }, { name: 'h', mountPath: '/f', subPath: 'file' }] }, new Map());
  t.equal(await readFile(join(mounts[0]?.hostPath ?? '', 'precious'), 'utf8'), 'keep');
  t.equal(await readFile(mounts[1]?.hostPath ?? '', 'utf8'), 'keep too');
  await vm.tearDown('uid-1');
  t.equal(await readFile(join(host, 'data', 'precious'), 'utf8'), 'keep');
  t.equal(await readFile(join(host, 'file'), 'utf8'), 'keep too');
  t.notOk(await lstat(join(rootDir, 'pods', 'uid-1')).catch(() => undefined), 'pod directory removed');
});

t.test('hostPath type checks', async (t) => {
  const { vm, rootDir } = await setup(t);
  const file = join(rootDir, 'file');
  await writeFile(file, 'x');
  const mk = (path: string, type?: string) => podWith([{ name: 'h', hostPath: { path, ...(type !== undefined ? { type } : {}) } }]);
  const created = join(rootDir, 'made', 'here');
  await vm.setUpPod(mk(created, 'DirectoryOrCreate'), info);
  t.ok((await stat(created)).isDirectory());
  t.equal((await vm.mountsFor(mk(created), mk(created).spec!.containers[0]!, new Map()))[0]?.hostPath, created, 'the host path itself is mounted');
  await vm.tearDown('uid-1');
  t.ok(await stat(created), 'teardown never touches a hostPath');
  await t.rejects(vm.setUpPod(mk(file, 'Directory'), info), { message: `MountVolume.SetUp failed for volume "h" : hostPath type check failed: ${file} is not a directory` });
  await vm.tearDown('uid-1');
  await t.rejects(vm.setUpPod(mk(join(rootDir, 'none'), 'File'), info), /is not a file/);
  await vm.tearDown('uid-1');
  await t.rejects(vm.setUpPod(mk(file, 'Socket'), info), /is not a socket file/);
  await vm.tearDown('uid-1');
  await vm.setUpPod(mk(join(rootDir, 'new-file'), 'FileOrCreate'), info);
  t.ok((await stat(join(rootDir, 'new-file'))).isFile());
  await vm.tearDown('uid-1');
  await vm.setUpPod(mk(file, ''), info);
  await vm.tearDown('uid-1');
  await t.rejects(vm.setUpPod(mk(file, 'Bogus'), info), /Bogus is an invalid volume type/);
});

t.test('fsGroup: group ownership and group access on emptyDir and configMap files', { skip: !root && 'needs root (chown to the fsGroup)' }, async (t) => {
  const mem = memorySource();
  mem.configMaps.set('ns/cfg', { data: { k: 'v' } });
  const { vm, rootDir } = await setup(t, mem.source);
  const pod = podWith([{ name: 'scratch' }, { name: 'conf', configMap: { name: 'cfg', defaultMode: 0o600 } }], { securityContext: { fsGroup: 2345 } });
  await vm.setUpPod(pod, info);
  const base = join(rootDir, 'pods', 'uid-1', 'volumes');
  const scratch = await stat(join(base, 'kubernetes.io~empty-dir', 'scratch'));
  t.equal(scratch.gid, 2345);
  t.equal(scratch.mode & 0o7777, 0o2777, 'setgid directory');
  const conf = await stat(join(base, 'kubernetes.io~configmap', 'conf', 'k'));
  t.equal(conf.gid, 2345);
  t.equal(conf.mode & 0o777, 0o640, 'group read added to a read-only volume');
});

t.test('fsGroup on an emptyDir is applied once, while it is new: a restarted nodelet adopts it and never walks it again', { skip: !root && 'needs root (chown to the fsGroup)' }, async (t) => {
  const { vm, rootDir } = await setup(t);
  const hostFile = join(rootDir, 'host-file');
  await writeFile(hostFile, 'host', { mode: 0o644 });
  const volumes = [{ name: 'scratch', emptyDir: {} }, ...(root ? [{ name: 'ram', emptyDir: { medium: 'Memory' } }] : [])];
  const pod = podWith(volumes, { securityContext: { fsGroup: 2345 } });
  await vm.setUpPod(pod, info);
  const podDir = join(rootDir, 'pods', 'uid-1');
  const marker = (name: string) => join(podDir, 'plugins', 'kubernetes.io~empty-dir', name, 'ready');
  for (const { name } of volumes) {
    const dir = join(podDir, 'volumes', 'kubernetes.io~empty-dir', name);
    t.ok(await stat(marker(name)).then((st) => st.isFile(), () => false), `${name}: the kubelet's ready marker`);
    // A tmpfs root keeps its default sticky bit (the kubelet mounts it with no mode): 3777, `dgtrwxrwxrwx`.
    t.equal((await stat(dir)).mode & 0o7777, name === 'ram' ? 0o3777 : 0o2777, `${name}: setgid, world-writable${name === 'ram' ? ', sticky' : ''}`);
    // What its containers do with it: a private file, a directory of another group, a link out.
    await writeFile(join(dir, 'private'), 'x', { mode: 0o600 });
    await mkdir(join(dir, 'own'), { mode: 0o700 });
    if (root) for (const p of ['private', 'own']) await chown(join(dir, p), 0, 3000);
    await symlink(hostFile, join(dir, 'link'));
  }
  const before = async (name: string) => {
    const dir = join(podDir, 'volumes', 'kubernetes.io~empty-dir', name);
    return Promise.all(['.', 'private', 'own', 'link'].map(async (p) => lstat(join(dir, p)).then((st) => [p, st.mode, st.gid, st.ino])));
  };
  const snapshot = await Promise.all(volumes.map((v) => before(v.name)));
  for (let restart = 1; restart <= 3; restart++) {
    await new VolumeManager({ rootDir, log }).setUpPod(pod, info);
    t.same(await Promise.all(volumes.map((v) => before(v.name))), snapshot, `restart ${restart}: nothing in a ready emptyDir changed`);
  }
  t.same([(await stat(hostFile)).mode & 0o7777, (await stat(hostFile)).gid], [0o644, 0], 'the host file is untouched');

  // A marker whose volume is gone (removed by hand, a tmpfs lost to a reboot): set up afresh.
  const scratch = join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
  await rm(scratch, { recursive: true });
  await new VolumeManager({ rootDir, log }).setUpPod(pod, info);
  t.same(await readdir(scratch), [], 'recreated empty');
  t.equal((await stat(scratch)).mode & 0o7777, 0o2777);
  if (root) t.equal((await stat(scratch)).gid, 2345, 'with its fsGroup');
});

t.test('secret and projected volumes live on tmpfs; tokens are bound to the pod and renewed', { skip: !root && 'needs root (mount)' }, async (t) => {
  const mem = memorySource();
  mem.secrets.set('ns/db', { data: { password: b64('s3cret') } });
  mem.configMaps.set('ns/kube-root-ca.crt', { data: { 'ca.crt': 'CA' } });
  const { vm, rootDir, setPod } = await setup(t, mem.source, mem.now);
  const pod = podWith(
    [
      { name: 'creds', secret: { secretName: 'db', defaultMode: 0o400 } },
      {
        name: 'kube-api-access-abcde',
        projected: {
          defaultMode: 0o644,
          sources: [
            { serviceAccountToken: { path: 'token', expirationSeconds: 3607 } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { fieldPath: 'metadata.namespace' } }] } },
          ],
        },
      },
      { name: 'ram', emptyDir: { medium: 'Memory', sizeLimit: '8Mi' } },
    ],
    { serviceAccountName: 'builder' },
  );
  setPod(pod);
  await vm.setUpPod(pod, info);
  const base = join(rootDir, 'pods', 'uid-1', 'volumes');
  const secretDir = join(base, 'kubernetes.io~secret', 'creds');
  const projDir = join(base, 'kubernetes.io~projected', 'kube-api-access-abcde');
  const ramDir = join(base, 'kubernetes.io~empty-dir', 'ram');
  const mounts = await mountPoints();
  t.ok(mounts.includes(secretDir), 'secret on tmpfs');
  t.ok(mounts.includes(projDir), 'projected on tmpfs');
  t.ok(mounts.includes(ramDir), 'emptyDir Memory on tmpfs');
  const ramLine = (await readFile('/proc/self/mounts', 'utf8')).split('\n').find((l) => l.split(' ')[1] === ramDir);
  t.match(ramLine, /size=8192k/, 'sized by sizeLimit');
  t.equal(await readFile(join(secretDir, 'password'), 'utf8'), 's3cret');
  t.equal((await stat(join(secretDir, 'password'))).mode & 0o777, 0o400);
  t.equal(await readFile(join(projDir, 'token'), 'utf8'), 'token-1');
  t.equal(await readFile(join(projDir, 'ca.crt'), 'utf8'), 'CA');
  t.equal(await readFile(join(projDir, 'namespace'), 'utf8'), 'ns');
  t.same(mem.tokens, [{ sa: 'builder', expirationSeconds: 3607, pod: 'web' }]);

  await vm.refresh();
  t.equal(mem.tokens.length, 1, 'a fresh token is kept');
  mem.advance(3607_000 * 0.8 + 11_000);
  await vm.refresh();
  t.equal(mem.tokens.length, 2, 'renewed past 80 % of its lifetime');
  t.equal(await readFile(join(projDir, 'token'), 'utf8'), 'token-2');

  await vm.tearDown('uid-1');
  const after = await mountPoints();
  t.notOk(after.some((m) => m.startsWith(join(rootDir, 'pods'))), 'every tmpfs unmounted');
  t.notOk(await lstat(join(rootDir, 'pods', 'uid-1')).catch(() => undefined));
});

t.test('clusterTrustBundle sources: by name and by signer, optional, refreshed, failing as FailedMount', { skip: !root && 'needs root (mount)' }, async (t) => {
  const bundles = new Map<string, ClusterTrustBundle>();
  const salt = Buffer.from('test');
  const source: PodObjectSource = {
    ...memorySource().source,
    getTrustAnchorsByName: async (name, allowMissing) => trustAnchorsOfBundle(name, bundles.get(name), allowMissing, salt),
    getTrustAnchorsBySigner: async (signer, selector, allowMissing) => trustAnchorsOfSigner(selectBySigner(bundles.values(), signer, selector), allowMissing, salt),
  };
  const cert = (s: string) => encodeCertificatePem(Buffer.from(s.repeat(30)));
  bundles.set('root', { metadata: { name: 'root' }, spec: { trustBundle: cert('r') } });
  bundles.set('one-a', { metadata: { name: 'one-a', labels: { live: 'true' } }, spec: { signerName: 'x/one', trustBundle: cert('a') + cert('r') } });
  bundles.set('one-b', { metadata: { name: 'one-b', labels: { live: 'false' } }, spec: { signerName: 'x/one', trustBundle: cert('b') } });
  const { vm, rootDir, setPod } = await setup(t, source);
  const pod = podWith([
    {
      name: 'ctb',
      projected: {
        defaultMode: 0o640,
        sources: [
          { clusterTrustBundle: { name: 'root', path: 'root.pem' } },
          { clusterTrustBundle: { signerName: 'x/one', labelSelector: { matchLabels: { live: 'true' } }, path: 'live.pem' } },
          { clusterTrustBundle: { signerName: 'x/one', path: 'none.pem', optional: true } },
          { clusterTrustBundle: { name: 'absent', path: 'absent.pem', optional: true } },
        ],
      },
    },
  ]);
  setPod(pod);
  await vm.setUpPod(pod, info);
  const dir = join(rootDir, 'pods', 'uid-1', 'volumes', 'kubernetes.io~projected', 'ctb');
  t.equal(await readFile(join(dir, 'root.pem'), 'utf8'), cert('r'));
  t.equal((await stat(join(dir, 'root.pem'))).mode & 0o777, 0o640, 'the projected defaultMode');
  const live = await readFile(join(dir, 'live.pem'), 'utf8');
  t.equal(live.length, cert('a').length + cert('r').length, 'a and r, once each');
  t.ok(live.includes(cert('a')) && live.includes(cert('r')));
  t.equal(await readFile(join(dir, 'none.pem'), 'utf8'), '', 'nil selector + optional: an empty file');
  t.equal(await readFile(join(dir, 'absent.pem'), 'utf8'), '', 'missing bundle + optional: an empty file');

  bundles.set('one-b', { metadata: { name: 'one-b', labels: { live: 'true' } }, spec: { signerName: 'x/one', trustBundle: cert('b') } });
  bundles.set('root', { metadata: { name: 'root' }, spec: { trustBundle: cert('n') } });
  await vm.refresh();
  t.equal(await readFile(join(dir, 'root.pem'), 'utf8'), cert('n'), 'a changed bundle reaches the file on refresh');
  t.ok((await readFile(join(dir, 'live.pem'), 'utf8')).includes(cert('b')), 'a bundle whose labels now match joins');

  const failing = { ...pod, metadata: { ...pod.metadata, uid: 'uid-2' } };
  failing.spec = { ...pod.spec!, volumes: [{ name: 'bad', projected: { sources: [{ clusterTrustBundle: { name: 'does-not-exist', path: 'p' } }, { clusterTrustBundle: { signerName: 'x/none', labelSelector: {}, path: 'q' } }] } }] };
  const err = await vm.setUpPod(failing, info).then(() => undefined, (e: unknown) => e as Error & { event?: string });
  t.equal(err?.event, 'FailedMount');
  t.equal(
    err?.message,
    'MountVolume.SetUp failed for volume "bad" : [while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "does-not-exist" not found, combination of signerName and labelSelector matched zero ClusterTrustBundles]',
  );
  await vm.tearDown('uid-2');
  const standalone = await setup(t);
  const refused = await standalone.vm.setUpPod(pod, info).then(() => undefined, (e: unknown) => e as Error);
  t.match(refused?.message, /clusterTrustBundle needs cluster mode/);
});

t.test('podCertificate sources: the bundle, key and chain files; 0600 (+ group read) with fsGroup; pending fails as FailedMount; forgotten at teardown', { skip: !root && 'needs root (mount)' }, async (t) => {
  const key = '-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n';
  const chain = encodeCertificatePem(Buffer.from('leaf'.repeat(20))) + encodeCertificatePem(Buffer.from('ca'.repeat(20)));
  const asked: string[] = [];
  const forgotten: string[] = [];
  let issued = false;
  const source: PodObjectSource = {
    ...memorySource().source,
    getPodCertificateCredentialBundle: async (p, volumeName, sourceIndex, src) => {
      asked.push(`${p.metadata?.uid}/${volumeName}/${sourceIndex}/${src.keyType}`);
      if (!issued) throw new Error('credential bundle is not issued yet');
      return { keyPem: key, certChain: chain };
    },
    forgetPodCertificates: (uid) => forgotten.push(uid),
  };
  const { vm, rootDir, setPod } = await setup(t, source);
  const sources = [{ downwardAPI: { items: [{ path: 'name', fieldRef: { fieldPath: 'metadata.name' } }] } }, { podCertificate: { signerName: 'x.example/s', keyType: 'ED25519', credentialBundlePath: 'bundle.pem', keyPath: 'key.pem', certificateChainPath: 'chain.pem' } }];
  const pod = podWith([{ name: 'pc', projected: { defaultMode: 0o644, sources } } as never], { securityContext: { fsGroup: 1234 } });
  setPod(pod);
  const pending = await vm.setUpPod(pod, info).then(() => undefined, (e: unknown) => e as Error & { event?: string });
  t.equal(pending?.event, 'FailedMount');
  t.equal(pending?.message, 'MountVolume.SetUp failed for volume "pc" : credential bundle is not issued yet');
  issued = true;
  await vm.setUpPod(pod, info);
  t.same(asked, ['uid-1/pc/1/ED25519', 'uid-1/pc/1/ED25519'], 'asked per pod, volume and source index');
  const dir = join(rootDir, 'pods', 'uid-1', 'volumes', 'kubernetes.io~projected', 'pc');
  t.equal(await readFile(join(dir, 'bundle.pem'), 'utf8'), key + chain, 'key, then chain');
  t.equal(await readFile(join(dir, 'key.pem'), 'utf8'), key);
  t.equal(await readFile(join(dir, 'chain.pem'), 'utf8'), chain);
  const keyStat = await stat(join(dir, 'key.pem'));
  t.same([keyStat.mode & 0o777, keyStat.gid], [0o640, 1234], 'narrowed to 0600 with fsGroup, which then adds its group read (SetVolumeOwnership), not the 0644 defaultMode');
  await vm.tearDown('uid-1');
  t.same(forgotten, ['uid-1'], 'the manager forgets the pod');
  const standalone = await setup(t);
  const refused = await standalone.vm.setUpPod(pod, info).then(() => undefined, (e: unknown) => e as Error);
  t.match(refused?.message, /podCertificate needs cluster mode/);
});

t.test('a restarted nodelet adopts the volumes it finds and keeps refreshing them', async (t) => {
  const mem = memorySource();
  mem.configMaps.set('ns/cfg', { data: { k: 'v1' } });
  const rootDir = await mkdtemp(join(tmpdir(), 'nodelet-vm-'));
  t.teardown(() => rm(rootDir, { recursive: true, force: true }));
  const pod = podWith([{ name: 'conf', configMap: { name: 'cfg' } }]);
  await new VolumeManager({ rootDir, objects: mem.source, log }).setUpPod(pod, info);
  mem.configMaps.set('ns/cfg', { data: { k: 'v2' } });
  const other = { ...pod, metadata: { ...pod.metadata, uid: 'uid-2' } };
  await mkdir(join(rootDir, 'pods'), { recursive: true });
  const restarted = new VolumeManager({ rootDir, objects: mem.source, log, listPods: () => [pod, other], getPod: (uid) => (uid === 'uid-1' ? pod : other) });
  await restarted.refresh();
  t.equal(await readFile(join(rootDir, 'pods', 'uid-1', 'volumes', 'kubernetes.io~configmap', 'conf', 'k'), 'utf8'), 'v2');
  t.notOk(await lstat(join(rootDir, 'pods', 'uid-2')).catch(() => undefined), 'a pod without volumes on disk is not set up by a refresh');
});
