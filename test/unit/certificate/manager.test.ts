import t from 'tap';
import * as x509 from '@peculiar/x509';
import { webcrypto } from 'node:crypto';
import { nodeTemplate } from '../../../src/certificate/csr.js';
import { satisfiesTemplate } from '../../../src/certificate/manager.js';

const crypto = webcrypto as unknown as Crypto;
const alg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

async function certFor(subject: x509.JsonName, sans: { type: 'dns' | 'ip'; value: string }[]): Promise<string> {
  const keys = await webcrypto.subtle.generateKey(alg, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    { serialNumber: '01', name: subject, notBefore: new Date(), notAfter: new Date(Date.now() + 3600_000), keys, signingAlgorithm: alg, extensions: sans.length ? [new x509.SubjectAlternativeNameExtension(sans)] : [] },
    crypto,
  );
  return cert.toString('pem');
}

t.test('satisfiesTemplate: CN, organizations and every SAN asked for', async (t) => {
  const subject: x509.JsonName = [{ O: ['system:nodes'] }, { CN: ['system:node:w1'] }];
  const serving = await certFor(subject, [{ type: 'dns', value: 'w1' }, { type: 'ip', value: '10.0.0.5' }, { type: 'ip', value: '2001:db8::1' }]);
  t.ok(satisfiesTemplate(serving, nodeTemplate('w1', { dnsNames: ['w1'], ipAddresses: ['10.0.0.5', '2001:db8::1'] })));
  t.ok(satisfiesTemplate(serving, nodeTemplate('w1', { dnsNames: ['w1'], ipAddresses: ['10.0.0.5'] })), 'a subset of the SANs');
  t.notOk(satisfiesTemplate(serving, nodeTemplate('w1', { dnsNames: ['w1'], ipAddresses: ['10.0.0.6'] })), 'a new node address: renew');
  t.notOk(satisfiesTemplate(serving, nodeTemplate('w1', { dnsNames: ['w2'] })), 'another hostname');
  t.notOk(satisfiesTemplate(serving, nodeTemplate('w2')), 'another node');
  const client = await certFor([{ CN: ['system:node:w1'] }], []);
  t.notOk(satisfiesTemplate(client, nodeTemplate('w1')), 'the organization missing');
  t.ok(satisfiesTemplate(await certFor(subject, []), nodeTemplate('w1')), 'a client certificate');
  t.notOk(satisfiesTemplate('not a certificate', nodeTemplate('w1')));
});
