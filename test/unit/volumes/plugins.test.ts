import t from 'tap';
import type { Volume, VolumeMount } from 'kubernetes-types/core/v1.js';
import { mountRefusal, tokenNeedsRefresh, volumeKindOf, volumeRefusal } from '../../../src/volumes/plugins.js';
import { memoryVolumeSize, podFsUser } from '../../../src/volumes/manager.js';

t.test('volume kinds and refusals', async (t) => {
  t.same(volumeKindOf({ name: 'v' }), { kind: 'emptyDir' }, 'no source means emptyDir (the API default)');
  t.same(volumeKindOf({ name: 'v', hostPath: { path: '/x' } }), { kind: 'hostPath' });
  t.same(volumeKindOf({ name: 'v', persistentVolumeClaim: { claimName: 'c' } }), { unsupported: 'persistentVolumeClaim' });
  const refused = (v: Record<string, unknown>) => volumeRefusal({ name: 'x', ...v } as Volume);
  t.equal(refused({ persistentVolumeClaim: { claimName: 'c' } }), 'volume "x": persistentVolumeClaim volumes are not supported by nodelet');
  t.equal(refused({ nfs: { server: 's', path: '/' } }), 'volume "x": nfs volumes are not supported by nodelet');
  t.equal(refused({ csi: { driver: 'd' } }), 'volume "x": csi volumes are not supported by nodelet');
  t.equal(refused({ ephemeral: {} }), 'volume "x": ephemeral volumes are not supported by nodelet');
  t.equal(refused({ image: { reference: 'r' } }), 'volume "x": image volumes are not supported by nodelet', 'types newer than kubernetes-types too');
  t.equal(refused({ emptyDir: { medium: 'HugePages' } }), 'volume "x": emptyDir medium "HugePages" is not supported by nodelet (only "" and "Memory")');
  t.equal(refused({ projected: { sources: [{ podCertificate: { signerName: 's', keyType: 'ED25519', credentialBundlePath: 'b' } }] } }), undefined, 'podCertificate (cluster mode sets it up)');
  t.match(refused({ projected: { sources: [{ serviceAccountToken: { path: 't', expirationSeconds: 60 } }] } }), /less than 600/);
  for (const ok of [{}, { emptyDir: { medium: 'Memory' } }, { hostPath: { path: '/' } }, { secret: {} }, { configMap: {} }, { downwardAPI: {} }, { projected: { sources: [{ secret: {} }, { serviceAccountToken: { path: 't' } }] } }, { projected: { sources: [{ clusterTrustBundle: { name: 'b', path: 'p' } }, { clusterTrustBundle: { signerName: 'x/y', path: 'q' } }] } }]) {
    t.equal(refused(ok), undefined, JSON.stringify(ok));
  }
});

t.test('the alpha file-owner fields (AtomicWriteVolumeUserFields) are refused, each by its path', async (t) => {
  const refused = (v: Record<string, unknown>) => volumeRefusal({ name: 'x', ...v } as Volume);
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ secret: { secretName: 's', defaultUser: 1000 } }, 'secret.defaultUser'],
    [{ configMap: { name: 'c', items: [{ key: 'a', path: 'a' }, { key: 'b', path: 'b', user: 0 }] } }, 'configMap.items[1].user'],
    [{ downwardAPI: { items: [{ path: 'n', fieldRef: { fieldPath: 'metadata.name' }, user: 7 }] } }, 'downwardAPI.items[0].user'],
    [{ projected: { defaultUser: 1, sources: [] } }, 'projected.defaultUser'],
    [{ projected: { sources: [{ secret: { name: 's' } }, { configMap: { name: 'c', items: [{ key: 'k', path: 'p', user: 2 }] } }] } }, 'projected.sources[1].configMap.items[0].user'],
    [{ projected: { sources: [{ serviceAccountToken: { path: 't', user: 3 } }] } }, 'projected.sources[0].serviceAccountToken.user'],
    [{ projected: { sources: [{ clusterTrustBundle: { name: 'b', path: 'p', user: 4 } }] } }, 'projected.sources[0].clusterTrustBundle.user'],
    [{ projected: { sources: [{ podCertificate: { signerName: 's', keyType: 'ED25519', credentialBundlePath: 'b', user: 5 } }] } }, 'projected.sources[0].podCertificate.user'],
    [{ projected: { sources: [{ downwardAPI: { items: [{ path: 'n', fieldRef: { fieldPath: 'metadata.name' }, user: 6 }] } }] } }, 'projected.sources[0].downwardAPI.items[0].user'],
  ];
  for (const [v, path] of cases) t.equal(refused(v), `volume "x": ${path} is not supported by nodelet (the alpha AtomicWriteVolumeUserFields feature: files are owned as the kubelet owns them without it)`, path);
  t.equal(refused({ secret: { secretName: 's', defaultUser: null, items: [{ key: 'a', path: 'a', user: null }] } }), undefined, 'null is unset');
});

t.test('the alpha emptyDir.mode (EmptyDirVolumeMode) is refused', async (t) => {
  const refused = (v: Record<string, unknown>) => volumeRefusal({ name: 'x', ...v } as Volume);
  const message = 'volume "x": emptyDir.mode is not supported by nodelet (the alpha EmptyDirVolumeMode feature: the directory is made 0777, as the kubelet makes it without the feature)';
  t.equal(refused({ emptyDir: { mode: 0o755 } }), message);
  t.equal(refused({ emptyDir: { medium: 'Memory', mode: 0o1777 } }), message, 'on tmpfs too');
  t.equal(refused({ emptyDir: { mode: 0 } }), message, '0 is set');
  t.equal(refused({ emptyDir: { mode: null } }), undefined, 'null is unset');
});

t.test('the alpha bindMountOptions (VolumeBindMountOptions) are refused', async (t) => {
  const refused = (m: Record<string, unknown>) => mountRefusal({ name: 'v', mountPath: '/m', ...m } as VolumeMount);
  t.equal(refused({ bindMountOptions: ['noexec', 'nosuid'] }), 'volumeMount "v" at /m: bindMountOptions noexec,nosuid is not supported by nodelet (the alpha VolumeBindMountOptions feature)');
  t.equal(refused({ bindMountOptions: [] }), undefined, 'an empty list asks for nothing');
  t.equal(refused({ bindMountOptions: null }), undefined, 'null is unset');
});

t.test('mount refusals', async (t) => {
  t.equal(mountRefusal({ name: 'v', mountPath: '/m' }), undefined);
  t.equal(mountRefusal({ name: 'v', mountPath: '/m', mountPropagation: 'None' }), undefined);
  t.equal(mountRefusal({ name: 'v', mountPath: '/m', mountPropagation: 'HostToContainer' }), 'volumeMount "v" at /m: mountPropagation HostToContainer is not supported by nodelet (only None)');
  t.match(mountRefusal({ name: 'v', mountPath: '/m', mountPropagation: 'Bidirectional' }), /Bidirectional is not supported/);
  t.match(mountRefusal({ name: 'v', mountPath: '/m', subPath: 'a', subPathExpr: 'b' }), /mutually exclusive/);
  t.match(mountRefusal({ name: 'v', mountPath: '/m', recursiveReadOnly: 'Enabled' }), /only be specified when readOnly/);
  t.equal(mountRefusal({ name: 'v', mountPath: '/m', recursiveReadOnly: 'Enabled', readOnly: true }), undefined);
});

t.test('token refresh at 80 % of the lifetime or after 24 h', async (t) => {
  const issued = 1_000_000_000;
  const token = (seconds: number) => ({ expirationTimestamp: new Date(issued + seconds * 1000), expirationSeconds: seconds });
  t.notOk(tokenNeedsRefresh(token(3600), issued + 2879_000, 0), 'before 80 %');
  t.ok(tokenNeedsRefresh(token(3600), issued + 2881_000, 0), 'after 80 %');
  t.ok(tokenNeedsRefresh(token(3600), issued + 2875_000, 10_000), 'the jitter brings it forward');
  // A long-lived token (a week) is still renewed daily.
  t.notOk(tokenNeedsRefresh(token(7 * 86400), issued + 23 * 3600_000, 0));
  t.ok(tokenNeedsRefresh(token(7 * 86400), issued + 24 * 3600_000 + 1, 0));
});

t.test('memory-backed volume size: allocatable, pod limit, sizeLimit, smallest wins', async (t) => {
  const Mi = 1n << 20n;
  const pod = (limits: Array<string | undefined>) => ({ spec: { containers: limits.map((m, i) => ({ name: `c${i}`, ...(m ? { resources: { limits: { memory: m } } } : {}) })) } });
  t.equal(memoryVolumeSize(pod([undefined]), 1024n * Mi, undefined), 1024n * Mi, 'no limit: allocatable');
  t.equal(memoryVolumeSize(pod(['64Mi', '32Mi']), 1024n * Mi, undefined), 96n * Mi, 'every container limited: the pod limit');
  t.equal(memoryVolumeSize(pod(['64Mi', undefined]), 1024n * Mi, undefined), 1024n * Mi, 'one unlimited container: allocatable');
  t.equal(memoryVolumeSize(pod(['64Mi']), 1024n * Mi, 16n * Mi), 16n * Mi, 'a smaller sizeLimit');
  t.equal(memoryVolumeSize(pod(['64Mi']), 1024n * Mi, 128n * Mi), 64n * Mi, 'a larger sizeLimit does not raise it');
});

t.test('fsUser: the runAsUser every container shares', async (t) => {
  t.equal(podFsUser({ spec: { securityContext: { runAsUser: 1000 }, containers: [{ name: 'a' }, { name: 'b' }] } }), 1000);
  t.equal(podFsUser({ spec: { securityContext: { runAsUser: 1000 }, containers: [{ name: 'a' }, { name: 'b', securityContext: { runAsUser: 2000 } }] } }), undefined);
  t.equal(podFsUser({ spec: { containers: [{ name: 'a' }] } }), undefined);
});
