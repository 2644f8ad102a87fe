import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Pod } from '../../src/api/types.js';
import { dockerCLI } from '../helpers/docker.js';
import { insideTestNetns } from '../helpers/netns.js';
import { startTestNode } from '../helpers/nodelet.js';
import { idOf, webPod } from '../helpers/pod-net.js';

// Dual stack: a bridge network whose host-local IPAM has an IPv4 and an IPv6 range gives each
// pod one address of each; nodelet reports both (`status.podIPs`, IPv4 first as the kubelet
// orders them, pkg/kubelet/kubelet_pods.go sortPodIPs), the downward API shows both, and the pod
// answers on each. Everything is inside this file's sealed netns; the IPv6 range is a ULA
// (fd00::/8) that exists only there.
const ns = await insideTestNetns();
t.setTimeout(300_000);

const root = mkdtempSync(join(tmpdir(), 'nodelet-dual-stack-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
const confDir = join(root, 'net.d');
mkdirSync(confDir);
writeFileSync(
  join(confDir, '10-dual.conflist'),
  JSON.stringify({
    cniVersion: '1.0.0',
    name: 'dual',
    plugins: [
      {
        type: 'bridge',
        bridge: 'cnidual',
        isGateway: true,
        ipam: {
          type: 'host-local',
          dataDir: join(root, 'leases'),
          ranges: [[{ subnet: '10.244.50.0/24' }], [{ subnet: 'fd00:10:244:50::/64' }]],
          routes: [{ dst: '0.0.0.0/0' }, { dst: '::/0' }],
        },
      },
    ],
  }),
);

function get(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host, port, path: '/index.html', timeout: 10_000, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy(new Error(`GET [${host}]:${port} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

t.test('one IPv4 and one IPv6 address per pod: status.podIPs, the downward API, and the pod answers on both', async (t) => {
  const node = await startTestNode(t, { networkPlugin: 'cni', cniConfDir: confDir, cniCacheDir: join(root, 'cache'), cniBinDirs: ['/usr/lib/cni'], nodeIP: ns.nodeIPs[0] });
  await node.writeManifest('web.yaml', webPod('web'));
  const pod = await node.waitFor('web running with two IPs', async () => {
    const p: Pod | undefined = await node.pod('web');
    return p?.status?.phase === 'Running' && (p.status.podIPs?.length ?? 0) === 2 ? p : undefined;
  }, 60_000);
  const [v4, v6] = (pod.status?.podIPs ?? []).map((p) => p.ip ?? '');
  t.match(v4, /^10\.244\.50\.\d+$/, 'first the IPv4 address');
  t.match(v6, /^fd00:10:244:50::[0-9a-f]+$/, 'then the IPv6 address');
  t.equal(pod.status?.podIP, v4, 'podIP is the IPv4 one');
  const id = idOf(pod);
  t.equal(await dockerCLI('exec', id, 'cat', '/www/env'), `${v4} ${v4},${v6}\n`, 'status.podIP and status.podIPs (comma-joined) through the downward API');
  const hosts = await dockerCLI('exec', id, 'cat', '/etc/hosts');
  t.ok(hosts.endsWith(`${v4}\tweb-${node.nodeName}\n${v6}\tweb-${node.nodeName}\n`), 'one /etc/hosts line per pod IP, as managedHostsFileContent', { hosts });
  t.equal(await get(v4 ?? '', 8080), 'hello from nodelet\n', 'the node reaches the pod over IPv4');
  // IPv6 duplicate address detection can hold the new address "tentative" for a moment.
  const overV6 = await node.waitFor('the pod answering over IPv6', () => get(v6 ?? '', 8080).catch(() => undefined), 30_000);
  t.equal(overV6, 'hello from nodelet\n', 'and over IPv6');
});
