import t from 'tap';
import type { Container } from '../../../src/api/types.js';
import { containerShouldRestart, matchingRestartRule } from '../../../src/api/restart.js';

const rule = (operator: string, values: number[]) => ({ action: 'Restart', exitCodes: { operator, values } });

t.test('containerShouldRestart: the pod\'s policy without a container-level one (pkg/api/v1/pod/util.go)', async (t) => {
  const c: Container = { name: 'c' };
  t.same([0, 1].map((code) => containerShouldRestart(c, { restartPolicy: 'Always' }, code)), [true, true]);
  t.same([0, 1].map((code) => containerShouldRestart(c, { restartPolicy: 'OnFailure' }, code)), [false, true]);
  t.same([0, 1].map((code) => containerShouldRestart(c, { restartPolicy: 'Never' }, code)), [false, false]);
  t.equal(containerShouldRestart(c, {}, 0), true, 'no policy at all: Always');
  t.equal(containerShouldRestart({ restartPolicyRules: [rule('In', [0])] }, { restartPolicy: 'Never' }, 0), false, 'rules are read only with the container\'s own policy');
});

t.test('containerShouldRestart: the container\'s policy overrides the pod\'s; a matching Restart rule overrides both', async (t) => {
  t.equal(containerShouldRestart({ restartPolicy: 'Never' }, { restartPolicy: 'Always' }, 1), false);
  t.equal(containerShouldRestart({ restartPolicy: 'Always' }, { restartPolicy: 'Never' }, 0), true);
  t.same([0, 3].map((code) => containerShouldRestart({ restartPolicy: 'OnFailure' }, { restartPolicy: 'Never' }, code)), [false, true]);
  const retry42: Container = { name: 'c', restartPolicy: 'Never', restartPolicyRules: [rule('In', [42, 50])] };
  t.same([42, 50, 1, 0].map((code) => containerShouldRestart(retry42, { restartPolicy: 'Never' }, code)), [true, true, false, false], 'In');
  const allBut0: Container = { name: 'c', restartPolicy: 'Never', restartPolicyRules: [rule('NotIn', [0])] };
  t.same([0, 1, 255].map((code) => containerShouldRestart(allBut0, { restartPolicy: 'Always' }, code)), [false, true, true], 'NotIn');
});

t.test('matchingRestartRule: the first rule that matches; unknown operators and rules without exit codes never do', async (t) => {
  const c: Container = { name: 'c', restartPolicyRules: [{ action: 'Restart' }, rule('Between', [1]), rule('In', [1]), rule('NotIn', [2])] };
  t.equal(matchingRestartRule(c, 1), c.restartPolicyRules?.[2]);
  t.equal(matchingRestartRule(c, 3), c.restartPolicyRules?.[3]);
  t.equal(matchingRestartRule(c, 2), undefined);
  t.equal(matchingRestartRule({}, 0), undefined);
});
