import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'node:https';
import t from 'tap';
import { BUSYBOX } from '../helpers/docker.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { startTestNode } from '../helpers/nodelet.js';
import { makePki } from '../helpers/pki.js';
import { upgradesDuring } from '../helpers/streaming-metrics.js';
import { POLICY, TOKENS } from '../unit/auth/fixtures/security.js';

/**
 * Real kubectl (1.27: SPDY; 1.33: WebSocket first) against a nodelet that authenticates:
 * HTTPS with a self-signed certificate nodelet generates itself, bearer tokens from
 * --token-auth-file, client certificates from --client-ca-file, rules from the policy file.
 */

const pki = makePki(t);
const ca = pki.ca('ca');
const otherCa = pki.ca('other-ca');
const admin = pki.issue(ca, 'admin', '/CN=root/O=system:masters');
const stranger = pki.issue(otherCa, 'stranger', '/CN=root/O=system:masters');
const tokenFile = join(pki.dir, 'tokens.csv');
const policyFile = join(pki.dir, 'policy.yaml');
await writeFile(tokenFile, TOKENS);
await writeFile(policyFile, POLICY);

const node = await startTestNode(t, {
  tokenAuthFile: tokenFile,
  clientCAFile: ca.cert,
  authorizationMode: 'Policy',
  authorizationPolicyFile: policyFile,
  anonymousAuth: false,
});

await node.writeManifest(
  'shell.yaml',
  `apiVersion: v1
kind: Pod
metadata: { name: shell }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: app
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sleep", "3600"]
`,
);

/** GET over https with the self-signed certificate accepted. */
function get(path: string, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(node.url + path, { rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const pod = await node.waitFor('shell running', async () => {
  const res = await get('/pods', 'admin-token');
  const list = JSON.parse(res.body) as { items: { metadata: { name: string }; status?: { containerStatuses?: { state?: { running?: unknown } }[] } }[] };
  const p = list.items.find((i) => i.metadata.name === `shell-${node.nodeName}`);
  return p?.status?.containerStatuses?.every((c) => c.state?.running) ? p.metadata.name : undefined;
}, 30_000);

t.test('curl-like: https only, and no credentials → 401', async (t) => {
  t.match(node.url, /^https:\/\//, 'TLS is served once credentials are configured');
  for (const path of ['/pods', '/healthz', '/api/v1/namespaces/default/pods', '/nope']) {
    const res = await get(path);
    t.equal(res.status, 401, path);
    t.equal(res.body, 'Unauthorized\n');
  }
});

// nodelet's own count of upgrades, read in process (the listener wants credentials).
const scrape = () => node.nodelet.metrics.registry.metrics();

for (const version of ['1.27', '1.33']) {
  // kubectl 1.33 falls back to SPDY if the WebSocket upgrade is refused: authenticated, it must not be.
  const session = version === '1.27' ? 'exec spdy v4.channel.k8s.io' : 'exec websocket v5.channel.k8s.io';
  t.test(`kubectl ${version}`, async (t) => {
    const asAdmin = await kubectlFor(t, version, node.url, 'default', { token: 'admin-token' });
    const list = await asAdmin.run('get', 'pods');
    t.equal(list.code, 0, list.stderr);
    t.match(list.stdout, pod);
    const { result: echo, upgrades } = await upgradesDuring(scrape, () => asAdmin.run('exec', pod, '-c', 'app', '--', 'echo', 'hi'));
    t.same(upgrades, { [session]: 1 }, `the bearer token's exec used ${session}`);
    t.equal(echo.code, 0, echo.stderr);
    t.equal(echo.stdout, 'hi\n');

    // `get nodes/proxy` reads, but cannot exec: the kubelet's hole, closed here.
    const prober = await kubectlFor(t, version, node.url, 'default', { token: 'proxy-get-token' });
    const got = await prober.run('get', 'pod', pod, '-o', 'name');
    t.equal(got.code, 0, got.stderr);
    const { result: refused, upgrades: none } = await upgradesDuring(scrape, () => prober.run('exec', pod, '-c', 'app', '--', 'echo', 'hi'));
    t.same(none, {}, 'no session was upgraded, on either transport');
    t.not(refused.code, 0);
    t.match(refused.stderr, /Forbidden \(user=prober, verb=create, resource=nodes, subresource=proxy\)/);
    t.equal(refused.stdout, '');

    const badToken = await kubectlFor(t, version, node.url, 'default', { token: 'not-a-token' });
    const denied = await badToken.run('get', 'pods');
    t.not(denied.code, 0);
    t.match(denied.stderr, /You must be logged in to the server/);

    const cert = await kubectlFor(t, version, node.url, 'default', { clientCertificate: admin.cert, clientKey: admin.key });
    const { result: viaCert, upgrades: certUpgrades } = await upgradesDuring(scrape, () => cert.run('exec', pod, '-c', 'app', '--', 'echo', 'cert'));
    t.same(certUpgrades, { [session]: 1 }, `the client certificate's exec used ${session}`);
    t.equal(viaCert.code, 0, viaCert.stderr);
    t.equal(viaCert.stdout, 'cert\n');

    const foreign = await kubectlFor(t, version, node.url, 'default', { clientCertificate: stranger.cert, clientKey: stranger.key });
    const notTrusted = await foreign.run('get', 'pods');
    t.not(notTrusted.code, 0, 'a certificate from another CA is refused');
    t.match(notTrusted.stderr, /You must be logged in to the server/);
  });
}
