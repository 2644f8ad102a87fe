import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import { parseKubeconfig } from '../../../src/config/kubeconfig.js';
import { EmbeddedCredentialsError, adminKubeconfigPath, embeddedFiles, loadEmbeddedCredentials, writeAdminKubeconfig } from '../../../src/server/embedded.js';
import { selfSignedCertificate, servingCertificate, certificateAuthority } from '../../../src/server/tls.js';

const log = pino({ level: 'silent' });
const node = { nodeName: 'node1', nodeIP: '127.0.0.1', address: '127.0.0.1' };
const mode = (path: string) => statSync(path).mode & 0o777;

t.test('generated once: CA, serving certificate signed by it, admin token; modes 0600 on secrets; reused as they are', async (t) => {
  const certDir = join(t.testdir(), 'pki');
  const first = await loadEmbeddedCredentials({ ...node, certDir }, log);
  const files = embeddedFiles(certDir);
  t.same(files, {
    caCert: join(certDir, 'nodelet-ca.crt'),
    caKey: join(certDir, 'nodelet-ca.key'),
    cert: join(certDir, 'nodelet-server.crt'),
    key: join(certDir, 'nodelet-server.key'),
    token: join(certDir, 'admin-token'),
  });
  t.equal(mode(certDir), 0o700);
  for (const secret of [files.caKey, files.key, files.token]) t.equal(mode(secret), 0o600, `${secret} is 0600`);
  t.match(first.adminToken, /^[A-Za-z0-9_-]{43}$/, '256 random bits, base64url');
  t.equal(readFileSync(files.token, 'utf8'), `${first.adminToken}\n`);
  const ca = new X509Certificate(first.caCert);
  const leaf = new X509Certificate(first.tls.cert);
  t.ok(ca.ca && leaf.checkIssued(ca) && leaf.verify(ca.publicKey), 'the serving certificate chains to the CA');
  t.equal(first.tls.clientCA, undefined, 'no client certificates requested');

  const again = await loadEmbeddedCredentials({ ...node, certDir }, log);
  t.equal(again.caCert, first.caCert, 'the CA is reused');
  t.equal(again.adminToken, first.adminToken, 'the token is reused');
  t.same(again.tls.cert, first.tls.cert, 'the serving certificate is reused');
  t.same(again.tls.key, first.tls.key);
});

t.test('the serving certificate is re-issued from the same CA when missing, foreign or near its end', async (t) => {
  const certDir = t.testdir();
  const files = embeddedFiles(certDir);
  const first = await loadEmbeddedCredentials({ ...node, certDir }, log);
  const reissued = (c: { tls: { cert: Buffer } }) => !c.tls.cert.equals(first.tls.cert);

  rmSync(files.cert);
  const afterRemoval = await loadEmbeddedCredentials({ ...node, certDir }, log);
  t.ok(reissued(afterRemoval), 'missing: issued anew');
  t.equal(afterRemoval.caCert, first.caCert, 'same CA');

  const foreign = await selfSignedCertificate(node);
  writeFileSync(files.cert, foreign.cert);
  writeFileSync(files.key, foreign.key);
  const afterForeign = await loadEmbeddedCredentials({ ...node, certDir }, log);
  t.not(afterForeign.tls.cert.toString(), foreign.cert, 'a certificate the CA did not sign is replaced');
  t.ok(new X509Certificate(afterForeign.tls.cert).checkIssued(new X509Certificate(first.caCert)));

  const later = new Date(Date.now() + 340 * 24 * 3600_000);
  const nearEnd = await loadEmbeddedCredentials({ ...node, certDir }, log, later);
  t.ok(new Date(new X509Certificate(nearEnd.tls.cert).validTo) > new Date(later.getTime() + 300 * 24 * 3600_000), 'under 30 days left: renewed');
  t.equal(nearEnd.caCert, first.caCert);
  t.equal(nearEnd.adminToken, first.adminToken);
});

t.test('a CA or token that is there but unusable stops start-up with the file name and no secret', async (t) => {
  const setup = async () => {
    const certDir = t.testdir();
    const creds = await loadEmbeddedCredentials({ ...node, certDir }, log);
    return { certDir, files: embeddedFiles(certDir), creds };
  };
  const refused = async (certDir: string, re: RegExp, what: string) => {
    const err = await loadEmbeddedCredentials({ ...node, certDir }, log).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof EmbeddedCredentialsError, what);
    t.match((err as Error).message, re, what);
    return (err as Error).message;
  };

  let s = await setup();
  rmSync(s.files.caKey);
  await refused(s.certDir, /^found ".*nodelet-ca\.crt" but not ".*nodelet-ca\.key"; remove ".*nodelet-ca\.crt" to have nodelet generate a new one/, 'half a CA');

  s = await setup();
  writeFileSync(s.files.caCert, 'garbage');
  await refused(s.certDir, /nodelet-ca\.crt" is not a PEM certificate/, 'unreadable CA');

  s = await setup();
  const other = await certificateAuthority('x');
  writeFileSync(s.files.caKey, other.key);
  await refused(s.certDir, /nodelet-ca\.key" is not the key of/, 'the key of another CA');

  s = await setup();
  const notCA = await servingCertificate(node, { cert: s.creds.caCert, key: readFileSync(s.files.caKey, 'utf8') });
  writeFileSync(s.files.caCert, notCA.cert);
  writeFileSync(s.files.caKey, notCA.key);
  await refused(s.certDir, /is not a CA certificate/, 'a leaf as CA');

  s = await setup();
  const expired = await loadEmbeddedCredentials({ ...node, certDir: s.certDir }, log, new Date(Date.now() + 11 * 365 * 24 * 3600_000)).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.match((expired as Error).message, /the CA .* expired on/, 'an expired CA');

  s = await setup();
  writeFileSync(s.files.token, 'a b\n');
  const message = await refused(s.certDir, /admin-token" must hold one token of at least 16 visible ASCII characters/, 'a bad token file');
  t.notMatch(message, /a b/, 'the content is not quoted');
  writeFileSync(s.files.token, '  my-own-admin-token-0123\n');
  t.equal((await loadEmbeddedCredentials({ ...node, certDir: s.certDir }, log)).adminToken, 'my-own-admin-token-0123', 'a token of the operator\'s own choosing is kept');
});

t.test('writeAdminKubeconfig: <root-dir>/kubeconfig, 0600, the listener, the CA and the token; rewritten with a new port', async (t) => {
  const rootDir = join(t.testdir(), 'root');
  const creds = await loadEmbeddedCredentials({ ...node, certDir: join(rootDir, 'pki') }, log);
  const path = await writeAdminKubeconfig({ rootDir, address: '0.0.0.0', nodeName: 'node1' }, 10250, creds);
  t.equal(path, adminKubeconfigPath(rootDir));
  t.equal(path, join(rootDir, 'kubeconfig'));
  t.equal(mode(path), 0o600);
  const conn = parseKubeconfig(readFileSync(path, 'utf8'), rootDir);
  t.same(conn, { server: 'https://127.0.0.1:10250', insecureSkipTLSVerify: false, ca: Buffer.from(creds.caCert), token: creds.adminToken });
  await writeAdminKubeconfig({ rootDir, address: '::1', nodeName: 'node1' }, 10251, creds);
  t.equal(parseKubeconfig(readFileSync(path, 'utf8'), rootDir).server, 'https://[::1]:10251');
  t.equal(mode(path), 0o600);
});
