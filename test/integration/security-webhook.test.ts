import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'node:https';
import t from 'tap';
import { startTestNode } from '../helpers/nodelet.js';
import { makePki } from '../helpers/pki.js';
import { kubeconfigYaml, startFakeApiserver } from '../unit/auth/fixtures/fake-apiserver.js';

/**
 * A real nodelet (Docker-backed) with --kubeconfig, --authentication-token-webhook and
 * --authorization-mode=Webhook against a fake apiserver on 127.0.0.1 over HTTPS (its CA and a
 * client certificate from the kubeconfig): TokenReview for tokens, SubjectAccessReview for every
 * decision (exec needs create nodes/proxy), caching, and an outage that fails closed (A3, A6, A7).
 */

const pki = makePki(t);
const ca = pki.ca('api-ca');
const serving = pki.issue(ca, 'apiserver', '/CN=kube-apiserver', { serverIP: '127.0.0.1' });
const nodeCert = pki.issue(ca, 'node', '/CN=system:node:test/O=system:nodes');
const api = await startFakeApiserver({ cert: pki.read(serving.cert), key: pki.read(serving.key), ca: pki.read(ca.cert) });
t.teardown(() => api.close());
api.tokens.set('admin-token', { username: 'admin', uid: '1', groups: ['system:masters'] });
api.tokens.set('viewer-token', { username: 'viewer', uid: '2' });
api.tokens.set('late-token', { username: 'late' });
type Spec = { user?: string; groups?: string[]; resourceAttributes?: { verb?: string; resource?: string; subresource?: string; name?: string } };
api.allow = (spec) => {
  const s = spec as Spec;
  if (s.groups?.includes('system:masters') === true) return true;
  return s.user === 'viewer' && s.resourceAttributes?.verb === 'get' && s.resourceAttributes.subresource === 'pods';
};

const kubeconfig = join(pki.dir, 'kubeconfig');
await writeFile(kubeconfig, kubeconfigYaml(api.url, { 'certificate-authority': 'api-ca.crt' }, { 'client-certificate': nodeCert.cert, 'client-key': nodeCert.key }));

const node = await startTestNode(t, {
  kubeconfig,
  authenticationTokenWebhook: true,
  authorizationMode: 'Webhook',
  anonymousAuth: false,
});

function call(path: string, token?: string, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(node.url + path, { method, rejectUnauthorized: false, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}
const sars = () =>
  api.calls.filter((c) => c.body.kind === 'SubjectAccessReview').map((c) => {
    const s = c.body.spec as Spec;
    return `${s.user} ${s.resourceAttributes?.verb} ${s.resourceAttributes?.resource}/${s.resourceAttributes?.subresource} ${s.resourceAttributes?.name}`;
  });

t.test('TLS, and no credentials → 401 without asking the apiserver', async (t) => {
  t.match(node.url, /^https:\/\//, 'the token webhook turns TLS on');
  const res = await call('/pods');
  t.equal(res.status, 401);
  t.equal(res.body, 'Unauthorized\n');
  t.equal(api.calls.length, 0);
});

t.test('a token the webhook accepts reads /pods; reviews are cached', async (t) => {
  const first = await call('/pods', 'viewer-token');
  t.equal(first.status, 200, first.body);
  t.match(JSON.parse(first.body), { kind: 'PodList' });
  t.equal(api.count('TokenReview'), 1);
  t.same(sars(), [`viewer get nodes/pods ${node.nodeName}`], 'SAR for get nodes/pods named after the node');
  for (let i = 0; i < 5; i++) t.equal((await call('/pods', 'viewer-token')).status, 200);
  t.equal(api.count('TokenReview'), 1, 'TokenReview cached');
  t.equal(api.count('SubjectAccessReview'), 1, 'allow cached');
  t.equal((await call('/pods', 'wrong-token')).status, 401, 'a token the webhook rejects');
});

t.test('exec needs create nodes/proxy: a deny is the kubelet 403; an allow reaches the handler', async (t) => {
  const path = '/exec/default/nopod/app?command=ls&output=1';
  const denied = await call(path, 'viewer-token', 'POST');
  t.equal(denied.status, 403);
  t.equal(denied.body, 'Forbidden (user=viewer, verb=create, resource=nodes, subresource=proxy)\n');
  t.equal(sars().at(-1), `viewer create nodes/proxy ${node.nodeName}`);
  const getUpgrade = await call(path, 'viewer-token', 'GET');
  t.equal(getUpgrade.status, 403, 'a GET (WebSocket-style) exec also needs create');
  t.equal(api.count('SubjectAccessReview'), 2, 'the deny is cached too');

  const allowed = await call(path, 'admin-token', 'POST');
  t.notOk([401, 403, 500].includes(allowed.status), `admin passes the filter (${allowed.status} ${allowed.body.slice(0, 80)})`);
  t.equal(sars().at(-1), `admin create nodes/proxy ${node.nodeName}`);
});

t.test('A3: an apiserver outage fails closed — 500 for authorization, 401 for authentication, never an allow', async (t) => {
  api.behaviour = 'error';
  const authz = await call('/stats/summary', 'admin-token');
  t.equal(authz.status, 500);
  t.equal(authz.body, 'Authorization error (user=admin, verb=get, resource=nodes, subresource=stats)\n');
  const authn = await call('/pods', 'late-token');
  t.equal(authn.status, 401, 'an uncached token cannot be checked: 401');
  const exec = await call('/exec/default/nopod/app?command=ls&output=1', 'admin-token', 'PUT');
  t.notOk([401, 403, 500].includes(exec.status), `a cached token and allow (create nodes/proxy, whatever the method) still hold (${exec.status})`);

  api.behaviour = 'hang';
  const started = Date.now();
  const hung = await call('/metrics', 'admin-token');
  t.equal(hung.status, 500, 'a hung apiserver times out into a 500');
  t.ok(Date.now() - started < 15_000);

  api.behaviour = 'answer';
  t.equal((await call('/pods', 'late-token')).status, 403, 'recovers: late is authenticated, then denied get nodes/pods');
  t.equal((await call('/stats/summary', 'admin-token')).status, 200, 'errors were not cached');
});
