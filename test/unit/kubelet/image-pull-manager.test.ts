import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { cacheFilename, ImagePullManager, type StoredImageNames } from '../../../src/kubelet/image-pull-manager.js';
import { ensureImageExists } from '../../../src/kubelet/images.js';
import type { TrackedRegistryAuth } from '../../../src/kubelet/keyring.js';
import { verificationEnforcer } from '../../../src/kubelet/pull-records.js';
import { createLogger } from '../../../src/logging/index.js';
import type { ImageInfo, PulledImage, RegistryAuth } from '../../../src/runtime/types.js';

/**
 * The image pull manager over a real directory (pkg/kubelet/images/pullmanager: fs_pullrecords.go's
 * layout, image_pull_manager.go's bookkeeping) and, through ensureImageExists, the image manager's
 * KubeletEnsureSecretPulledImages path against an in-memory engine whose registry accepts only
 * the right password.
 */

const log = createLogger({ verbosity: 0, format: 'json' });
const open = (dir: string, images: StoredImageNames[] = [], policy: Parameters<typeof verificationEnforcer>[0] = 'NeverVerifyPreloadedImages') =>
  ImagePullManager.open({ rootDir: dir, enforcer: verificationEnforcer(policy), log, now: () => new Date('2026-12-06T01:02:03.456Z') }, async () => images);
const files = (dir: string, which: 'pulling' | 'pulled') => readdirSync(join(dir, 'image_manager', which));
const tracked = (name: string, password: string, uid = `uid-${name}`): TrackedRegistryAuth => ({ username: 'u', password, source: { uid, namespace: 'team', name }, authHash: `hash-${password}` });

/** An engine whose registry takes password "right" (or no credentials at all for `public/`). */
function engine(present: string[] = []) {
  const images = new Set(present);
  const pulls: string[] = [];
  const runtime = {
    async imageStatus(image: string): Promise<ImageInfo | undefined> {
      return images.has(image) ? { id: `sha256:${image.split(':')[0]}`, user: '', sizeBytes: 1 } : undefined;
    },
    async pullImage(image: string, credentials: readonly RegistryAuth[]): Promise<PulledImage> {
      pulls.push(`${image} [${credentials.map((c) => c.password).join(',')}]`);
      const index = credentials.findIndex((c) => c.password === 'right');
      if (!image.startsWith('public/') && index < 0) throw new Error('unauthorized: authentication required');
      images.add(image);
      return { id: `sha256:${image.split(':')[0]}`, user: '', sizeBytes: 1, ...(index >= 0 ? { credentialIndex: index } : {}) };
    },
  };
  const events: string[] = [];
  return { runtime, pulls, events, event: (_: string, reason: string, message: string) => void events.push(`${reason}: ${message}`) };
}

t.test('a pull leaves a record naming its secret, in the kubelet\'s file layout; the intent is gone', async (t) => {
  const dir = t.testdir();
  const m = await open(dir);
  const e = engine();
  await ensureImageExists(e.runtime, 'reg/app:1', 'IfNotPresent', { event: e.event, pullManager: m, credentials: async () => [tracked('stale', 'wrong'), tracked('regcred', 'right')] });
  t.same(files(dir, 'pulling'), [], 'no intent left');
  t.same(files(dir, 'pulled'), [cacheFilename('sha256:reg/app')], 'one record, named by the sha256 of the image ID');
  const onDisk = JSON.parse(readFileSync(join(dir, 'image_manager', 'pulled', cacheFilename('sha256:reg/app')), 'utf8')) as Record<string, unknown>;
  t.same(onDisk, {
    kind: 'ImagePulledRecord',
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    lastUpdatedTime: '2026-12-06T01:02:03Z',
    imageRef: 'sha256:reg/app',
    credentialMapping: { 'reg/app': { kubernetesSecrets: [{ uid: 'uid-regcred', namespace: 'team', name: 'regcred', credentialHash: 'hash-right' }] } },
  }, 'the credential that pulled, not the one that failed');
});

t.test('IfNotPresent: the same secret, or another with the same credentials, reuses; no secret or a wrong one pulls again', async (t) => {
  const dir = t.testdir();
  const m = await open(dir);
  const e = engine();
  const ensure = (creds: TrackedRegistryAuth[], policy: 'IfNotPresent' | 'Never' = 'IfNotPresent') =>
    ensureImageExists(e.runtime, 'reg/app:1', policy, { event: e.event, pullManager: m, credentials: async () => creds }).then(() => 'ok', (err: Error) => err.message);
  t.equal(await ensure([tracked('regcred', 'right')]), 'ok');
  t.equal(e.pulls.length, 1);
  t.equal(await ensure([tracked('regcred', 'right')]), 'ok');
  t.equal(e.pulls.length, 1, 'the same secret: no pull');
  t.equal(e.events.at(-1), 'Pulled: Container image "reg/app:1" already present on machine and can be accessed by the pod');
  t.equal(await ensure([tracked('copy', 'right', 'uid-copy')]), 'ok');
  t.equal(e.pulls.length, 1, 'another secret with the same credentials: no pull');
  t.ok(m.record('sha256:reg/app')?.credentialMapping['reg/app']?.kubernetesSecrets?.some((s) => s.name === 'copy'), 'and the record learnt it');
  t.match(await ensure([]), /unauthorized/, 'no secret: pulled again, anonymously, and refused');
  t.same(e.pulls.at(-1), 'reg/app:1 []');
  t.match(await ensure([tracked('other', 'wrong')]), /unauthorized/, 'a secret with other credentials: refused');
  t.equal(await ensure([], 'Never'), 'Container image "reg/app:1" is not present with pull policy of Never', 'Never: the absent-image error, so the image\'s presence is not revealed');
  t.equal(e.pulls.length, 3);
});

t.test('an image pulled anonymously is every pod\'s; a preloaded one is used as is unless AlwaysVerify', async (t) => {
  const dir = t.testdir();
  const m = await open(dir);
  const e = engine(['preloaded:1']);
  await ensureImageExists(e.runtime, 'public/tool:1', 'IfNotPresent', { event: e.event, pullManager: m });
  await ensureImageExists(e.runtime, 'public/tool:1', 'Never', { event: e.event, pullManager: m, credentials: async () => [tracked('x', 'y')] });
  t.same(e.pulls, ['public/tool:1 []'], 'anonymous pull recorded nodePodsAccessible: any pod, whatever its secrets');
  await ensureImageExists(e.runtime, 'preloaded:1', 'IfNotPresent', { event: e.event, pullManager: m });
  t.equal(e.pulls.length, 1, 'NeverVerifyPreloadedImages: an image nodelet never pulled is not verified');
  const strict = await open(t.testdir(), [], 'AlwaysVerify');
  const err = await ensureImageExists(e.runtime, 'preloaded:1', 'IfNotPresent', { event: e.event, pullManager: strict }).catch((x: Error) => x);
  t.match((err as Error).message, /unauthorized/, 'AlwaysVerify: pulled again');
});

t.test('across a restart: records are read back; an intent left by a cut pull becomes a record that forces verification', async (t) => {
  const dir = t.testdir();
  const first = await open(dir);
  await first.recordImagePulled('reg/app:1', 'sha256:reg/app', { kubernetesSecrets: [{ uid: 'u', namespace: 'team', name: 'regcred', credentialHash: 'h' }] });
  await first.recordPullIntent('reg/cut:1');
  await first.recordPullIntent('reg/gone:1');
  t.same(files(dir, 'pulling').sort(), [cacheFilename('reg/cut:1'), cacheFilename('reg/gone:1')].sort());
  writeFileSync(join(dir, 'image_manager', 'pulled', 'sha256-garbage'), '{not json');

  const second = await open(dir, [{ id: 'sha256:reg/cut', tags: ['reg/cut:1'] }]);
  t.same(second.record('sha256:reg/app')?.credentialMapping['reg/app']?.kubernetesSecrets?.[0]?.name, 'regcred', 'read back');
  t.same(second.record('sha256:reg/cut')?.credentialMapping, {}, 'the cut pull\'s image: a record with no credentials');
  t.same(files(dir, 'pulling'), [cacheFilename('reg/gone:1')], 'its intent settled; the other (no such image) kept');
  t.equal(await second.mustAttemptImagePull('reg/cut:1', 'sha256:reg/cut', async () => []), true, 'verification forced');
  t.equal(await second.mustAttemptImagePull('reg/gone:1', 'sha256:reg/gone', async () => []), true, 'an intent alone counts as pulled by nodelet');
  t.equal(await second.mustAttemptImagePull('reg/app:1', 'sha256:reg/app', async () => [{ uid: 'u', namespace: 'team', name: 'regcred', credentialHash: 'h' }]), false);
});

t.test('concurrent pulls of one image keep its intent until the last ends; the image GC prunes records of images gone', async (t) => {
  const dir = t.testdir();
  const m = await open(dir);
  await m.recordPullIntent('reg/app:1');
  await m.recordPullIntent('reg/app:1');
  await m.recordImagePullFailed('reg/app:1');
  t.equal(files(dir, 'pulling').length, 1, 'one pull still in flight');
  await m.recordImagePulled('reg/app:1', 'sha256:a', { nodePodsAccessible: true });
  t.same(files(dir, 'pulling'), []);
  await m.recordImagePulled('reg/b:1', 'sha256:b', { nodePodsAccessible: true });
  await m.pruneUnknownRecords(['sha256:b'], new Date('2026-12-06T01:02:02Z'));
  t.ok(m.record('sha256:a'), 'updated after the GC began: kept');
  await m.pruneUnknownRecords(['sha256:b'], new Date('2026-12-07T00:00:00Z'));
  t.notOk(m.record('sha256:a'), 'gone from the node: pruned');
  t.notOk(existsSync(join(dir, 'image_manager', 'pulled', cacheFilename('sha256:a'))));
  t.ok(m.record('sha256:b'), 'still on the node: kept');
});
