import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { Event, Node, Pod, ResourceRequirements, Volume } from 'kubernetes-types/core/v1.js';
import { ApiError, KubeClient } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { BUSYBOX } from '../helpers/docker.js';
import { startClusterNode } from '../helpers/cluster-node.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { startTestNode } from '../helpers/nodelet.js';
import { parseMeminfo } from '../../src/stats/node.js';
import { parsePidReadings } from '../../src/stats/eviction-readings.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The eviction manager on real pressure: nodelet's `--root-dir` on a small tmpfs the test mounts,
 * a pod filling an emptyDir, a real control plane. Pressure makes `DiskPressure` True, the
 * offending apiserver pod is evicted (Failed, `Evicted`, the kubelet's message naming the
 * resource, the `Evicted` event) while the other keeps running, its emptyDir goes with it and the
 * condition clears after the transition period. A static pod is critical and is never evicted.
 * An emptyDir over its `sizeLimit` is evicted without any node pressure. A memory threshold just
 * under what the machine has free evicts the BestEffort pod that grows, not the Guaranteed one;
 * a PID threshold likewise the pod that spawns processes.
 */
t.setTimeout(360_000);

const run = promisify(execFile);

/** A tmpfs of `mib` MiB for a node's root dir, unmounted (lazily: pods may still hold binds) and removed at teardown. */
async function smallRootDir(mib: number): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-evict-root-'));
  await run('mount', ['-t', 'tmpfs', '-o', `size=${mib}m,mode=0755`, 'nodelet-evict', dir]);
  t.teardown(async () => {
    await run('umount', ['-l', dir]).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });
  return dir;
}

const fastEviction = { evictionMonitoringPeriodMs: 1000 };

t.test('standalone: a static pod filling nodefs raises DiskPressure and is never evicted (critical)', async (t) => {
  const rootDir = await smallRootDir(48);
  const node = await startTestNode(t, { rootDir, evictionHard: { 'nodefs.available': '40%' }, evictionPressureTransitionPeriodMs: 2_000 }, fastEviction);
  await node.writeManifest('filler.yaml', `apiVersion: v1
kind: Pod
metadata: { name: filler }
spec:
  volumes: [{ name: data, emptyDir: {} }]
  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      volumeMounts: [{ name: data, mountPath: /data }]
      command: ["sh", "-c", "dd if=/dev/zero of=/data/fill bs=1M count=32 2>/dev/null; echo filled; while true; do sleep 1; done"]
`);
  const pressured = await node.waitFor('DiskPressure True', async () => {
    const { body } = await node.get<Node>(`/api/v1/nodes/${node.nodeName}`);
    const c = body.status?.conditions?.find((x) => x.type === 'DiskPressure');
    return c?.status === 'True' ? c : undefined;
  }, 60_000);
  t.same([pressured.reason, pressured.message], ['KubeletHasDiskPressure', 'kubelet has disk pressure'], 'the kubelet\'s reason and message');
  // Each pass of the manager (1 s apart) with the threshold met records the node's event again:
  // five of them go by, and the static pod is still there.
  const attempt = await node.waitFor('five passes with the threshold met', async () => {
    const { body } = await node.get<{ items: Event[] }>('/api/v1/events');
    return body.items.find((e) => e.reason === 'EvictionThresholdMet' && (e.count ?? 1) >= 5);
  }, 60_000);
  t.match(attempt.message, /^Attempting to reclaim ephemeral-storage/, 'the node\'s EvictionThresholdMet event');
  const stillRunning = await node.waitFor('filler still running after the passes', async () => {
    const p = await node.pod('filler');
    return p?.status?.phase === 'Running' ? p : undefined;
  });
  t.equal(stillRunning.status?.reason, undefined, 'not evicted');
  await node.removeManifest('filler.yaml');
  const cleared = await node.waitFor('DiskPressure False once the pod and its emptyDir are gone', async () => {
    const { body } = await node.get<Node>(`/api/v1/nodes/${node.nodeName}`);
    const c = body.status?.conditions?.find((x) => x.type === 'DiskPressure');
    return c?.status === 'False' ? c : undefined;
  }, 60_000);
  t.equal(cleared.reason, 'KubeletHasNoDiskPressure');
});

t.test('cluster mode', async (t) => {
  const cp = await startControlPlane(t);
  const admin = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
  t.teardown(() => admin.close());
  const api = <T>(path: string) => admin.request<T>('GET', path);
  const getPod = (name: string) => api<Pod>(`/api/v1/namespaces/default/pods/${name}`).catch((err: unknown) => (err instanceof ApiError && err.code === 404 ? undefined : Promise.reject(err)));
  const create = (nodeName: string, name: string, command: string, extra: { volumes?: Volume[]; resources?: ResourceRequirements } = {}) =>
    admin.request<Pod>('POST', '/api/v1/namespaces/default/pods', {
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: {
          nodeName,
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 5,
          ...(extra.volumes ? { volumes: extra.volumes } : {}),
          containers: [{
            name: 'c',
            image: BUSYBOX,
            imagePullPolicy: 'Never',
            command: ['sh', '-c', command],
            ...(extra.volumes ? { volumeMounts: extra.volumes.map((v) => ({ name: v.name, mountPath: `/${v.name}` })) } : {}),
            ...(extra.resources ? { resources: extra.resources } : {}),
          }],
        },
      },
    });
  const running = (name: string) => waitForPod(name, (p) => p.status?.phase === 'Running');
  const waitForPod = (name: string, ok: (p: Pod) => boolean, timeoutMs = 90_000) =>
    waitFor(`${name}`, async () => {
      const p = await getPod(name);
      return p && ok(p) ? p : undefined;
    }, timeoutMs);
  const condition = async (nodeName: string, type: string) =>
    (await api<Node>(`/api/v1/nodes/${nodeName}`)).status?.conditions?.find((c) => c.type === type);
  const eventsOf = async (name: string) =>
    (await api<{ items: Event[] }>(`/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=${name}`)).items;

  t.test('nodefs pressure evicts the pod filling its emptyDir; the other keeps running; the condition clears', async (t) => {
    const rootDir = await smallRootDir(48);
    const node = await startClusterNode(t, cp, { rootDir, evictionHard: { 'nodefs.available': '40%' }, evictionPressureTransitionPeriodMs: 5_000 }, fastEviction);
    await create(node.nodeName, 'bystander', 'while true; do sleep 1; done');
    await running('bystander');
    await create(node.nodeName, 'filler', 'dd if=/dev/zero of=/data/fill bs=1M count=32 2>/dev/null; while true; do sleep 1; done', { volumes: [{ name: 'data', emptyDir: {} }] });
    const evicted = await waitForPod('filler', (p) => p.status?.phase === 'Failed', 120_000);
    t.equal(evicted.status?.reason, 'Evicted');
    t.match(evicted.status?.message, /^The node was low on resource: ephemeral-storage\. Threshold quantity: \S+, available: \S+\. /, 'the kubelet\'s message');
    const disruption = evicted.status?.conditions?.find((c) => c.type === 'DisruptionTarget');
    t.same([disruption?.status, disruption?.reason], ['True', 'TerminationByKubelet'], 'DisruptionTarget');
    const events = await waitFor('the Evicted event', async () => {
      const e = (await eventsOf('filler')).find((x) => x.reason === 'Evicted');
      return e;
    });
    t.equal(events.type, 'Warning');
    t.equal(events.metadata?.annotations?.['starved_resource'], 'ephemeral-storage', 'annotated with the starved resource');
    const seen = await condition(node.nodeName, 'DiskPressure');
    t.ok(seen?.status === 'True' || seen?.lastTransitionTime !== undefined, 'DiskPressure was reported');
    const bystander = await getPod('bystander');
    t.equal(bystander?.status?.phase, 'Running', 'the other pod keeps running');
    t.equal(bystander?.status?.containerStatuses?.[0]?.restartCount, 0);
    const uid = evicted.metadata?.uid ?? '';
    await waitFor('the evicted pod\'s directory removed (its emptyDir freed)', async () => {
      const mounts = await readFile('/proc/self/mounts', 'utf8');
      const gone = await readFile(join(rootDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'data', 'fill')).then(() => false, () => true);
      return gone && !mounts.includes(join(rootDir, 'pods', uid)) ? true : undefined;
    }, 60_000);
    const cleared = await waitFor('DiskPressure False after the transition period', async () => {
      const c = await condition(node.nodeName, 'DiskPressure');
      return c?.status === 'False' ? c : undefined;
    }, 90_000);
    t.equal(cleared.reason, 'KubeletHasNoDiskPressure');
  });

  t.test('an emptyDir over its sizeLimit is evicted without node pressure', async (t) => {
    const node = await startClusterNode(t, cp, {}, fastEviction);
    await create(node.nodeName, 'limited', 'dd if=/dev/zero of=/data/fill bs=1M count=12 2>/dev/null; while true; do sleep 1; done', { volumes: [{ name: 'data', emptyDir: { sizeLimit: '5Mi' } }] });
    const evicted = await waitForPod('limited', (p) => p.status?.phase === 'Failed', 120_000);
    t.equal(evicted.status?.reason, 'Evicted');
    t.equal(evicted.status?.message, 'Usage of EmptyDir volume "data" exceeds the limit "5Mi". ', 'the kubelet\'s message');
    t.equal(evicted.status?.conditions?.find((c) => c.type === 'DisruptionTarget'), undefined, 'no DisruptionTarget for a limit eviction');
    t.equal((await condition(node.nodeName, 'DiskPressure'))?.status, 'False', 'no node pressure');
  });

  t.test('memory pressure evicts the BestEffort pod that grows, not the Guaranteed one', async (t) => {
    const available = BigInt(parseMeminfo(await readFile('/proc/meminfo', 'utf8')).memoryAvailableBytes);
    // Met only once the BestEffort pod holds its 1.5 GiB: 700 MiB of head room for the rest of the machine.
    const threshold = `${(available - 700n * 1024n * 1024n) / 1024n / 1024n}Mi`;
    const node = await startClusterNode(t, cp, { evictionHard: { 'memory.available': threshold }, evictionPressureTransitionPeriodMs: 5_000 }, fastEviction);
    await create(node.nodeName, 'guaranteed', 'while true; do sleep 1; done', { resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } } });
    await running('guaranteed');
    // A memory-backed emptyDir is charged to the pod's memory (and to the node's working set).
    await create(node.nodeName, 'grower', 'sleep 2; dd if=/dev/zero of=/mem/fill bs=1M count=1536 2>/dev/null; while true; do sleep 1; done', { volumes: [{ name: 'mem', emptyDir: { medium: 'Memory' } }] });
    const evicted = await waitForPod('grower', (p) => p.status?.phase === 'Failed', 120_000);
    t.equal(evicted.status?.reason, 'Evicted');
    t.match(evicted.status?.message, /^The node was low on resource: memory\. Threshold quantity: \S+, available: \S+\. /);
    t.match(evicted.status?.message, /Container c was using \S+, request is 0, has larger consumption of memory\. /, 'names the container over its request');
    const guaranteed = await getPod('guaranteed');
    t.equal(guaranteed?.status?.phase, 'Running', 'the Guaranteed pod keeps running');
    const seen = await waitFor('MemoryPressure reported, then cleared', async () => {
      const c = await condition(node.nodeName, 'MemoryPressure');
      return c?.status === 'False' && c.reason === 'KubeletHasSufficientMemory' ? c : undefined;
    }, 90_000);
    t.ok(seen, 'MemoryPressure False again once the pod\'s memory is freed');
  });

  t.test('PID pressure evicts the pod with the most processes', async (t) => {
    const [pidMax, threadsMax, loadavg] = await Promise.all(['/proc/sys/kernel/pid_max', '/proc/sys/kernel/threads-max', '/proc/loadavg'].map((f) => readFile(f, 'utf8')));
    const { available } = parsePidReadings(pidMax ?? '', threadsMax ?? '', loadavg ?? '');
    // Met only once the spawner holds its 3000 processes: 1500 tasks of head room for the rest of the machine.
    const node = await startClusterNode(t, cp, { evictionHard: { 'pid.available': String(available - 1500n) }, evictionPressureTransitionPeriodMs: 5_000 }, fastEviction);
    await create(node.nodeName, 'quiet', 'while true; do sleep 1; done');
    await running('quiet');
    await create(node.nodeName, 'spawner', 'sleep 2; i=0; while [ $i -lt 3000 ]; do sleep 3600 & i=$((i+1)); done; wait');
    const evicted = await waitForPod('spawner', (p) => p.status?.phase === 'Failed', 120_000);
    t.equal(evicted.status?.reason, 'Evicted');
    t.match(evicted.status?.message, /^The node was low on resource: pids\. Threshold quantity: \d+, available: \d+\. $/, 'the kubelet\'s message');
    t.equal((await getPod('quiet'))?.status?.phase, 'Running', 'the quiet pod keeps running');
    await waitFor('PIDPressure False again once the processes are gone', async () => {
      const c = await condition(node.nodeName, 'PIDPressure');
      return c?.status === 'False' && c.reason === 'KubeletHasSufficientPID' ? c : undefined;
    }, 90_000);
  });
});
