import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import type { Pod } from '../../src/api/types.js';
import { createLogger } from '../../src/logging/index.js';
import { DockerRuntime } from '../../src/runtime/docker/runtime.js';
import { BUSYBOX, dockerCLI, removeNodeContainers, testDocker } from '../helpers/docker.js';
import { insideTestNetns } from '../helpers/netns.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';
import { cached, idOf, leaseHolder, leases, type Net, nodeNet, recordingPlugin, running, sandboxesOf } from '../helpers/pod-net.js';
import { waitFor } from '../helpers/wait.js';

// The pod IP is the same after nodelet is killed and restarted and after Docker restarts. nodelet's restart is in pod-network.test.ts; here the engine restarts under a running
// nodelet, as `systemctl restart docker` does (TestNetns.restartEngine: the same socket and
// roots). With live-restore the sandbox runs through it and keeps its network: no second ADD.
// Without, dockerd stops every container before it exits: the sandbox is dead when the engine is
// back, and nodelet replaces it as the kubelet does (a new sandbox gets a new IP from cri-dockerd's
// CNI ADD: Mirantis/cri-dockerd core/sandbox_helpers.go), the dead one's lease released by its DEL.
// Pod IPs exist only in this file's sealed test netns.
t.setTimeout(900_000);
const ns = await insideTestNetns();
t.comment(`inside test netns ${ns.name}`);
const [NODE_A] = ns.nodeIPs;

const web = (name: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["httpd", "-f", "-p", "8080", "-h", "/www"]
`;

const restartsOf = (pod: Pod | undefined) => pod?.status?.containerStatuses?.[0]?.restartCount;
const inspect = async (id: string) => JSON.parse(await dockerCLI('inspect', '--format', '{{json .State}}', id)) as { Running: boolean; Pid: number };
const get = async (url: string) => (await fetch(url, { signal: AbortSignal.timeout(10_000) })).text();

/** A nodelet on CNI whose list ends in a plugin recording every ADD and DEL by sandbox. */
async function cniNode(t: Test, n: number): Promise<{ node: TestNode; net: Net; calls: (id?: string) => string[] }> {
  const net = nodeNet(t, n, false);
  const recorder = recordingPlugin(net);
  net.write(recorder.type);
  const node = await startTestNode(t, { networkPlugin: 'cni', cniConfDir: net.confDir, cniCacheDir: net.cacheDir, cniBinDirs: [net.binDir, '/usr/lib/cni'], nodeIP: NODE_A, containerGCPeriodMs: 1000 }, { networkGCPeriodMs: 500 });
  return { node, net, calls: recorder.calls };
}

t.test('the runtime\'s event stream follows the engine through a restart', async (t) => {
  const docker = testDocker();
  const nodeName = `events-${randomBytes(3).toString('hex')}`;
  const log = createLogger({ verbosity: 0, format: 'json' });
  const runtime = new DockerRuntime({ docker, nodeName, infraImage: 'registry.k8s.io/pause:3.10', podNetwork: 'none', log });
  t.teardown(() => removeNodeContainers(docker, nodeName));
  const seen = new Set<string>();
  const stream: boolean[] = [];
  const unwatch = runtime.watch((uid) => seen.add(uid), (up) => stream.push(up));
  t.teardown(unwatch);
  // A container of this node named by a fresh pod UID: its `create` event names that UID.
  let pokes = 0;
  const poke = async () => {
    const uid = `poke-${++pokes}`;
    await docker.createContainer({ Image: BUSYBOX, Labels: { 'io.nodelet.node': nodeName, 'io.kubernetes.pod.uid': uid } });
    return uid;
  };
  const first = await poke();
  await waitFor('the event of a container created before the restart', () => (seen.has(first) ? true : undefined), 10_000);
  t.same(stream, [true], 'the stream said it was up (the PLEG relies on it, relisting every 10 s)');
  await ns.restartEngine({ liveRestore: true });
  const restartedAt = performance.now();
  // The stream reconnects on its own (a second after it ended); until then events are lost (the
  // relist covers them), so poke until one arrives.
  const after = new Set<string>();
  await waitFor('an event after the restart', async () => {
    if ([...after].some((u) => seen.has(u))) return true;
    after.add(await poke());
    return undefined;
  }, 15_000, 250);
  t.pass(`events flow again ${((performance.now() - restartedAt) / 1000).toFixed(1)} s after the engine answered (${after.size} pokes)`);
  t.same(stream, [true, false, true], 'it said it ended with the engine (the PLEG back to 1 s) and was up again');
  unwatch();
  const stopped = new Set(seen);
  await poke();
  const last = await poke();
  await waitFor('the engine to have the last poke', async () => ((await docker.listContainers({ all: true, filters: { label: [`io.kubernetes.pod.uid=${last}`] } })).length === 1 ? true : undefined));
  t.same([...seen], [...stopped], 'no event after the watch is stopped');
});

t.test('Docker restarted with live-restore: the sandbox runs through it, nodelet follows the engine back, the pod keeps its IP with no second ADD, Running with restartCount 0', async (t) => {
  const { node: a, net, calls } = await cniNode(t, 21);
  await a.writeManifest('web.yaml', web('web'));
  const before = await a.waitFor('web running', async () => running(await a.pod('web')), 60_000);
  const ip = before.status?.podIP ?? '';
  t.match(ip, /^10\.244\.21\.\d+$/);
  const [sandbox = ''] = await sandboxesOf(a, 'web');
  const { Pid: pid } = await inspect(sandbox);
  t.same(calls(sandbox), ['ADD'], 'one ADD');
  t.same(leases(net), [ip]);

  await ns.restartEngine({ liveRestore: true });
  const state = await inspect(sandbox);
  t.ok(state.Running && state.Pid === pid, 'the same sandbox process ran through the restart');
  t.equal(await get(`http://${ip}:8080/index.html`), 'hello from nodelet\n', 'the pod answers on its IP');

  // nodelet works on the restarted engine: a pod written now starts and gets an IP of its own.
  await a.writeManifest('second.yaml', web('second'));
  const second = await a.waitFor('second running', async () => running(await a.pod('second')), 60_000);
  t.match(second.status?.podIP, /^10\.244\.21\.\d+$/);
  t.not(second.status?.podIP, ip);
  await a.waitFor('/healthz ok', async () => ((await fetch(`${a.url}/healthz`)).status === 200 ? true : undefined));

  const now = running(await a.pod('web'));
  t.equal(now?.status?.podIP, ip, 'the same pod IP');
  t.equal(restartsOf(now), 0, 'restartCount 0');
  t.equal(idOf(now), idOf(before), 'the same container');
  t.same(await sandboxesOf(a, 'web'), [sandbox], 'the same sandbox, no other');
  t.same(calls(sandbox), ['ADD'], 'no second ADD');
  t.same(leases(net).sort(), [ip, second.status?.podIP ?? ''].sort(), 'a lease for each pod, no more');
  t.equal(leaseHolder(net, ip), sandbox, 'the first one still in its sandbox\'s name');
  t.equal(cached(net).length, 2);

  // The relist follows the restarted engine: a container killed behind nodelet's back restarts in
  // the same sandbox, on the same IP.
  await dockerCLI('kill', idOf(before));
  const restarted = await a.waitFor('web restarted', async () => {
    const p = running(await a.pod('web'));
    return p && restartsOf(p) === 1 ? p : undefined;
  }, 60_000);
  t.equal(restarted.status?.podIP, ip);
  t.same(calls(sandbox), ['ADD'], 'still the one ADD');
});

t.test('Docker restarted without live-restore: the sandbox dies with the engine; nodelet creates a new one with a new IP and releases the old lease', async (t) => {
  const { node: a, net, calls } = await cniNode(t, 22);
  await a.writeManifest('web.yaml', web('web'));
  const before = await a.waitFor('web running', async () => running(await a.pod('web')), 60_000);
  const ip = before.status?.podIP ?? '';
  const [sandbox = ''] = await sandboxesOf(a, 'web');
  t.same(calls(sandbox), ['ADD']);
  t.same(leases(net), [ip]);

  await ns.restartEngine({ liveRestore: false });
  const after = await a.waitFor('web running in a new sandbox', async () => {
    const p = running(await a.pod('web'));
    const [sb] = await sandboxesOf(a, 'web', false);
    return p && sb && sb !== sandbox && p.status?.podIP && leaseHolder(net, p.status.podIP) === sb ? { pod: p, sandbox: sb } : undefined;
  }, 120_000);
  const newIP = after.pod.status?.podIP ?? '';
  t.match(newIP, /^10\.244\.22\.\d+$/);
  t.not(newIP, ip, 'a new IP');
  await a.waitFor('the old sandbox\'s lease and attachment released', async () => (leases(net).length === 1 && cached(net).length === 1 ? true : undefined), 30_000).catch(() => undefined);
  // The dead sandbox was stopped (its DEL) when it was replaced; the container GC removes it once
  // no container it keeps names it (the previous instance of `web` may have run in it).
  const holders = async () => (await dockerCLI('ps', '-a', '-q', '--no-trunc', '--filter', `label=io.kubernetes.sandbox.id=${sandbox}`)).split('\n').filter(Boolean);
  await a.waitFor('the dead sandbox removed once no container names it', async () => {
    const left = await sandboxesOf(a, 'web');
    return left.length === 1 || (left.length === 2 && (await holders()).length > 0) ? true : undefined;
  }, 30_000).catch(() => undefined);
  const left = await sandboxesOf(a, 'web');
  t.ok(left.includes(after.sandbox) && left.every((id) => id === after.sandbox || id === sandbox), 'the new sandbox, and the dead one at most');
  if (left.includes(sandbox)) t.ok((await holders()).length > 0, 'the dead sandbox stays only while a kept container names it');
  else t.pass('the dead sandbox removed');
  t.same(leases(net), [newIP], 'only the new sandbox\'s lease');
  t.same(cached(net).length, 1, 'only its attachment cached');
  t.same(calls(sandbox), ['ADD', 'DEL'], 'the dead sandbox had its DEL');
  t.same(calls(after.sandbox), ['ADD'], 'the new one its ADD');
  // At least once: dockerd keeps answering on connections already open while it stops the
  // containers (the events stream among them), so nodelet may see the sandbox die first and start
  // a replacement that the shutdown stops in turn (each start counted, as the kubelet counts them).
  t.ok((restartsOf(after.pod) ?? 0) >= 1, `the container restarted in the new sandbox (restartCount ${restartsOf(after.pod)})`);
  t.not(idOf(after.pod), idOf(before), 'a new container');
  t.equal(await get(`http://${newIP}:8080/index.html`), 'hello from nodelet\n', 'the pod answers on its new IP');
});
