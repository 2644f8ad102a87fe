import t from 'tap';
import { makeContainerName, makeSandboxName, parseContainerName } from '../../../src/runtime/docker/naming.js';
import { hashContainer } from '../../../src/runtime/hash.js';

const parts = { pod: 'web-node1', namespace: 'default', uid: '0123abcd' };

t.test('dockershim names round-trip', async (t) => {
  t.equal(makeContainerName('app', parts, 3), 'k8s_app_web-node1_default_0123abcd_3');
  t.equal(makeSandboxName(parts, 0), 'k8s_POD_web-node1_default_0123abcd_0');
  t.same(parseContainerName('/k8s_app_web-node1_default_0123abcd_3'), { container: 'app', ...parts, attempt: 3 });
  t.same(parseContainerName('k8s_app_web-node1_default_0123abcd_3_1a2b3c4d')?.attempt, 3, 'random suffix accepted');
});

t.test('foreign names are not parsed', async (t) => {
  for (const name of ['/nginx', '/k8s_a_b_c_d', '/k8s_a_b_c_d_e_f_g', '/xyz_a_b_c_d_1', '/k8s_a_b_c_d_-1', '/k8s_a_b_c_d_1x', '/k8s_a_b_c_d_99999999999']) {
    t.equal(parseContainerName(name), undefined, name);
  }
});

t.test('container hash ignores key order and changes with the spec', async (t) => {
  t.equal(hashContainer({ name: 'a', image: 'i', command: ['x'] }), hashContainer({ command: ['x'], image: 'i', name: 'a' }));
  t.not(hashContainer({ name: 'a', image: 'i' }), hashContainer({ name: 'a', image: 'j' }));
  t.match(hashContainer({ name: 'a', image: 'i' }), /^[0-9a-f]{1,8}$/);
});

t.test('a parsed name is remembered: the same frozen result for the same name, every relist', async (t) => {
  const name = '/k8s_app_web_default_uid-1_3';
  const first = parseContainerName(name);
  t.same(first, { container: 'app', pod: 'web', namespace: 'default', uid: 'uid-1', attempt: 3 });
  t.equal(parseContainerName(name), first, 'the same object');
  t.ok(Object.isFrozen(first), 'frozen, so no caller can change what the next one gets');
  t.equal(parseContainerName('/not_k8s'), undefined);
  t.equal(parseContainerName('/not_k8s'), undefined, 'a foreign name stays foreign');
});
