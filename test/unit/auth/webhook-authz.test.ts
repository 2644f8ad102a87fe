import t, { type Test } from 'tap';
import { ApiserverClient } from '../../../src/auth/apiserver.js';
import { UnionAuthenticator } from '../../../src/auth/authenticator.js';
import { TokenFileAuthenticator } from '../../../src/auth/token-file.js';
import type { Attributes, Subresource, Verb } from '../../../src/auth/types.js';
import { WebhookTokenAuthenticator } from '../../../src/auth/webhook-authn.js';
import { WebhookAuthorizer } from '../../../src/auth/webhook-authz.js';
import { parseKubeconfig } from '../../../src/config/kubeconfig.js';
import { kubeconfigYaml, startFakeApiserver } from './fixtures/fake-apiserver.js';
import { TOKENS, app, secured } from './fixtures/security.js';

const attrs = (user: string, groups: string[], verb: Verb, subresource: Subresource, uid = ''): Attributes => ({
  user: { name: user, uid, groups },
  verb,
  resource: 'nodes',
  name: 'node1',
  subresource,
  path: '/x',
});

type Spec = { user?: string; groups?: string[]; resourceAttributes?: { verb?: string; subresource?: string } };
const rbac = (spec: Record<string, unknown>): boolean => {
  const s = spec as Spec;
  const ra = s.resourceAttributes ?? {};
  if (s.groups?.includes('system:masters') === true) return true;
  if (s.user === 'viewer') return ra.verb === 'get' && (ra.subresource === 'pods' || ra.subresource === 'stats');
  if (s.user === 'prober') return ra.verb === 'get' && ra.subresource === 'proxy';
  return false;
};

async function setup(t: Test, opts: { timeoutMs?: number; maxEntries?: number } = {}) {
  const api = await startFakeApiserver();
  t.teardown(() => api.close());
  api.allow = rbac;
  const client = new ApiserverClient(parseKubeconfig(kubeconfigYaml(api.url, {}, { token: 'nodelet-sa-token' }), '/'));
  t.teardown(() => client.close());
  let now = 5_000_000;
  const logs: object[] = [];
  const authz = new WebhookAuthorizer({
    client,
    authorizedTTLMs: 300_000,
    unauthorizedTTLMs: 30_000,
    now: () => now,
    log: { warn: (obj) => logs.push(obj) },
    ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}),
    ...(opts.maxEntries ? { maxEntries: opts.maxEntries } : {}),
  });
  return { api, client, authz, logs, advance: (ms: number) => (now += ms) };
}

t.test('the SubjectAccessReview sent: user, groups, uid, resourceAttributes on nodes/<sub> named after the node', async (t) => {
  const { api, authz } = await setup(t);
  t.equal(await authz.authorize(attrs('alice', ['system:masters', 'system:authenticated'], 'create', 'proxy', 'u1')), true);
  t.same(api.calls[0], {
    path: '/apis/authorization.k8s.io/v1/subjectaccessreviews',
    authorization: 'Bearer nodelet-sa-token',
    body: {
      apiVersion: 'authorization.k8s.io/v1',
      kind: 'SubjectAccessReview',
      spec: {
        user: 'alice',
        groups: ['system:masters', 'system:authenticated'],
        uid: 'u1',
        resourceAttributes: { verb: 'create', group: '', version: 'v1', resource: 'nodes', subresource: 'proxy', name: 'node1', namespace: '' },
      },
    },
  });
  t.equal(await authz.authorize(attrs('viewer', [], 'get', 'proxy')), false);
});

t.test('A7: allow cached 5 min, deny 30 s, keyed by user + groups + attributes', async (t) => {
  const { api, authz, advance } = await setup(t);
  const allow = attrs('viewer', ['system:authenticated'], 'get', 'pods');
  const deny = attrs('viewer', ['system:authenticated'], 'create', 'proxy');
  for (let i = 0; i < 5; i++) {
    t.equal(await authz.authorize(allow), true);
    t.equal(await authz.authorize(deny), false);
  }
  t.equal(api.count('SubjectAccessReview'), 2, 'one review per distinct request');

  // No cross-user (or cross-group, cross-verb, cross-subresource) reuse.
  t.equal(await authz.authorize(attrs('mallory', ['system:authenticated'], 'get', 'pods')), false, 'another user asks again (and is denied)');
  t.equal(await authz.authorize(attrs('viewer', ['system:authenticated', 'extra'], 'get', 'pods')), true);
  t.equal(await authz.authorize(attrs('viewer', ['system:authenticated'], 'get', 'stats')), true);
  t.equal(api.count('SubjectAccessReview'), 5);

  advance(29_999);
  await authz.authorize(deny);
  t.equal(api.count('SubjectAccessReview'), 5, 'deny still cached just before 30 s');
  advance(2);
  await authz.authorize(deny);
  t.equal(api.count('SubjectAccessReview'), 6, 'deny asked again after 30 s');
  await authz.authorize(allow);
  t.equal(api.count('SubjectAccessReview'), 6, 'allow still cached after 30 s');
  advance(300_000 - 30_001 - 1);
  await authz.authorize(allow);
  t.equal(api.count('SubjectAccessReview'), 6, 'allow cached just before 5 min');
  advance(2);
  await authz.authorize(allow);
  t.equal(api.count('SubjectAccessReview'), 7, 'allow asked again after 5 min');

  // A revoked permission is seen after the TTL.
  api.allow = () => false;
  advance(300_001);
  t.equal(await authz.authorize(allow), false);
});

t.test('bounded cache; concurrent identical checks share one review', async (t) => {
  const { api, authz } = await setup(t, { maxEntries: 50 });
  for (let i = 0; i < 200; i++) await authz.authorize(attrs(`user-${i}`, [], 'get', 'pods'));
  t.equal(authz.cacheSize, 50);
  const before = api.count('SubjectAccessReview');
  const all = await Promise.all(Array.from({ length: 20 }, () => authz.authorize(attrs('alice', ['system:masters'], 'get', 'pods'))));
  t.ok(all.every((a) => a === true));
  t.equal(api.count('SubjectAccessReview'), before + 1);
});

t.test('A3: error, garbage or timeout rejects (never allows) and is not cached', async (t) => {
  const { api, authz, logs } = await setup(t, { timeoutMs: 200 });
  const a = attrs('alice', ['system:masters'], 'create', 'proxy');
  for (const behaviour of ['error', 'garbage', 'hang'] as const) {
    api.behaviour = behaviour;
    await t.rejects(Promise.resolve(authz.authorize(a)), /SubjectAccessReview: /, behaviour);
  }
  api.behaviour = 'answer';
  t.equal(await authz.authorize(a), true, 'works again once the apiserver answers');
  t.equal(logs.length, 3);
});

t.test('in the filter: 403 as the kubelet, fine-grained fallback to proxy, 500 on error, 401 on authn error', async (t) => {
  const { api, client, authz } = await setup(t, { timeoutMs: 200 });
  const tokenWebhook = new WebhookTokenAuthenticator({ client, cacheTTLMs: 120_000, timeoutMs: 200 });
  api.tokens.set('hook-viewer', { username: 'viewer' });
  const { app: server, host } = app(
    secured({ authenticator: new UnionAuthenticator([TokenFileAuthenticator.fromText(TOKENS), tokenWebhook], false), authorizer: authz }),
  );
  t.teardown(() => server.close());
  const get = (url: string, token: string, method: 'GET' | 'POST' = 'GET') => server.inject({ method, url, headers: { authorization: `Bearer ${token}` } });

  const pods = await get('/pods', 'hook-viewer');
  t.equal(pods.statusCode, 200, 'a webhook-authenticated user with get nodes/pods reads /pods');
  const exec = await get('/exec/default/web/app?command=ls&output=1', 'hook-viewer', 'POST');
  t.equal(exec.statusCode, 403);
  t.equal(exec.body, 'Forbidden (user=viewer, verb=create, resource=nodes, subresource=proxy)\n');
  const sars = () => api.calls.filter((c) => c.body.kind === 'SubjectAccessReview').map((c) => {
    const ra = (c.body.spec as Spec).resourceAttributes;
    return `${(c.body.spec as Spec).user} ${ra?.verb} ${ra?.subresource}`;
  });
  t.same(sars(), ['viewer get pods', 'viewer create proxy']);

  // Fine-grained: get nodes/healthz denied → nodes/proxy asked next (prober has get nodes/proxy).
  t.equal((await get('/healthz', 'proxy-get-token')).statusCode, 200);
  t.same(sars().slice(-2), ['prober get healthz', 'prober get proxy']);

  // Outage: cached decisions still answer; anything new is 500 (authz) or 401 (authn) — never 200.
  api.behaviour = 'hang';
  t.equal((await get('/pods', 'hook-viewer')).statusCode, 200, 'cached allow and cached user');
  const hostCalls = host.calls.length;
  const failed = await get('/stats/summary', 'admin-token');
  t.equal(failed.statusCode, 500);
  t.equal(failed.body, 'Authorization error (user=admin, verb=get, resource=nodes, subresource=stats)\n');
  api.behaviour = 'error';
  const fresh = await get('/pods', 'hook-unknown');
  t.equal(fresh.statusCode, 401);
  t.equal(fresh.body, 'Unauthorized\n');
  const healthz = await get('/healthz', 'admin-token');
  t.equal(healthz.statusCode, 500, 'an error on the first subresource is a 500 at once, no fallback to an allow');
  t.match(healthz.body, /^Authorization error \(user=admin, verb=get, resource=nodes, subresource=healthz\)/);
  t.equal(host.calls.length, hostCalls, 'no handler ran for the failed requests');
});
