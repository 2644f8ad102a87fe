import t from 'tap';
import { computePodQOS, getPodQOS } from '../../../src/api/qos.js';
import { quantityOf } from '../../../src/api/quantity.js';
import type { Container, Pod } from '../../../src/api/types.js';

type Res = Container['resources'];
const pod = (containers: Res[], init: Res[] = []): Pod => ({
  spec: {
    containers: containers.map((resources, i) => ({ name: `c${i}`, resources })),
    initContainers: init.map((resources, i) => ({ name: `i${i}`, resources })),
  },
});
const both = (cpu: string, memory: string) => ({ cpu, memory });

t.test('quantityOf is exact across suffixes', async (t) => {
  const cases: [string, bigint][] = [
    ['1', 1_000_000_000n],
    ['100m', 100_000_000n],
    ['0.1', 100_000_000n],
    ['.5', 500_000_000n],
    ['1Ki', 1024n * 1_000_000_000n],
    ['1.5Gi', 1_610_612_736n * 1_000_000_000n],
    ['1k', 1000n * 1_000_000_000n],
    ['1e3', 1000n * 1_000_000_000n],
    ['1E', 10n ** 27n],
    ['1n', 1n],
    ['1.5n', 2n],
    ['0', 0n],
    ['', 0n],
    ['abc', 0n],
    ['1e999999', 0n],
  ];
  for (const [q, want] of cases) t.equal(quantityOf(q), want, q);
  t.equal(quantityOf('128Mi'), quantityOf('134217728'));
  t.equal(quantityOf('1000m'), quantityOf('1'));
});

t.test('QoS classes (ComputePodQOS)', async (t) => {
  const cases: { name: string; pod: Pod; want: string }[] = [
    { name: 'no resources', pod: pod([undefined, {}]), want: 'BestEffort' },
    { name: 'zero requests only', pod: pod([{ requests: { cpu: '0', memory: '0' } }]), want: 'BestEffort' },
    { name: 'only other resources', pod: pod([{ limits: { 'nvidia.com/gpu': '1' } }]), want: 'BestEffort' },
    { name: 'limits = requests on every container', pod: pod([{ requests: both('1', '1Gi'), limits: both('1000m', '1024Mi') }, { limits: both('100m', '10Mi'), requests: both('100m', '10Mi') }]), want: 'Guaranteed' },
    { name: 'limits only (requests default to limits)', pod: pod([{ limits: both('1', '1Gi') }]), want: 'Guaranteed' },
    { name: 'requests below limits', pod: pod([{ requests: both('500m', '1Gi'), limits: both('1', '1Gi') }]), want: 'Burstable' },
    { name: 'cpu limit only', pod: pod([{ limits: { cpu: '1' } }]), want: 'Burstable' },
    { name: 'one container without limits', pod: pod([{ limits: both('1', '1Gi') }, {}]), want: 'Burstable' },
    { name: 'requests only', pod: pod([{ requests: { memory: '64Mi' } }]), want: 'Burstable' },
    { name: 'init container without limits', pod: pod([{ limits: both('1', '1Gi') }], [{}]), want: 'Burstable' },
    { name: 'init container guaranteed too', pod: pod([{ limits: both('1', '1Gi') }], [{ limits: both('2', '2Gi') }]), want: 'Guaranteed' },
    { name: 'init container alone sets requests', pod: pod([{}], [{ requests: { cpu: '1' } }]), want: 'Burstable' },
  ];
  for (const c of cases) t.equal(computePodQOS(c.pod), c.want, c.name);
});

t.test('getPodQOS keeps a recorded class', async (t) => {
  t.equal(getPodQOS({ ...pod([{}]), status: { qosClass: 'Burstable' } }), 'Burstable');
  t.equal(getPodQOS(pod([{}])), 'BestEffort');
  t.equal(getPodQOS({}), 'BestEffort');
});

t.test('pod-level spec.resources alone decide the class (PodLevelResources)', async (t) => {
  const withPodLevel = (resources: NonNullable<NonNullable<Pod['spec']>['resources']>, containers: Res[] = [{}]): Pod => ({ spec: { containers: containers.map((r, i) => ({ name: `c${i}`, resources: r })), resources } });
  t.equal(computePodQOS(withPodLevel({ limits: both('1', '1Gi') })), 'Guaranteed', 'both limited (requests default to them), containers without any');
  t.equal(computePodQOS(withPodLevel({ limits: both('1', '1Gi') }, [{ requests: { cpu: '100m' } }])), 'Guaranteed', 'container requests do not count');
  t.equal(computePodQOS(withPodLevel({ limits: { memory: '1Gi' } })), 'Burstable', 'only memory limited');
  t.equal(computePodQOS(withPodLevel({ requests: { cpu: '1' } })), 'Burstable', 'requests only');
  t.equal(computePodQOS(withPodLevel({ requests: both('1', '1Gi'), limits: both('2', '1Gi') })), 'Burstable', 'requests below limits');
  t.equal(computePodQOS(withPodLevel({}, [{ limits: both('1', '1Gi') }])), 'BestEffort', 'an empty pod-level stanza: nothing counts');
});
