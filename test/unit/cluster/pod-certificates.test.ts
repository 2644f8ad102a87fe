import t from 'tap';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { KubeClient, WatchEvent } from '../../../src/apiserver/client.js';
import { PodCertificates } from '../../../src/cluster/pod-certificates.js';
import { createLogger } from '../../../src/logging/index.js';
import { ASSUME_DELETED_MS, type PodCertificateRequest } from '../../../src/volumes/pod-certificates.js';
import { encodeCertificatePem } from '../../../src/volumes/trust-anchors.js';

const log = createLogger({ verbosity: 0, format: 'json' });

/**
 * A KubeClient stand-in: the pod's service account and the node, PodCertificateRequest creates
 * (named req-1, req-2, …; no creationTimestamp, so nodelet's clock dates them), one list, and a watch the test feeds events into.
 */
function fakeApiserver() {
  const created: PodCertificateRequest[] = [];
  const paths: string[] = [];
  let made = 0;
  let feed: ((e: WatchEvent<PodCertificateRequest>) => void) | undefined;
  let watching!: () => void;
  const watchStarted = new Promise<void>((resolve) => (watching = resolve));
  const client = {
    async request<T>(method: string, path: string, opts: { body?: unknown } = {}): Promise<T> {
      paths.push(`${method} ${path.split('?')[0]}`);
      if (path === '/api/v1/namespaces/ns/serviceaccounts/sa') return { metadata: { name: 'sa', uid: 'sa-uid' } } as T;
      if (path === '/api/v1/nodes/n1') return { metadata: { name: 'n1', uid: 'node-uid' } } as T;
      if (method === 'POST' && path === '/apis/certificates.k8s.io/v1/namespaces/ns/podcertificaterequests') {
        const body = opts.body as PodCertificateRequest;
        const pcr = { ...body, metadata: { ...body.metadata, name: `req-${++made}` } };
        created.push(pcr);
        return pcr as T;
      }
      if (method === 'GET' && path.startsWith('/apis/certificates.k8s.io/v1/podcertificaterequests?')) {
        t.match(path, /fieldSelector=spec\.nodeName%3Dn1/, 'only this node\'s requests are listed');
        return { items: [], metadata: { resourceVersion: '1' } } as T;
      }
      throw new Error(`unexpected ${method} ${path}`);
    },
    watch(_path: string, onEvent: (e: WatchEvent<PodCertificateRequest>) => void, opts: { signal?: AbortSignal }): Promise<void> {
      feed = onEvent;
      watching();
      return new Promise((resolve) => opts.signal?.addEventListener('abort', () => resolve()));
    },
  };
  /** Sets a request's status as a signer would, and waits for the watch to deliver it. */
  const settle = async (name: string, status: PodCertificateRequest['status']) => {
    await watchStarted;
    const pcr = created.find((r) => r.metadata?.name === name);
    feed?.({ type: 'MODIFIED', object: { ...pcr, metadata: { ...pcr?.metadata, resourceVersion: String(Math.random()) }, status } });
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { client: client as unknown as KubeClient, created, paths, settle };
}

const pod: Pod = { metadata: { name: 'p', namespace: 'ns', uid: 'pod-uid' }, spec: { serviceAccountName: 'sa', nodeName: 'n1', containers: [] } };
const source = { signerName: 'x.example/s', keyType: 'ECDSAP256', credentialBundlePath: 'b.pem' };
const cert = (n: number) => encodeCertificatePem(Buffer.alloc(60, n));
const issued = (chain: string, beginRefreshAt: number, notAfter: number) => ({
  conditions: [{ type: 'Issued', status: 'True', reason: 'Issued', message: '' }],
  certificateChain: chain,
  notBefore: new Date(0).toISOString(),
  beginRefreshAt: new Date(beginRefreshAt).toISOString(),
  notAfter: new Date(notAfter).toISOString(),
});
/** The public key a request's stub PKCS #10 names, as SPKI DER. */
const requestKey = (r: PodCertificateRequest | undefined) => Buffer.from(new x509.Pkcs10CertificateRequest(new Uint8Array(Buffer.from(r?.spec?.stubPKCS10Request ?? '', 'base64'))).publicKey.rawData);
const keyOf = (pem: string) => createPublicKey(createPrivateKey(pem)).export({ type: 'spki', format: 'der' });

t.test('issue, refresh at beginRefreshAt, keep serving while the refresh waits, deny for good', async (t) => {
  const api = fakeApiserver();
  let now = 1_000_000;
  const events: string[] = [];
  const settled: string[] = [];
  const pcs = new PodCertificates({ client: api.client, log, nodeName: 'n1', recordEvent: (_p, reason, message) => events.push(`${reason}: ${message}`), onRequestSettled: (uid) => settled.push(uid), now: () => now, random: () => 0 });
  t.teardown(() => pcs.stop());

  await t.rejects(pcs.credentialBundle(pod, 'v', 0, source), { message: 'credential bundle is not issued yet' });
  t.equal(api.created.length, 1, 'one request');
  t.same(api.paths.filter((p) => !p.startsWith('GET /apis/')).sort(), ['GET /api/v1/namespaces/ns/serviceaccounts/sa', 'GET /api/v1/nodes/n1', 'POST /apis/certificates.k8s.io/v1/namespaces/ns/podcertificaterequests'].sort());
  t.same(api.created[0]?.spec, { ...api.created[0]?.spec, serviceAccountUID: 'sa-uid', nodeUID: 'node-uid', podUID: 'pod-uid', nodeName: 'n1', signerName: 'x.example/s' });
  await t.rejects(pcs.credentialBundle(pod, 'v', 0, source), { message: 'credential bundle is not issued yet' });
  t.equal(api.created.length, 1, 'still pending: no second request');

  await api.settle('req-1', issued(`text\n${cert(1)}`, now + 60_000, now + 3_600_000));
  t.same(settled, ['pod-uid'], 'the pod is re-synced when its request settles');
  const first = await pcs.credentialBundle(pod, 'v', 0, source);
  t.equal(first.certChain, cert(1), 'the chain, cleaned');
  t.ok(keyOf(first.keyPem).equals(requestKey(api.created[0])), 'the key the request named');

  now += 59_000;
  t.same(await pcs.credentialBundle(pod, 'v', 0, source), first, 'before beginRefreshAt: the same pair');
  t.equal(api.created.length, 1);
  now += 1_000;
  t.same(await pcs.credentialBundle(pod, 'v', 0, source), first, 'at beginRefreshAt: a refresh request, the old pair still served');
  t.equal(api.created.length, 2);
  t.same(await pcs.credentialBundle(pod, 'v', 0, source), first, 'while the refresh is pending');
  t.equal(api.created.length, 2, 'one refresh request at a time');

  await api.settle('req-2', issued(cert(2), now + 60_000, now + 3_600_000));
  const second = await pcs.credentialBundle(pod, 'v', 0, source);
  t.equal(second.certChain, cert(2));
  t.ok(keyOf(second.keyPem).equals(requestKey(api.created[1])), 'the refresh request\'s key');
  t.not(second.keyPem, first.keyPem, 'a new key');

  // Past the next refresh time and the expiry without an answer: the events say so, once each.
  now += 3_700_000;
  await pcs.credentialBundle(pod, 'v', 0, source);
  t.equal(api.created.length, 3);
  await pcs.credentialBundle(pod, 'v', 0, source);
  t.same(events, ['CertificateOverdueForRefresh: PodCertificate refresh overdue', 'CertificateExpired: PodCertificate expired']);

  await api.settle('req-3', { conditions: [{ type: 'Denied', status: 'True', reason: 'Nope', message: 'not you' }] });
  await t.rejects(pcs.credentialBundle(pod, 'v', 0, source), { message: 'PodCertificateRequest was permanently denied: reason="Nope" message="not you"' });
  t.equal(events[2], 'Denied: PodCertificateRequest ns/req-3 was denied, reason="Nope", message="not you"');
  now += 10 * 3_600_000;
  await t.rejects(pcs.credentialBundle(pod, 'v', 0, source), /permanently denied/);
  t.equal(api.created.length, 3, 'denied is final: no new request');

  pcs.forgetPod('pod-uid');
  await t.rejects(pcs.credentialBundle(pod, 'v', 0, source), { message: 'credential bundle is not issued yet' });
  t.equal(api.created.length, 4, 'a forgotten pod starts over');
});

t.test('failed is final; a request never seen is recreated after 10 minutes; projections are apart', async (t) => {
  const api = fakeApiserver();
  let now = 0;
  const events: string[] = [];
  const pcs = new PodCertificates({ client: api.client, log, nodeName: 'n1', recordEvent: (_p, reason) => events.push(reason), now: () => now, random: () => 0 });
  t.teardown(() => pcs.stop());
  await t.rejects(pcs.credentialBundle(pod, 'v', 0, source), /not issued yet/);
  await t.rejects(pcs.credentialBundle(pod, 'v', 1, { ...source, keyType: 'ED25519' }), /not issued yet/);
  t.equal(api.created.length, 2, 'one request per source');
  await api.settle('req-2', { conditions: [{ type: 'Failed', status: 'True', reason: 'Broken', message: 'sorry' }] });
  await t.rejects(pcs.credentialBundle(pod, 'v', 1, source), { message: 'PodCertificateRequest was permanently failed: reason="Broken" message="sorry"' });
  t.same(events, ['Failed']);

  // req-1 exists but the watch never showed it: taken as deleted once 10 minutes have passed.
  api.created.splice(0, 1);
  now = ASSUME_DELETED_MS + 1;
  await t.rejects(pcs.credentialBundle(pod, 'v', 0, source), /appears to have been deleted/);
  await t.rejects(pcs.credentialBundle(pod, 'v', 0, source), /not issued yet/);
  t.equal(api.created.length, 2, 'created again');
  await t.rejects(pcs.credentialBundle(pod, 'v', 2, { ...source, keyType: 'RSA1024' }), /while creating initial PodCertificateRequest: while generating keypair: unknown key type "RSA1024"/);

  // A chain past the cap is refused when read, and watching it breaks nothing.
  await t.rejects(pcs.credentialBundle(pod, 'v', 3, source), /not issued yet/);
  t.equal(api.created.at(-1)?.metadata?.name, 'req-4');
  await api.settle('req-4', issued(encodeCertificatePem(Buffer.alloc(100 * 1024, 7)), now + 60_000, now + 3_600_000));
  await t.rejects(pcs.credentialBundle(pod, 'v', 3, source), /certificate chain of \d+ bytes, more than the 131072 bytes nodelet projects/);
});
