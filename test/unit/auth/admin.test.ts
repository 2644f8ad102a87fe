import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_USER, securityFromConfig } from '../../../src/auth/index.js';
import { alwaysAllow, privilegedGroup, PolicyAuthorizer, parsePolicy } from '../../../src/auth/policy.js';
import { buildConfig, type Config } from '../../../src/config/index.js';
import { app } from './fixtures/security.js';

const HOST = { hostname: 'node1', interfaces: {} };
function config(argv: string[]): Config {
  const r = buildConfig(argv, {}, HOST);
  if ('help' in r) throw new Error('unexpected help');
  return r.config;
}
const TOKEN = 'generated-admin-token-0123456789';

t.test('the embedded default: the generated admin token authenticates as nodelet-admin (system:masters); anonymous and other tokens 401', async (t) => {
  const security = securityFromConfig(config([]), [], undefined, TOKEN);
  const { app: server } = app(security);
  t.teardown(() => server.close());
  const as = (authorization?: string) => server.inject({ method: 'GET', url: '/pods', headers: authorization ? { authorization } : {} });
  t.equal((await as()).statusCode, 401, 'anonymous');
  t.equal((await as('Bearer wrong-token')).statusCode, 401, 'another token');
  t.equal((await as(`Bearer ${TOKEN}`)).statusCode, 200, 'the admin token');
  const exec = await server.inject({ method: 'POST', url: '/run/default/web/app?cmd=true', headers: { authorization: `Bearer ${TOKEN}` } });
  t.not(exec.statusCode, 401);
  t.not(exec.statusCode, 403, 'the admin may run commands');
  t.same(ADMIN_USER, { name: 'nodelet-admin', uid: '', groups: ['system:masters'] });
});

t.test('the admin token goes with generatedCredentials, and only with it (fail closed)', async (t) => {
  t.throws(() => securityFromConfig(config([])), /generated admin token goes with generatedCredentials/);
  t.throws(() => securityFromConfig(config(['--insecure-dev']), [], undefined, TOKEN), /generated admin token goes with generatedCredentials/);
});

t.test('with a policy file the admin is allowed in front of it; everyone else is asked to the policy', async (t) => {
  const policy = join(t.testdir(), 'policy.yaml');
  writeFileSync(policy, 'rules:\n  - users: [viewer]\n    verbs: [get]\n    resources: [nodes/pods]\n');
  const c = config([`--authorization-policy-file=${policy}`]);
  t.equal(c.generatedCredentials, true);
  const { app: server } = app(securityFromConfig(c, [], undefined, TOKEN));
  t.teardown(() => server.close());
  const res = await server.inject({ method: 'POST', url: '/run/default/web/app?cmd=true', headers: { authorization: `Bearer ${TOKEN}` } });
  t.not(res.statusCode, 403, 'the admin passes a policy that does not name it');

  const next = new PolicyAuthorizer(parsePolicy('rules:\n  - users: [viewer]\n    verbs: [get]\n    resources: [nodes/pods]\n'));
  const guarded = privilegedGroup('system:masters', next);
  const attrs = (name: string, groups: string[], verb: 'get' | 'create', subresource: 'pods' | 'proxy') => ({ user: { name, uid: '', groups }, verb, resource: 'nodes' as const, name: 'node1', subresource, path: '/x' });
  t.equal(guarded.alwaysAllow, false);
  t.equal(guarded.authorize(attrs('a', ['system:masters'], 'create', 'proxy')), true, 'system:masters: everything');
  t.equal(guarded.authorize(attrs('viewer', [], 'get', 'pods')), true, 'others: the policy');
  t.equal(guarded.authorize(attrs('viewer', [], 'create', 'proxy')), false);
  t.equal(guarded.authorize(attrs('mallory', ['system:authenticated'], 'get', 'pods')), false);
  t.equal(privilegedGroup('system:masters', alwaysAllow), alwaysAllow, 'in front of AlwaysAllow it is AlwaysAllow');
});
