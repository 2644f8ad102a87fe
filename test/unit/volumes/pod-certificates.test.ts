import t from 'tap';
import { createPrivateKey, createPublicKey, verify } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { Pod } from 'kubernetes-types/core/v1.js';
import {
  cleanCertificateChain,
  generateKeyAndRequest,
  KEY_TYPES,
  MAX_CERTIFICATE_CHAIN_BYTES,
  MAX_JITTER_MS,
  podCertificateFiles,
  podCertificateRequest,
  refreshAt,
  requestOutcome,
} from '../../../src/volumes/pod-certificates.js';
import { encodeCertificatePem } from '../../../src/volumes/trust-anchors.js';

/** One DER TLV at `at`: where its contents start and end (short and long lengths). */
function tlv(der: Buffer, at: number): { start: number; end: number; next: number } {
  let len = der[at + 1] ?? 0;
  let start = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + (der[start + i] ?? 0);
    start += n;
  }
  return { start, end: start + len, next: start + len };
}

/**
 * The PKCS #10 request taken apart by hand (RFC 2986: SEQUENCE { info, algorithm, BIT STRING }),
 * independent of the library that built it: the signed bytes and the signature.
 */
function splitRequest(der: Buffer): { info: Buffer; signature: Buffer } {
  const outer = tlv(der, 0);
  const info = tlv(der, outer.start);
  const alg = tlv(der, info.next);
  const sig = tlv(der, alg.next);
  return { info: der.subarray(outer.start, info.end), signature: der.subarray(sig.start + 1, sig.end) };
}

/** The hash Go's x509 signs an empty request with for each key type (nothing for Ed25519). */
const hashOf: Record<string, string | null> = { RSA3072: 'sha256', RSA4096: 'sha256', ECDSAP256: 'sha256', ECDSAP384: 'sha384', ECDSAP521: 'sha512', ED25519: null };
const details: Record<string, Record<string, unknown>> = {
  RSA3072: { type: 'rsa', modulusLength: 3072 },
  RSA4096: { type: 'rsa', modulusLength: 4096 },
  ECDSAP256: { type: 'ec', namedCurve: 'prime256v1' },
  ECDSAP384: { type: 'ec', namedCurve: 'secp384r1' },
  ECDSAP521: { type: 'ec', namedCurve: 'secp521r1' },
  ED25519: { type: 'ed25519' },
};

t.test('every key type: a PKCS #8 key and an empty request signed by it, verifiable with crypto.verify', async (t) => {
  t.same([...KEY_TYPES].sort(), Object.keys(details).sort());
  for (const keyType of KEY_TYPES) {
    const { keyPem, stubPKCS10Request } = await generateKeyAndRequest(keyType);
    t.match(keyPem, /^-----BEGIN PRIVATE KEY-----\n[A-Za-z0-9+/=\n]+-----END PRIVATE KEY-----\n$/, `${keyType}: one PKCS #8 block`);
    const key = createPrivateKey(keyPem);
    const want = details[keyType] ?? {};
    t.equal(key.asymmetricKeyType, want.type, `${keyType}: key type`);
    if (want.modulusLength) t.equal(key.asymmetricKeyDetails?.modulusLength, want.modulusLength, `${keyType}: modulus`);
    if (want.namedCurve) t.equal(key.asymmetricKeyDetails?.namedCurve, want.namedCurve, `${keyType}: curve`);
    const publicKey = createPublicKey(key);
    const request = new x509.Pkcs10CertificateRequest(new Uint8Array(stubPKCS10Request));
    t.equal(request.subject, '', `${keyType}: empty subject`);
    t.equal(request.extensions.length, 0, `${keyType}: no extensions`);
    t.ok(Buffer.from(request.publicKey.rawData).equals(publicKey.export({ type: 'spki', format: 'der' })), `${keyType}: the request names the key's public half`);
    const { info, signature } = splitRequest(stubPKCS10Request);
    t.ok(verify(hashOf[keyType] ?? null, info, publicKey, signature), `${keyType}: the signature over the request info verifies with the public key`);
    const flipped = Buffer.from(info);
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] ?? 0) ^ 1;
    t.notOk(verify(hashOf[keyType] ?? null, flipped, publicKey, signature), `${keyType}: and not over other bytes`);
  }
});

t.test('an unknown key type is refused with the kubelet message', async (t) => {
  await t.rejects(generateKeyAndRequest('RSA2048'), { message: 'unknown key type "RSA2048"' });
});

const pod: Pod = { metadata: { name: 'p', namespace: 'ns', uid: 'pod-uid' }, spec: { serviceAccountName: 'sa', nodeName: 'n1', containers: [] } };

t.test('the PodCertificateRequest: every spec field, owned by the pod', async (t) => {
  const stub = Buffer.from([1, 2, 3]);
  const req = podCertificateRequest({ pod, serviceAccountUID: 'sa-uid', nodeName: 'n1', nodeUID: 'node-uid', stubPKCS10Request: stub, source: { signerName: 'x.example/s', keyType: 'ED25519', maxExpirationSeconds: 3600, userAnnotations: { 'x.example/a': 'b' } } });
  t.same(req, {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'PodCertificateRequest',
    metadata: { namespace: 'ns', generateName: 'req-', ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'pod-uid' }] },
    spec: { signerName: 'x.example/s', podName: 'p', podUID: 'pod-uid', serviceAccountName: 'sa', serviceAccountUID: 'sa-uid', nodeName: 'n1', nodeUID: 'node-uid', maxExpirationSeconds: 3600, stubPKCS10Request: 'AQID', unverifiedUserAnnotations: { 'x.example/a': 'b' } },
  });
  const bare = podCertificateRequest({ pod, serviceAccountUID: 'sa-uid', nodeName: 'n1', nodeUID: 'node-uid', stubPKCS10Request: stub, source: { signerName: 's/x', keyType: 'ED25519' } });
  t.notOk('maxExpirationSeconds' in (bare.spec ?? {}), 'left for the apiserver to default');
  t.notOk('unverifiedUserAnnotations' in (bare.spec ?? {}));
});

const der = (n: number) => Buffer.alloc(n, n);
const certA = encodeCertificatePem(der(40));
const certB = encodeCertificatePem(der(50));

t.test('what a status says', async (t) => {
  t.same(requestOutcome({}), { kind: 'pending' });
  t.same(requestOutcome({ status: { conditions: [{ type: 'SomethingElse', status: 'True' }] } }), { kind: 'pending' });
  t.same(requestOutcome({ status: { conditions: [{ type: 'Denied', status: 'True', reason: 'UnsupportedKeyType', message: 'use ED25519' }] } }), { kind: 'denied', reason: 'UnsupportedKeyType', message: 'use ED25519' });
  t.same(requestOutcome({ status: { conditions: [{ type: 'Failed', status: 'True', reason: 'R', message: 'M' }, { type: 'Denied', reason: 'x' }] } }), { kind: 'failed', reason: 'R', message: 'M' }, 'the first terminal condition wins');
  const chain = `junk before\n${certA.replace('-----\n', '-----\nProc-Type: 4,ENCRYPTED\n\n')}between\n${certB.replace(/CERTIFICATE/g, 'SOMETHING')}`;
  t.same(
    requestOutcome({ status: { conditions: [{ type: 'Issued', status: 'True' }], certificateChain: chain, beginRefreshAt: '2026-12-07T01:00:00Z', notAfter: '2026-12-07T02:00:00Z' } }),
    { kind: 'issued', certChain: certA + certB, beginRefreshAt: Date.parse('2026-12-07T01:00:00Z'), notAfter: Date.parse('2026-12-07T02:00:00Z') },
    'headers and text between blocks dropped, every block a CERTIFICATE, order kept',
  );
});

t.test('a chain past the cap is refused', async (t) => {
  const big = encodeCertificatePem(der(MAX_CERTIFICATE_CHAIN_BYTES));
  t.throws(() => cleanCertificateChain(big), /more than the 131072 bytes nodelet projects/);
  t.equal(cleanCertificateChain(certA), certA);
});

t.test('refresh time: beginRefreshAt plus up to 5 minutes', async (t) => {
  t.equal(refreshAt(1000, () => 0), 1000);
  t.equal(refreshAt(1000, () => 0.5), 1000 + MAX_JITTER_MS / 2);
  t.ok(refreshAt(1000, () => 0.999999) < 1000 + MAX_JITTER_MS);
});

t.test('the files: bundle is key then chain; key and chain alone where asked', async (t) => {
  const bundle = { keyPem: '-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n', certChain: certA + certB };
  const all = podCertificateFiles({ signerName: 's/x', keyType: 'ED25519', credentialBundlePath: 'b.pem', keyPath: 'k.pem', certificateChainPath: 'c.pem' }, bundle, 0o600, 1000);
  t.same([...all.keys()].sort(), ['b.pem', 'c.pem', 'k.pem']);
  t.same(all.get('b.pem'), { data: bundle.keyPem + bundle.certChain, mode: 0o600, fsUser: 1000 });
  t.same(all.get('k.pem'), { data: bundle.keyPem, mode: 0o600, fsUser: 1000 });
  t.same(all.get('c.pem'), { data: bundle.certChain, mode: 0o600, fsUser: 1000 });
  const one = podCertificateFiles({ signerName: 's/x', keyType: 'ED25519', credentialBundlePath: 'b.pem' }, bundle, 0o644);
  t.same([...one.entries()], [['b.pem', { data: bundle.keyPem + bundle.certChain, mode: 0o644 }]]);
});
