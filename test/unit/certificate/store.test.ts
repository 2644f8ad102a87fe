import { X509Certificate } from 'node:crypto';
import { lstat, mkdtemp, readFile, readdir, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CertificateFileError, CertificateStore, parsePair, storeTimestamp } from '../../../src/certificate/store.js';
import { selfSignedCertificate } from '../../../src/server/tls.js';

const node = { nodeName: 'n1', nodeIP: '10.0.0.5', address: '0.0.0.0' };

t.test('storeTimestamp: Go\'s 2006-01-02-15-04-05, UTC', async (t) => {
  t.equal(storeTimestamp(new Date('2026-03-04T05:06:07.890Z')), '2026-03-04-05-06-07');
});

t.test('parsePair: the leaf and its key, from one file or two; mismatches and junk refused', async (t) => {
  const a = await selfSignedCertificate(node);
  const b = await selfSignedCertificate(node);
  const pair = parsePair(a.cert + a.key);
  const leaf = new X509Certificate(a.cert);
  t.equal(pair.serial, leaf.serialNumber);
  t.same(pair.notAfter, new Date(leaf.validTo));
  t.same(pair.notBefore, new Date(leaf.validFrom));
  t.equal(pair.certPem, a.cert);
  t.same(parsePair(a.cert, a.key), pair, 'two files');
  t.throws(() => parsePair(a.cert, b.key), new CertificateFileError('the private key does not match the certificate'));
  t.throws(() => parsePair(a.key), /no PEM certificate/);
  t.throws(() => parsePair(a.cert), /no PEM private key/);
  t.throws(() => parsePair('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n' + a.key), /does not parse/);
  t.throws(() => parsePair(a.cert + '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n'), new CertificateFileError('the private key does not parse'), 'never quoting the key');
});

t.test('the store writes <prefix>-<timestamp>.pem (cert then key, 0600) and swaps <prefix>-current.pem', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-store-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const store = new CertificateStore(join(dir, 'pki'), 'kubelet-client');
  t.equal(await store.current(), undefined, 'none yet');
  const a = await selfSignedCertificate(node);
  const first = await store.update(a.cert, a.key, new Date('2026-12-01T10:00:00Z'));
  const firstFile = join(dir, 'pki', 'kubelet-client-2026-12-01-10-00-00.pem');
  t.equal(await readlink(store.currentPath), firstFile, 'current links to the timestamped file');
  t.equal(await readFile(firstFile, 'utf8'), a.cert + a.key, 'certificate, then key');
  t.equal((await lstat(firstFile)).mode & 0o777, 0o600);
  t.equal((await store.current())?.serial, first.serial);

  const b = await selfSignedCertificate(node);
  const second = await store.update(b.cert, b.key, new Date('2026-12-01T11:00:00Z'));
  t.equal(await readlink(store.currentPath), join(dir, 'pki', 'kubelet-client-2026-12-01-11-00-00.pem'));
  t.equal((await store.current())?.serial, second.serial);
  t.same((await readdir(join(dir, 'pki'))).sort(), ['kubelet-client-2026-12-01-10-00-00.pem', 'kubelet-client-2026-12-01-11-00-00.pem', 'kubelet-client-current.pem'], 'the old file stays; no -updated.pem left');

  await t.rejects(store.update(a.cert, b.key), /does not match/, 'a mismatched pair is refused before anything is written');
  t.equal((await store.current())?.serial, second.serial);

  await writeFile(join(dir, 'pki', 'kubelet-client-2026-12-01-11-00-00.pem'), 'junk');
  await t.rejects(store.current(), /kubelet-client-current.pem: no PEM certificate/, 'an unusable current file is an error naming it');
});
