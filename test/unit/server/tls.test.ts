import { X509Certificate, createPrivateKey } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import t from 'tap';
import { selfSignedCertificate, subjectAltNames } from '../../../src/server/tls.js';

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
