import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Node, Pod } from 'kubernetes-types/core/v1.js';
import { ApiError, KubeClient } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { startClusterNode } from '../helpers/cluster-node.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { insideTestNetns } from '../helpers/netns.js';
import { waitFor } from '../helpers/wait.js';

// Pod networking in cluster mode: the controller-manager allocates each Node a podCIDR
// (scripts/control-plane.sh: --allocate-node-cidrs), nodelet passes it to CNI as the `ipRanges`
// capability (the kubelet's updatePodCIDR → cri-dockerd's UpdateRuntimeConfig), the scheduled pod
// gets an IP of it, the apiserver holds that IP and reaches the pod there (pods/proxy). The
// control plane, nodelet and the pods all live inside this file's sealed test netns.
const ns = await insideTestNetns();
t.setTimeout(600_000);

const cp = await startControlPlane(t);
const admin = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
t.teardown(() => admin.close());

const root = mkdtempSync(join(tmpdir(), 'nodelet-cluster-net-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
const confDir = join(root, 'net.d');
mkdirSync(confDir);
// No ranges of its own: host-local takes them from `ipRanges`, i.e. from the Node's podCIDR.
writeFileSync(
  join(confDir, '10-cluster.conflist'),
  JSON.stringify({
    cniVersion: '1.0.0',
    name: 'cluster',
    plugins: [
      { type: 'bridge', bridge: 'cni0', isGateway: true, capabilities: { ipRanges: true }, ipam: { type: 'host-local', dataDir: join(root, 'leases'), routes: [{ dst: '0.0.0.0/0' }] } },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  }),
);

const node = await startClusterNode(t, cp, { networkPlugin: 'cni', cniConfDir: confDir, cniCacheDir: join(root, 'cache'), cniBinDirs: ['/usr/lib/cni'], nodeIP: ns.nodeIPs[0] });

const getPod = (name: string) => admin.request<Pod>('GET', `/api/v1/namespaces/default/pods/${name}`).catch((err: unknown) => (err instanceof ApiError && err.code === 404 ? undefined : Promise.reject(err)));

t.test('the Node gets a podCIDR, becomes Ready, and a scheduled pod gets an IP of it that the apiserver holds and reaches', async (t) => {
  const cidr = await waitFor('a podCIDR from the controller-manager', async () => (await admin.request<Node>('GET', `/api/v1/nodes/${node.nodeName}`)).spec?.podCIDR, 60_000, 200);
  t.match(cidr, /^10\.244\.\d+\.0\/24$/);
  await waitFor('the Node Ready once its network has its range', async () => {
    const n = await admin.request<Node>('GET', `/api/v1/nodes/${node.nodeName}`);
    return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined;
  }, 60_000, 200);

  await admin.request<Pod>('POST', '/api/v1/namespaces/default/pods', {
    body: {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web' },
      spec: {
        nodeName: node.nodeName,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: 'nodelet.local/busybox:1.35', imagePullPolicy: 'Never', command: ['httpd', '-f', '-p', '8080', '-h', '/www'], ports: [{ containerPort: 8080 }] }],
      },
    },
  });
  const pod = await waitFor('web Running with an IP in the apiserver', async () => {
    const p = await getPod('web');
    return p?.status?.phase === 'Running' && p.status.podIP ? p : undefined;
  }, 90_000, 200);
  const prefix = (cidr ?? '').split('.').slice(0, 3).join('.');
  t.ok(pod.status?.podIP?.startsWith(`${prefix}.`), `${pod.status?.podIP} is in the node's podCIDR ${cidr}`);
  t.same(pod.status?.podIPs, [{ ip: pod.status?.podIP }]);
  const proxied = await cp.kubectl(['get', '--raw', '/api/v1/namespaces/default/pods/web:8080/proxy/index.html']);
  t.equal(proxied.stdout, 'hello from nodelet\n', `the apiserver reaches the pod at its IP (kubectl get --raw …/pods/web:8080/proxy/): ${proxied.stderr}`);
  await admin.request('DELETE', '/api/v1/namespaces/default/pods/web');
});
