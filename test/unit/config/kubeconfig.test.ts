import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { KubeconfigError, loadKubeconfig, loopbackServerURL, parseKubeconfig, renderKubeconfig } from '../../../src/config/kubeconfig.js';

const files: Record<string, string> = { '/kc/ca.crt': 'CA-PEM', '/kc/token': 'file-token\n', '/abs/client.crt': 'CERT', '/kc/client.key': 'KEY' };
const read = (p: string): Buffer => {
  const v = files[p];
  if (v === undefined) throw Object.assign(new Error('nope'), { code: 'ENOENT' });
  return Buffer.from(v);
};
const kc = (cluster: Record<string, unknown>, user: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    'current-context': 'ctx',
    contexts: [{ name: 'other', context: { cluster: 'x', user: 'x' } }, { name: 'ctx', context: { cluster: 'c', user: 'u' } }],
    clusters: [{ name: 'c', cluster }],
    users: [{ name: 'u', user }],
    ...extra,
  });
const parse = (text: string) => parseKubeconfig(text, '/kc', read);

t.test('current context: server, CA (file relative to the kubeconfig, or data), token, client certificate', async (t) => {
  t.same(parse(kc({ server: 'https://10.0.0.1:6443/', 'certificate-authority': 'ca.crt' }, { tokenFile: 'token' })), {
    server: 'https://10.0.0.1:6443',
    insecureSkipTLSVerify: false,
    ca: Buffer.from('CA-PEM'),
    token: 'file-token',
  });
  const c = parse(
    kc(
      { server: 'https://api.example:6443', 'certificate-authority-data': Buffer.from('CA2').toString('base64'), 'tls-server-name': 'kubernetes' },
      { 'client-certificate': '/abs/client.crt', 'client-key': 'client.key', token: 'inline' },
    ),
  );
  t.same([c.ca?.toString(), c.tlsServerName, c.clientCert?.toString(), c.clientKey?.toString(), c.token], ['CA2', 'kubernetes', 'CERT', 'KEY', 'inline']);
  t.same(parse(kc({ server: 'https://h', 'insecure-skip-tls-verify': true })), { server: 'https://h', insecureSkipTLSVerify: true });
  // YAML, without current-context but a single context.
  const yaml = 'apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:8080\ncontexts:\n- name: only\n  context: {cluster: c}\n';
  t.same(parse(yaml), { server: 'http://127.0.0.1:8080', insecureSkipTLSVerify: false });
});

t.test('refused: clear-text off loopback, plugins, missing pieces; messages never quote a credential', async (t) => {
  const bad = (text: string, re: RegExp) => t.throws(() => parse(text), re);
  bad(kc({ server: 'http://10.0.0.1:8080' }), /plain http:\/\/ server is only allowed on a loopback address/);
  bad(kc({ server: 'ftp://h' }), /server must be https/);
  bad(kc({}), /has no server/);
  bad(kc({ server: 'https://h' }, { exec: { command: 'x' } }), /"exec" is not supported/);
  bad(kc({ server: 'https://h' }, { username: 'a', password: 'secret-pw' }), /"username" is not supported/);
  bad(kc({ server: 'https://h' }, { 'client-key': 'client.key' }), /client certificate and client key must be given together/);
  bad(kc({ server: 'https://h', 'certificate-authority': 'missing.crt' }), /cannot read certificate authority "\/kc\/missing.crt": ENOENT/);
  bad(kc({ server: 'https://h', 'insecure-skip-tls-verify': true, 'certificate-authority': 'ca.crt' }), /mutually exclusive/);
  bad(kc({ server: 'https://h' }, {}, { 'current-context': 'gone' }), /context "gone" not found/);
  bad('kind: Pod\n', /unsupported kind "Pod"/);
  bad('a: [', /YAML/);
  try {
    parse(kc({ server: 'https://user:secret-pw@h' }, { token: 'tok-secret' }));
    t.fail('credentials in the URL accepted');
  } catch (err) {
    t.ok(err instanceof KubeconfigError);
    t.notMatch((err as Error).message, /secret/);
  }
});

t.test('loadKubeconfig names the file and resolves relative paths against its directory', async (t) => {
  const dir = t.testdir({ 'ca.crt': 'PEM' });
  const path = join(dir, 'kubeconfig');
  writeFileSync(path, kc({ server: 'https://h', 'certificate-authority': 'ca.crt' }));
  t.equal(loadKubeconfig(path).ca?.toString(), 'PEM');
  t.throws(() => loadKubeconfig(join(dir, 'nope')), /cannot read kubeconfig/);
  writeFileSync(path, kc({}));
  t.throws(() => loadKubeconfig(path), new RegExp(`kubeconfig ".*kubeconfig": cluster "c" has no server`));
});

t.test('renderKubeconfig: one cluster with the CA embedded, one token user, one context; parseKubeconfig reads it back', async (t) => {
  const caPem = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
  const text = renderKubeconfig({ name: 'node1', server: 'https://127.0.0.1:10250', caPem, token: 'tok_123-abc' });
  t.match(text, /^apiVersion: v1\nkind: Config\n/);
  t.match(text, /current-context: node1\n/);
  t.match(text, /namespace: default\n/, 'kubectl get pods lists the default namespace');
  t.same(parseKubeconfig(text, '/nowhere', read), { server: 'https://127.0.0.1:10250', insecureSkipTLSVerify: false, ca: Buffer.from(caPem), token: 'tok_123-abc' });
  t.throws(() => renderKubeconfig({ name: 'n', server: 'http://127.0.0.1:1', caPem, token: 't' }), /server must be https:\/\//);
  t.throws(() => renderKubeconfig({ name: 'n', server: 'https://127.0.0.1:1', caPem, token: '' }), /token must be non-empty/);
  t.throws(() => renderKubeconfig({ name: 'n', server: 'https://127.0.0.1:1', caPem, token: 'a b' }), /no whitespace/);
  t.throws(() => renderKubeconfig({ name: 'n', server: 'https://127.0.0.1:1', caPem: 'junk', token: 't' }), /PEM certificate/);

  t.equal(loopbackServerURL('127.0.0.1', 10250), 'https://127.0.0.1:10250');
  t.equal(loopbackServerURL('0.0.0.0', 1), 'https://127.0.0.1:1', 'an unspecified address is reached on loopback');
  t.equal(loopbackServerURL('::', 1), 'https://127.0.0.1:1');
  t.equal(loopbackServerURL('::1', 2), 'https://[::1]:2', 'IPv6 in brackets');
  t.equal(loopbackServerURL('10.0.0.5', 3), 'https://10.0.0.5:3', 'a specific address as it is');
  t.equal(loopbackServerURL('localhost', 4), 'https://localhost:4');
});
