import t from 'tap';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Pod } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';

// dnsPolicy, dnsConfig, hostname, subdomain and setHostnameAsFQDN against the real engine: what
// `cat /etc/resolv.conf` and `hostname` print in the containers. No name is ever resolved (pods
// run on network `none`); the addresses below are only written into files.

const NODE_RESOLV = '# the node\nnameserver 192.0.2.53\nsearch corp.example.\noptions timeout:2\n';

const podYaml = (name: string, spec: string, containers = main()) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  terminationGracePeriodSeconds: 1
${spec}
  containers:
${containers}`;

const main = (extra = '') => `    - name: main
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "sleep 3600"]
${extra}`;

type Event = { reason?: string; type?: string; message?: string; involvedObject?: { kind?: string; name?: string } };

const running = (pod: Pod | undefined) =>
  pod?.status?.phase === 'Running' && pod.status.containerStatuses?.every((c) => c.state?.running) ? pod : undefined;
const runningPod = (node: TestNode, name: string) => node.waitFor(`pod ${name} running`, async () => running(await node.pod(name)), 30_000);
const idOf = (pod: Pod, name = 'main') => pod.status?.containerStatuses?.find((c) => c.name === name)?.containerID?.replace('docker://', '') ?? '';
const exec = (id: string, script: string) => dockerCLI('exec', id, 'sh', '-c', script);
const events = async (node: TestNode) => (await node.get<{ items: Event[] }>('/api/v1/events')).body.items;

t.test('with --cluster-dns and --cluster-domain: ClusterFirst, Default, None, subdomain and setHostnameAsFQDN', async (t) => {
  const dir = t.testdir();
  const resolvConf = join(dir, 'node-resolv.conf');
  const ownFile = join(dir, 'own-resolv.conf');
  await writeFile(resolvConf, NODE_RESOLV);
  await writeFile(ownFile, 'nameserver 198.51.100.1\n');
  const node = await startTestNode(t, { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', resolvConf });
  const n = node.nodeName;

  await node.writeManifest('cluster.yaml', podYaml('cluster', '  hostname: web-0\n  subdomain: peers', main() + `    - name: own
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "sleep 3600"]
      volumeMounts:
        - { name: own, mountPath: /etc/resolv.conf }
  volumes:
    - name: own
      hostPath: { path: ${ownFile}, type: File }
`));
  await node.writeManifest('fqdn.yaml', podYaml('fqdn', '  hostname: web-1\n  subdomain: peers\n  setHostnameAsFQDN: true'));
  await node.writeManifest('default.yaml', podYaml('default', '  dnsPolicy: Default\n  dnsConfig:\n    searches: [extra.example]\n    options: [{ name: timeout, value: "5" }, { name: edns0 }]'));
  await node.writeManifest('none.yaml', podYaml('none', '  dnsPolicy: None\n  dnsConfig:\n    nameservers: [203.0.113.7]\n    searches: [my.dns.search.suffix]\n    options: [{ name: ndots, value: "2" }]'));
  await node.writeManifest('hostnet.yaml', podYaml('hostnet', '  hostNetwork: true'));

  const cluster = await runningPod(node, 'cluster');
  t.equal(
    await exec(idOf(cluster), 'cat /etc/resolv.conf'),
    'search default.svc.cluster.local svc.cluster.local cluster.local corp.example\nnameserver 10.96.0.10\noptions ndots:5\n',
    'ClusterFirst: the cluster nameserver, the cluster searches then the node\'s, ndots:5',
  );
  t.equal(await exec(idOf(cluster, 'own'), 'cat /etc/resolv.conf'), 'nameserver 198.51.100.1\n', 'a container mounting /etc/resolv.conf keeps its own');
  t.equal(await exec(idOf(cluster), 'hostname'), 'web-0\n', 'with a subdomain the hostname stays the short name');

  const fqdn = await runningPod(node, 'fqdn');
  t.equal(await exec(idOf(fqdn), 'hostname'), 'web-1.peers.default.svc.cluster.local\n', 'setHostnameAsFQDN: the FQDN');

  const def = await runningPod(node, 'default');
  t.equal(await exec(idOf(def), 'cat /etc/resolv.conf'), 'search corp.example extra.example\nnameserver 192.0.2.53\noptions timeout:5 edns0\n', 'Default: the node\'s --resolv-conf with dnsConfig merged');
  t.equal(await exec(idOf(def), 'hostname'), `default-${n}\n`, 'no hostname: the pod name');

  const none = await runningPod(node, 'none');
  t.equal(await exec(idOf(none), 'cat /etc/resolv.conf'), 'search my.dns.search.suffix\nnameserver 203.0.113.7\noptions ndots:2\n', 'None: dnsConfig only');

  const hostnet = await runningPod(node, 'hostnet');
  t.equal(await exec(idOf(hostnet), 'cat /etc/resolv.conf'), 'search corp.example\nnameserver 192.0.2.53\noptions timeout:2\n', 'hostNetwork + ClusterFirst: Default');

  t.notOk((await events(node)).some((e) => e.reason === 'MissingClusterDNS'), 'no MissingClusterDNS with --cluster-dns');
});

t.test('an FQDN over 64 characters: FailedCreatePodSandBox, the pod stays Pending', async (t) => {
  const node = await startTestNode(t, { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local' });
  const hostname = 'h'.repeat(40); // + .t.default.svc.cluster.local = 68 characters
  await node.writeManifest('long.yaml', podYaml('long', `  hostname: ${hostname}\n  subdomain: t\n  setHostnameAsFQDN: true`));
  const fqdn = `${hostname}.t.default.svc.cluster.local`;
  const event = await node.waitFor('FailedCreatePodSandBox', async () => (await events(node)).find((e) => e.reason === 'FailedCreatePodSandBox'));
  t.equal(event.type, 'Warning');
  t.equal(event.message, `Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (64 characters is the max, 68 characters requested)`);
  const pod = await node.pod('long');
  t.equal(pod?.status?.phase, 'Pending');
  t.equal(pod?.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
  t.same(await dockerCLI('ps', '-aq', '--filter', `label=io.kubernetes.pod.name=long-${node.nodeName}`), '', 'no sandbox was created');
});

t.test('without --cluster-dns: ClusterFirst falls back to Default with MissingClusterDNS', async (t) => {
  const resolvConf = join(t.testdir(), 'node-resolv.conf');
  await writeFile(resolvConf, NODE_RESOLV);
  const node = await startTestNode(t, { clusterDomain: 'cluster.local', resolvConf });
  await node.writeManifest('p.yaml', podYaml('p', '  dnsPolicy: ClusterFirst'));
  const pod = await runningPod(node, 'p');
  t.equal(await exec(idOf(pod), 'cat /etc/resolv.conf'), 'search corp.example\nnameserver 192.0.2.53\noptions timeout:2\n');
  const all = await events(node);
  const message = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
  t.ok(all.some((e) => e.reason === 'MissingClusterDNS' && e.type === 'Warning' && e.involvedObject?.kind === 'Node' && e.involvedObject.name === node.nodeName && e.message === message), 'on the node');
  t.ok(all.some((e) => e.reason === 'MissingClusterDNS' && e.involvedObject?.kind === 'Pod' && e.message === `pod: "p-${node.nodeName}_default(${pod.metadata?.uid})". ${message}`), 'on the pod');
});
