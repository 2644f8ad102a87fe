import { createSocket } from 'node:dgram';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { insideTestNetns } from '../helpers/netns.js';
import { nodeBaseImage } from '../helpers/node-base-image.js';
import { cached, idOf, leases, type Net, nodeNet, running, sandboxesOf, veths, webPod } from '../helpers/pod-net.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';

// `--network-plugin=cni` end to end: real Debian plugins (bridge, host-local, portmap), the real
// engine, nodelet in-process. Pod IPs exist only inside this file's sealed test netns, where every
// request below goes: to pod IPs and to the node IPs on the namespace's `lo`.
// Before the re-run into the netns too: the outer process waits for the whole run.
t.setTimeout(900_000);
const ns = await insideTestNetns();
t.comment(`inside test netns ${ns.name}`);

const [NODE_A, NODE_B] = ns.nodeIPs;

const start = (t: Test, net: Net, nodeIP: string, extraBin?: string) =>
  startTestNode(t, { networkPlugin: 'cni', cniConfDir: net.confDir, cniCacheDir: net.cacheDir, cniBinDirs: [...(extraBin ? [extraBin] : []), '/usr/lib/cni'], nodeIP }, { networkGCPeriodMs: 500 });


const runningPod = (node: TestNode, name: string) => node.waitFor(`pod ${name} running`, async () => running(await node.pod(name)), 60_000);
const get = async (url: string) => {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.text() };
};
type Event = { reason?: string; message?: string; involvedObject?: { name?: string } };
const events = async (node: TestNode) => (await node.get<{ items: Event[] }>('/api/v1/events')).body.items;

t.test('pod IPs from CNI: status, downward API, /etc/hosts; reachable from the node, from a pod on another node, and on its hostPort; kept across a nodelet restart; released on delete', async (t) => {
  const netA = nodeNet(t, 1);
  const netB = nodeNet(t, 2);
  const a = await start(t, netA, NODE_A);
  const b = await start(t, netB, NODE_B);
  await a.writeManifest('web.yaml', webPod('web', 30080));
  await b.writeManifest('client.yaml', webPod('client'));
  const web = await runningPod(a, 'web');
  const client = await runningPod(b, 'client');
  const ip = web.status?.podIP ?? '';
  const vethsOfBoth = veths();
  t.equal(vethsOfBoth, 2, 'one veth per pod in the test netns');
  t.match(ip, /^10\.244\.1\.\d+$/, 'an IP of node A\'s subnet');
  t.same(web.status?.podIPs, [{ ip }]);
  t.match(client.status?.podIP, /^10\.244\.2\.\d+$/);
  t.equal(web.status?.hostIP, NODE_A);
  t.equal(web.status?.conditions?.find((c) => c.type === 'PodReadyToStartContainers')?.status, 'True');

  const inside = await dockerCLI('exec', idOf(web), 'sh', '-c', 'cat /www/env; ip -4 -o addr show dev eth0; cat /etc/hosts');
  t.match(inside, new RegExp(`^${ip.replace(/\./g, '\\.')} ${ip.replace(/\./g, '\\.')}\n`), 'status.podIP and status.podIPs through the downward API');
  t.match(inside, new RegExp(`eth0\\s+inet ${ip.replace(/\./g, '\\.')}/24`), 'eth0 holds the pod IP');
  t.match(inside, new RegExp(`\n${ip.replace(/\./g, '\\.')}\tweb-${a.nodeName}\n`), 'the /etc/hosts pod line has the pod IP');

  // The sandbox has no libnetwork sandbox of the engine (engine.ts `netnsByHook`): no prestart
  // hook made its namespace, and the engine wrote no resolv.conf or hosts file for it. CNI's
  // loopback still brings lo up, and the containers get nodelet's resolv.conf and hosts file.
  const [sandboxID] = await sandboxesOf(a, 'web');
  const [sandboxInfo] = JSON.parse(await dockerCLI('inspect', sandboxID!)) as { Config: { NetworkDisabled?: boolean }; ResolvConfPath: string; NetworkSettings: { SandboxKey: string } }[];
  t.equal(sandboxInfo!.Config.NetworkDisabled, true, 'the sandbox is created with NetworkDisabled');
  t.same([sandboxInfo!.ResolvConfPath, sandboxInfo!.NetworkSettings.SandboxKey], ['', ''], 'no engine resolv.conf, no libnetwork namespace');
  const [appInfo] = JSON.parse(await dockerCLI('inspect', idOf(web))) as { Mounts: { Destination: string; Source: string }[] }[];
  for (const path of ['/etc/resolv.conf', '/etc/hosts']) {
    t.match(appInfo!.Mounts.find((m) => m.Destination === path)?.Source, new RegExp(`/pods/${web.metadata?.uid}/`), `${path}: nodelet's file of the pod`);
  }
  const local = await dockerCLI('exec', idOf(web), 'sh', '-c', `ip -o link show lo; printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc -w 5 127.0.0.1 8080`);
  t.match(local, /^\d+: lo: <LOOPBACK,UP,LOWER_UP>/, 'lo is up');
  t.match(local, /\r\n\r\nhello from nodelet\n$/, 'the pod reaches its own server on 127.0.0.1');

  t.equal((await get(`http://${ip}:8080/index.html`)).body, 'hello from nodelet\n', 'node → pod IP');
  t.equal((await get(`http://${NODE_A}:30080/index.html`)).body, 'hello from nodelet\n', 'node IP:hostPort → pod (portmap)');
  // busybox nc, not wget: the static busybox's wget crashes in its resolver (glibc NSS).
  const fromPod = await dockerCLI('exec', idOf(client), 'sh', '-c', `printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc -w 5 ${ip} 8080`);
  t.match(fromPod, /^HTTP\/1\.[01] 200 OK\r\n[^]*\r\n\r\nhello from nodelet\n$/, 'a pod on node B → the pod on node A');

  // A pod that reads no IP of its own has its first container created while its sandbox starts
  // (src/kubelet/start.ts `#createsEarly`), its hosts file written before the IP is known: it is
  // written again, with the IP, before the container starts.
  await b.writeManifest('plain.yaml', `apiVersion: v1
kind: Pod
metadata: { name: plain }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: main, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sleep", "600"] }
`);
  const plain = await runningPod(b, 'plain');
  const plainIP = plain.status?.podIP ?? '';
  t.match(plainIP, /^10\.244\.2\.\d+$/);
  t.match(await dockerCLI('exec', idOf(plain), 'cat', '/etc/hosts'), new RegExp(`\n${plainIP.replace(/\./g, '\\.')}\tplain-${b.nodeName}\n`), 'the early-created container\'s /etc/hosts has the pod IP');
  await b.removeManifest('plain.yaml');
  await b.waitFor('plain gone', async () => ((await sandboxesOf(b, 'plain')).length === 0 && veths() === vethsOfBoth ? true : undefined), 30_000);

  // A second pod asking for the taken hostPort is refused at admission, as the kubelet does
  // (pkg/kubelet/lifecycle/predicate.go: the scheduler's NodePorts filter), never started.
  await a.writeManifest('web2.yaml', webPod('web2', 30080));
  const rejected = await a.waitFor('web2 rejected', async () => {
    const p = await a.pod('web2');
    return p?.status?.phase === 'Failed' ? p : undefined;
  }, 30_000);
  t.equal(rejected.status?.reason, 'NodePorts', 'the taken hostPort: reason NodePorts');
  t.equal(rejected.status?.message, "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports");
  t.same(await sandboxesOf(a, 'web2'), [], 'no sandbox for the rejected pod');
  await a.removeManifest('web2.yaml');

  t.equal(leases(netA).length, 1, 'one lease for the one pod of node A');
  t.equal(cached(netA).length, 1, 'one cached attachment');
  const [sandbox] = await sandboxesOf(a, 'web');

  // A restart of nodelet re-adopts the running sandbox and its IP from the cache: no new ADD.
  await a.stop();
  await a.restart();
  const again = await a.waitFor('web reported again', async () => running(await a.pod('web')), 30_000);
  t.equal(again.status?.podIP, ip, 'the same IP after a restart of nodelet');
  t.same(await sandboxesOf(a, 'web'), [sandbox], 'the same sandbox');
  t.equal(leases(netA).length, 1, 'still one lease');

  await a.removeManifest('web.yaml');
  await a.waitFor('web gone', async () => ((await sandboxesOf(a, 'web')).length === 0 && leases(netA).length === 0 && cached(netA).length === 0 ? true : undefined), 30_000);
  t.equal(veths(), vethsOfBoth - 1, 'its veth is gone, the client\'s remains');
  await t.rejects(get(`http://${NODE_A}:30080/index.html`), 'the hostPort is unpublished');
});

t.test('a sandbox killed behind nodelet\'s back: a new sandbox, a new IP, the old lease released', async (t) => {
  const net = nodeNet(t, 3);
  const a = await start(t, net, NODE_A);
  await a.writeManifest('web.yaml', webPod('web'));
  const first = await runningPod(a, 'web');
  const [sandbox] = await sandboxesOf(a, 'web');
  await dockerCLI('kill', sandbox ?? '');
  const second = await a.waitFor('a new sandbox running', async () => {
    const p = running(await a.pod('web'));
    return p && p.status?.podIP && p.status.podIP !== first.status?.podIP ? p : undefined;
  }, 60_000);
  t.match(second.status?.podIP, /^10\.244\.3\.\d+$/);
  await a.waitFor('one lease left', () => (leases(net).length === 1 ? true : undefined), 30_000);
  t.same(leases(net), [second.status?.podIP], 'the lease is the new IP\'s');
  t.equal((await get(`http://${second.status?.podIP}:8080/index.html`)).body, 'hello from nodelet\n');

  // Removed behind nodelet's back: no stop, no removal through nodelet; the network GC releases it.
  const [secondSandbox] = await sandboxesOf(a, 'web');
  await dockerCLI('rm', '-f', secondSandbox ?? '');
  const third = await a.waitFor('a third sandbox running', async () => {
    const p = running(await a.pod('web'));
    const [sb] = await sandboxesOf(a, 'web');
    return p && sb && sb !== secondSandbox && p.status?.podIP && p.status.podIP !== second.status?.podIP ? p : undefined;
  }, 60_000);
  await a.waitFor('the removed sandbox\'s lease and cache entry released by the GC', () => (leases(net).length === 1 && cached(net).length === 1 ? true : undefined), 30_000);
  t.same(leases(net), [third.status?.podIP]);
  t.notOk(cached(net).some((f) => f.includes(secondSandbox ?? '-')), 'no cache entry of the removed sandbox');
});

t.test('no network config yet: the node is NotReady, pod-network pods wait with NetworkNotReady, host-network pods run; the config arrives and the pod starts', async (t) => {
  const net = nodeNet(t, 4, false);
  const a = await start(t, net, NODE_A);
  const ready = async () => (await a.get<{ status?: { conditions?: { type: string; status: string; message?: string }[] } }>(`/api/v1/nodes/${a.nodeName}`)).body.status?.conditions?.find((c) => c.type === 'Ready');
  // Until the first relist the node is NotReady for the runtime ("not listed yet"); then for the network.
  const notReady = await a.waitFor('node NotReady for its network', async () => {
    const r = await ready();
    return r?.status === 'False' && r.message?.startsWith('container runtime network not ready') ? r : undefined;
  });
  t.match(notReady?.message, /^container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:docker: network plugin is not ready: cni config uninitialized$/);
  await a.writeManifest('web.yaml', webPod('web'));
  await a.writeManifest('host.yaml', `apiVersion: v1
kind: Pod
metadata: { name: host }
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers: [{ name: main, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sleep", "3600"] }]
`);
  const event = await a.waitFor('NetworkNotReady', async () => (await events(a)).find((e) => e.reason === 'NetworkNotReady' && e.involvedObject?.name === `web-${a.nodeName}`));
  t.match(event.message, /^network is not ready: container runtime network not ready/);
  const host = await runningPod(a, 'host');
  t.equal(host.status?.podIP, NODE_A, 'a host-network pod has the node\'s IP');
  t.same(await sandboxesOf(a, 'web'), [], 'no sandbox for the pod-network pod');
  net.write();
  const web = await runningPod(a, 'web');
  t.match(web.status?.podIP, /^10\.244\.4\.\d+$/);
  await a.waitFor('node Ready', async () => ((await ready())?.status === 'True' ? true : undefined));
});

t.test('a failing plugin: FailedCreatePodSandBox with its message, the sandbox removed and its IP released; retried until the plugin works', async (t) => {
  const net = nodeNet(t, 5);
  const flag = join(net.binDir, 'fail');
  writeFileSync(flag, '');
  // A chained plugin that fails ADD while `flag` exists and otherwise passes prevResult on.
  const plugin = join(net.binDir, 'nodelet-test-flaky');
  writeFileSync(
    plugin,
    `#!${process.execPath}
const fs = require('node:fs');
const conf = JSON.parse(fs.readFileSync(0, 'utf8'));
if (process.env.CNI_COMMAND === 'VERSION') { process.stdout.write(JSON.stringify({ cniVersion: '1.0.0', supportedVersions: ['1.0.0'] })); process.exit(0); }
if (process.env.CNI_COMMAND !== 'ADD') process.exit(0);
if (fs.existsSync(${JSON.stringify(flag)})) { process.stdout.write(JSON.stringify({ cniVersion: '1.0.0', code: 999, msg: 'injected failure', details: 'for the test' })); process.exit(1); }
process.stdout.write(JSON.stringify(conf.prevResult));
`,
    { mode: 0o755 },
  );
  net.write('nodelet-test-flaky');
  const a = await start(t, net, NODE_A, net.binDir);
  await a.writeManifest('web.yaml', webPod('web'));
  const failed = await a.waitFor('FailedCreatePodSandBox', async () => (await events(a)).find((e) => e.reason === 'FailedCreatePodSandBox'), 30_000);
  t.match(failed.message, /^Failed to create pod sandbox: failed to set up sandbox container "[0-9a-f]{64}" network for pod "web-[^"]+": networkPlugin cni failed to set up pod "web-[^"]+_default" network: .*injected failure/);
  const waiting = await a.waitFor('waiting with the message', async () => (await a.pod('web'))?.status?.containerStatuses?.[0]?.state?.waiting);
  t.equal(waiting.reason, 'ContainerCreating');
  t.same(await sandboxesOf(a, 'web'), [], 'the failed sandbox was removed');
  t.same(leases(net), [], 'the IP bridge leased before the failure was released by the DEL');
  rmSync(flag);
  const web = await runningPod(a, 'web');
  t.match(web.status?.podIP, /^10\.244\.5\.\d+$/);
  t.equal(leases(net).length, 1);
});

t.test('probes and hooks over the pod network: a readiness probe reaches a server bound to the pod IP only; httpGet hooks reach another pod at the IP they name', async (t) => {
  const net = nodeNet(t, 6);
  const a = await start(t, net, NODE_A);
  await a.writeManifest('handler.yaml', webPod('handler'));
  const handlerIP = (await runningPod(a, 'handler')).status?.podIP ?? '';
  // Bound to the pod IP alone: 127.0.0.1 in the pod refuses, as the kubelet's probe (to the pod IP) would never see.
  await a.writeManifest('bound.yaml', `apiVersion: v1
kind: Pod
metadata: { name: bound }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "exec httpd -f -p $POD_IP:8080 -h /www"]
      env: [{ name: POD_IP, valueFrom: { fieldRef: { fieldPath: status.podIP } } }]
      readinessProbe: { httpGet: { path: /index.html, port: 8080 }, periodSeconds: 1 }
      lifecycle:
        postStart: { httpGet: { host: ${handlerIP}, path: /index.html, port: 8080 } }
`);
  await a.writeManifest('hooked.yaml', `apiVersion: v1
kind: Pod
metadata: { name: hooked }
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Never
  containers:
    - name: main
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sleep", "3600"]
      lifecycle:
        postStart: { httpGet: { host: ${handlerIP}, path: /missing, port: 8080 } }
`);
  const ready = await a.waitFor('bound Ready through its pod IP', async () => {
    const p = await a.pod('bound');
    return p?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? p : undefined;
  }, 60_000);
  t.equal(ready.status?.containerStatuses?.[0]?.restartCount, 0, 'its postStart hook to the handler pod succeeded');
  const failed = await a.waitFor('the hook to /missing failed on the handler', async () => (await events(a)).find((e) => e.reason === 'FailedPostStartHook' && e.involvedObject?.name === `hooked-${a.nodeName}`), 60_000);
  t.match(failed.message, /^HTTP lifecycle hook \(\/missing\) for Container "main" failed - error: HTTP probe failed with statuscode: 404/, 'the handler pod answered 404');
  t.notOk((await events(a)).some((e) => e.reason === 'FailedPostStartHook' && e.involvedObject?.name === `bound-${a.nodeName}`));
});

t.test('UDP over the pod network: node → pod and pod on node B → pod on node A', async (t) => {
  const image = await nodeBaseImage();
  const netA = nodeNet(t, 7);
  const netB = nodeNet(t, 8);
  const a = await start(t, netA, NODE_A);
  const b = await start(t, netB, NODE_B);
  const nodePod = (name: string, script: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - name: main
      image: ${image}
      imagePullPolicy: Never
      command: ["node", "-e", ${JSON.stringify(script)}]
`;
  // An echo server: each datagram comes back prefixed with the server's pod name.
  await a.writeManifest('udp.yaml', nodePod('udp', `const s = require('dgram').createSocket('udp4'); s.on('message', (m, r) => s.send(Buffer.concat([Buffer.from('udp: '), m]), r.port, r.address)); s.bind(9000); setInterval(() => {}, 1e9);`));
  await b.writeManifest('idle.yaml', nodePod('idle', 'setInterval(() => {}, 1e9)'));
  const server = await runningPod(a, 'udp');
  const client = await runningPod(b, 'idle');
  const ip = server.status?.podIP ?? '';
  t.match(ip, /^10\.244\.7\.\d+$/);
  // The container runs before its server has bound the port: a datagram that early is refused
  // (ICMP port unreachable), so both senders repeat theirs until the first echo.
  const fromNode = await new Promise<string>((resolve, reject) => {
    const s = createSocket('udp4');
    const send = () => s.send('from the node', 9000, ip);
    const every = setInterval(send, 250);
    const timer = setTimeout(() => (clearInterval(every), s.close(), reject(new Error('no UDP answer within 20 s'))), 20_000);
    s.on('message', (m) => (clearInterval(every), clearTimeout(timer), s.close(), resolve(m.toString())));
    s.on('error', () => undefined);
    send();
  });
  t.equal(fromNode, 'udp: from the node', 'node → pod IP over UDP');
  const script = `const s = require('dgram').createSocket('udp4'); const send = () => s.send('from node B', 9000, ${JSON.stringify(ip)}); const i = setInterval(send, 250); const t = setTimeout(() => { console.log('timeout'); process.exit(1); }, 20000); s.on('error', () => {}); s.on('message', (m) => { console.log(m.toString()); clearInterval(i); clearTimeout(t); s.close(); }); send();`;
  const fromPod = await dockerCLI('exec', idOf(client), 'node', '-e', script);
  t.equal(fromPod, 'udp: from node B\n', 'a pod on node B → the pod on node A over UDP');
});
