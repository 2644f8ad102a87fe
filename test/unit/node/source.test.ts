import t from 'tap';
import type { Node } from 'kubernetes-types/core/v1.js';
import type { NodeFacts, NodeHealth } from '../../../src/node/object.js';
import { NodeSource, RUNTIME_STALE_MS, healthFromRelist, nodeUID } from '../../../src/node/source.js';

const facts: NodeFacts = {
  nodeName: 'n1',
  hostname: 'host-a',
  nodeIP: '127.0.0.1',
  port: 10250,
  kubeletVersion: 'v1.37.2+nodelet.0.1.0',
  containerRuntimeVersion: 'docker://28.2.2',
  kernelVersion: '6.1.0',
  osImage: 'Debian GNU/Linux 12 (bookworm)',
  operatingSystem: 'linux',
  architecture: 'amd64',
  machineID: 'machine-1',
  systemUUID: 's',
  bootID: 'b',
  cpuCores: 2,
  memoryBytes: 4 * 1024 ** 3,
  ephemeralStorageBytes: 100 * 1024 ** 3,
  maxPods: 110,
  images: [],
};
const healthy: NodeHealth = { memoryPressure: false, diskPressure: false, pidPressure: false };

t.test('health from the PLEG: NotReady before the first relist and when relists stop', async (t) => {
  const now = 1_000_000;
  t.same(healthFromRelist({ relists: 5, lastSuccess: now - 1000, lastError: undefined }, now), healthy);
  t.equal(healthFromRelist({ relists: 0, lastSuccess: 0, lastError: undefined }, now).notReadyReason, 'container runtime is down: not listed yet');
  t.equal(healthFromRelist({ relists: 9, lastSuccess: now - RUNTIME_STALE_MS - 1, lastError: 'connect ENOENT' }, now).notReadyReason, 'container runtime is down: connect ENOENT');
});

t.test('health: a pod network that is not ready makes the node NotReady with the kubelet\'s message; a down runtime is said first', async (t) => {
  const now = 1_000_000;
  const listed = { relists: 5, lastSuccess: now - 1000, lastError: undefined };
  const notReady = { ready: false, reason: 'NetworkPluginNotReady', message: 'cni config uninitialized' } as const;
  t.equal(
    healthFromRelist(listed, now, notReady).notReadyReason,
    'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:docker: network plugin is not ready: cni config uninitialized',
  );
  t.equal(healthFromRelist(listed, now, { ready: true }).notReadyReason, undefined);
  const pressed = healthFromRelist(listed, now, { ready: true }, new Set(['DiskPressure', 'PIDPressure']));
  t.same([pressed.memoryPressure, pressed.diskPressure, pressed.pidPressure], [false, true, true], 'the eviction manager\'s conditions');
  t.match(healthFromRelist({ relists: 0, lastSuccess: 0, lastError: undefined }, now, notReady).notReadyReason, /^container runtime is down/);
});

t.test('node UID: stable for a machine and name, shaped like a UUID', async (t) => {
  t.equal(nodeUID('m', 'n1'), nodeUID('m', 'n1'));
  t.not(nodeUID('m', 'n1'), nodeUID('m', 'n2'));
  t.match(nodeUID('m', 'n1'), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});

t.test('facts are read once per TTL, one read in flight; a failed read falls back to the cached facts', async (t) => {
  let reads = 0;
  let fail = false;
  const src = new NodeSource({
    readFacts: async () => {
      reads++;
      await new Promise((r) => setImmediate(r));
      if (fail) throw new Error('docker down');
      return facts;
    },
    health: () => healthy,
    spec: { labels: {}, taints: [] },
    factsTtlMs: 0,
  });
  await Promise.all([src.facts(), src.facts(), src.facts()]);
  t.equal(reads, 1, 'concurrent callers share one read');
  fail = true;
  t.same(await src.facts(), facts, 'stale facts beat none');
  t.equal(reads, 2);
  const fresh = new NodeSource({ readFacts: async () => Promise.reject(new Error('docker down')), health: () => healthy, spec: { labels: {}, taints: [] } });
  await t.rejects(fresh.facts(), /docker down/, 'nothing cached: the error');
  let cachedReads = 0;
  const cached = new NodeSource({ readFacts: async () => (cachedReads++, facts), health: () => healthy, spec: { labels: {}, taints: [] }, factsTtlMs: 60_000 });
  await cached.facts();
  await cached.facts();
  t.equal(cachedReads, 1, 'within the TTL: no read');
});

t.test('the node: the registration object with identity, transition times kept, change listeners', async (t) => {
  let health: NodeHealth = healthy;
  let registered: string | undefined;
  const src = new NodeSource({
    readFacts: async () => facts,
    health: () => health,
    spec: { labels: { 'example.com/zone': 'a' }, taints: [] },
    registeredUID: () => registered,
    createdAt: new Date('2026-01-01T00:00:00Z'),
  });
  const seen: Node[] = [];
  const off = src.onChange((n) => seen.push(n));
  const first = await src.node();
  t.match(first, { kind: 'Node', apiVersion: 'v1', metadata: { name: 'n1', uid: nodeUID('machine-1', 'n1'), creationTimestamp: '2026-01-01T00:00:00Z', labels: { 'kubernetes.io/hostname': 'n1', 'example.com/zone': 'a' } } });
  t.equal(src.last, first);
  const ready = first.status?.conditions?.find((c) => c.type === 'Ready');
  t.equal(ready?.status, 'True');
  await src.node();
  t.equal(seen.length, 1, 'a rebuild that changes only heartbeats is not a change');
  health = { ...healthy, notReadyReason: 'container runtime is down: x' };
  const down = await src.node();
  t.equal(seen.length, 2);
  t.equal(down.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  t.equal(down.status?.conditions?.find((c) => c.type === 'MemoryPressure')?.lastTransitionTime, first.status?.conditions?.find((c) => c.type === 'MemoryPressure')?.lastTransitionTime, 'an unchanged condition keeps its transition time');
  registered = 'apiserver-uid';
  t.equal((await src.node()).metadata?.uid, 'apiserver-uid', "cluster mode: the apiserver's UID");
  t.equal(seen.length, 3);
  off();
  health = healthy;
  await src.node();
  t.equal(seen.length, 3, 'unsubscribed');
});

t.test('start() builds at once and then periodically; stop() ends it', async (t) => {
  let builds = 0;
  const src = new NodeSource({ readFacts: async () => facts, health: () => healthy, spec: { labels: {}, taints: [] }, refreshMs: 20, factsTtlMs: 0 });
  const seen = new Promise<void>((resolve) => {
    src.onChange(() => {
      builds++;
      resolve();
    });
  });
  src.start();
  src.start();
  await seen;
  t.equal(builds, 1);
  src.stop();
  src.stop();
});
