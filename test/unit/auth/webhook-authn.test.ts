import type { IncomingMessage } from 'node:http';
import t, { type Test } from 'tap';
import { ApiserverClient } from '../../../src/auth/apiserver.js';
import { UnionAuthenticator } from '../../../src/auth/authenticator.js';
import { TokenFileAuthenticator } from '../../../src/auth/token-file.js';
import { WebhookTokenAuthenticator } from '../../../src/auth/webhook-authn.js';
import { parseKubeconfig } from '../../../src/config/kubeconfig.js';
import { makePki } from '../../helpers/pki.js';
import { kubeconfigYaml, startFakeApiserver } from './fixtures/fake-apiserver.js';

const req = (authorization?: string) => ({ headers: authorization === undefined ? {} : { authorization }, socket: {} }) as unknown as IncomingMessage;

async function setup(t: Test, opts: { ttl?: number; maxEntries?: number; timeoutMs?: number } = {}) {
  const api = await startFakeApiserver();
  t.teardown(() => api.close());
  api.tokens.set('webhook-token', { username: 'carol', uid: '42', groups: ['dev'] });
  api.tokens.set('other-token', { username: 'dave' });
  const client = new ApiserverClient(parseKubeconfig(kubeconfigYaml(api.url, {}, { token: 'nodelet-sa-token' }), '/'));
  t.teardown(() => client.close());
  let now = 1_000_000;
  const logs: { obj: object; msg: string }[] = [];
  const authn = new WebhookTokenAuthenticator({
    client,
    cacheTTLMs: opts.ttl ?? 120_000,
    now: () => now,
    log: { warn: (obj, msg) => logs.push({ obj, msg }) },
    ...(opts.maxEntries ? { maxEntries: opts.maxEntries } : {}),
    ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
  });
  return { api, authn, logs, advance: (ms: number) => (now += ms) };
}

t.test('TokenReview: the request sent, the user returned, no token → no opinion', async (t) => {
  const { api, authn } = await setup(t);
  t.same(await authn.authenticate(req('Bearer webhook-token')), { ok: true, user: { name: 'carol', uid: '42', groups: ['dev'] } });
  t.equal(api.calls.length, 1);
  const call = api.calls[0];
  t.equal(call?.path, '/apis/authentication.k8s.io/v1/tokenreviews');
  t.equal(call?.authorization, 'Bearer nodelet-sa-token', "nodelet's own kubeconfig credential");
  t.same(call?.body, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token: 'webhook-token' } });
  t.same(await authn.authenticate(req('Bearer unknown')), { ok: false, error: 'invalid bearer token' });
  t.same(authn.authenticate(req()), { ok: false }, 'no bearer token: no opinion, no review');
  t.same(authn.authenticate(req('Basic eDp5')), { ok: false });
  t.equal(api.calls.length, 2);
});

t.test('A6/A7: answers cached for the TTL (2 min default), per token, then asked again', async (t) => {
  const { api, authn, advance } = await setup(t);
  for (let i = 0; i < 5; i++) t.equal((await authn.authenticate(req('Bearer webhook-token'))).ok, true);
  for (let i = 0; i < 3; i++) t.equal((await authn.authenticate(req('Bearer unknown'))).ok, false);
  t.equal(api.count('TokenReview'), 2, 'one review per token, success and failure both cached');
  const other = await authn.authenticate(req('Bearer other-token'));
  t.same(other.ok && other.user.name, 'dave', 'another token is its own cache entry');
  t.equal(api.count('TokenReview'), 3);
  advance(119_999);
  await authn.authenticate(req('Bearer webhook-token'));
  t.equal(api.count('TokenReview'), 3, 'still cached just before 2 min');
  advance(2);
  await authn.authenticate(req('Bearer webhook-token'));
  t.equal(api.count('TokenReview'), 4, 'asked again after 2 min');
});

t.test('concurrent requests with one token share one review; TTL 0 caches nothing', async (t) => {
  const { api, authn } = await setup(t, { ttl: 0 });
  const all = await Promise.all(Array.from({ length: 10 }, () => authn.authenticate(req('Bearer webhook-token'))));
  t.ok(all.every((r) => r.ok));
  t.equal(api.count('TokenReview'), 1);
  await authn.authenticate(req('Bearer webhook-token'));
  t.equal(api.count('TokenReview'), 2);
  t.equal(authn.cacheSize, 0);
});

t.test('bounded cache: the least recently used token is dropped; only digests are kept', async (t) => {
  const { api, authn } = await setup(t, { maxEntries: 3 });
  for (const tok of ['a', 'b', 'c']) await authn.authenticate(req(`Bearer ${tok}`));
  await authn.authenticate(req('Bearer a')); // a is now the most recent
  await authn.authenticate(req('Bearer d')); // evicts b
  t.equal(authn.cacheSize, 3);
  const before = api.count('TokenReview');
  await authn.authenticate(req('Bearer a'));
  t.equal(api.count('TokenReview'), before, 'a still cached');
  await authn.authenticate(req('Bearer b'));
  t.equal(api.count('TokenReview'), before + 1, 'b was evicted');
  // Many distinct tokens stay within the bound.
  const big = await setup(t, { maxEntries: 100 });
  for (let i = 0; i < 300; i++) await big.authn.authenticate(req(`Bearer tok-${i}`));
  t.equal(big.authn.cacheSize, 100);
});

t.test('A3: an apiserver error, garbage or timeout → not authenticated (401), not cached, logged without the token', async (t) => {
  const { api, authn, logs } = await setup(t, { timeoutMs: 200 });
  api.behaviour = 'error';
  const r = await authn.authenticate(req('Bearer webhook-token'));
  t.equal(r.ok, false);
  t.match(!r.ok && r.error, /token webhook: .*answered 500/);
  api.behaviour = 'garbage';
  t.match(await authn.authenticate(req('Bearer webhook-token')), { ok: false, error: /not JSON/ });
  api.behaviour = 'hang';
  const started = Date.now();
  t.match(await authn.authenticate(req('Bearer webhook-token')), { ok: false, error: /no answer within 200 ms/ });
  t.ok(Date.now() - started < 2000, 'bounded by the timeout');
  api.behaviour = 'answer';
  t.equal((await authn.authenticate(req('Bearer webhook-token'))).ok, true, 'errors are not cached: works once the apiserver is back');
  t.equal(logs.length, 3);
  t.notMatch(JSON.stringify(logs), /webhook-token|nodelet-sa-token/, 'no token in the logs');
});

t.test('in the union: the token file first, then the webhook; a webhook error never becomes anonymous', async (t) => {
  const { api, authn } = await setup(t);
  const union = new UnionAuthenticator([TokenFileAuthenticator.fromText('file-token,frank,7\n'), authn], true);
  t.same(union.authenticate(req()), { ok: true, user: { name: 'system:anonymous', uid: '', groups: ['system:unauthenticated'] } }, 'synchronous when no review is needed');
  t.match(await union.authenticate(req('Bearer file-token')), { ok: true, user: { name: 'frank' } });
  t.equal(api.calls.length, 0, 'a token from the file never reaches the apiserver');
  t.same(await union.authenticate(req('Bearer webhook-token')), { ok: true, user: { name: 'carol', uid: '42', groups: ['dev', 'system:authenticated'] } });
  t.match(await union.authenticate(req('Bearer nope')), { ok: false, error: /invalid bearer token/ });
  api.behaviour = 'error';
  t.match(await union.authenticate(req('Bearer fresh-token')), { ok: false, error: /token webhook/ }, 'anonymous on, yet an error is a 401');
});

t.test('HTTPS: CA from the kubeconfig, client certificate, wrong CA refused', async (t) => {
  const pki = makePki(t);
  const ca = pki.ca('api-ca');
  const serving = pki.issue(ca, 'api', '/CN=apiserver', { serverIP: '127.0.0.1' });
  const clientCert = pki.issue(ca, 'nodelet', '/CN=system:node:n1/O=system:nodes');
  const api = await startFakeApiserver({ cert: pki.read(serving.cert), key: pki.read(serving.key), ca: pki.read(ca.cert) });
  t.teardown(() => api.close());
  api.tokens.set('webhook-token', { username: 'carol' });
  const yaml = kubeconfigYaml(api.url, { 'certificate-authority': ca.cert }, { 'client-certificate-data': pki.read(clientCert.cert).toString('base64'), 'client-key': clientCert.key });
  const client = new ApiserverClient(parseKubeconfig(yaml, '/'));
  t.teardown(() => client.close());
  const authn = new WebhookTokenAuthenticator({ client, cacheTTLMs: 1000 });
  t.match(await authn.authenticate(req('Bearer webhook-token')), { ok: true, user: { name: 'carol' } });

  const other = pki.ca('other-ca');
  const wrong = new ApiserverClient(parseKubeconfig(kubeconfigYaml(api.url, { 'certificate-authority': other.cert }, { 'client-certificate': clientCert.cert, 'client-key': clientCert.key }), '/'));
  t.teardown(() => wrong.close());
  const refused = await new WebhookTokenAuthenticator({ client: wrong, cacheTTLMs: 1000 }).authenticate(req('Bearer webhook-token'));
  t.match(refused, { ok: false, error: /token webhook: .*(CERT|SIGNATURE|ISSUER|self)/i }, 'an untrusted apiserver certificate is an error');
  t.equal(api.count('TokenReview'), 1);
});
