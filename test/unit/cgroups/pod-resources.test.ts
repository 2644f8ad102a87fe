import t from 'tap';
import type { Container, Pod } from '../../../src/api/types.js';
import { milliCPUToQuota, milliCPUToShares, podCgroupPath, podCgroupResources, podCPURequestMilli, sharesToWeight } from '../../../src/cgroups/pod-resources.js';

type Res = Container['resources'];
const c = (name: string, resources: Res, restartPolicy?: string): Container => ({ name, resources, ...(restartPolicy ? { restartPolicy } : {}) });
const pod = (containers: Container[], init: Container[] = [], extra: Partial<NonNullable<Pod['spec']>> = {}): Pod => ({ metadata: { uid: 'u1' }, spec: { containers, initContainers: init, ...extra } });
const opts = { podPidsLimit: -1 };
const Mi = (n: number) => BigInt(n) * 1024n * 1024n;

t.test('MilliCPUToShares and MilliCPUToQuota as pkg/kubelet/cm/helpers_linux.go', async (t) => {
  t.same([0n, 1n, 2n, 100n, 1000n, 1500n, 300_000n].map(milliCPUToShares), [2, 2, 2, 102, 1024, 1536, 262144]);
  t.same([0n, 1n, 10n, 100n, 250n, 2000n].map((m) => milliCPUToQuota(m)), [0, 1000, 1000, 10000, 25000, 200000]);
  t.same([2, 1024, 262144].map(sharesToWeight), [1, 39, 10000], 'cgroup v2 weights as runc converts');
});

t.test('Guaranteed: shares, quota, period and memory from the summed limits', async (t) => {
  const p = pod([c('a', { limits: { cpu: '200m', memory: '64Mi' } }), c('b', { limits: { cpu: '300m', memory: '32Mi' } })]);
  t.same(podCgroupResources(p, opts), { qos: 'Guaranteed', cpuShares: 512, cpuQuota: 50000, cpuPeriod: 100000, memoryLimit: Mi(96) });
  t.same(podCgroupResources(p, { podPidsLimit: 100 }).pidsLimit, 100, 'podPidsLimit');
  t.equal(podCgroupResources(p, { podPidsLimit: 100, enforceCPULimits: false }).cpuQuota, -1, 'cpuCFSQuota off: unlimited quota');
});

t.test('Burstable: a limit only when every container sets it', async (t) => {
  const partial = pod([c('a', { requests: { cpu: '100m', memory: '32Mi' }, limits: { memory: '128Mi' } }), c('b', { requests: { cpu: '50m' } })]);
  t.same(podCgroupResources(partial, opts), { qos: 'Burstable', cpuShares: 153 }, 'neither cpu nor memory limited by every container');
  const memoryEverywhere = pod([c('a', { requests: { cpu: '100m' }, limits: { memory: '128Mi' } }), c('b', { limits: { memory: '64Mi' } })]);
  t.same(podCgroupResources(memoryEverywhere, opts), { qos: 'Burstable', cpuShares: 102, memoryLimit: Mi(192) }, 'memory limited by both');
});

t.test('BestEffort: the floor of 2 shares and nothing else', async (t) => {
  t.same(podCgroupResources(pod([c('a', {})]), { podPidsLimit: 10 }), { qos: 'BestEffort', cpuShares: 2, pidsLimit: 10 });
});

t.test('init containers and sidecars: the largest need while any init container runs', async (t) => {
  // Regular 100m; sidecar s 50m runs beside everything; init i 400m runs after s started: 450m peak.
  const p = pod([c('a', { requests: { cpu: '100m' }, limits: { cpu: '100m', memory: '10Mi' } })], [
    c('s', { requests: { cpu: '50m' }, limits: { cpu: '50m', memory: '10Mi' } }, 'Always'),
    c('i', { requests: { cpu: '400m' }, limits: { cpu: '400m', memory: '100Mi' } }),
  ]);
  const r = podCgroupResources(p, opts);
  t.equal(r.qos, 'Guaranteed');
  t.equal(r.cpuShares, milliCPUToShares(450n), 'requests: max(150m, 400m + 50m)');
  t.equal(r.cpuQuota, 45000);
  t.equal(r.memoryLimit, Mi(110), 'limits: max(20Mi, 100Mi + 10Mi)');
  t.equal(podCPURequestMilli(p), 450n);
});

t.test('pod-level spec.resources replace the containers\' sums and decide the class', async (t) => {
  const p = pod([c('a', {}), c('b', { requests: { cpu: '100m' } })], [], { resources: { limits: { cpu: '1', memory: '256Mi' } } });
  t.same(podCgroupResources(p, opts), { qos: 'Guaranteed', cpuShares: 1024, cpuQuota: 100000, cpuPeriod: 100000, memoryLimit: Mi(256) }, 'requests default to the pod-level limits');
  const burstable = pod([c('a', {})], [], { resources: { requests: { cpu: '500m' }, limits: { memory: '1Gi' } } });
  t.same(podCgroupResources(burstable, opts), { qos: 'Burstable', cpuShares: 512, memoryLimit: Mi(1024) }, 'a pod-level memory limit counts as declared; no cpu limit, no quota');
});

t.test('overhead adds to requests, and to limits only where a limit is set', async (t) => {
  const p = pod([c('a', { limits: { cpu: '100m', memory: '10Mi' } })], [], { overhead: { cpu: '10m', memory: '1Mi' } });
  const r = podCgroupResources(p, opts);
  t.same([r.cpuShares, r.cpuQuota, r.memoryLimit], [milliCPUToShares(110n), 11000, Mi(11)]);
});

t.test('the pod cgroup\'s place by class', async (t) => {
  t.same(podCgroupPath('Guaranteed', 'x'), ['podx']);
  t.same(podCgroupPath('Burstable', 'x'), ['burstable', 'podx']);
  t.same(podCgroupPath('BestEffort', 'x'), ['besteffort', 'podx']);
});
