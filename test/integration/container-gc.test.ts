import t from 'tap';
import type { Config } from '../../src/config/types.js';
import { BUSYBOX, containersOfNode, testDocker } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';

/**
 * The container GC against the real engine (src/kubelet/container-gc.ts): dead instances of a
 * container stay until the GC's policy removes them — the newest `--maximum-dead-containers-per-container`
 * kept, none younger than `--minimum-container-ttl-duration` — and with the defaults the previous
 * instance stays for `containerLogs?previous=true`. The GC runs every 500 ms here (`--container-gc-period`).
 */
t.setTimeout(300_000);

const docker = testDocker();
const RESTARTS = 4;

/**
 * A container that fails its first `RESTARTS` runs (an emptyDir counts them), then keeps running:
 * once it runs, attempts 0..RESTARTS-1 are dead and RESTARTS runs. Each run logs `boot-<attempt>`.
 */
const manifest = (name: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{ name: state, emptyDir: {} }]
  containers:
  - name: app
    image: ${BUSYBOX}
    volumeMounts: [{ name: state, mountPath: /state }]
    command: [sh, -c, "n=$(cat /state/n 2>/dev/null || echo 0); echo $((n+1)) > /state/n; echo boot-$n; if [ $n -ge ${RESTARTS} ]; then exec sleep 3600; fi; exit 1"]
`;

async function gcNode(overrides: Partial<Config>): Promise<TestNode> {
  return startTestNode(t, { containerGCPeriodMs: 500, ...overrides });
}

/** The `app` instances of the node's pod, newest first, as `<attempt>:<state>`. */
async function instances(node: TestNode): Promise<string[]> {
  return (await containersOfNode(docker, node.nodeName))
    .filter((c) => c.Labels['io.kubernetes.container.name'] === 'app')
    .map((c) => ({ attempt: Number(c.Labels['annotation.io.kubernetes.container.restartCount']), state: c.State }))
    .sort((a, b) => b.attempt - a.attempt)
    .map((c) => `${c.attempt}:${c.state}`);
}

/** Waits until `app` runs at its last restart (every earlier attempt has died). */
async function runningAtLastAttempt(node: TestNode, name: string): Promise<void> {
  await node.waitFor(`${name} running after ${RESTARTS} restarts`, async () => {
    const s = (await node.pod(name))?.status?.containerStatuses?.[0];
    return s?.restartCount === RESTARTS && s.state?.running ? true : undefined;
  }, 120_000);
}

const logs = async (node: TestNode, name: string, query = '') => {
  const res = await fetch(`${node.url}/containerLogs/default/${name}-${node.nodeName}/app${query}`);
  return { status: res.status, text: await res.text() };
};

t.test('--maximum-dead-containers-per-container=2: the two newest dead instances are kept besides the running one', async (t) => {
  const node = await gcNode({ maxPerPodContainerCount: 2 });
  await node.writeManifest('loop.yaml', manifest('loop'));
  await runningAtLastAttempt(node, 'loop');
  const kept = await node.waitFor('the older dead instances removed', async () => {
    const list = await instances(node);
    return list.length === 3 ? list : undefined;
  }, 30_000);
  t.same(kept, [`${RESTARTS}:running`, `${RESTARTS - 1}:exited`, `${RESTARTS - 2}:exited`]);
  const sandboxes = (await containersOfNode(docker, node.nodeName)).filter((c) => c.Labels['io.kubernetes.docker.type'] === 'podsandbox');
  t.equal(sandboxes.length, 1, 'one sandbox');
  const status = (await node.pod('loop'))?.status?.containerStatuses?.[0];
  t.equal(status?.restartCount, RESTARTS, 'the restart count is the running attempt\'s');
  t.equal(status?.lastState?.terminated?.exitCode, 1, 'lastState from the previous instance');
  await node.removeManifest('loop.yaml');
  await node.waitFor('every container removed with the pod', async () => ((await containersOfNode(docker, node.nodeName)).length === 0 ? true : undefined), 60_000);
});

t.test('--minimum-container-ttl-duration: dead instances younger than it stay, even at 0 per container; older ones go', async (t) => {
  const ttlMs = 45_000;
  const node = await gcNode({ maxPerPodContainerCount: 0, minimumGCAgeMs: ttlMs });
  await node.writeManifest('young.yaml', manifest('young'));
  await runningAtLastAttempt(node, 'young');
  const ranAt = Date.now();
  const created = (await containersOfNode(docker, node.nodeName))
    .filter((c) => c.Labels['io.kubernetes.container.name'] === 'app')
    .map((c) => c.Created * 1000);
  const oldest = Math.min(...created);
  // The GC has run every 500 ms through the restarts: only the TTL keeps the dead ones.
  t.ok(ranAt - oldest < ttlMs - 5000, `the first instance is ${Math.round((ranAt - oldest) / 1000)} s old, younger than the TTL`);
  t.same(await instances(node), [`${RESTARTS}:running`, ...Array.from({ length: RESTARTS }, (_, i) => `${RESTARTS - 1 - i}:exited`)], 'every dead instance kept while young');
  const alone = await node.waitFor('dead instances removed once older than the TTL', async () => {
    const list = await instances(node);
    return list.length === 1 ? list : undefined;
  }, ttlMs + 60_000);
  t.same(alone, [`${RESTARTS}:running`], 'the running one stays');
  t.ok(Date.now() - oldest >= ttlMs, 'not before the TTL');
  await node.removeManifest('young.yaml');
});

t.test('defaults: the previous instance is kept, and containerLogs?previous=true reads it', async (t) => {
  const node = await gcNode({});
  await node.writeManifest('prev.yaml', manifest('prev'));
  await runningAtLastAttempt(node, 'prev');
  const kept = await node.waitFor('all but the previous dead instance removed', async () => {
    const list = await instances(node);
    return list.length === 2 ? list : undefined;
  }, 30_000);
  t.same(kept, [`${RESTARTS}:running`, `${RESTARTS - 1}:exited`]);
  const previous = await logs(node, 'prev', '?previous=true');
  t.equal(previous.status, 200);
  t.equal(previous.text, `boot-${RESTARTS - 1}\n`, 'the previous instance\'s log');
  t.equal((await logs(node, 'prev')).text, `boot-${RESTARTS}\n`, 'the current one\'s');
  await node.removeManifest('prev.yaml');
});
