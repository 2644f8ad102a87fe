import t from 'tap';
import { PolicyAuthorizer, PolicyError, parsePolicy } from '../../../src/auth/policy.js';
import type { Attributes, Subresource, Verb } from '../../../src/auth/types.js';
import { POLICY } from './fixtures/security.js';

const attrs = (name: string, groups: string[], verb: Verb, subresource: Subresource): Attributes => ({
  user: { name, uid: '', groups },
  verb,
  resource: 'nodes',
  name: 'node1',
  subresource,
  path: '/x',
});

t.test('rules grant by user or group, verb and nodes/<subresource>', async (t) => {
  const authz = new PolicyAuthorizer(parsePolicy(POLICY));
  t.ok(authz.authorize(attrs('root', ['system:masters'], 'create', 'proxy')));
  t.ok(authz.authorize(attrs('viewer', [], 'get', 'pods')));
  t.notOk(authz.authorize(attrs('viewer', [], 'create', 'pods')));
  t.notOk(authz.authorize(attrs('viewer', [], 'get', 'proxy')));
  t.ok(authz.authorize(attrs('prober', [], 'get', 'proxy')));
  t.notOk(authz.authorize(attrs('prober', [], 'create', 'proxy')));
  t.notOk(authz.authorize(attrs('system:anonymous', ['system:unauthenticated'], 'get', 'healthz')));
  const open = new PolicyAuthorizer(parsePolicy('rules: [{users: ["*"], verbs: [get], resources: [nodes/healthz]}]'));
  t.ok(open.authorize(attrs('system:anonymous', ['system:unauthenticated'], 'get', 'healthz')));
  t.equal(new PolicyAuthorizer([]).authorize(attrs('a', [], 'get', 'pods')), false, 'no rules: deny');
});

t.test('malformed policies are refused with a reason', async (t) => {
  for (const [text, why] of [
    ['[]', /mapping/],
    ['rules: {}', /"rules" must be a list/],
    ['rules: [{verbs: [get], resources: [nodes/pods]}]', /names no users or groups/],
    ['rules: [{users: [a], verbs: [list], resources: [nodes/pods]}]', /unsupported value "list"/],
    ['rules: [{users: [a], verbs: [get], resources: [pods]}]', /unsupported value "pods"/],
    ['rules: [{users: [a], verbs: [get], resources: [nodes/pods], namespaces: [x]}]', /unknown field "namespaces"/],
    ['rules: [{users: [a], resources: [nodes/pods]}]', /has no verbs/],
    ['rulez: []', /unknown field "rulez"/],
    ['rules: [', /YAML/],
  ] as const) {
    let caught: unknown;
    try {
      parsePolicy(text);
    } catch (err) {
      caught = err;
    }
    t.ok(caught instanceof PolicyError, `${text}: PolicyError`);
    t.throws(() => parsePolicy(text), why, text);
  }
  t.throws(() => PolicyAuthorizer.fromFile('/nonexistent/policy.yaml'), /cannot read authorization policy file/);
});
