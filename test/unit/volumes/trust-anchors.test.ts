import t from 'tap';
import {
  decodePemBlocks,
  encodeCertificatePem,
  labelMatcher,
  MAX_LABEL_SELECTOR_LENGTH,
  MAX_MERGED_BUNDLES,
  MAX_TRUST_ANCHORS_BYTES,
  normalizeTrustAnchors,
  selectBySigner,
  trustAnchorsOfBundle,
  trustAnchorsOfSigner,
  type ClusterTrustBundle,
} from '../../../src/volumes/trust-anchors.js';

/** A DER stand-in of `n` bytes (the normalizer never parses X.509). */
const der = (seed: string, n = 100) => Buffer.from(seed.repeat(Math.ceil(n / seed.length)).slice(0, n));
const pem = (bytes: Buffer, type = 'CERTIFICATE') => encodeCertificatePem(bytes).replaceAll('CERTIFICATE', type);
const ctb = (name: string, signerName: string, trustBundle: string, labels?: Record<string, string>): ClusterTrustBundle => ({
  metadata: { name, ...(labels ? { labels } : {}) },
  spec: { signerName, trustBundle },
});

t.test('PEM encoding as Go pem.EncodeToMemory: base64 lines of 64', async (t) => {
  const out = encodeCertificatePem(der('a', 60)); // 80 base64 characters
  const lines = out.split('\n');
  t.equal(lines[0], '-----BEGIN CERTIFICATE-----');
  t.equal(lines[1]?.length, 64);
  t.equal(lines[2]?.length, 16);
  t.equal(lines[3], '-----END CERTIFICATE-----');
  t.equal(lines[4], '', 'ends with a newline');
});

t.test('PEM decoding skips text between blocks, headers and broken blocks', async (t) => {
  const a = der('a');
  const b = der('b', 50);
  const text = [
    'junk before\n',
    pem(a),
    'text between\n',
    '-----BEGIN CERTIFICATE-----\nnot base64 !!!\n-----END CERTIFICATE-----\n',
    '-----BEGIN PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: x\n\n' + b.toString('base64') + '\n-----END PRIVATE KEY-----\n',
    '-----BEGIN CERTIFICATE-----\r\n' + a.toString('base64') + '\r\n-----END CERTIFICATE-----\r\n',
    '-----BEGIN CERTIFICATE-----\nno end',
  ].join('');
  const blocks = decodePemBlocks(text);
  t.same(
    blocks.map((x) => x.toString()),
    [a.toString(), b.toString(), a.toString()],
  );
  t.same(decodePemBlocks(''), []);
  t.same(decodePemBlocks('-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n').map((x) => x.length), [0], 'an empty block, as Go finds it');
});

t.test('normalization: deduplicated, every block a CERTIFICATE, one order per salt', async (t) => {
  const certs = ['a', 'b', 'c', 'd', 'e'].map((s) => der(s, 80));
  const salt = Buffer.from('salt-1');
  const first = normalizeTrustAnchors([pem(certs[0]!) + pem(certs[1]!), pem(certs[1]!) + pem(certs[2]!, 'TRUSTED CERTIFICATE'), pem(certs[3]!) + pem(certs[4]!) + pem(certs[0]!)], salt);
  const blocks = decodePemBlocks(first);
  t.equal(blocks.length, 5, 'each certificate once');
  t.same(new Set(blocks.map((b) => b.toString())), new Set(certs.map((c) => c.toString())));
  t.equal(first.match(/-----BEGIN CERTIFICATE-----/g)?.length, 5, 're-labelled CERTIFICATE');
  t.notMatch(first, /TRUSTED/);
  // The same set in another order, with the same salt: the same bytes (a refresh rewrites nothing).
  const again = normalizeTrustAnchors([certs.map((c) => pem(c)).reverse().join('')], salt);
  t.equal(again, first);
  // Another salt (another process) orders them otherwise for at least one of a few salts.
  const orders = new Set(['s2', 's3', 's4', 's5', 's6'].map((s) => normalizeTrustAnchors([first], Buffer.from(s))));
  t.ok(orders.size > 1, 'the order depends on the salt');
  t.equal(normalizeTrustAnchors([], salt), '');
  t.equal(normalizeTrustAnchors(['no pem at all'], salt), '');
});

t.test('label selectors: nil matches nothing, empty everything, matchLabels and expressions', async (t) => {
  t.equal(labelMatcher(undefined).matches({ a: '1' }), false);
  t.equal(labelMatcher({}).matches(undefined), true);
  t.equal(labelMatcher({}).text, '');
  const m = labelMatcher({ matchLabels: { 'signer.alive': 'true' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }, { key: 'gone', operator: 'DoesNotExist' }] });
  t.equal(m.text, 'gone,signer.alive=true,tier in (a,b)'.replace('gone', '!gone'));
  t.equal(m.matches({ 'signer.alive': 'true', tier: 'b' }), true);
  t.equal(m.matches({ 'signer.alive': 'true', tier: 'c' }), false);
  t.equal(m.matches({ 'signer.alive': 'true', tier: 'a', gone: '' }), false);
  t.equal(labelMatcher({ matchExpressions: [{ key: 'x', operator: 'NotIn', values: ['1'] }] }).matches({}), true, 'NotIn: a missing key satisfies it');
  t.equal(labelMatcher({ matchExpressions: [{ key: 'x', operator: 'Exists' }] }).matches({ x: '' }), true);
  t.throws(() => labelMatcher({ matchExpressions: [{ key: 'x', operator: 'Near' }] }), /"Near" is not a valid label selector operator/);
  t.throws(() => labelMatcher({ matchExpressions: [{ key: 'x', operator: 'In', values: [] }] }), /values set can't be empty/);
  t.throws(() => labelMatcher({ matchExpressions: [{ key: 'x', operator: 'Exists', values: ['1'] }] }), /values set must be empty/);
});

t.test('selection by signer: the signer and the labels must both match', async (t) => {
  const bundles = [
    ctb('one:1', 'test/one', 'p1', { 'signer.alive': 'true' }),
    ctb('one:6', 'test/one', 'p6', { 'signer.alive': 'false' }),
    ctb('one:0', 'test/one', 'p0'),
    ctb('plain.4', '', 'p4', { 'signer.alive': 'true' }),
    ctb('two:5', 'test/two', 'p5', { 'signer.alive': 'true' }),
  ];
  const names = (sel: Parameters<typeof selectBySigner>[2], signer = 'test/one') => selectBySigner(bundles, signer, sel).map((b) => b.metadata?.name);
  t.same(names({ matchLabels: { 'signer.alive': 'true' } }), ['one:1']);
  t.same(names({}), ['one:1', 'one:6', 'one:0'], 'empty selector: every bundle of the signer');
  t.same(names(undefined), [], 'nil selector: none');
  t.same(names({ matchLabels: { thismatches: 'nothing' } }), []);
  t.same(names({}, 'test/none'), []);
  const long = { matchLabels: Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`key-${i}-${'x'.repeat(40)}`, 'v'])) };
  t.throws(() => selectBySigner(bundles, 'test/one', long), new RegExp(`label selector length \\(\\d+\\) is larger than ${MAX_LABEL_SELECTOR_LENGTH}`));
});

t.test('files of a projection: optional, missing, merged, capped', async (t) => {
  const a = pem(der('a'));
  const b = pem(der('b'));
  t.equal(trustAnchorsOfBundle('x', undefined, true), '', 'optional and missing: an empty file');
  t.throws(() => trustAnchorsOfBundle('does-not-exist', undefined, false), { message: 'while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "does-not-exist" not found' });
  t.equal(trustAnchorsOfBundle('x', ctb('x', '', a + a), false), a, 'one bundle, deduplicated');
  t.equal(trustAnchorsOfSigner([], true), '');
  t.throws(() => trustAnchorsOfSigner([], false), { message: 'combination of signerName and labelSelector matched zero ClusterTrustBundles' });
  const merged = trustAnchorsOfSigner([ctb('1', 's', a), ctb('2', 's', b + a)], false);
  t.equal(decodePemBlocks(merged).length, 2);
  // The conformance spec's 150 bundles of one signer fit.
  const many = Array.from({ length: 150 }, (_, i) => ctb(`${i}`, 's', pem(der(`root${i}-`, 400))));
  t.equal(decodePemBlocks(trustAnchorsOfSigner(many, false)).length, 150);
  const tooMany = Array.from({ length: MAX_MERGED_BUNDLES + 1 }, (_, i) => ctb(`${i}`, 's', a));
  t.throws(() => trustAnchorsOfSigner(tooMany, false), /matched 1025 ClusterTrustBundles, more than the 1024 nodelet merges/);
  const big = Array.from({ length: 5 }, (_, i) => ctb(`${i}`, 's', pem(der(`big${i}`, 900 * 1024))));
  t.throws(() => trustAnchorsOfSigner(big, false), new RegExp(`more than the ${MAX_TRUST_ANCHORS_BYTES} nodelet projects into one file`));
});
