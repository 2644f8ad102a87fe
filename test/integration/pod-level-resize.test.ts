import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { Event } from 'kubernetes-types/core/v1.js';
import type { Pod } from '../../src/api/types.js';
import { ApiError, KubeClient } from '../../src/apiserver/client.js';
import { Cgroupfs } from '../../src/cgroups/cgroupfs.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { startClusterNode } from '../helpers/cluster-node.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';

/**
 * Pod-level in-place resize (InPlacePodLevelResourcesVerticalScaling, beta and on since 1.36)
 * against a real control plane: `kubectl patch pod --subresource resize` of a running pod's
 * `spec.resources` rewrites its pod cgroup (read from the host's cgroup files) and the cgroup of
 * the container that has no limits of its own (read inside it) without restarting anything; the
 * container with its own limits keeps them; the status reports the pod-level allocation; a resize
 * beyond the node is refused (by a 1.36+ apiserver itself, or `Infeasible`).
 */
t.setTimeout(300_000);

const fs = await Cgroupfs.open();
const v1 = fs.mounts.version === 1;
const mount = (controller: string) => fs.mounts.controllers.get(v1 ? controller : '') ?? '';
const readCg = async (controller: string, path: string, file: string) => (await readFile(join(mount(controller), path, file), 'utf8')).trim();

const cp = await startControlPlane(t);
const admin = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
t.teardown(() => admin.close());
const node = await startClusterNode(t, cp, {}, {});

const podPath = (name: string) => `/api/v1/namespaces/default/pods/${name}`;
const getPod = (name: string) => admin.request<Pod>('GET', podPath(name)).catch((err: unknown) => (err instanceof ApiError && err.code === 404 ? undefined : Promise.reject(err)));
const MiB = 1024 * 1024;
type Amounts = { cpu: string; memory: string };
const both = (a: Amounts) => ({ requests: { ...a }, limits: { ...a } });
const condition = (p: Pod | undefined, type: string) => p?.status?.conditions?.find((c) => c.type === type);
const status = (p: Pod | undefined, name: string) => p?.status?.containerStatuses?.find((s) => s.name === name);

async function resize(name: string, resources: Amounts): Promise<{ code: number; stderr: string }> {
  return cp.kubectl(['patch', 'pod', name, '--subresource', 'resize', '--patch', JSON.stringify({ spec: { resources: both(resources) } })]);
}

/** The pod cgroup's cpu weight (v2) or shares (v1), its quota and its memory limit, from the host. */
async function podCgroup(uid: string): Promise<{ cpu: string; quota: string; memory: string }> {
  const path = `/nodelet-test/${node.nodeName}/kubepods/pod${uid}`;
  if (v1) {
    const [cpu, quota, memory] = await Promise.all([readCg('cpu', path, 'cpu.shares'), readCg('cpu', path, 'cpu.cfs_quota_us'), readCg('memory', path, 'memory.limit_in_bytes')]);
    return { cpu, quota, memory };
  }
  const [cpu, max, memory] = await Promise.all([readCg('', path, 'cpu.weight'), readCg('', path, 'cpu.max'), readCg('', path, 'memory.max')]);
  return { cpu, quota: max.split(' ')[0] ?? '', memory };
}

/** The container's own cgroup quota and memory limit, read inside it. */
async function containerCgroup(containerID: string): Promise<{ quota: string; memory: string }> {
  const id = containerID.replace(/^\w+:\/\//, '');
  const files = v1 ? ['/sys/fs/cgroup/cpu/cpu.cfs_quota_us', '/sys/fs/cgroup/memory/memory.limit_in_bytes'] : ['/sys/fs/cgroup/cpu.max', '/sys/fs/cgroup/memory.max'];
  const [quota, memory] = (await dockerCLI('exec', id, 'sh', '-c', `head -n 1 ${files.join(' ')} | grep -v '^==' | grep -v '^$'`)).trim().split('\n');
  return { quota: (quota ?? '').split(' ')[0] ?? '', memory: memory ?? '' };
}

/** v1 shares or v2 weight for a cpu request in millicores (MilliCPUToShares, then runc's conversion). */
const cpuValue = (milli: number) => {
  const shares = Math.max(2, Math.floor((milli * 1024) / 1000));
  return String(v1 ? shares : 1 + Math.floor(((shares - 2) * 9999) / 262142));
};

t.test('pod-level cpu and memory resize in place: pod cgroup, the container that follows it, no restart', async (t) => {
  await admin.request('POST', '/api/v1/namespaces/default/pods', {
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'plr' },
      spec: {
        automountServiceAccountToken: false,
        nodeName: node.nodeName,
        terminationGracePeriodSeconds: 1,
        resources: both({ cpu: '200m', memory: '128Mi' }),
        containers: [
          { name: 'follows', image: BUSYBOX, command: ['sh', '-c', 'sleep 3600'] },
          { name: 'own', image: BUSYBOX, command: ['sh', '-c', 'sleep 3600'], resources: both({ cpu: '50m', memory: '32Mi' }) },
        ],
      },
    } satisfies Pod,
  });
  const before = await node.waitFor('plr Running', async () => {
    const p = await getPod('plr');
    return p?.status?.phase === 'Running' && p.status.containerStatuses?.every((s) => s.state?.running) ? p : undefined;
  }, 60_000);
  const uid = before.metadata?.uid ?? '';
  const follows = status(before, 'follows')?.containerID ?? '';
  const own = status(before, 'own')?.containerID ?? '';
  t.same(await podCgroup(uid), { cpu: cpuValue(200), quota: '20000', memory: String(128 * MiB) }, 'the pod cgroup from the pod-level resources');
  t.same(await containerCgroup(follows), { quota: '20000', memory: String(128 * MiB) }, 'a container without limits runs with the pod-level ones');
  t.same(before.status?.allocatedResources, { cpu: '200m', memory: '128Mi' }, 'status.allocatedResources');
  t.same(before.status?.resources, both({ cpu: '200m', memory: '128Mi' }), 'status.resources');

  if (node.nodelet.runtime.currentEngine?.name === 'podman') {
    t.comment('the engine has no container update (docs/resize.md): the follower cannot be resized');
    return;
  }
  const grow = await resize('plr', { cpu: '300m', memory: '256Mi' });
  t.equal(grow.code, 0, `the apiserver takes the resize (the node declares the feature) ${grow.stderr}`);
  const grown = await node.waitFor('grown', async () => {
    const p = await getPod('plr');
    const done = (p?.status?.observedGeneration ?? 0) >= (p?.metadata?.generation ?? 1) && !condition(p, 'PodResizeInProgress') && !condition(p, 'PodResizePending');
    return done && p?.status?.allocatedResources?.memory === '256Mi' ? p : undefined;
  }, 60_000);
  t.same(await podCgroup(uid), { cpu: cpuValue(300), quota: '30000', memory: String(256 * MiB) }, 'the pod cgroup has the new values');
  t.same(await containerCgroup(follows), { quota: '30000', memory: String(256 * MiB) }, 'the follower too');
  t.same(await containerCgroup(own), { quota: '5000', memory: String(32 * MiB) }, 'the container with its own limits keeps them');
  t.same([status(grown, 'follows')?.containerID, status(grown, 'follows')?.restartCount, status(grown, 'own')?.containerID, status(grown, 'own')?.restartCount], [follows, 0, own, 0], 'nothing restarted');
  t.same(grown.status?.resources, both({ cpu: '300m', memory: '256Mi' }), 'status.resources');

  const shrink = await resize('plr', { cpu: '150m', memory: '96Mi' });
  t.equal(shrink.code, 0, shrink.stderr);
  const shrunk = await node.waitFor('shrunk', async () => {
    const p = await getPod('plr');
    return p?.status?.allocatedResources?.memory === '96Mi' && !condition(p, 'PodResizeInProgress') && (p.status.observedGeneration ?? 0) >= (p.metadata?.generation ?? 1) ? p : undefined;
  }, 60_000);
  t.same(await podCgroup(uid), { cpu: cpuValue(150), quota: '15000', memory: String(96 * MiB) });
  t.same(await containerCgroup(follows), { quota: '15000', memory: String(96 * MiB) });
  t.same([status(shrunk, 'follows')?.restartCount, status(shrunk, 'own')?.restartCount], [0, 0], 'still no restart');

  const events = await node.waitFor('resize events', async () => {
    const list = await admin.request<{ items: Event[] }>('GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dplr');
    const reasons = list.items.map((e) => e.reason);
    return reasons.includes('ResizeStarted') && reasons.includes('ResizeCompleted') ? list.items : undefined;
  }, 30_000);
  t.ok(events.length >= 2, 'ResizeStarted and ResizeCompleted recorded');

  // Beyond the node: a 1.36+ apiserver refuses it itself; else nodelet leaves it Infeasible.
  const big = await resize('plr', { cpu: '1000', memory: '96Mi' });
  if (big.code !== 0) {
    t.match(big.stderr, /didn't have enough allocatable resources: cpu/, 'refused by the apiserver');
  } else {
    const pending = await node.waitFor('PodResizePending', async () => condition(await getPod('plr'), 'PodResizePending'), 60_000);
    t.same([pending.reason], ['Infeasible']);
  }
  t.same(await podCgroup(uid), { cpu: cpuValue(150), quota: '15000', memory: String(96 * MiB) }, 'unchanged');
});
