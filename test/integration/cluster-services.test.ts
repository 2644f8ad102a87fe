import { execFile } from 'node:child_process';
import { Resolver } from 'node:dns/promises';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import type { Node, Pod, Service } from 'kubernetes-types/core/v1.js';
import { ApiError, KubeClient } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { startClusterNode, type ClusterNode } from '../helpers/cluster-node.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { BUSYBOX } from '../helpers/docker.js';
import { insideTestNetns } from '../helpers/netns.js';
import { nodeBaseImage } from '../helpers/node-base-image.js';
import { waitFor } from '../helpers/wait.js';

// Services and DNS in front of pods on nodelet: the test cluster in this file's sealed netns —
// the control plane with the apiserver on the namespace's APISERVER_IP (so the `kubernetes`
// Service has an endpoint pods reach), two nodelets on CNI bridges of their own, the real
// kube-proxy (iptables mode) and CoreDNS running as a Deployment on the nodelets behind the
// kube-dns Service (scripts/cluster-dns.sh), the nodes with --cluster-dns. Every address dialled
// below (ClusterIPs, node IPs, pod IPs) exists only inside the namespace.
const ns = await insideTestNetns();
t.setTimeout(900_000);

const DNS_IP = '10.0.0.10';
const exec = promisify(execFile);
const SCRIPT_DNS = new URL('../../scripts/cluster-dns.sh', import.meta.url).pathname;

const cp = await startControlPlane(t, { apiserverAddress: ns.apiserverIP });
const admin = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
t.teardown(() => admin.close());

const root = mkdtempSync(join(tmpdir(), 'nodelet-cluster-svc-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));

/** A node on bridge cni<i>, its pods from its podCIDR (`ipRanges`), served on its node IP. */
async function node(i: number): Promise<ClusterNode> {
  const dir = join(root, `node${i}`);
  mkdirSync(join(dir, 'net.d'), { recursive: true });
  writeFileSync(
    join(dir, 'net.d', '10-cluster.conflist'),
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'cluster',
      plugins: [
        { type: 'bridge', bridge: `cni${i}`, isGateway: true, hairpinMode: true, capabilities: { ipRanges: true }, ipam: { type: 'host-local', dataDir: join(dir, 'leases'), routes: [{ dst: '0.0.0.0/0' }] } },
        { type: 'portmap', capabilities: { portMappings: true } },
      ],
    }),
  );
  const ip = ns.nodeIPs[i];
  return startClusterNode(t, cp, {
    nodeName: `svc-node-${i}`,
    address: ip,
    nodeIP: ip,
    networkPlugin: 'cni',
    cniConfDir: join(dir, 'net.d'),
    cniCacheDir: join(dir, 'cache'),
    cniBinDirs: ['/usr/lib/cni'],
    clusterDNS: [DNS_IP],
    clusterDomain: 'cluster.local',
  });
}

const nodes = [await node(0), await node(1)];
const nodeReady = async (name: string) => {
  const n = await admin.request<Node>('GET', `/api/v1/nodes/${name}`);
  return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined;
};
for (const n of nodes) await waitFor(`${n.nodeName} Ready`, () => nodeReady(n.nodeName), 60_000, 200);
// One network stack, one kube-proxy (scripts/control-plane.sh start-proxy).
await cp.startProxy(nodes[0]!.nodeName);
await exec(SCRIPT_DNS, ['build'], { timeout: 30 * 60_000 });
await exec(SCRIPT_DNS, ['deploy', cp.adminKubeconfig, DNS_IP], { timeout: 300_000 });

const getPod = (name: string) => admin.request<Pod>('GET', `/api/v1/namespaces/default/pods/${name}`).catch((err: unknown) => (err instanceof ApiError && err.code === 404 ? undefined : Promise.reject(err)));
const running = (name: string) =>
  waitFor(`${name} Running and Ready`, async () => {
    const p = await getPod(name);
    return p?.status?.phase === 'Running' && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? p : undefined;
  }, 120_000, 200);

/** A web pod on `nodeName` that answers GET /index.html with its own name. */
const webPod = (name: string, nodeName: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, labels: { app: 'web' } },
  spec: {
    nodeName,
    automountServiceAccountToken: false,
    terminationGracePeriodSeconds: 1,
    containers: [{
      name: 'main',
      image: BUSYBOX,
      imagePullPolicy: 'Never',
      command: ['sh', '-c', 'mkdir -p /tmp/www && echo "$HOSTNAME" > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www'],
      ports: [{ containerPort: 8080, name: 'http' }],
      readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
    }],
  },
});

/** GET http://host:port/index.html from this process (inside the namespace). */
function get(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path: '/index.html', timeout: 5_000, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body.trim()));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${host}:${port} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Names that answered, asking until every one of `want` did or `ms` passed: the endpoints
 * controller and kube-proxy add each Ready pod on their own schedule, so one backend can answer
 * seconds before the other is programmed.
 */
async function backendsSeen(host: string, port: number, want: readonly string[], ms = 30_000): Promise<Set<string>> {
  const seen = new Set<string>();
  const deadline = Date.now() + ms;
  while (Date.now() < deadline && !want.every((w) => seen.has(w))) seen.add(await get(host, port));
  return seen;
}

t.test('a ClusterIP Service and a NodePort in front of pods on two nodelets answer through kube-proxy', async (t) => {
  for (const [i, n] of nodes.entries()) await admin.request('POST', '/api/v1/namespaces/default/pods', { body: webPod(`web-${i}`, n.nodeName) });
  const svc = await admin.request<Service>('POST', '/api/v1/namespaces/default/services', {
    body: { apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { type: 'NodePort', selector: { app: 'web' }, ports: [{ port: 80, targetPort: 'http' }] } },
  });
  const clusterIP = svc.spec?.clusterIP ?? '';
  const nodePort = svc.spec?.ports?.[0]?.nodePort ?? 0;
  t.match(clusterIP, /^10\.0\.0\.\d+$/, 'a ClusterIP from the service range');
  const pods = [await running('web-0'), await running('web-1')];
  t.not(pods[0]!.status?.podIP, pods[1]!.status?.podIP, 'one pod per node, each with its own IP');
  const names = ['web-0', 'web-1'];
  // The endpoints controller and kube-proxy catch up asynchronously: the first answer marks it.
  await waitFor('the ClusterIP answers', () => get(clusterIP, 80).catch(() => undefined), 60_000, 200);
  t.same([...(await backendsSeen(clusterIP, 80, names))].sort(), names, `${clusterIP}:80 reaches both pods, one on each nodelet`);
  for (const ip of [ns.nodeIPs[0], ns.nodeIPs[1]]) {
    t.same([...(await backendsSeen(ip, nodePort, names))].sort(), names, `NodePort ${ip}:${nodePort} reaches both pods`);
  }

  // From a pod on the second node to the Service, through its bridge and kube-proxy's rules.
  await admin.request('POST', '/api/v1/namespaces/default/pods', {
    body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'client' }, spec: { nodeName: nodes[1]!.nodeName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: BUSYBOX, imagePullPolicy: 'Never', command: ['sleep', '3600'] }] } },
  });
  await running('client');
  const r = await cp.kubectl(['exec', 'client', '--', 'sh', '-c', `printf 'GET /index.html HTTP/1.0\\r\\n\\r\\n' | nc -w 5 ${clusterIP} 80`]);
  t.equal(r.code, 0, `kubectl exec client -- nc ${clusterIP} 80: ${r.stderr}`);
  t.match(r.stdout, /^HTTP\/1\.[01] 200/, 'a pod gets an HTTP answer from the ClusterIP');
  t.match(r.stdout, /\nweb-[01]\s*$/, 'served by one of the pods');
});

t.test('CoreDNS on nodelet answers for Services, and a pod resolves kubernetes.default and a Service name', async (t) => {
  const web = await admin.request<Service>('GET', '/api/v1/namespaces/default/services/web');
  const kubernetes = await admin.request<Service>('GET', '/api/v1/namespaces/default/services/kubernetes');
  const resolver = new Resolver({ timeout: 2_000, tries: 2 });
  resolver.setServers([DNS_IP]);
  t.same(await resolver.resolve4('web.default.svc.cluster.local'), [web.spec?.clusterIP], `kube-dns ${DNS_IP} answers the Service's A record`);
  t.same(await resolver.resolve4('kubernetes.default.svc.cluster.local'), [kubernetes.spec?.clusterIP], 'and the kubernetes Service\'s');

  // A pod with dnsPolicy ClusterFirst (the default): nodelet writes nameserver DNS_IP and the
  // kubelet's search list, so short names resolve through glibc's resolver (Node's dns.lookup).
  const image = await nodeBaseImage();
  const lookup = "const dns=require('dns');Promise.all(process.argv.slice(1).map((n)=>dns.promises.lookup(n).then((a)=>n+'='+a.address,(e)=>n+'!'+e.code))).then((r)=>console.log(r.join(' ')))";
  await admin.request('POST', '/api/v1/namespaces/default/pods', {
    body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'resolver' }, spec: { nodeName: nodes[0]!.nodeName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image, imagePullPolicy: 'Never', command: ['sleep', '3600'] }] } },
  });
  await running('resolver');
  const r = await cp.kubectl(['exec', 'resolver', '--', 'node', '-e', lookup, 'kubernetes.default', 'web', 'web.default.svc']);
  t.equal(r.code, 0, `kubectl exec resolver -- node dns.lookup: ${r.stderr}`);
  t.equal(r.stdout.trim(), `kubernetes.default=${kubernetes.spec?.clusterIP} web=${web.spec?.clusterIP} web.default.svc=${web.spec?.clusterIP}`, 'short names resolve through the search list');
  const conf = await cp.kubectl(['exec', 'resolver', '--', 'cat', '/etc/resolv.conf']);
  t.match(conf.stdout, new RegExp(`nameserver ${DNS_IP.replace(/\./g, '\\.')}\\n`), 'resolv.conf names the cluster DNS');
  t.match(conf.stdout, /search default\.svc\.cluster\.local svc\.cluster\.local cluster\.local/, 'and the kubelet\'s search list');
});
