import t from 'tap';
import { allowlistPattern, normalizedName, trimImageTagDigest, validateVerificationConfig } from '../../../src/config/image-credentials.js';
import { mergePulledRecord, mustAttemptImagePull, verificationEnforcer, WRITE_RECORD_WHILE_MATCHING_LIMIT, type ImagePulledRecord, type ImagePullSecretRef } from '../../../src/kubelet/pull-records.js';

/** The image pull manager's decisions (pkg/kubelet/images/pullmanager/image_pull_manager_test.go's cases). */

const NOW = '2026-12-06T00:00:00Z';
const secret = (name: string, hash = `hash-${name}`, uid = `uid-${name}`, namespace = 'team'): ImagePullSecretRef => ({ uid, namespace, name, credentialHash: hash });
const record = (mapping: ImagePulledRecord['credentialMapping']): ImagePulledRecord => ({ lastUpdatedTime: NOW, imageRef: 'sha256:img', credentialMapping: mapping });
const verifyPreloaded = verificationEnforcer('NeverVerifyPreloadedImages');
const pods = (...s: ImagePullSecretRef[]) => async () => s;
const notAsked = async (): Promise<ImagePullSecretRef[]> => {
  throw new Error('the pod\'s secrets were read though the decision does not need them');
};

t.test('trimImageTagDigest and normalizedName', async (t) => {
  t.equal(trimImageTagDigest('reg:5000/team/app:1.2'), 'reg:5000/team/app');
  t.equal(trimImageTagDigest('reg:5000/team/app'), 'reg:5000/team/app', 'a port is not a tag');
  t.equal(trimImageTagDigest('app:1@sha256:abcd'), 'app');
  t.equal(normalizedName('busybox'), 'docker.io/library/busybox');
  t.equal(normalizedName('team/app'), 'docker.io/team/app');
  t.equal(normalizedName('reg.example/app'), 'reg.example/app');
  t.equal(normalizedName('localhost/app'), 'localhost/app');
});

t.test('policies: NeverVerify, NeverVerifyPreloadedImages, AlwaysVerify, NeverVerifyAllowlistedImages', async (t) => {
  t.equal(verificationEnforcer('NeverVerify')('app:1', true), false);
  t.equal(verifyPreloaded('app:1', false), false, 'a preloaded image is not verified');
  t.equal(verifyPreloaded('app:1', true), true, 'one the kubelet pulled is');
  t.equal(verificationEnforcer('AlwaysVerify')('app:1', false), true);
  const allow = verificationEnforcer('NeverVerifyAllowlistedImages', ['reg.example/base', 'mirror.example/team/*', 'busybox']);
  t.equal(allow('reg.example/base:1', true), false, 'an exact name');
  t.equal(allow('reg.example/base2:1', false), true, 'not a prefix unless it says /*');
  t.equal(allow('mirror.example/team/x/y:3', false), false, 'a /* prefix');
  t.equal(allow('busybox:1.36', false), false, 'Docker Hub names compared normalized');
  t.equal(allow('other.example/app:1', false), true);
});

t.test('allowlist patterns and the configuration check, with the kubelet\'s messages', async (t) => {
  t.same(allowlistPattern('reg.example/team/*'), { pattern: 'reg.example/team/', prefix: true });
  t.throws(() => allowlistPattern(' reg.example/app'), /leading\/trailing spaces are not allowed/);
  t.throws(() => allowlistPattern('/*'), /at least registry hostname is required/);
  t.throws(() => allowlistPattern('reg.example/*/app'), /only patterns ending with '\/\*' are allowed/);
  t.throws(() => allowlistPattern('reg.example/app:1'), /neither tag nor digest is accepted/);
  t.throws(() => allowlistPattern('Reg Example'), /failed to parse as an image name/);
  t.equal(validateVerificationConfig('NeverVerifyPreloadedImages', []), undefined);
  t.match(validateVerificationConfig('AlwaysVerify', ['reg.example/app']), /can't set `preloadedImagesVerificationAllowlist`/);
  t.match(validateVerificationConfig('NeverVerifyAllowlistedImages', ['reg.example/app:1']), /invalid image pattern in `preloadedImagesVerificationAllowlist`: neither tag nor digest/);
  t.equal(validateVerificationConfig('NeverVerifyAllowlistedImages', ['reg.example/app', 'reg.example/team/*']), undefined);
});

t.test('mustAttemptImagePull', async (t) => {
  t.same(await mustAttemptImagePull('app:1', undefined, false, verifyPreloaded, notAsked), { pull: false }, 'preloaded, default policy: used as is');
  t.same(await mustAttemptImagePull('app:1', undefined, true, verifyPreloaded, notAsked), { pull: true }, 'an intent but no record: pull');
  t.same(await mustAttemptImagePull('app:1', record({}), true, verifyPreloaded, notAsked), { pull: true }, 'a record without this name: pull');
  t.same(await mustAttemptImagePull('app:2', record({ app: { nodePodsAccessible: true } }), true, verifyPreloaded, notAsked), { pull: false }, 'pulled anonymously under this name (any tag): anyone');
  t.same(await mustAttemptImagePull('other:1', record({ app: { nodePodsAccessible: true } }), true, verifyPreloaded, notAsked), { pull: true }, 'but not under another name');
  const bySecret = record({ app: { kubernetesSecrets: [secret('regcred')] } });
  t.same(await mustAttemptImagePull('app:1', bySecret, true, verifyPreloaded, pods()), { pull: true }, 'a pod without secrets');
  t.same(await mustAttemptImagePull('app:1', bySecret, true, verifyPreloaded, pods(secret('other'))), { pull: true }, 'a pod with another secret');
  t.same(await mustAttemptImagePull('app:1', bySecret, true, verifyPreloaded, pods(secret('regcred'))), { pull: false }, 'the same secret');
  const copy = secret('copy', 'hash-regcred', 'uid-copy', 'elsewhere');
  t.same(await mustAttemptImagePull('app:1', bySecret, true, verifyPreloaded, pods(secret('other'), copy)), { pull: false, learn: copy }, 'the same credentials in another secret: used, and learnt');
  const rotated = secret('regcred', 'hash-new');
  t.same(await mustAttemptImagePull('app:1', bySecret, true, verifyPreloaded, pods(rotated)), { pull: false, learn: rotated }, 'the same secret, rotated: used, and learnt');
  const emptyHash = record({ app: { kubernetesSecrets: [secret('regcred', '')] } });
  t.same(await mustAttemptImagePull('app:1', emptyHash, true, verifyPreloaded, pods(secret('x', ''))), { pull: true }, 'an empty hash never matches');
  const full = record({ app: { kubernetesSecrets: Array.from({ length: WRITE_RECORD_WHILE_MATCHING_LIMIT }, (_, i) => secret(`s${i}`, 'shared')) } });
  t.same(await mustAttemptImagePull('app:1', full, true, verifyPreloaded, pods(secret('new', 'shared'))), { pull: false }, 'a full record is not grown by matches');
  t.same(await mustAttemptImagePull('app:1', undefined, false, verificationEnforcer('AlwaysVerify'), notAsked), { pull: true }, 'AlwaysVerify: a preloaded image is pulled again');
});

t.test('mergePulledRecord', async (t) => {
  const fresh = mergePulledRecord(undefined, 'app:1', 'sha256:img', { kubernetesSecrets: [secret('a')] }, NOW);
  t.same(fresh, record({ app: { kubernetesSecrets: [secret('a')] } }));
  t.same(mergePulledRecord(undefined, 'app:1', 'sha256:img', undefined, NOW), record({}), 'unknown credentials: a record with no mapping');
  t.equal(mergePulledRecord(fresh, 'app:2', 'sha256:img', { kubernetesSecrets: [secret('a')] }, 'later'), fresh, 'nothing new: the same object');
  const two = mergePulledRecord(fresh, 'app:2', 'sha256:img', { kubernetesSecrets: [secret('0first', 'h', 'u', 'aaa')] }, 'later');
  t.same(two.credentialMapping.app?.kubernetesSecrets?.map((s) => `${s.namespace}/${s.name}`), ['aaa/0first', 'team/a'], 'sorted by namespace, name, uid');
  t.equal(two.lastUpdatedTime, 'later');
  const rotated = mergePulledRecord(fresh, 'app:1', 'sha256:img', { kubernetesSecrets: [secret('a', 'new')] }, 'later');
  t.same(rotated.credentialMapping.app?.kubernetesSecrets, [secret('a', 'new')], 'a rotated secret replaces its hash');
  const open = mergePulledRecord(fresh, 'app:1', 'sha256:img', { nodePodsAccessible: true }, 'later');
  t.same(open.credentialMapping.app, { nodePodsAccessible: true }, 'node-accessible replaces the secrets');
  t.equal(mergePulledRecord(open, 'app:1', 'sha256:img', { kubernetesSecrets: [secret('b')] }, 'later'), open, 'and stays');
  const other = mergePulledRecord(fresh, 'reg.example/other:1', 'sha256:img', { nodePodsAccessible: true }, 'later');
  t.same(Object.keys(other.credentialMapping).sort(), ['app', 'reg.example/other'], 'one mapping per name');
});
