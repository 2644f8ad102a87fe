import t from 'tap';
import type { Event, EventList, VolumeProjection } from 'kubernetes-types/core/v1.js';
import { KubeClient } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { decodePemBlocks } from '../../src/volumes/trust-anchors.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { boundSleeper, getPodIfAny, startClusterNode } from '../helpers/cluster-node.js';
import { dockerCLI } from '../helpers/docker.js';
import { makePki } from '../helpers/pki.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Projected `clusterTrustBundle` sources against a real 1.37 control plane: the node (Node
 * authorizer, no extra RBAC) lists and watches certificates.k8s.io/v1 ClusterTrustBundles; a pod
 * gets one bundle by name and the bundles of a signer matching a label selector, merged and
 * deduplicated; a bundle changed on the apiserver reaches the file on the volume's refresh; a
 * source that finds nothing and is not optional keeps the pod from starting (FailedMount).
 */
t.setTimeout(300_000);

const pki = makePki(t);
const cert = (name: string) => pki.read(pki.ca(name).cert).toString('utf8');
/** The certificates of a PEM text, as base64 DER, sorted (the file's order is nodelet's own). */
const certsOf = (text: string) => decodePemBlocks(text).map((b) => b.toString('base64')).sort();

const cp = await startControlPlane(t);
const admin = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
t.teardown(() => admin.close());
// Volumes refreshed every 2 s instead of the default minute, so a bundle's change shows at once.
const node = await startClusterNode(t, cp, {}, { volumeRefreshMs: 2_000 });

const CTBS = '/apis/certificates.k8s.io/v1/clustertrustbundles';
const createCTB = (name: string, trustBundle: string, signerName?: string, labels?: Record<string, string>) =>
  admin.request('POST', CTBS, { body: { apiVersion: 'certificates.k8s.io/v1', kind: 'ClusterTrustBundle', metadata: { name, ...(labels ? { labels } : {}) }, spec: { trustBundle, ...(signerName ? { signerName } : {}) } } });
const getPod = (name: string) => getPodIfAny(admin, name);

const root = cert('ctb-root');
const [a, b, c] = [cert('ctb-a'), cert('ctb-b'), cert('ctb-c')];
await createCTB('nodelet-root', root);
await createCTB('example.com:nodelet:a', a + root, 'example.com/nodelet', { live: 'true' });
await createCTB('example.com:nodelet:b', b, 'example.com/nodelet', { live: 'true' });
await createCTB('example.com:nodelet:c', c, 'example.com/nodelet', { live: 'false' });

const podWith = (name: string, sources: VolumeProjection[]) =>
  admin.request('POST', '/api/v1/namespaces/default/pods', { body: boundSleeper(node.nodeName, name, { volumes: [{ name: 'ctb', projected: { sources } }] }, { volumeMounts: [{ name: 'ctb', mountPath: '/ctb' }] }) });

t.test('by name and by signer + labels, mode 0644, refreshed when a bundle changes', async (t) => {
  await podWith('ctb', [
    { clusterTrustBundle: { name: 'nodelet-root', path: 'root.pem' } },
    { clusterTrustBundle: { signerName: 'example.com/nodelet', labelSelector: { matchLabels: { live: 'true' } }, path: 'live.pem' } },
  ]);
  const running = await node.waitFor('ctb Running', async () => {
    const p = await getPod('ctb');
    return p?.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.state?.running ? p : undefined;
  }, 90_000);
  const id = (running.status?.containerStatuses?.[0]?.containerID ?? '').replace(/^\w+:\/\//, '');
  const read = (file: string) => dockerCLI('exec', id, 'cat', `/ctb/${file}`);
  t.same(certsOf(await read('root.pem')), certsOf(root), 'the named bundle');
  t.same(certsOf(await read('live.pem')), certsOf(a + root + b), 'the live bundles of the signer, each certificate once');
  t.equal((await dockerCLI('exec', id, 'stat', '-L', '-c', '%a', '/ctb/live.pem')).trim(), '644', 'the projected defaultMode');

  // A changed bundle and one whose labels now match reach the files on the next refresh.
  const rotated = cert('ctb-root-2');
  await admin.request('PATCH', `${CTBS}/nodelet-root`, { body: { spec: { trustBundle: rotated } }, contentType: 'application/merge-patch+json' });
  await admin.request('PATCH', `${CTBS}/example.com:nodelet:c`, { body: { metadata: { labels: { live: 'true' } } }, contentType: 'application/merge-patch+json' });
  // Each poll is a `docker exec`, once a second; the volume is refreshed every 2 s here.
  const holds = async (file: string, pem: string) => (JSON.stringify(certsOf(await read(file))) === JSON.stringify(certsOf(pem)) ? true : undefined);
  await waitFor('the rotated root in the file', () => holds('root.pem', rotated), 30_000, 1_000);
  await waitFor('c joined the live file', () => holds('live.pem', a + root + b + c), 30_000, 1_000);
  t.pass('updates reached both files');
});

t.test('nothing found and not optional: the pod does not start, FailedMount says why', async (t) => {
  await podWith('ctb-missing', [
    { clusterTrustBundle: { name: 'does-not-exist', path: 'x.pem' } },
    { clusterTrustBundle: { signerName: 'example.com/nodelet', labelSelector: { matchLabels: { live: 'unknown' } }, path: 'y.pem', optional: false } },
  ]);
  const event = await node.waitFor('FailedMount', async () => {
    const list = await admin.request<EventList>('GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dctb-missing');
    return list.items.find((e: Event) => e.reason === 'FailedMount');
  }, 60_000);
  t.match(event.message, /clustertrustbundle\.certificates\.k8s\.io "does-not-exist" not found/);
  t.match(event.message, /combination of signerName and labelSelector matched zero ClusterTrustBundles/);
  // What the conformance spec waits for: Ready False, ContainersNotReady, naming the container.
  const pod = await node.waitFor('ctb-missing status', async () => {
    const p = await getPod('ctb-missing');
    return p?.status?.conditions?.some((c) => c.type === 'Ready') ? p : undefined;
  }, 30_000);
  t.not(pod.status?.phase, 'Running');
  t.notOk(pod.status?.containerStatuses?.[0]?.state?.running, 'the container never ran');
  const ready = pod.status?.conditions?.find((c) => c.type === 'Ready');
  t.same([ready?.status, ready?.reason, ready?.message], ['False', 'ContainersNotReady', 'containers with unready status: [main]']);
});
