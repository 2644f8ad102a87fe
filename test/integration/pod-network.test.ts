import t from 'tap';
import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Pod } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { insideTestNetns, NODE_IPS } from '../helpers/netns.js';
import { nodeBaseImage } from '../helpers/node-base-image.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';

// Pod networking end to end with the real parts: nodelet runs Debian's CNI plugins
// (/usr/lib/cni: bridge, host-local, loopback, portmap) on its sandboxes, inside a network
// namespace this file made (test/helpers/netns.ts) — every pod IP, bridge and rule lives there,
// and nothing in it routes anywhere else. Two standalone nodelets share the namespace's engine,
// each with its own bridge and /24, as two nodes of one cluster would.

const ns = await insideTestNetns();
const run = promisify(execFile);
const NODE_IMAGE = await nodeBaseImage();

interface NodeNet {
  readonly node: TestNode;
  readonly ip: string;
  readonly subnet: string;
  readonly dataDir: string;
}

/** A conflist per node: bridge cni-n<i> on 10.244.<i>.0/24, host-local leases in `dataDir`, portmap limited to this node's IP. */
function conflist(i: number, dataDir: string): string {
  const others = NODE_IPS.filter((_, j) => j !== i - 1).flatMap((ip) => ['!', '-d', ip]);
  return JSON.stringify({
    cniVersion: '1.0.0',
    name: `nodelet-n${i}`,
    plugins: [
      {
        type: 'bridge', bridge: `cni-n${i}`, isGateway: true, ipMasq: false, hairpinMode: true,
        ipam: { type: 'host-local', dataDir, ranges: [[{ subnet: `10.244.${i}.0/24` }]], routes: [{ dst: '0.0.0.0/0' }] },
      },
      { type: 'portmap', capabilities: { portMappings: true }, conditionsV4: others.slice(0, 3) },
    ],
  });
}

async function startNetNode(i: number, extra: Record<string, unknown> = {}): Promise<NodeNet> {
  const dir = t.testdir();
  const confDir = join(dir, 'net.d');
  const dataDir = join(dir, 'ipam');
  await mkdir(confDir, { recursive: true });
  await writeFile(join(confDir, '10-bridge.conflist'), conflist(i, dataDir));
  const ip = NODE_IPS[i - 1] ?? '';
  const node = await startTestNode(t, {
    nodeIP: ip,
    networkPlugin: 'cni',
    cniBinDirs: ['/usr/lib/cni'],
    cniConfDir: confDir,
    cniCacheDir: join(dir, 'cache'),
    ...extra,
  });
  return { node, ip, subnet: `10.244.${i}.`, dataDir };
}

const podYaml = (name: string, spec: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 0
${spec}`;

const httpd = (extra = '') => `  containers:
    - name: main
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "echo pod-$HOSTNAME > /www/index.html && httpd -f -p 80 -h /www"]
${extra}`;

/** A UDP echo server on :5353 (the machine's node in the pod: busybox's nc has no UDP). */
const udpEcho = `  containers:
    - name: main
      image: ${NODE_IMAGE}
      imagePullPolicy: Never
      command: ["node", "-e", "const s=require('dgram').createSocket('udp4');s.on('message',(m,r)=>s.send('echo:'+m,r.port,r.address));s.bind(5353)"]
`;

const running = (pod: Pod | undefined) =>
  pod?.status?.phase === 'Running' && pod.status.podIP && pod.status.containerStatuses?.every((c) => c.state?.running) ? pod : undefined;
const runningPod = (node: TestNode, name: string) => node.waitFor(`pod ${name} running with an IP`, async () => running(await node.pod(name)), 60_000);
const idOf = (pod: Pod) => pod.status?.containerStatuses?.[0]?.containerID?.replace('docker://', '') ?? '';
const exec = (pod: Pod, ...cmd: string[]) => dockerCLI('exec', idOf(pod), ...cmd);

async function udpFromHere(ip: string, port: number, text: string): Promise<string> {
  const s = createSocket('udp4');
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no UDP answer from ${ip}:${port}`)), 5000);
      s.on('message', (m) => {
        clearTimeout(timer);
        resolve(m.toString());
      });
      s.send(text, port, ip);
    });
  } finally {
    s.close();
  }
}

const leases = async (dir: string) => (await readdir(dir, { recursive: true }).catch(() => [] as string[])).filter((f) => /\d+\.\d+\.\d+\.\d+$/.test(String(f))).sort();

t.test('pods get IPs from the bridge and reach each other on one node and across two', async (t) => {
  const n1 = await startNetNode(1);
  const n2 = await startNetNode(2);
  await n1.node.writeManifest('a.yaml', podYaml('web-a', httpd()));
  await n1.node.writeManifest('b.yaml', podYaml('web-b', httpd()));
  await n2.node.writeManifest('c.yaml', podYaml('web-c', httpd()));
  await n1.node.writeManifest('udp.yaml', podYaml('udp', udpEcho));
  const a = await runningPod(n1.node, 'web-a');
  const b = await runningPod(n1.node, 'web-b');
  const c = await runningPod(n2.node, 'web-c');
  const udp = await runningPod(n1.node, 'udp');
  for (const [pod, net] of [[a, n1], [b, n1], [c, n2], [udp, n1]] as const) {
    t.match(pod.status?.podIP, new RegExp(`^${net.subnet.replace(/\./g, '\\.')}\\d+$`), `${pod.metadata?.name} has an IP of its node's range`);
    t.same(pod.status?.podIPs, [{ ip: pod.status?.podIP }]);
    t.equal(pod.status?.conditions?.find((x) => x.type === 'PodReadyToStartContainers')?.status, 'True');
  }
  t.not(a.status?.podIP, b.status?.podIP, 'two pods, two IPs');
  t.match(await exec(b, 'wget', '-q', '-O-', `http://${a.status?.podIP}/`), /^pod-web-a/, 'pod → pod on the same bridge (HTTP)');
  t.match(await exec(c, 'wget', '-q', '-O-', `http://${a.status?.podIP}/`), /^pod-web-a/, 'pod on node 2 → pod on node 1 (HTTP)');
  t.match(await exec(a, 'wget', '-q', '-O-', `http://${c.status?.podIP}/`), /^pod-web-c/, 'and back');
  const udpClient = `const s=require('dgram').createSocket('udp4');s.on('message',m=>{console.log(String(m));process.exit(0)});s.send('ping',5353,'${udp.status?.podIP}');setTimeout(()=>process.exit(3),5000)`;
  const nodeClient = await dockerCLI('run', '--rm', '--network', `container:${idOf(c)}`, NODE_IMAGE, 'node', '-e', udpClient).catch(() => undefined);
  t.equal(nodeClient?.trim(), 'echo:ping', 'pod on node 2 → pod on node 1 (UDP)');
  t.equal(await udpFromHere(udp.status?.podIP ?? '', 5353, 'hello'), 'echo:hello', 'the node → a pod (UDP)');
  const res = await fetch(`http://${b.status?.podIP}/`);
  t.match(await res.text(), /^pod-web-b/, 'the node → a pod (HTTP)');

  const env = await exec(a, 'cat', '/etc/hosts');
  t.match(env, new RegExp(`${a.status?.podIP}\\tweb-a-${n1.node.nodeName}`), '/etc/hosts names the pod IP');
  t.equal(ns.nodeIPs[0], n1.ip);
});

t.test('a hostNetwork pod reaches a pod IP; its own IP is the node\'s', async (t) => {
  const n1 = await startNetNode(1);
  await n1.node.writeManifest('web.yaml', podYaml('web', httpd()));
  await n1.node.writeManifest('hn.yaml', podYaml('hn', `  hostNetwork: true
  containers:
    - name: main
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sleep", "3600"]
`));
  const web = await runningPod(n1.node, 'web');
  const hn = await runningPod(n1.node, 'hn');
  t.equal(hn.status?.podIP, n1.ip, 'hostNetwork: podIP is the node IP');
  t.match(await exec(hn, 'wget', '-q', '-O-', `http://${web.status?.podIP}/`), /^pod-web/);
});

t.test('hostPort through portmap on the node IP; a second pod for the same port is rejected (NodePorts)', async (t) => {
  const n1 = await startNetNode(1);
  await n1.node.writeManifest('hp.yaml', podYaml('hp', httpd(`      ports:
        - { containerPort: 80, hostPort: 18080, protocol: TCP }
`)));
  await runningPod(n1.node, 'hp');
  const res = await fetch(`http://${n1.ip}:18080/`);
  t.match(await res.text(), /^pod-hp/, 'hostPort answers on the node IP');
  await n1.node.writeManifest('hp2.yaml', podYaml('hp2', httpd(`      ports:
        - { containerPort: 80, hostPort: 18080, protocol: TCP }
`)));
  const rejected = await n1.node.waitFor('hp2 rejected', async () => {
    const p = await n1.node.pod('hp2');
    return p?.status?.phase === 'Failed' ? p : undefined;
  });
  t.equal(rejected.status?.reason, 'NodePorts');
  t.equal(rejected.status?.message, "Pod was rejected: Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports");
});

t.test('the pod IP survives a restart of nodelet; teardown releases every lease', async (t) => {
  const n1 = await startNetNode(1);
  await n1.node.writeManifest('keep.yaml', podYaml('keep', httpd()));
  const before = await runningPod(n1.node, 'keep');
  const leasesBefore = await leases(n1.dataDir);
  t.equal(leasesBefore.length, 1, 'one lease');
  await n1.node.stop();
  await n1.node.restart();
  const after = await runningPod(n1.node, 'keep');
  t.equal(after.status?.podIP, before.status?.podIP, 'same IP');
  t.equal(idOf(after), idOf(before), 'same container: nothing was recreated');
  t.same(await leases(n1.dataDir), leasesBefore, 'no second ADD: still one lease');
  await n1.node.removeManifest('keep.yaml');
  await n1.node.waitFor('lease released', async () => ((await leases(n1.dataDir)).length === 0 ? true : undefined), 30_000);
});

t.test('IPAM state is unchanged after 100 pod create/delete cycles', async (t) => {
  const n1 = await startNetNode(1);
  const CYCLES = 100;
  const PARALLEL = 10;
  const ips = new Set<string>();
  for (let round = 0; round < CYCLES / PARALLEL; round++) {
    const names = Array.from({ length: PARALLEL }, (_, i) => `cyc-${i}`);
    await Promise.all(names.map((n) => n1.node.writeManifest(`${n}.yaml`, podYaml(n, httpd()))));
    for (const n of names) ips.add((await runningPod(n1.node, n)).status?.podIP ?? '');
    await Promise.all(names.map((n) => n1.node.removeManifest(`${n}.yaml`)));
    await n1.node.waitFor('pods gone', async () => {
      const left = await Promise.all(names.map((n) => n1.node.pod(n)));
      return left.every((p) => p === undefined) ? true : undefined;
    }, 60_000);
    await n1.node.waitFor('leases released', async () => ((await leases(n1.dataDir)).length === 0 ? true : undefined), 30_000);
  }
  t.ok(ips.size >= PARALLEL, `pods got IPs (${ips.size} distinct)`);
  t.same(await leases(n1.dataDir), [], 'no lease left');
});

t.test('a failing plugin is the pod\'s FailedCreatePodSandBox; the pod starts once the plugin is fixed', async (t) => {
  const dir = t.testdir();
  const bin = join(dir, 'bin');
  const flag = join(dir, 'fixed');
  await mkdir(bin, { recursive: true });
  // A plugin that fails until `flag` exists, then hands over to Debian's bridge.
  await writeFile(join(bin, 'flaky'), `#!/bin/sh
if [ ! -e ${flag} ]; then echo '{"cniVersion":"1.0.0","code":11,"msg":"flaky plugin says no"}'; exit 1; fi
exec /usr/lib/cni/bridge
`, { mode: 0o755 });
  const confDir = join(dir, 'net.d');
  await mkdir(confDir, { recursive: true });
  const list = JSON.parse(conflist(3, join(dir, 'ipam'))) as { plugins: { type: string }[] };
  if (list.plugins[0]) list.plugins[0].type = 'flaky';
  await writeFile(join(confDir, '10-flaky.conflist'), JSON.stringify(list));
  const node = await startTestNode(t, { nodeIP: NODE_IPS[2], networkPlugin: 'cni', cniBinDirs: [bin, '/usr/lib/cni'], cniConfDir: confDir, cniCacheDir: join(dir, 'cache') });
  await node.writeManifest('f.yaml', podYaml('f', httpd()));
  type Event = { reason?: string; message?: string };
  const event = await node.waitFor('FailedCreatePodSandBox', async () =>
    (await node.get<{ items: Event[] }>('/api/v1/events')).body.items.find((e) => e.reason === 'FailedCreatePodSandBox'), 30_000);
  t.match(event.message, /flaky plugin says no/, 'the plugin\'s message is in the event');
  const waiting = await node.waitFor('waiting reason', async () => (await node.pod('f'))?.status?.containerStatuses?.[0]?.state?.waiting);
  t.match(waiting.message ?? '', /flaky plugin says no/);
  const { stdout } = await run('docker', ['ps', '-aq', '--filter', `label=io.kubernetes.pod.name=f-${node.nodeName}`], { env: process.env });
  t.ok(stdout.trim().split('\n').filter(Boolean).length <= 1, 'failed sandboxes are not left behind');
  await writeFile(flag, '');
  const pod = await runningPod(node, 'f');
  t.match(pod.status?.podIP, /^10\.244\.3\./, 'the pod runs once the plugin works');
});
