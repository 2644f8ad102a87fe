import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { isClientConfigStillValid, kubeconfigFromBootstrapping } from '../../../src/certificate/bootstrap.js';
import { parseKubeconfig } from '../../../src/config/kubeconfig.js';
import { createLogger } from '../../../src/logging/index.js';
import { certificateAuthority, selfSignedCertificate } from '../../../src/server/tls.js';

const log = createLogger({ verbosity: 0, format: 'json', destination: { write: () => undefined } as never });
const node = { nodeName: 'n1', nodeIP: '10.0.0.5', address: '0.0.0.0' };

t.test('the kubeconfig written at bootstrap: the bootstrap cluster, the current.pem as certificate and key', async (t) => {
  const ca = await certificateAuthority('cp');
  const text = kubeconfigFromBootstrapping({ server: 'https://10.0.0.1:6443', ca: Buffer.from(ca.cert), insecureSkipTLSVerify: false, token: 'abcdef.0123456789abcdef' }, '/var/lib/nodelet/pki/kubelet-client-current.pem');
  t.notMatch(text, /abcdef\.0123456789abcdef/, 'the bootstrap token is not copied');
  const reads: string[] = [];
  const conn = parseKubeconfig(text, '/', (p) => {
    reads.push(p);
    return Buffer.from('PEM');
  });
  t.equal(conn.server, 'https://10.0.0.1:6443');
  t.equal(conn.ca?.toString(), ca.cert);
  t.same(reads, ['/var/lib/nodelet/pki/kubelet-client-current.pem', '/var/lib/nodelet/pki/kubelet-client-current.pem'], 'certificate and key both from the current.pem');
  t.match(text, /current-context: default-context/);
  const insecure = kubeconfigFromBootstrapping({ server: 'https://h:1', insecureSkipTLSVerify: true, tlsServerName: 'api' }, '/p.pem');
  t.match(insecure, /insecure-skip-tls-verify: true/);
  t.match(insecure, /tls-server-name: api/);
});

t.test('isClientConfigStillValid: missing, token-only, unusable, expired, valid', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-bootstrap-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'kubeconfig');
  t.equal(await isClientConfigStillValid(path, log), false, 'missing: bootstrap');
  const write = (user: string) =>
    writeFile(path, `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]\nusers: [{name: u, user: ${user}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`);
  await write('{token: abc}');
  t.equal(await isClientConfigStillValid(path, log), false, 'no client certificate (kubelet: the same)');
  await write('{client-certificate: missing.pem, client-key: missing.pem}');
  t.equal(await isClientConfigStillValid(path, log), false, 'certificate file unreadable');
  const { cert, key } = await selfSignedCertificate(node);
  await writeFile(join(dir, 'c.pem'), cert + key);
  await write(`{client-certificate: ${join(dir, 'c.pem')}, client-key: ${join(dir, 'c.pem')}}`);
  t.equal(await isClientConfigStillValid(path, log), true, 'valid');
  t.equal(await isClientConfigStillValid(path, log, new Date(Date.now() + 400 * 24 * 3600_000)), false, 'expired (a year later)');
  await writeFile(path, 'kind: Nope');
  t.equal(await isClientConfigStillValid(path, log), false, 'a kubeconfig that does not parse: bootstrap');
});
