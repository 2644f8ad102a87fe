import t from 'tap';
import pino from 'pino';
import type { Node, NodeCondition, Pod, PodCondition, PodStatus } from 'kubernetes-types/core/v1.js';
import { ApiError, type KubeClient } from '../../../src/apiserver/client.js';
import { NodeController } from '../../../src/cluster/node-controller.js';
import { podStatusNeedsReconcile, StatusSync } from '../../../src/cluster/status-sync.js';
import { nodeStatus, nodeStatusDiffers, type NodeFacts } from '../../../src/node/object.js';
import { PodManager } from '../../../src/pod/manager.js';
import { StatusManager } from '../../../src/status/manager.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * nodelet compares what it would send with the apiserver's copy, not with what it sent last: a
 * Node whose conditions the node lifecycle controller set Unknown is re-posted at the next
 * heartbeat, a pod whose Ready condition someone else set False is sent again at the next resync.
 */

const log = pino({ level: 'silent' });
interface Teardown {
  teardown(fn: () => unknown): void;
}
const clone = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

/** Strategic merge of a status patch as the apiserver applies it: conditions (and addresses) by type, null deletes. */
function mergeStatus<T extends Record<string, unknown>>(held: T | undefined, patch: Record<string, unknown>): T {
  const out: Record<string, unknown> = { ...held };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if ((k === 'conditions' || k === 'addresses') && Array.isArray(v)) {
      const list = [...((out[k] as { type: string }[] | undefined) ?? [])];
      for (const item of v as { type: string; $patch?: string }[]) {
        const i = list.findIndex((x) => x.type === item.type);
        // Strategic merge's delete directive: the entry goes (nothing when there is none).
        if (item.$patch === 'delete') {
          if (i >= 0) list.splice(i, 1);
          continue;
        }
        const merged = Object.fromEntries(Object.entries({ ...list[i], ...item }).filter(([, x]) => x !== null)) as { type: string };
        if (i >= 0) list[i] = merged;
        else list.push(merged);
      }
      out[k] = list;
    } else out[k] = v;
  }
  return out as T;
}

/** An in-memory apiserver: Nodes, Leases and Pods, each write bumping a global resourceVersion. */
type Obj = { metadata?: { name?: string; resourceVersion?: string; uid?: string } };

class FakeApiserver {
  readonly objects = new Map<string, Obj>();
  readonly calls: string[] = [];
  #rv = 100;
  #uid = 0;

  put<T extends Obj>(path: string, obj: T): T {
    const stored = clone(obj);
    stored.metadata = { ...stored.metadata, resourceVersion: String(++this.#rv), uid: stored.metadata?.uid ?? `uid-${++this.#uid}` };
    this.objects.set(path, stored);
    return clone(stored);
  }

  get<T>(path: string): T {
    const obj = this.objects.get(path);
    if (!obj) throw new ApiError(404, 'NotFound', `${path} not found`);
    return clone(obj) as T;
  }

  readonly client = {
    request: async <T>(method: string, fullPath: string, opts: { body?: unknown } = {}): Promise<T> => {
      const path = fullPath.split('?')[0] ?? '';
      this.calls.push(`${method} ${fullPath}`);
      const body = opts.body as Obj;
      if (method === 'GET') return this.get<T>(path);
      if (method === 'POST') return this.put(`${path}/${body.metadata?.name}`, body) as T;
      if (method === 'PUT') return this.put(path, body) as T;
      if (method === 'PATCH' && path.endsWith('/status')) {
        const key = path.slice(0, -'/status'.length);
        const held = this.get<Obj & { status?: Record<string, unknown> }>(key);
        return this.put(key, { ...held, status: mergeStatus(held.status, (body as { status: Record<string, unknown> }).status) } as Obj) as T;
      }
      if (method === 'PATCH') return this.get<T>(path);
      throw new Error(`unexpected ${method} ${path}`);
    },
  } as unknown as KubeClient;
}

const facts: NodeFacts = {
  nodeName: 'n1',
  hostname: 'n1',
  nodeIP: '127.0.0.1',
  port: 10250,
  kubeletVersion: 'v1.34.0',
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
  images: [{ names: ['busybox:1.35'], sizeBytes: 4_000_000 }],
};
const healthy = { memoryPressure: false, diskPressure: false, pidPressure: false };
const nodePath = '/api/v1/nodes/n1';
const readyOf = (n: Node | undefined) => n?.status?.conditions?.find((c) => c.type === 'Ready');

function startController(t: Teardown, api: FakeApiserver): NodeController {
  const controller = new NodeController({
    client: api.client,
    nodeName: 'n1',
    facts: async () => facts,
    health: () => healthy,
    spec: { labels: {}, taints: [] },
    register: true,
    updateFrequencyMs: 20,
    reportFrequencyMs: 5 * 60_000,
    leaseDurationSeconds: 40,
    log,
  });
  controller.start();
  t.teardown(() => controller.stop());
  return controller;
}

t.test('the node lifecycle controller set the Node Unknown: the next heartbeat posts Ready again', async (t) => {
  const api = new FakeApiserver();
  const controller = startController(t, api);
  await waitFor('registered Ready', () => (readyOf(api.get<Node>(nodePath))?.status === 'True' ? true : undefined), 5_000, 5);
  // Steady state: the status is computed every heartbeat but not sent again (report period 5 min).
  const reports = controller.reports;
  const checks = controller.checks;
  await waitFor('five more heartbeats', () => (controller.checks >= checks + 5 ? true : undefined), 5_000, 5);
  t.equal(controller.reports, reports, 'a status the apiserver already holds is not sent again');

  // What monitorNodeHealth does after the grace period: every condition Unknown, heartbeat kept.
  const held = api.get<Node>(nodePath);
  const unknown = (held.status?.conditions ?? []).map((c): NodeCondition => ({
    ...c,
    status: 'Unknown',
    reason: 'NodeStatusUnknown',
    message: 'Kubelet stopped posting node status.',
    lastTransitionTime: '2030-01-01T00:00:00Z',
  }));
  api.put(nodePath, { ...held, spec: { taints: [{ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute' }] }, status: { ...held.status, conditions: unknown } } as Node);

  const ready = await waitFor('Ready posted again', () => {
    const c = readyOf(api.get<Node>(nodePath));
    return c?.status === 'True' ? c : undefined;
  }, 2_000, 5);
  t.equal(ready.reason, 'KubeletReady');
  t.not(ready.lastTransitionTime, '2030-01-01T00:00:00Z', 'the transition is a new one');
  t.same(
    api.get<Node>(nodePath).status?.conditions?.map((c) => [c.type, c.status, c.reason]),
    [
      ['MemoryPressure', 'False', 'KubeletHasSufficientMemory'],
      ['DiskPressure', 'False', 'KubeletHasNoDiskPressure'],
      ['PIDPressure', 'False', 'KubeletHasSufficientPID'],
      ['Ready', 'True', 'KubeletReady'],
    ],
    'every condition is the kubelet\'s again',
  );
  t.equal(controller.reports, reports + 1, 'sent once');
  t.ok(api.calls.some((c) => c === `GET ${nodePath}?resourceVersion=0`), "the Node is read from the apiserver's cache");
});

t.test('node status comparison: what the patch would change, beyond heartbeats', async (t) => {
  const ours = nodeStatus(facts, healthy, undefined, new Date('2026-01-01T00:00:00Z'));
  const later = nodeStatus(facts, healthy, ours, new Date('2026-01-01T00:00:10Z'));
  t.equal(nodeStatusDiffers(ours, later), false, 'heartbeat times only');
  t.equal(nodeStatusDiffers(undefined, later), true);
  // The apiserver's copy: other key order, canonical quantities, fields and conditions of others.
  const held = clone(ours);
  held.capacity = { ...held.capacity, memory: '4Gi' };
  held.conditions = [...(held.conditions ?? []).reverse(), { type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated' }];
  held.volumesInUse = ['kubernetes.io/csi/x'];
  held.nodeInfo = { ...held.nodeInfo!, swap: { capacity: 0 } } as typeof held.nodeInfo;
  held.addresses = [...(held.addresses ?? []), { type: 'ExternalIP', address: '203.0.113.1' }];
  t.equal(nodeStatusDiffers(held, later), false, 'what only the apiserver holds is not a change');
  const unknownReady = clone(held);
  unknownReady.conditions = unknownReady.conditions?.map((c) => (c.type === 'Ready' ? { ...c, status: 'Unknown', reason: 'NodeStatusUnknown' } : c));
  t.equal(nodeStatusDiffers(unknownReady, nodeStatus(facts, healthy, unknownReady, new Date())), true, 'Unknown conditions are');
  t.equal(nodeStatusDiffers(held, { ...later, images: [] }), true, 'a changed image list is');
  t.equal(nodeStatusDiffers({ ...held, allocatable: { ...held.allocatable, pods: '100' } }, later), true, 'a changed quantity is');
});

const podUID = 'pod-uid-1';
const podKey = '/api/v1/namespaces/default/pods/web';
const readyCondition = (p: Pod | undefined): PodCondition | undefined => p?.status?.conditions?.find((c) => c.type === 'Ready');

function runningStatus(): PodStatus {
  return {
    phase: 'Running',
    conditions: [
      { type: 'PodReadyToStartContainers', status: 'True' },
      { type: 'Initialized', status: 'True' },
      { type: 'Ready', status: 'True' },
      { type: 'ContainersReady', status: 'True' },
      { type: 'PodScheduled', status: 'True' },
    ],
    hostIP: '127.0.0.1',
    hostIPs: [{ ip: '127.0.0.1' }],
    podIP: '172.17.0.2',
    podIPs: [{ ip: '172.17.0.2' }],
    containerStatuses: [
      { name: 'main', image: 'busybox:1.35', imageID: '', containerID: 'docker://abc', ready: true, started: true, restartCount: 0, state: { running: { startedAt: '2026-01-01T00:00:01Z' } }, lastState: {} },
    ],
    qosClass: 'BestEffort',
  };
}

async function startSync(t: Teardown) {
  const api = new FakeApiserver();
  const created = api.put(podKey, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default', uid: podUID },
    spec: { nodeName: 'n1', containers: [{ name: 'main', image: 'busybox:1.35' }] },
    status: { phase: 'Pending', qosClass: 'BestEffort', conditions: [{ type: 'PodScheduled', status: 'True' }] },
  } as Pod);
  const podManager = new PodManager();
  podManager.updatePod(created);
  const statusManager = new StatusManager({ log });
  // The pod watch's cache: the apiserver's object as it is now.
  const watched = (uid: string) => [...api.objects.values()].find((o) => o.metadata?.uid === uid) as Pod | undefined;
  const sync = new StatusSync({ client: api.client, statusManager, podManager, hasRunningContainers: () => true, log, resyncMs: 20, apiserverPod: (uid) => watched(uid) && clone(watched(uid)) });
  sync.start();
  t.teardown(() => sync.stop());
  statusManager.setPodStatus(created, runningStatus());
  await waitFor('Running on the apiserver', () => (readyCondition(api.get<Pod>(podKey))?.status === 'True' ? true : undefined), 5_000, 5);
  return { api, sync, statusManager };
}

t.test("a pod whose Ready someone else set False is sent again at the next resync; the apiserver's own copy is not", async (t) => {
  const { api, sync } = await startSync(t);
  const sent = sync.sent;
  const resyncs = sync.resyncs;
  await waitFor('five resyncs', () => (sync.resyncs >= resyncs + 5 ? true : undefined), 5_000, 5);
  t.equal(sync.sent, sent, 'the apiserver holds our status: nothing is sent again');
  t.equal(sync.reconciled, 0);

  // MarkPodsNotReady: Ready False, as UpdateStatus of the whole pod.
  const held = api.get<Pod>(podKey);
  held.status!.conditions = held.status!.conditions!.map((c) => (c.type === 'Ready' ? { ...c, status: 'False' } : c));
  api.put(podKey, held);
  await waitFor('Ready True again', () => (readyCondition(api.get<Pod>(podKey))?.status === 'True' ? true : undefined), 2_000, 5);
  t.equal(sync.reconciled, 1, 'one resend');
  t.equal(sync.sent, sent + 1);
  const after = sync.resyncs;
  await waitFor('five resyncs more', () => (sync.resyncs >= after + 5 ? true : undefined), 5_000, 5);
  t.equal(sync.sent, sent + 1, 'once answered, not sent again');
});

/** A status sync whose watch never delivers anything after the pod's creation (a lagging watch). */
function laggingWatchSync(t: { teardown(fn: () => unknown): void }) {
  const api = new FakeApiserver();
  const created = api.put(podKey, {
    metadata: { name: 'web', namespace: 'default', uid: podUID },
    spec: { nodeName: 'n1', containers: [{ name: 'main', image: 'busybox:1.35' }] },
    status: { phase: 'Pending' },
  } as Pod);
  const podManager = new PodManager();
  podManager.updatePod(created);
  const statusManager = new StatusManager({ log });
  const stale = clone(created);
  const sync = new StatusSync({ client: api.client, statusManager, podManager, hasRunningContainers: () => true, log, resyncMs: 20, apiserverPod: () => stale });
  sync.start();
  t.teardown(() => sync.stop());
  return { api, created, statusManager, sync };
}

t.test('a watch lagging behind our own patch, or a foreign version already answered, sends nothing', async (t) => {
  const { created, statusManager, sync } = laggingWatchSync(t);
  statusManager.setPodStatus(created, runningStatus());
  await waitFor('sent', () => (sync.sent === 1 ? true : undefined), 5_000, 5);
  const resyncs = sync.resyncs;
  await waitFor('five resyncs', () => (sync.resyncs >= resyncs + 5 ? true : undefined), 5_000, 5);
  t.equal(sync.sent, 1, 'the copy our patch replaced is no reason to send again');
  t.equal(sync.reconciled, 0);
});

t.test('pod status comparison: kubelet conditions by status, reason and message; empty as absent; others\' fields ignored', async (t) => {
  const ours = runningStatus();
  // The apiserver's copy: nulls and empty strings dropped, times normalized, a readiness gate, nominatedNodeName.
  const held = clone(ours) as PodStatus & Record<string, unknown>;
  held.conditions = [
    { type: 'example.com/gate', status: 'False' },
    ...(held.conditions ?? []).map((c) => ({ ...c, lastProbeTime: null, lastTransitionTime: '2026-01-01T00:00:00Z' }) as unknown as PodCondition).reverse(),
  ];
  held.containerStatuses = held.containerStatuses?.map(({ imageID: _i, ...c }) => c as typeof c & { imageID: string });
  held.nominatedNodeName = 'other';
  t.equal(podStatusNeedsReconcile(held, ours), false);
  const notReady = clone(held);
  notReady.conditions = notReady.conditions?.map((c) => (c.type === 'Ready' ? { ...c, status: 'False' } : c));
  t.equal(podStatusNeedsReconcile(notReady, ours), true, 'Ready False');
  t.equal(podStatusNeedsReconcile({ ...held, podIP: '10.0.0.9' }, ours), true, 'another pod IP');
  t.equal(podStatusNeedsReconcile({ ...held, message: 'evicted' }, ours), true, 'a message nodelet would clear');
  t.equal(podStatusNeedsReconcile(undefined, ours), true);
});

t.test('a resize condition gone from ours is deleted although the watch has not yet seen the patch that set it', async (t) => {
  const { api, created, statusManager, sync } = laggingWatchSync(t);
  const inProgress = runningStatus();
  inProgress.conditions = [...(inProgress.conditions ?? []), { type: 'PodResizeInProgress', status: 'True' }];
  statusManager.setPodStatus(created, inProgress);
  await waitFor('sent', () => (sync.sent === 1 ? true : undefined), 5_000, 5);
  t.ok(api.get<Pod>(podKey).status?.conditions?.some((c) => c.type === 'PodResizeInProgress'), 'set');
  statusManager.setPodStatus(created, runningStatus());
  await waitFor('sent again', () => (sync.sent === 2 ? true : undefined), 5_000, 5);
  t.notOk(api.get<Pod>(podKey).status?.conditions?.some((c) => c.type === 'PodResizeInProgress'), 'deleted');
});
