import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync } from 'node:crypto';
import t from 'tap';
import * as x509 from '@peculiar/x509';
import type { CertificateSigningRequest } from 'kubernetes-types/certificates/v1.js';
import {
  CLIENT_SIGNER,
  CLIENT_USAGES,
  CertificateRequestError,
  SERVING_SIGNER,
  SERVING_USAGES,
  addressesToSANs,
  compatibleRequest,
  csrObject,
  digestedName,
  issuedCertificate,
  newKeyAndRequest,
  nodeTemplate,
} from '../../../src/certificate/csr.js';

t.test('the client CSR: ECDSA P-256 key, subject O=system:nodes CN=system:node:<node>, no SANs, signed by its key', async (t) => {
  const template = nodeTemplate('node-1');
  const { keyPem, requestPem, publicKeyDer } = await newKeyAndRequest(template);
  t.match(keyPem, /^-----BEGIN EC PRIVATE KEY-----\n/, 'SEC1, as keyutil writes it');
  const key = createPrivateKey(keyPem);
  t.equal(key.asymmetricKeyType, 'ec');
  t.equal(key.asymmetricKeyDetails?.namedCurve, 'prime256v1');
  t.same(createPublicKey(key).export({ type: 'spki', format: 'der' }), publicKeyDer, 'publicKeyDer is the key\'s');
  const request = new x509.Pkcs10CertificateRequest(requestPem);
  t.equal(request.subject, 'O=system:nodes, CN=system:node:node-1');
  t.ok(await request.verify(), 'self-signed by the key');
  t.same(Buffer.from(request.publicKey.rawData), publicKeyDer);
  t.equal(request.extensions.length, 0, 'no SAN extension for a client certificate');
});

t.test('the serving CSR carries the node\'s addresses as SANs', async (t) => {
  const sans = addressesToSANs([
    { type: 'InternalIP', address: '10.0.0.5' },
    { type: 'Hostname', address: 'worker-1' },
    { type: 'ExternalIP', address: '2001:db8::1' },
    { type: 'InternalDNS', address: 'worker-1.internal' },
    { type: 'InternalIP', address: '10.0.0.5' },
    { type: 'InternalIP', address: 'not-an-ip' },
    { type: 'Hostname', address: '' },
  ]);
  t.same(sans, { dnsNames: ['worker-1', 'worker-1.internal'], ipAddresses: ['10.0.0.5', '2001:db8::1'] }, 'hostnames and DNS names, IPs; duplicates and junk dropped');
  const { requestPem } = await newKeyAndRequest(nodeTemplate('worker-1', sans));
  const request = new x509.Pkcs10CertificateRequest(requestPem);
  const san = request.extensions.find((e): e is x509.SubjectAlternativeNameExtension => e instanceof x509.SubjectAlternativeNameExtension);
  t.same(san?.names.items.map((n) => `${n.type}:${n.value}`), ['dns:worker-1', 'dns:worker-1.internal', 'ip:10.0.0.5', 'ip:2001:db8::1']);
});

t.test('usages and signers: ECDSA keys ask for no key encipherment', async (t) => {
  t.same(CLIENT_USAGES, ['digital signature', 'client auth']);
  t.same(SERVING_USAGES, ['digital signature', 'server auth']);
  t.equal(CLIENT_SIGNER, 'kubernetes.io/kube-apiserver-client-kubelet');
  t.equal(SERVING_SIGNER, 'kubernetes.io/kubelet-serving');
});

t.test('a key given is reused (a restarted bootstrap keeps its CSR name); another kind of key is refused', async (t) => {
  const first = await newKeyAndRequest(nodeTemplate('n'));
  const again = await newKeyAndRequest(nodeTemplate('n'), first.keyPem);
  t.same(again.publicKeyDer, first.publicKeyDer);
  t.equal(again.keyPem, first.keyPem);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  await t.rejects(newKeyAndRequest(nodeTemplate('n'), rsa), /not ECDSA P-256/);
});

t.test('digestedName: node-csr- and SHA-512/256 over base64url fields each ended by |, as bootstrap.go', async (t) => {
  const pub = Buffer.from('public-key-bytes');
  const b64 = (s: Buffer | string) => Buffer.from(s).toString('base64url');
  const expected = createHash('sha512-256')
    .update(`${b64(pub)}|${b64('system:node:n1')}|${b64('system:nodes')}|${b64('digital signature')}|${b64('client auth')}|`)
    .digest('base64url');
  const name = digestedName(pub, nodeTemplate('n1'), CLIENT_USAGES);
  t.equal(name, `node-csr-${expected}`);
  t.match(name, /^node-csr-[A-Za-z0-9_-]{43}$/, 'a valid object name');
  t.not(digestedName(pub, nodeTemplate('n1x'), CLIENT_USAGES), name, 'the CN counts');
  t.not(digestedName(pub, { commonName: 'system:node:n', organizations: ['1system:nodes'] }, CLIENT_USAGES), digestedName(pub, { commonName: 'system:node:n1', organizations: ['system:nodes'] }, CLIENT_USAGES), 'the delimiter keeps fields apart');
});

t.test('csrObject: certificates.k8s.io/v1, base64 request, generateName unless named, expirationSeconds only when asked', async (t) => {
  const obj = csrObject({ requestPem: 'PEM', signerName: SERVING_SIGNER, usages: SERVING_USAGES });
  t.same(obj, {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: { generateName: 'csr-' },
    spec: { request: Buffer.from('PEM').toString('base64'), signerName: SERVING_SIGNER, usages: ['digital signature', 'server auth'] },
  });
  const named = csrObject({ name: 'node-csr-x', requestPem: 'PEM', signerName: CLIENT_SIGNER, usages: CLIENT_USAGES, expirationSeconds: 600 });
  t.same(named.metadata, { name: 'node-csr-x' });
  t.equal(named.spec.expirationSeconds, 600);
});

const csr = (status: CertificateSigningRequest['status']): CertificateSigningRequest => ({ spec: { request: '', signerName: CLIENT_SIGNER }, ...(status ? { status } : {}) });

t.test('issuedCertificate: pending, approved without a certificate, issued, denied, failed', async (t) => {
  t.equal(issuedCertificate(csr(undefined)), undefined, 'pending');
  t.equal(issuedCertificate(csr({ conditions: [{ type: 'Approved', status: 'True' }] })), undefined, 'approved, not signed yet');
  t.equal(issuedCertificate(csr({ conditions: [{ type: 'Approved', status: 'True' }], certificate: Buffer.from('CERT').toString('base64') })), 'CERT');
  t.equal(issuedCertificate(csr({ certificate: Buffer.from('CERT').toString('base64') })), undefined, 'a certificate without approval is not taken');
  t.throws(() => issuedCertificate(csr({ conditions: [{ type: 'Denied', status: 'True', reason: 'Nope', message: 'not you' }] })), new CertificateRequestError('certificate signing request is denied, reason: Nope, message: not you'));
  t.throws(() => issuedCertificate(csr({ conditions: [{ type: 'Failed', status: 'True', reason: 'SignerError' }] })), /failed, reason: SignerError/);
});

t.test('compatibleRequest: the same key, signer and usages; not another key', async (t) => {
  const mine = await newKeyAndRequest(nodeTemplate('n'));
  const other = await newKeyAndRequest(nodeTemplate('n'));
  const existing = csrObject({ name: 'x', requestPem: mine.requestPem, signerName: CLIENT_SIGNER, usages: CLIENT_USAGES });
  t.ok(compatibleRequest(existing, mine.publicKeyDer, CLIENT_SIGNER, [...CLIENT_USAGES].reverse()), 'usage order does not matter');
  t.notOk(compatibleRequest(existing, other.publicKeyDer, CLIENT_SIGNER, CLIENT_USAGES), 'another key');
  t.notOk(compatibleRequest(existing, mine.publicKeyDer, SERVING_SIGNER, CLIENT_USAGES), 'another signer');
  t.notOk(compatibleRequest(existing, mine.publicKeyDer, CLIENT_SIGNER, SERVING_USAGES), 'other usages');
  t.notOk(compatibleRequest({ ...existing, spec: { ...existing.spec, request: 'garbage' } }, mine.publicKeyDer, CLIENT_SIGNER, CLIENT_USAGES), 'an unparsable request');
});
