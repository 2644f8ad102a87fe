import t from 'tap';
import { createPrivateKey, createPublicKey, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { Event, EventList, VolumeProjection } from 'kubernetes-types/core/v1.js';
import { KubeClient } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import type { PodCertificateRequest } from '../../src/volumes/pod-certificates.js';
import { decodePemBlocks } from '../../src/volumes/trust-anchors.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { boundSleeper, getPodIfAny, startClusterNode } from '../helpers/cluster-node.js';
import { dockerCLI } from '../helpers/docker.js';

/**
 * Projected `podCertificate` sources against a real 1.37 control plane (Node authorizer and
 * NodeRestriction admission, no extra RBAC for the node): nodelet creates a certificates.k8s.io/v1
 * PodCertificateRequest for the pod, the apiserver checks its stub PKCS #10 signature and its
 * pod, service account and node; the test is the signer (as admin it lists the requests and
 * writes `/status`), issuing a chain from a CA it made with Web Crypto. The files in the
 * container hold the key whose public half the request named and the issued chain; a denied
 * request keeps the pod from starting, with the Denied and FailedMount events saying why.
 */
t.setTimeout(300_000);

const crypto = webcrypto as unknown as Crypto;
const cp = await startControlPlane(t);
const admin = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
t.teardown(() => admin.close());
const node = await startClusterNode(t, cp);

const PCRS = '/apis/certificates.k8s.io/v1/namespaces/default/podcertificaterequests';
const SIGNER = 'nodelet.example.com/test-signer';
const getPod = (name: string) => getPodIfAny(admin, name);

const caAlg = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const caKeys = (await crypto.subtle.generateKey(caAlg, true, ['sign', 'verify'])) as CryptoKeyPair;
const ca = await x509.X509CertificateGenerator.createSelfSigned(
  { serialNumber: '01', name: 'CN=nodelet test pod CA', notBefore: new Date(Date.now() - 60_000), notAfter: new Date(Date.now() + 2 * 86400_000), keys: caKeys, signingAlgorithm: caAlg, extensions: [new x509.BasicConstraintsExtension(true, undefined, true)] },
  crypto,
);

// kubernetes-types (1.30) predates `podCertificate`.
const podWith = (name: string, source: Record<string, unknown>) =>
  admin.request('POST', '/api/v1/namespaces/default/pods', { body: boundSleeper(node.nodeName, name, { volumes: [{ name: 'cert', projected: { sources: [{ podCertificate: { signerName: SIGNER, ...source } } as VolumeProjection] } }] }, { volumeMounts: [{ name: 'cert', mountPath: '/cert' }] }) });

/** The request nodelet made for the pod, once it exists. */
const requestFor = (podName: string) =>
  node.waitFor(`PodCertificateRequest of ${podName}`, async () => {
    const list = await admin.request<{ items: PodCertificateRequest[] }>('GET', PCRS);
    return list.items.find((r) => r.spec?.podName === podName);
  }, 60_000);

const whole = (ms: number) => new Date(Math.floor(ms / 1000) * 1000);
const condition = (type: string, reason: string, message: string) => ({ type, status: 'True', reason, message, lastTransitionTime: whole(Date.now()).toISOString() });
const putStatus = (pcr: PodCertificateRequest, status: NonNullable<PodCertificateRequest['status']>) =>
  admin.request<PodCertificateRequest>('PUT', `${PCRS}/${pcr.metadata?.name}/status`, { body: { ...pcr, status } });

t.test('issued: the key the request named and the issued chain, as a bundle and as two files', async (t) => {
  await podWith('pc', { keyType: 'ED25519', credentialBundlePath: 'bundle.pem', keyPath: 'key.pem', certificateChainPath: 'chain.pem' });
  const pcr = await requestFor('pc');
  const pod = await getPod('pc');
  const spec = pcr.spec;
  const node1 = await admin.request<{ metadata: { uid: string } }>('GET', `/api/v1/nodes/${node.nodeName}`);
  const sa = await admin.request<{ metadata: { uid: string } }>('GET', '/api/v1/namespaces/default/serviceaccounts/default');
  t.same(
    [spec?.signerName, spec?.podName, spec?.podUID, spec?.serviceAccountName, spec?.serviceAccountUID, spec?.nodeName, spec?.nodeUID, spec?.maxExpirationSeconds],
    [SIGNER, 'pc', pod?.metadata?.uid, 'default', sa.metadata.uid, node.nodeName, node1.metadata.uid, 86400],
    'every spec field (maxExpirationSeconds defaulted by the apiserver)',
  );
  t.same(pcr.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid]), [['Pod', 'pc', pod?.metadata?.uid]], 'owned by the pod');
  t.notOk((await getPod('pc'))?.status?.containerStatuses?.[0]?.state?.running, 'the container waits for the certificate');

  // The signer: a leaf for the request's public key, signed by the CA, one hour long.
  const csr = new x509.Pkcs10CertificateRequest(new Uint8Array(Buffer.from(spec?.stubPKCS10Request ?? '', 'base64')));
  const notBefore = whole(Date.now());
  const notAfter = new Date(notBefore.getTime() + 3600_000);
  const leaf = await x509.X509CertificateGenerator.create(
    { serialNumber: '02', subject: 'CN=pc', issuer: ca.subject, notBefore, notAfter, publicKey: csr.publicKey, signingKey: caKeys.privateKey, signingAlgorithm: caAlg },
    crypto,
  );
  const chain = `${leaf.toString('pem')}\n${ca.toString('pem')}\n`;
  await putStatus(pcr, {
    conditions: [condition('Issued', 'Issued', 'issued by the test')],
    certificateChain: chain,
    notBefore: notBefore.toISOString(),
    beginRefreshAt: new Date(notBefore.getTime() + 1800_000).toISOString(),
    notAfter: notAfter.toISOString(),
  });

  const running = await node.waitFor('pc Running', async () => {
    const p = await getPod('pc');
    return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
  }, 60_000);
  const id = (running.status?.containerStatuses?.[0]?.containerID ?? '').replace(/^\w+:\/\//, '');
  const read = (file: string) => dockerCLI('exec', id, 'cat', `/cert/${file}`);
  const [bundle, keyPem, chainPem] = [await read('bundle.pem'), await read('key.pem'), await read('chain.pem')];

  t.match(keyPem, /^-----BEGIN PRIVATE KEY-----\n[^-]+-----END PRIVATE KEY-----\n$/, 'one PKCS #8 block');
  const publicDer = createPublicKey(createPrivateKey(keyPem)).export({ type: 'spki', format: 'der' });
  t.ok(publicDer.equals(Buffer.from(csr.publicKey.rawData)), "the key is the one whose public half the request named");
  t.same(decodePemBlocks(chainPem).map((b) => b.toString('base64')), [leaf, ca].map((c) => Buffer.from(c.rawData).toString('base64')), 'the issued chain, leaf first');
  t.equal(bundle, keyPem + chainPem, 'the bundle: key, then chain');
  t.equal((await dockerCLI('exec', id, 'stat', '-L', '-c', '%a', '/cert/bundle.pem')).trim(), '644', 'the projected defaultMode');
});

t.test('denied: the pod does not start; Denied and FailedMount say why', async (t) => {
  await podWith('pc-denied', { keyType: 'ECDSAP384', credentialBundlePath: 'bundle.pem', maxExpirationSeconds: 3600 });
  const pcr = await requestFor('pc-denied');
  t.equal(pcr.spec?.maxExpirationSeconds, 3600, 'maxExpirationSeconds copied');
  await putStatus(pcr, { conditions: [condition('Denied', 'UnsupportedKeyType', 'this signer wants ED25519')] });
  const events = async () => (await admin.request<EventList>('GET', '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dpc-denied')).items;
  const denied = await node.waitFor('Denied event', async () => (await events()).find((e: Event) => e.reason === 'Denied'), 60_000);
  t.equal(denied.type, 'Warning');
  t.equal(denied.message, `PodCertificateRequest default/${pcr.metadata?.name} was denied, reason="UnsupportedKeyType", message="this signer wants ED25519"`);
  const failedMount = await node.waitFor('FailedMount after the denial', async () => (await events()).find((e: Event) => e.reason === 'FailedMount' && /permanently denied/.test(e.message ?? '')), 60_000);
  t.match(failedMount.message, /PodCertificateRequest was permanently denied: reason="UnsupportedKeyType" message="this signer wants ED25519"/);
  const pod = await getPod('pc-denied');
  t.not(pod?.status?.phase, 'Running');
  t.notOk(pod?.status?.containerStatuses?.[0]?.state?.running, 'the container never ran');
  const list = await admin.request<{ items: PodCertificateRequest[] }>('GET', PCRS);
  t.equal(list.items.filter((r) => r.spec?.podName === 'pc-denied').length, 1, 'no second request after a denial');
});
