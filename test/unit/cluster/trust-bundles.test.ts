import t from 'tap';
import { ApiError, type KubeClient } from '../../../src/apiserver/client.js';
import { ClusterTrustBundles } from '../../../src/cluster/trust-bundles.js';
import { createLogger } from '../../../src/logging/index.js';
import { decodePemBlocks, encodeCertificatePem, type ClusterTrustBundle } from '../../../src/volumes/trust-anchors.js';

const log = createLogger({ verbosity: 0, format: 'json' });
const pem = (s: string) => encodeCertificatePem(Buffer.from(s.repeat(20)));

/** A KubeClient stand-in: discovery answers per group/version, one list, and watches that wait for their abort. */
function fakeClient(served: Record<string, string[] | Error>, items: ClusterTrustBundle[]) {
  const calls: string[] = [];
  const client = {
    async request<T>(_method: string, path: string): Promise<T> {
      calls.push(path.split('?')[0] ?? path);
      const gv = /^\/apis\/(certificates\.k8s\.io\/[^/]+)$/.exec(path)?.[1];
      if (gv !== undefined) {
        const answer = served[gv];
        if (answer instanceof Error) throw answer;
        if (!answer) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource');
        return { kind: 'APIResourceList', groupVersion: gv, resources: answer.map((name) => ({ name, kind: 'X', namespaced: false, singularName: '', verbs: [] })) } as T;
      }
      if (path.includes('/clustertrustbundles')) return { items, metadata: { resourceVersion: '1' } } as T;
      throw new ApiError(404, 'NotFound', path);
    },
    watch(_path: string, _onEvent: unknown, opts: { signal?: AbortSignal }): Promise<void> {
      return new Promise((resolve) => opts.signal?.addEventListener('abort', () => resolve()));
    },
  };
  return { client: client as unknown as KubeClient, calls };
}

const bundles: ClusterTrustBundle[] = [
  { metadata: { name: 'root', labels: {} }, spec: { trustBundle: pem('r') } },
  { metadata: { name: 'x.com:s:1', labels: { live: 'true' } }, spec: { signerName: 'x.com/s', trustBundle: pem('a') + pem('r') } },
  { metadata: { name: 'x.com:s:2', labels: { live: 'false' } }, spec: { signerName: 'x.com/s', trustBundle: pem('b') } },
];

t.test('discovery picks the newest served version; the informer serves by name and by signer', async (t) => {
  const { client, calls } = fakeClient({ 'certificates.k8s.io/v1beta1': ['clustertrustbundles'], 'certificates.k8s.io/v1alpha1': ['clustertrustbundles'] }, bundles);
  const ctbs = new ClusterTrustBundles(client, log);
  t.teardown(() => ctbs.stop());
  t.equal(await ctbs.getTrustAnchorsByName('root', false), pem('r'));
  t.same(calls, ['/apis/certificates.k8s.io/v1', '/apis/certificates.k8s.io/v1beta1', '/apis/certificates.k8s.io/v1beta1/clustertrustbundles'], 'v1 absent (404): v1beta1, then its list');
  t.equal(decodePemBlocks(await ctbs.getTrustAnchorsBySigner('x.com/s', {}, false)).length, 3);
  t.equal(decodePemBlocks(await ctbs.getTrustAnchorsBySigner('x.com/s', { matchLabels: { live: 'true' } }, false)).length, 2);
  t.equal(await ctbs.getTrustAnchorsBySigner('x.com/s', undefined, true), '');
  await t.rejects(ctbs.getTrustAnchorsByName('gone', false), { message: 'while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "gone" not found' });
  await t.rejects(ctbs.getTrustAnchorsBySigner('x.com/s', { matchExpressions: [{ key: 'k', operator: 'Near' }] }, false), /while parsing label selector: "Near" is not a valid label selector operator/);
  t.equal(calls.length, 3, 'discovery and the list once');
});

t.test('a version without clustertrustbundles is skipped; none at all fails every use', async (t) => {
  const { client, calls } = fakeClient({ 'certificates.k8s.io/v1': ['certificatesigningrequests'] }, bundles);
  const ctbs = new ClusterTrustBundles(client, log);
  t.teardown(() => ctbs.stop());
  await t.rejects(ctbs.getTrustAnchorsByName('root', true), /serves no version of the ClusterTrustBundle API/);
  await t.rejects(ctbs.getTrustAnchorsByName('root', true), /serves no version/);
  t.equal(calls.length, 3, 'discovered once');
});

t.test('a discovery failure is retried on the next use', async (t) => {
  const served: Record<string, string[] | Error> = { 'certificates.k8s.io/v1': new ApiError(503, 'ServiceUnavailable', 'unavailable') };
  const { client } = fakeClient(served, bundles);
  const ctbs = new ClusterTrustBundles(client, log);
  t.teardown(() => ctbs.stop());
  await t.rejects(ctbs.getTrustAnchorsByName('root', false), /failed to ensure informer manager for ClusterTrustBundles: failed to determine which informer manager to choose/);
  served['certificates.k8s.io/v1'] = ['clustertrustbundles'];
  t.equal(await ctbs.getTrustAnchorsByName('root', false), pem('r'));
});
