import t from 'tap';
import type { Container, Pod } from '../../../src/api/types.js';
import { containerOOMScoreAdjust, isNodeCriticalPod, settableOOMScore } from '../../../src/cgroups/oom-score.js';

const GiB = 1024n ** 3n;
const c = (name: string, resources: Container['resources'], restartPolicy?: string): Container => ({ name, resources, ...(restartPolicy ? { restartPolicy } : {}) });
const pod = (containers: Container[], init: Container[] = [], extra: Partial<NonNullable<Pod['spec']>> = {}, annotations?: Record<string, string>): Pod => ({
  metadata: { uid: 'u', ...(annotations ? { annotations } : {}) },
  spec: { containers, initContainers: init, ...extra },
});

t.test('GetContainerOOMScoreAdjust by class (pkg/kubelet/qos/policy.go)', async (t) => {
  const g = pod([c('a', { limits: { cpu: '1', memory: '1Gi' } })]);
  t.equal(containerOOMScoreAdjust(g, g.spec!.containers[0]!, 10n * GiB), -997, 'Guaranteed');
  const be = pod([c('a', {})]);
  t.equal(containerOOMScoreAdjust(be, be.spec!.containers[0]!, 10n * GiB), 1000, 'BestEffort');
  const b = pod([c('a', { requests: { memory: '1Gi' } }), c('b', { requests: { cpu: '100m' } })]);
  t.equal(containerOOMScoreAdjust(b, b.spec!.containers[0]!, 10n * GiB), 900, 'Burstable: 1000 - 1000 x 1Gi / 10Gi');
  t.equal(containerOOMScoreAdjust(b, b.spec!.containers[1]!, 10n * GiB), 999, 'Burstable without a memory request: 999, above no BestEffort');
  const huge = pod([c('a', { requests: { memory: '10Gi' }, limits: { memory: '20Gi' } })]);
  t.equal(containerOOMScoreAdjust(huge, huge.spec!.containers[0]!, 10n * GiB), 3, 'clamped to 3, above Guaranteed');
});

t.test('a sidecar scores no higher than the smallest regular container', async (t) => {
  const p = pod([c('a', { requests: { memory: '2Gi' } }), c('b', { requests: { memory: '4Gi' } })], [c('s', { requests: { memory: '1Gi' } }, 'Always')]);
  t.equal(containerOOMScoreAdjust(p, p.spec!.initContainers![0]!, 10n * GiB), 800, 'min(900, 800)');
});

t.test('pod-level requests: what no container claims is shared out', async (t) => {
  const p = pod([c('a', { requests: { memory: '1Gi' } }), c('b', {})], [], { resources: { requests: { memory: '5Gi' }, limits: { memory: '8Gi' } } });
  // (5Gi - 1Gi) / 2 containers = 2Gi each: a counts 3Gi (700), b 2Gi (800).
  t.same(p.spec!.containers.map((x) => containerOOMScoreAdjust(p, x, 10n * GiB)), [700, 800]);
});

t.test('node-critical pods score as Guaranteed whatever their class', async (t) => {
  const p = pod([c('a', {})], [], { priorityClassName: 'system-node-critical', priority: 2_000_001_000 });
  t.ok(isNodeCriticalPod(p));
  t.equal(containerOOMScoreAdjust(p, p.spec!.containers[0]!, GiB), -997);
  const staticPod = pod([c('a', {})], [], { priorityClassName: 'system-node-critical' }, { 'kubernetes.io/config.source': 'file' });
  t.ok(isNodeCriticalPod(staticPod), 'a static pod of that class');
  t.notOk(isNodeCriticalPod(pod([c('a', {})], [], { priorityClassName: 'system-node-critical' })), 'the class alone, from the API at a low priority, is not');
});

t.test('without CAP_SYS_RESOURCE negative scores become 0', async (t) => {
  t.same([settableOOMScore(-997, false), settableOOMScore(-998, true), settableOOMScore(500, false)], [0, -998, 500]);
});
