import t from 'tap';
import { initialNode, nodeLabels, nodeStatus, nodeStatusChanged, nodeStatusDiffers, type NodeFacts } from '../../../src/node/object.js';
import { DECLARED_FEATURES } from '../../../src/node/declared-features.js';
import { parseNodeLabels, parseTaints } from '../../../src/config/node-flags.js';

const facts: NodeFacts = {
  nodeName: 'n1',
  hostname: 'host-a',
  nodeIP: '127.0.0.1',
  port: 10250,
  kubeletVersion: 'v1.30.0+nodelet.0.1.0',
  containerRuntimeVersion: 'docker://28.2.2',
  kernelVersion: '6.1.0',
  osImage: 'Debian GNU/Linux 12 (bookworm)',
  operatingSystem: 'linux',
  architecture: 'amd64',
  machineID: 'm',
  systemUUID: 's',
  bootID: 'b',
  cpuCores: 2,
  memoryBytes: 4 * 1024 ** 3,
  ephemeralStorageBytes: 100 * 1024 ** 3,
  maxPods: 110,
  images: Array.from({ length: 60 }, (_, i) => ({ names: [`img${i}:1`], sizeBytes: i })),
};
const healthy = { memoryPressure: false, diskPressure: false, pidPressure: false };

t.test('registration object: well-known labels under --node-labels, taints, status', async (t) => {
  const node = initialNode(facts, { labels: { 'example.com/role': 'edge', 'kubernetes.io/arch': 'override' }, taints: [{ key: 'k', value: 'v', effect: 'NoSchedule' }] }, healthy, new Date('2026-01-01T00:00:00Z'));
  t.equal(node.metadata?.name, 'n1');
  t.same(node.metadata?.labels, {
    'kubernetes.io/hostname': 'n1',
    'kubernetes.io/os': 'linux',
    'kubernetes.io/arch': 'override',
    'beta.kubernetes.io/os': 'linux',
    'beta.kubernetes.io/arch': 'amd64',
    'example.com/role': 'edge',
  });
  t.same(node.spec?.taints, [{ key: 'k', value: 'v', effect: 'NoSchedule' }]);
  t.same(initialNode(facts, { labels: {}, taints: [] }, healthy, new Date()).spec, {}, 'no taints, no taints field');
  t.same(nodeLabels(facts, { labels: {}, taints: [] })['kubernetes.io/hostname'], 'n1');
});

t.test('status: capacity, conditions with the kubelet reasons, addresses, endpoint, images capped at 50 biggest', async (t) => {
  const s = nodeStatus(facts, healthy, undefined, new Date('2026-01-01T00:00:00Z'));
  t.same(s.capacity, { cpu: '2', memory: '4194304Ki', pods: '110', 'ephemeral-storage': '104857600Ki' });
  t.same(s.allocatable, s.capacity);
  t.same(s.conditions?.map((c) => [c.type, c.status, c.reason]), [
    ['MemoryPressure', 'False', 'KubeletHasSufficientMemory'],
    ['DiskPressure', 'False', 'KubeletHasNoDiskPressure'],
    ['PIDPressure', 'False', 'KubeletHasSufficientPID'],
    ['Ready', 'True', 'KubeletReady'],
  ]);
  t.equal(s.conditions?.find((c) => c.type === 'Ready')?.message, 'kubelet is posting ready status');
  t.same(s.addresses, [{ type: 'InternalIP', address: '127.0.0.1' }, { type: 'Hostname', address: 'host-a' }]);
  t.same(s.daemonEndpoints, { kubeletEndpoint: { Port: 10250 } });
  t.equal(s.nodeInfo?.containerRuntimeVersion, 'docker://28.2.2');
  t.equal(s.images?.length, 50);
  t.same(s.images?.[0], { names: ['img59:1'], sizeBytes: 59 }, 'largest first');

  const down = nodeStatus(facts, { ...healthy, notReadyReason: 'container runtime is down' }, s, new Date('2026-01-01T00:00:10Z'));
  const ready = down.conditions?.find((c) => c.type === 'Ready');
  t.same([ready?.status, ready?.reason, ready?.message], ['False', 'KubeletNotReady', 'container runtime is down']);
  t.equal(ready?.lastTransitionTime, '2026-01-01T00:00:10Z', 'a changed condition moves its transition time');
  t.equal(down.conditions?.find((c) => c.type === 'DiskPressure')?.lastTransitionTime, '2026-01-01T00:00:00Z', 'an unchanged one keeps it');
  t.equal(down.conditions?.find((c) => c.type === 'DiskPressure')?.lastHeartbeatTime, '2026-01-01T00:00:10Z', 'heartbeats always move');
});

// k8s.io/component-helpers@v0.37.2 nodedeclaredfeatures/features/registry.go: every name a node may declare.
const REGISTRY = [
  'DRANodeAllocatableResources', 'DRAOptionalNodeOperations', 'ExtendWebSocketsToKubelet', 'InPlacePodLevelResourcesVerticalScaling',
  'InPlacePodVerticalScalingInitContainers', 'InPlacePodVerticalScalingMemoryBackedVolumes', 'RestartAllContainersOnContainerExits',
  'UserNamespacesHostNetworkSupport', 'VolumeBindMountOptions',
];

t.test('declared features: WebSocket streaming straight to the node, pod-level and init container resize, restarting all containers, nothing nodelet does not do', async (t) => {
  const s = nodeStatus(facts, healthy, undefined, new Date('2026-01-01T00:00:00Z'));
  t.same(s.declaredFeatures, ['ExtendWebSocketsToKubelet', 'InPlacePodLevelResourcesVerticalScaling', 'InPlacePodVerticalScalingInitContainers', 'RestartAllContainersOnContainerExits'], 'in every status');
  t.same(initialNode(facts, { labels: {}, taints: [] }, healthy, new Date()).status?.declaredFeatures, ['ExtendWebSocketsToKubelet', 'InPlacePodLevelResourcesVerticalScaling', 'InPlacePodVerticalScalingInitContainers', 'RestartAllContainersOnContainerExits'], 'and at registration');
  t.ok(DECLARED_FEATURES.every((f) => REGISTRY.includes(f)), 'only registry names');
  t.same([...DECLARED_FEATURES].sort(), DECLARED_FEATURES, 'sorted, as DiscoverNodeFeatures returns them');
  s.declaredFeatures?.push('Mutated');
  t.same(DECLARED_FEATURES, ['ExtendWebSocketsToKubelet', 'InPlacePodLevelResourcesVerticalScaling', 'InPlacePodVerticalScalingInitContainers', 'RestartAllContainersOnContainerExits'], 'each status has its own copy');
  const held = nodeStatus(facts, healthy, undefined, new Date('2026-01-01T00:00:00Z'));
  const next = nodeStatus(facts, healthy, held, new Date('2026-01-01T00:00:10Z'));
  t.equal(nodeStatusDiffers(held, next), false, 'the same features: no change');
  t.equal(nodeStatusDiffers({ ...held, declaredFeatures: [] }, next), true, 'an apiserver copy without them differs');
  t.equal(nodeStatusDiffers({ ...held, declaredFeatures: ['ExtendWebSocketsToKubelet', 'VolumeBindMountOptions'] }, next), true, 'an atomic list: extra names differ');
});

t.test('a status counts as changed only beyond its heartbeat times', async (t) => {
  const a = nodeStatus(facts, healthy, undefined, new Date('2026-01-01T00:00:00Z'));
  const b = nodeStatus(facts, healthy, a, new Date('2026-01-01T00:00:10Z'));
  t.equal(nodeStatusChanged(a, b), false);
  t.equal(nodeStatusChanged(undefined, b), true);
  t.equal(nodeStatusChanged(a, nodeStatus({ ...facts, images: [] }, healthy, a, new Date())), true);
  t.equal(nodeStatusChanged(a, nodeStatus(facts, { ...healthy, diskPressure: true }, a, new Date())), true);
});

t.test('--node-labels and --register-with-taints syntax', async (t) => {
  t.same(parseNodeLabels('a=1, b=two,c='), { a: '1', b: 'two', c: '' });
  t.same(parseNodeLabels(''), {});
  t.throws(() => parseNodeLabels('novalue'), /invalid node label "novalue": expected key=value/);
  t.throws(() => parseNodeLabels('=x'), /expected key=value/);
  t.same(parseTaints('k=v:NoSchedule,dedicated:NoExecute'), [
    { key: 'k', value: 'v', effect: 'NoSchedule' },
    { key: 'dedicated', effect: 'NoExecute' },
  ]);
  t.throws(() => parseTaints('k=v'), /the effect must be one of NoSchedule, PreferNoSchedule, NoExecute/);
  t.throws(() => parseTaints('k=v:Sometimes'), /effect must be one of/);
  t.throws(() => parseTaints('=v:NoSchedule'), /empty key/);
});
