import { X509Certificate, createPrivateKey } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import t from 'tap';
import { CA_VALIDITY_MS, certificateAuthority, selfSignedCertificate, servingCertificate, subjectAltNames } from '../../../src/server/tls.js';

t.test('the self-signed serving certificate is made without the openssl CLI: CN, SANs, serverAuth, its own key', async (t) => {
  const now = new Date('2026-12-01T10:00:00Z');
  const { cert, key } = await selfSignedCertificate({ nodeName: 'node1', nodeIP: '10.0.0.5', address: '0.0.0.0' }, now);
  const c = new X509Certificate(cert);
  t.equal(c.subject, `CN=node1@${Math.floor(now.getTime() / 1000)}`, "the kubelet's <host>@<unix time>");
  t.equal(c.subjectAltName, 'DNS:node1, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:10.0.0.5');
  t.equal(c.ca, false);
  t.same(c.keyUsage, ['1.3.6.1.5.5.7.3.1'], 'extendedKeyUsage serverAuth');
  t.ok(c.verify(c.publicKey), 'self-signed');
  t.ok(c.checkPrivateKey(createPrivateKey(key)), 'the key is the certificate’s');
  t.ok(new Date(c.validTo) > new Date(now.getTime() + 364 * 24 * 3600_000), 'valid for a year');
  t.doesNotThrow(() => createSecureContext({ cert, key }), 'usable by node:tls');
  const other = await selfSignedCertificate({ nodeName: 'node1', nodeIP: '', address: '127.0.0.1' }, now);
  t.not(new X509Certificate(other.cert).serialNumber, c.serialNumber, 'random serial numbers');
});

t.test('subjectAltNames: no unspecified bind address, no duplicates', async (t) => {
  t.same(subjectAltNames({ nodeName: 'n', nodeIP: '127.0.0.1', address: '::' }), ['DNS:n', 'DNS:localhost', 'IP:127.0.0.1', 'IP:::1']);
});

t.test('the embedded default CA signs a serving certificate that verifies against it (no openssl CLI)', async (t) => {
  const now = new Date('2026-12-01T10:00:00Z');
  const ca = await certificateAuthority('node1', now);
  const caCert = new X509Certificate(ca.cert);
  t.equal(caCert.subject, `CN=node1-ca@${Math.floor(now.getTime() / 1000)}`, "the kubelet's <host>-ca@<unix time>");
  t.equal(caCert.ca, true);
  t.ok(caCert.verify(caCert.publicKey), 'self-signed');
  t.ok(caCert.checkPrivateKey(createPrivateKey(ca.key)));
  t.ok(new Date(caCert.validTo).getTime() >= now.getTime() + CA_VALIDITY_MS - 1000, 'valid for ten years');

  const leaf = await servingCertificate({ nodeName: 'node1', nodeIP: '10.0.0.5', address: '127.0.0.1' }, ca, now);
  const c = new X509Certificate(leaf.cert);
  t.equal(c.ca, false);
  t.equal(c.issuer, caCert.subject);
  t.ok(c.checkIssued(caCert), 'issued by the CA');
  t.ok(c.verify(caCert.publicKey), 'signed with the CA key');
  t.notOk(c.verify(c.publicKey), 'not self-signed');
  t.ok(c.checkPrivateKey(createPrivateKey(leaf.key)));
  t.equal(c.subjectAltName, 'DNS:node1, DNS:localhost, IP Address:127.0.0.1, IP Address:0:0:0:0:0:0:0:1, IP Address:10.0.0.5');
  t.same(c.keyUsage, ['1.3.6.1.5.5.7.3.1'], 'extendedKeyUsage serverAuth');
  t.ok(c.checkIP('127.0.0.1'), 'valid for the kubeconfig server address');
  t.doesNotThrow(() => createSecureContext({ cert: leaf.cert, key: leaf.key, ca: ca.cert }), 'usable by node:tls');
});
