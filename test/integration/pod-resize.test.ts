import t from 'tap';
import type { Event } from 'kubernetes-types/core/v1.js';
import type { Pod } from '../../src/api/types.js';
import { ApiError, KubeClient } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { startClusterNode } from '../helpers/cluster-node.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';

/**
 * In-place pod resize against a real control plane (v1.34, InPlacePodVerticalScaling beta and on):
 * `kubectl patch pod --subresource resize` (kubectl 1.33) changes a running container's cgroup
 * values — read inside the container, this machine is cgroup v1 — without restarting it; a
 * `RestartContainer` resize policy restarts only that container; a running run-to-completion init
 * container resizes in place too (1.37, declared by the node); a resize beyond the node's
 * allocatable stays pending, `Infeasible` (a 1.36+ apiserver refuses it before nodelet sees it); a
 * resize of a memory request alone restarts a `RestartContainer` container and updates the others.
 */
t.setTimeout(300_000);

const cp = await startControlPlane(t);
const admin = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
t.teardown(() => admin.close());
const node = await startClusterNode(t, cp, {}, {});

const podPath = (name: string) => `/api/v1/namespaces/default/pods/${name}`;
const getPod = (name: string) => admin.request<Pod>('GET', podPath(name)).catch((err: unknown) => (err instanceof ApiError && err.code === 404 ? undefined : Promise.reject(err)));
const MiB = 1024 * 1024;

type Amounts = { cpu: string; memory: string };
const resources = (a: Amounts) => ({ requests: { ...a }, limits: { ...a } });

function podOf(name: string, containers: { name: string; amounts: Amounts; resizePolicy?: { resourceName: string; restartPolicy: string }[] }[]): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      automountServiceAccountToken: false,
      nodeName: node.nodeName,
      terminationGracePeriodSeconds: 1,
      containers: containers.map((c) => ({
        name: c.name,
        image: BUSYBOX,
        command: ['sh', '-c', 'sleep 3600'],
        resources: resources(c.amounts),
        ...(c.resizePolicy ? { resizePolicy: c.resizePolicy } : {}),
      })),
    },
  };
}

async function runningPod(name: string): Promise<Pod> {
  return node.waitFor(`${name} Running`, async () => {
    const p = await getPod(name);
    return p?.status?.phase === 'Running' && p.status.containerStatuses?.every((s) => s.state?.running) ? p : undefined;
  }, 60_000);
}

/** `kubectl patch pod NAME --subresource resize` with new requests = limits for each named container. */
async function resize(name: string, containers: Record<string, Amounts>): Promise<void> {
  const patch = { spec: { containers: Object.entries(containers).map(([c, a]) => ({ name: c, resources: resources(a) })) } };
  const r = await cp.kubectl(['patch', 'pod', name, '--subresource', 'resize', '--patch', JSON.stringify(patch)]);
  if (r.code !== 0) throw new Error(`kubectl patch --subresource resize failed: ${r.stderr}`);
}

/** The container's cgroup v1 values, read inside it. */
async function cgroupInside(containerID: string): Promise<{ shares: number; quota: number; memory: number }> {
  const id = containerID.replace(/^docker:\/\//, '');
  const out = await dockerCLI('exec', id, 'cat', '/sys/fs/cgroup/cpu/cpu.shares', '/sys/fs/cgroup/cpu/cpu.cfs_quota_us', '/sys/fs/cgroup/memory/memory.limit_in_bytes');
  const [shares, quota, memory] = out.trim().split(/\s+/).map(Number);
  return { shares: shares ?? NaN, quota: quota ?? NaN, memory: memory ?? NaN };
}

const condition = (p: Pod | undefined, type: string) => p?.status?.conditions?.find((c) => c.type === type);

/**
 * Set by the first test when the engine turned out to have no container update (Podman 4.3's
 * compat API): the resize in flight fails with that reason and every later one is Infeasible.
 */
let updateUnsupported: string | undefined;
const NO_UPDATE = /^the container engine \(podman [^)]+\) has no container update/;

t.test('cpu and memory are resized in place: same container, no restart, new cgroup values, status resources', async (t) => {
  await admin.request('POST', '/api/v1/namespaces/default/pods', { body: podOf('inplace', [{ name: 'main', amounts: { cpu: '100m', memory: '64Mi' } }]) });
  const before = await runningPod('inplace');
  const id = before.status?.containerStatuses?.[0]?.containerID ?? '';
  t.match(id, /^docker:\/\//);
  t.same(await cgroupInside(id), { shares: 102, quota: 10_000, memory: 64 * MiB }, 'created with the spec\'s values');
  t.same(before.status?.containerStatuses?.[0]?.resources, resources({ cpu: '100m', memory: '64Mi' }), 'status.resources reports them');

  await resize('inplace', { main: { cpu: '200m', memory: '96Mi' } });
  const after = await node.waitFor('resized status (or the engine\'s refusal)', async () => {
    const p = await getPod('inplace');
    const s = p?.status?.containerStatuses?.[0];
    if (condition(p, 'PodResizeInProgress')?.reason === 'Error') return p;
    return s?.resources?.limits?.cpu === '200m' && s.resources.limits.memory === '96Mi' && !condition(p, 'PodResizeInProgress') ? p : undefined;
  }, 60_000);
  const failed = condition(after, 'PodResizeInProgress');
  if (failed) {
    // Only an engine without the update may refuse; it is said, and nothing is restarted for it.
    t.equal(node.nodelet.runtime.currentEngine?.name, 'podman', `refused: ${failed.message}`);
    t.match(failed.message, NO_UPDATE);
    updateUnsupported = failed.message;
    t.equal(after.status?.containerStatuses?.[0]?.containerID, id, 'the same container');
    t.same(await cgroupInside(id), { shares: 102, quota: 10_000, memory: 64 * MiB }, 'with its old values');
    return;
  }
  const s = after.status?.containerStatuses?.[0];
  t.same(s?.resources, resources({ cpu: '200m', memory: '96Mi' }));
  t.equal(s?.containerID, id, 'the same container');
  t.equal(s?.restartCount, 0, 'not restarted');
  t.same(await cgroupInside(id), { shares: 204, quota: 20_000, memory: 96 * MiB }, 'the cgroup inside the container has the new values');
  t.notOk(condition(after, 'PodResizePending'), 'nothing pending');
  t.equal(after.status?.qosClass, 'Guaranteed');

  // Smaller again: memory and cpu shrink in place too.
  await resize('inplace', { main: { cpu: '150m', memory: '80Mi' } });
  await node.waitFor('shrunk', async () => {
    const p = await getPod('inplace');
    return p?.status?.containerStatuses?.[0]?.resources?.limits?.memory === '80Mi' && !condition(p, 'PodResizeInProgress') ? p : undefined;
  }, 60_000);
  t.same(await cgroupInside(id), { shares: 153, quota: 15_000, memory: 80 * MiB });

  const events = await node.waitFor('resize events', async () => {
    const list = await admin.request<{ items: Event[] }>('GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dinplace');
    const reasons = list.items.map((e) => e.reason);
    return reasons.includes('ResizeStarted') && reasons.includes('ResizeCompleted') ? list.items : undefined;
  }, 30_000);
  t.match(events.find((e) => e.reason === 'ResizeStarted')?.message, /^Pod resize started: \{"containers":\[\{"name":"main"/);
});

t.test('a running run-to-completion init container is resized in place (InPlacePodVerticalScalingInitContainers)', async (t) => {
  // The shape of the e2e spec "should support resizing a non-sidecar init container"
  // (test/e2e/common/node/pod_resize.go): a Guaranteed pod whose init container never exits.
  const small = { cpu: '100m', memory: '64Mi' };
  const big = { cpu: '200m', memory: '96Mi' };
  const body = podOf('initresize', [{ name: 'main', amounts: small }]);
  const spec = body.spec;
  if (!spec) throw new Error('no spec');
  spec.initContainers = [{ name: 'init', image: BUSYBOX, command: ['sh', '-c', 'sleep 3600'], resources: resources(small) }];
  await admin.request('POST', '/api/v1/namespaces/default/pods', { body });
  const initStatus = (p: Pod | undefined) => p?.status?.initContainerStatuses?.[0];
  const before = await node.waitFor('init container running, its resources in its status', async () => {
    const p = await getPod('initresize');
    return initStatus(p)?.state?.running && initStatus(p)?.resources ? p : undefined;
  }, 60_000);
  const id = initStatus(before)?.containerID ?? '';
  t.match(id, /^docker:\/\//);
  t.same(initStatus(before)?.resources, resources(small), 'status.resources on the init container');
  t.same(initStatus(before)?.allocatedResources, small, 'and allocatedResources');
  t.same(await cgroupInside(id), { shares: 102, quota: 10_000, memory: 64 * MiB }, 'created with the spec\'s values');

  const resizeInit = async (a: Amounts) => {
    const patch = { spec: { initContainers: [{ name: 'init', resources: resources(a) }] } };
    const r = await cp.kubectl(['patch', 'pod', 'initresize', '--subresource', 'resize', '--patch', JSON.stringify(patch)]);
    if (r.code !== 0) throw new Error(`kubectl patch --subresource resize failed: ${r.stderr}`);
  };
  // The apiserver takes it only because the node declares InPlacePodVerticalScalingInitContainers.
  await resizeInit(big);
  if (updateUnsupported) {
    const pending = await node.waitFor('PodResizePending', async () => condition(await getPod('initresize'), 'PodResizePending'), 60_000);
    t.same([pending.reason, pending.message], ['Infeasible', updateUnsupported], 'an engine without the update: Infeasible');
    return;
  }
  const resized = async (a: Amounts, what: string) => node.waitFor(what, async () => {
    const p = await getPod('initresize');
    const s = initStatus(p);
    return s?.resources?.limits?.cpu === a.cpu && s.resources.limits.memory === a.memory && !condition(p, 'PodResizeInProgress') && !condition(p, 'PodResizePending') ? p : undefined;
  }, 60_000);
  const after = await resized(big, 'init container resized');
  const s = initStatus(after);
  t.same(s?.resources, resources(big), 'status.resources: the new values');
  t.same(s?.allocatedResources, big);
  t.equal(s?.containerID, id, 'the same container');
  t.equal(s?.restartCount, 0, 'not restarted');
  t.ok(s?.state?.running, 'still running');
  t.same(await cgroupInside(id), { shares: 204, quota: 20_000, memory: 96 * MiB }, 'the cgroup inside the init container has the new values');
  t.equal(after.status?.phase, 'Pending', 'the pod is still initialising');
  t.equal(after.status?.qosClass, 'Guaranteed');

  // And back, as the e2e spec does.
  await resizeInit(small);
  const back = await resized(small, 'init container back to its first values');
  t.equal(initStatus(back)?.containerID, id);
  t.equal(initStatus(back)?.restartCount, 0);
  t.same(await cgroupInside(id), { shares: 102, quota: 10_000, memory: 64 * MiB });
});

t.test('a RestartContainer memory policy restarts only that container', async (t) => {
  await admin.request('POST', '/api/v1/namespaces/default/pods', {
    body: podOf('restart', [
      { name: 'restarts', amounts: { cpu: '100m', memory: '64Mi' }, resizePolicy: [{ resourceName: 'memory', restartPolicy: 'RestartContainer' }] },
      { name: 'stays', amounts: { cpu: '100m', memory: '64Mi' } },
    ]),
  });
  const before = await runningPod('restart');
  const idOf = (p: Pod | undefined, name: string) => p?.status?.containerStatuses?.find((s) => s.name === name)?.containerID;
  await resize('restart', { restarts: { cpu: '100m', memory: '128Mi' }, stays: { cpu: '100m', memory: '128Mi' } });
  if (updateUnsupported) {
    const pending = await node.waitFor('PodResizePending', async () => condition(await getPod('restart'), 'PodResizePending'), 60_000);
    t.same([pending.reason, pending.message], ['Infeasible', updateUnsupported], 'an engine without the update: Infeasible');
    const p = await getPod('restart');
    t.same(p?.status?.containerStatuses?.map((s) => [s.containerID, s.restartCount]), before.status?.containerStatuses?.map((s) => [s.containerID, 0]), 'nothing restarted');
    return;
  }
  const after = await node.waitFor('restarted with the new memory', async () => {
    const p = await getPod('restart');
    const r = p?.status?.containerStatuses?.find((s) => s.name === 'restarts');
    const k = p?.status?.containerStatuses?.find((s) => s.name === 'stays');
    return r?.restartCount === 1 && r.state?.running && k?.resources?.limits?.memory === '128Mi' && !condition(p, 'PodResizeInProgress') ? p : undefined;
  }, 60_000);
  const restarted = after.status?.containerStatuses?.find((s) => s.name === 'restarts');
  const stayed = after.status?.containerStatuses?.find((s) => s.name === 'stays');
  t.not(restarted?.containerID, idOf(before, 'restarts'), 'a new container');
  t.equal(restarted?.resources?.limits?.memory, '128Mi');
  t.equal((await cgroupInside(restarted?.containerID ?? '')).memory, 128 * MiB);
  t.equal(stayed?.containerID, idOf(before, 'stays'), 'the other container is untouched');
  t.equal(stayed?.restartCount, 0);
  t.equal((await cgroupInside(stayed?.containerID ?? '')).memory, 128 * MiB, 'and resized in place');
});

t.test('a memory request resize alone (no cgroup value moves): RestartContainer restarts, NotRequired is applied in place', async (t) => {
  // The e2e specs "PLR pod-level burstable pods … resize policy mem restart resizing mem requests"
  // (test/e2e/common/node/pod_level_resources_resize.go): the request is in no cgroup, so only the
  // request a container runs with, kept by nodelet, shows that it differs.
  const burstable = (memoryRequest: string) => ({ requests: { cpu: '100m', memory: memoryRequest }, limits: { cpu: '200m', memory: '64Mi' } });
  const body = podOf('memrequest', [
    { name: 'restarts', amounts: { cpu: '100m', memory: '32Mi' }, resizePolicy: [{ resourceName: 'cpu', restartPolicy: 'NotRequired' }, { resourceName: 'memory', restartPolicy: 'RestartContainer' }] },
    { name: 'inplace', amounts: { cpu: '100m', memory: '32Mi' } },
  ]);
  for (const c of body.spec?.containers ?? []) c.resources = burstable('32Mi');
  await admin.request('POST', '/api/v1/namespaces/default/pods', { body });
  const before = await runningPod('memrequest');
  t.equal(before.status?.qosClass, 'Burstable');
  const status = (p: Pod | undefined, name: string) => p?.status?.containerStatuses?.find((s) => s.name === name);
  const patch = { spec: { containers: ['restarts', 'inplace'].map((name) => ({ name, resources: burstable('48Mi') })) } };
  const r = await cp.kubectl(['patch', 'pod', 'memrequest', '--subresource', 'resize', '--patch', JSON.stringify(patch)]);
  t.equal(r.code, 0, r.stderr);
  if (updateUnsupported) {
    const pending = await node.waitFor('PodResizePending', async () => condition(await getPod('memrequest'), 'PodResizePending'), 60_000);
    t.same([pending.reason, pending.message], ['Infeasible', updateUnsupported], 'an engine without the update: Infeasible');
    return;
  }
  const after = await node.waitFor('the restart-policy container restarted, the resize completed', async () => {
    const p = await getPod('memrequest');
    const restarted = status(p, 'restarts');
    return restarted?.restartCount === 1 && restarted.state?.running && !condition(p, 'PodResizeInProgress') ? p : undefined;
  }, 60_000);
  const restarted = status(after, 'restarts');
  const inplace = status(after, 'inplace');
  t.not(restarted?.containerID, status(before, 'restarts')?.containerID, 'RestartContainer: a new container');
  t.equal(inplace?.containerID, status(before, 'inplace')?.containerID, 'NotRequired: the same container');
  t.equal(inplace?.restartCount, 0, 'not restarted');
  for (const s of [restarted, inplace]) {
    t.same(s?.resources, burstable('48Mi'), `${s?.name}: status resources carry the new request`);
    t.same(s?.allocatedResources, { cpu: '100m', memory: '48Mi' });
    t.equal((await cgroupInside(s?.containerID ?? '')).memory, 64 * MiB, `${s?.name}: the memory limit is unchanged`);
  }
  t.notOk(condition(after, 'PodResizePending'));
  // Nothing more happens to either container: the request each runs with is the allocated one.
  const again = await node.waitFor('the resize completed event', async () => {
    const list = await admin.request<{ items: Event[] }>('GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dmemrequest');
    return list.items.some((e) => e.reason === 'ResizeCompleted') ? await getPod('memrequest') : undefined;
  }, 30_000);
  t.same(again?.status?.containerStatuses?.map((s) => [s.name, s.containerID, s.restartCount]), after.status?.containerStatuses?.map((s) => [s.name, s.containerID, s.restartCount]), 'no further restart');
});

t.test('a resize beyond the node\'s allocatable is Infeasible and changes nothing', async (t) => {
  await admin.request('POST', '/api/v1/namespaces/default/pods', { body: podOf('toobig', [{ name: 'main', amounts: { cpu: '100m', memory: '64Mi' } }]) });
  const before = await runningPod('toobig');
  const patch = { spec: { containers: [{ name: 'main', resources: resources({ cpu: '1000', memory: '64Mi' }) }] } };
  const r = await cp.kubectl(['patch', 'pod', 'toobig', '--subresource', 'resize', '--patch', JSON.stringify(patch)]);
  if (r.code !== 0) {
    // A 1.36+ apiserver refuses it itself against the node's allocatable; nodelet never sees it.
    t.match(r.stderr, /node didn't have enough allocatable resources: cpu, requested: 1000000, allocatable: \d+/, 'refused by the apiserver');
    const p = await getPod('toobig');
    t.equal(p?.status?.containerStatuses?.[0]?.containerID, before.status?.containerStatuses?.[0]?.containerID, 'nothing changed');
    t.same(p?.status?.containerStatuses?.[0]?.resources, resources({ cpu: '100m', memory: '64Mi' }));
    return;
  }
  const pending = await node.waitFor('PodResizePending', async () => condition(await getPod('toobig'), 'PodResizePending'), 60_000);
  t.equal(pending.status, 'True');
  t.equal(pending.reason, 'Infeasible');
  t.match(pending.message, updateUnsupported ? NO_UPDATE : /^Node didn't have enough capacity: cpu, requested: 1000000, capacity: \d+$/);
  const p = await getPod('toobig');
  t.equal(pending.observedGeneration, p?.metadata?.generation, 'observedGeneration is the resize\'s generation');
  const s = p?.status?.containerStatuses?.[0];
  t.equal(s?.containerID, before.status?.containerStatuses?.[0]?.containerID);
  t.same(s?.resources, resources({ cpu: '100m', memory: '64Mi' }), 'still the allocated resources');
  t.equal((await cgroupInside(s?.containerID ?? '')).quota, 10_000);

  // Asking for what fits again clears the condition.
  await resize('toobig', { main: { cpu: '100m', memory: '64Mi' } });
  await node.waitFor('pending cleared', async () => (condition(await getPod('toobig'), 'PodResizePending') ? undefined : true), 30_000);
  t.pass('cleared');
});
