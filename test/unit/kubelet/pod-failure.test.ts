import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { failedStatus, nodeShutdown, shutdownGrace, shutdownPlan, deadlineExceeded } from '../../../src/kubelet/pod-failure.js';

const pod = (name: string, priority?: number, grace?: number): Pod => ({
  metadata: { name, uid: name, generation: 3 },
  spec: { containers: [], ...(priority !== undefined ? { priority } : {}), ...(grace !== undefined ? { terminationGracePeriodSeconds: grace } : {}) },
});

t.test('shutdownPlan: each pod in the highest group at or below its priority; below all, the first', async (t) => {
  const groups = [{ priority: 2_000_000_000, graceSeconds: 10 }, { priority: 0, graceSeconds: 20 }];
  const plan = shutdownPlan(groups, [pod('plain'), pod('negative', -5), pod('high', 1_000_000), pod('critical', 2_000_001_000)]);
  t.same(plan.map((g) => [g.group.priority, g.pods.map((p) => p.metadata?.name)]), [[0, ['plain', 'negative', 'high']], [2_000_000_000, ['critical']]]);
  t.same(shutdownPlan([], [pod('x')]), []);
});

t.test('shutdownGrace: the group\'s, or the pod\'s own when shorter', async (t) => {
  const g = { priority: 0, graceSeconds: 20 };
  t.same([shutdownGrace(pod('a', 0, 5), g), shutdownGrace(pod('b', 0, 30), g), shutdownGrace(pod('c'), g), shutdownGrace(pod('d', 0, 0), g)], [5, 20, 20, 0]);
});

t.test('failedStatus: Failed with the reason; a shutdown adds DisruptionTarget and keeps Succeeded', async (t) => {
  const generated = { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] };
  const shut = failedStatus(generated, nodeShutdown, pod('p'));
  t.same([shut.phase, shut.reason, shut.message], ['Failed', 'Terminated', 'Pod was terminated in response to imminent node shutdown.']);
  t.match(shut.conditions?.find((c) => c.type === 'DisruptionTarget'), { status: 'True', reason: 'TerminationByKubelet', observedGeneration: 3 });
  t.equal(failedStatus({ phase: 'Succeeded' }, nodeShutdown, pod('p')).phase, 'Succeeded', 'a pod that succeeded stays so');
  const deadline = failedStatus({ phase: 'Succeeded' }, deadlineExceeded, pod('p'));
  t.same([deadline.phase, deadline.conditions], ['Failed', undefined], 'the deadline: Failed, no disruption condition');
});
