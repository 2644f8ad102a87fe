import { X509Certificate, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readlink, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import * as x509 from '@peculiar/x509';
import type { CertificateSigningRequest, CertificateSigningRequestList } from 'kubernetes-types/certificates/v1.js';
import type { Lease } from 'kubernetes-types/coordination/v1.js';
import type { Node, Pod } from 'kubernetes-types/core/v1.js';
import { ApiError, KubeClient } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { startControlPlane } from '../helpers/control-plane.js';
import { BUSYBOX } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';
import { waitFor } from '../helpers/wait.js';

/**
 * TLS bootstrap against a real control plane set up as kubeadm does (bootstrap tokens, node CSR
 * auto-approval, `--kubelet-certificate-authority`): nodelet given only a bootstrap kubeconfig
 * gets its client certificate by CSR and joins; its serving certificate comes from a
 * kubelet-serving CSR an admin approves, after which the apiserver (which verifies it) can reach
 * it; both certificates rotate without a restart. Certificates last 10 minutes (the
 * controller-manager's signing duration); a test-only timing rotates them 20 s after issue.
 */
t.setTimeout(420_000);

const ROTATE_AFTER_MS = 20_000;
const cp = await startControlPlane(t, { bootstrap: true, clusterSigningDuration: '10m' });
const bootstrapKubeconfig = cp.bootstrapKubeconfig;
if (bootstrapKubeconfig === undefined) throw new Error('the control plane has no bootstrap kubeconfig');
const admin = new KubeClient(loadKubeconfig(cp.adminKubeconfig));
t.teardown(() => admin.close());
const ca = new X509Certificate(await readFile(cp.caFile));

const dir = await mkdtemp(join(tmpdir(), 'nodelet-tls-bootstrap-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const kubeconfig = join(dir, 'kubelet.kubeconfig');
const certDir = join(dir, 'pki');
const nodeName = `tb${randomBytes(4).toString('hex')}`;

const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
const csrs = async (signerName: string) => (await admin.request<CertificateSigningRequestList>('GET', CSRS)).items.filter((c) => c.spec.signerName === signerName);
const condition = (csr: CertificateSigningRequest, type: string) => csr.status?.conditions?.find((c) => c.type === type);
const leafOf = (pem: string) => new X509Certificate(pem);

const node = await startTestNode(
  t,
  {
    nodeName,
    kubeconfig,
    bootstrapKubeconfig,
    certDir,
    rotateCertificates: true,
    serverTLSBootstrap: true,
    clientCAFile: cp.caFile,
    anonymousAuth: false,
    authenticationTokenWebhook: true,
    authorizationMode: 'Webhook',
    nodeStatusUpdateFrequencyMs: 1_000,
  },
  {
    clusterTiming: { resyncMs: 1_000, mirrorPeriodMs: 1_000, minWatchTimeoutSeconds: 30 },
    certificateTiming: { rotateAfterMs: ROTATE_AFTER_MS, pollMs: { initial: 200, max: 1_000 } },
  },
);

// Subtests are defined once the node runs: tap ends the root test (and stops the control plane)
// when its queue of subtests runs empty.
t.test('without --kubeconfig on disk, a bad bootstrap token stops nodelet with the apiserver\'s refusal', async (t) => {
  const bad = join(dir, 'bad-bootstrap.kubeconfig');
  // Quoted: a token ID of digits alone followed by zeros would read as a YAML number.
  const text = (await readFile(bootstrapKubeconfig, 'utf8')).replace(/token: "?(\w{6})\.\w{16}"?/, 'token: "$1.0000000000000000"');
  await writeFile(bad, text, { mode: 0o600 });
  await t.rejects(
    startTestNode(t, { nodeName: `${nodeName}x`, kubeconfig: join(dir, 'never.kubeconfig'), bootstrapKubeconfig: bad, certDir: join(dir, 'bad-pki'), clientCAFile: cp.caFile, anonymousAuth: false }),
    /401/,
  );
  await t.rejects(stat(join(dir, 'never.kubeconfig')), 'no kubeconfig written');
});

/** The certificate nodelet serves, and whether it verifies as the apiserver verifies it (the cluster CA, IP SAN 127.0.0.1). */
function servedCertificate(): Promise<{ verified: boolean; cert: X509Certificate }> {
  return new Promise((resolve, reject) => {
    // The port of the nodelet running now (a restart listens on a new one).
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(node.url).port), ca: ca.toString(), rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }, () => {
      const peer = socket.getPeerX509Certificate();
      const verified = socket.authorized;
      socket.end();
      if (peer === undefined) reject(new Error('no peer certificate'));
      else resolve({ verified, cert: peer });
    });
    socket.on('error', reject);
  });
}

let clientSerial = '';

t.test('the client certificate comes from an auto-approved bootstrap CSR, and the node joins with it', async (t) => {
  const pem = await readFile(join(certDir, 'kubelet-client-current.pem'), 'utf8');
  const leaf = leafOf(pem);
  clientSerial = leaf.serialNumber;
  t.equal(leaf.subject, 'O=system:nodes\nCN=system:node:' + nodeName, 'subject CN=system:node:<node>, O=system:nodes');
  t.ok(leaf.checkIssued(ca) && leaf.verify(ca.publicKey), 'issued by the cluster CA');
  t.match(pem, /-----BEGIN EC PRIVATE KEY-----/, 'the key is in the same file, ECDSA');
  t.equal(leaf.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1', 'P-256');
  const target = await readlink(join(certDir, 'kubelet-client-current.pem'));
  t.match(target, new RegExp(`${certDir}/kubelet-client-\\d{4}-\\d{2}-\\d{2}-\\d{2}-\\d{2}-\\d{2}\\.pem$`), 'kubelet-client-current.pem links to the timestamped file');
  t.equal((await stat(target)).mode & 0o777, 0o600, 'the key file is private');
  t.notOk((await readdir(certDir)).includes('kubelet-client.key.tmp'), 'the bootstrap key file is gone once issued');

  const conn = loadKubeconfig(kubeconfig);
  t.equal(conn.server, cp.server, 'the kubeconfig written points at the bootstrap kubeconfig\'s server');
  t.equal(conn.clientCert?.toString(), (await readFile(target)).toString(), 'and at kubelet-client-current.pem for the certificate and key');

  const [bootstrapCSR, ...others] = (await csrs('kubernetes.io/kube-apiserver-client-kubelet')).filter((c) => c.spec.username?.startsWith('system:bootstrap:'));
  t.equal(others.length, 0, 'one bootstrap CSR');
  t.match(bootstrapCSR?.metadata?.name, /^node-csr-[\w-]{43}$/, 'named node-csr-<digest>');
  t.same(bootstrapCSR?.spec.usages, ['digital signature', 'client auth'], 'usages: digital signature, client auth');
  t.ok(bootstrapCSR?.spec.groups?.includes('system:bootstrappers'), 'requested by the bootstrap token');
  t.equal(condition(bootstrapCSR ?? ({ spec: { request: '', signerName: '' } } as CertificateSigningRequest), 'Approved')?.reason, 'AutoApproved', 'approved by the controller-manager');

  const ready = await waitFor('Node Ready', async () => {
    const n = await admin.request<Node>('GET', `/api/v1/nodes/${nodeName}`).catch(() => undefined);
    return n?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? n : undefined;
  }, 60_000);
  t.equal(ready.metadata?.name, nodeName, 'the Node registered with the CSR-issued identity (NodeRestriction lets only system:node:<node> do that)');
});

t.test('a kubelet-serving CSR with the node\'s addresses waits for an admin; once approved nodelet serves it and the apiserver reaches the node', async (t) => {
  const pending = await waitFor('a kubelet-serving CSR', async () => (await csrs('kubernetes.io/kubelet-serving')).find((c) => c.spec.username === `system:node:${nodeName}`), 30_000);
  t.same(pending.spec.usages, ['digital signature', 'server auth'], 'usages: digital signature, server auth');
  t.notOk(condition(pending, 'Approved'), 'not approved by the controller-manager');
  const request = new x509.Pkcs10CertificateRequest(Buffer.from(pending.spec.request, 'base64').toString());
  t.match(request.subject, new RegExp(`^O=system:nodes, CN=system:node:${nodeName}$`), 'subject CN=system:node:<node>, O=system:nodes');
  const san = request.extensions.find((e): e is x509.SubjectAlternativeNameExtension => e instanceof x509.SubjectAlternativeNameExtension);
  t.ok(san?.names.items.some((n) => n.type === 'ip' && n.value === '127.0.0.1'), 'the InternalIP as IP SAN');
  t.ok(san?.names.items.some((n) => n.type === 'dns'), 'the Hostname address as DNS SAN');

  await admin.request<Pod>('POST', '/api/v1/namespaces/default/pods', {
    body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'echo' }, spec: { nodeName, automountServiceAccountToken: false, containers: [{ name: 'main', image: BUSYBOX, command: ['sh', '-c', 'echo hello-from-nodelet; sleep 3600'] }] } },
  });
  await waitFor('pod Running', async () => {
    const p = await admin.request<Pod>('GET', '/api/v1/namespaces/default/pods/echo').catch((err: unknown) => (err instanceof ApiError ? undefined : Promise.reject(err)));
    return p?.status?.phase === 'Running' ? p : undefined;
  }, 60_000);
  const before = await cp.kubectl(['logs', 'echo']);
  t.not(before.code, 0, 'with the self-signed certificate, the apiserver refuses to talk to the node');
  t.match(before.stderr, /x509|certificate/, before.stderr);
  t.notOk((await servedCertificate()).verified, 'the self-signed certificate does not verify against the cluster CA');

  const approve = await cp.kubectl(['certificate', 'approve', pending.metadata?.name ?? '']);
  t.equal(approve.code, 0, `kubectl certificate approve ${approve.stderr}`);
  const served = await waitFor('the issued serving certificate served', async () => {
    const s = await servedCertificate();
    return s.verified ? s.cert : undefined;
  }, 30_000);
  t.equal(served.subject, `O=system:nodes\nCN=system:node:${nodeName}`, 'the served certificate is the CSR\'s');
  t.ok(served.checkIssued(ca), 'issued by the cluster CA');
  t.match(await readlink(join(certDir, 'kubelet-server-current.pem')), /kubelet-server-\d{4}(-\d{2}){5}\.pem$/, 'stored as kubelet-server-current.pem');

  const logs = await waitFor('kubectl logs through the apiserver', async () => {
    const r = await cp.kubectl(['logs', 'echo']);
    return r.code === 0 ? r.stdout : undefined;
  }, 30_000);
  t.equal(logs, 'hello-from-nodelet\n', 'kubectl logs: the apiserver verified the serving certificate');
  const exec = await cp.kubectl(['exec', 'echo', '--', 'echo', 'exec-ok']);
  t.equal(exec.stdout, 'exec-ok\n', `kubectl exec: ${exec.stderr}`);
});

t.test('the client certificate rotates by CSR without a restart; the node keeps its Lease renewed with the new one', async (t) => {
  const manager = node.nodelet.certificates.client;
  if (!manager) throw new Error('no client certificate manager');
  const rotated = await waitFor('a rotated client certificate', () => {
    const c = manager.current();
    return c && c.serial !== clientSerial ? c : undefined;
  }, ROTATE_AFTER_MS + 60_000);
  const onDisk = leafOf(await readFile(join(certDir, 'kubelet-client-current.pem'), 'utf8'));
  t.equal(onDisk.serialNumber, rotated.serial, 'kubelet-client-current.pem now links to the new certificate');
  t.equal(onDisk.subject, 'O=system:nodes\nCN=system:node:' + nodeName, 'for the same identity');
  const validity = rotated.notAfter.getTime() - rotated.notBefore.getTime();
  t.ok(validity <= 16 * 60_000, `a short-lived certificate (${validity / 60_000} min, the 10 min signing duration plus the signer's backdating)`);
  const renewal = (await csrs('kubernetes.io/kube-apiserver-client-kubelet')).find((c) => c.spec.username === `system:node:${nodeName}`);
  t.ok(renewal, 'the renewal CSR was made by the node itself');
  t.equal(condition(renewal ?? ({ spec: { request: '', signerName: '' } } as CertificateSigningRequest), 'Approved')?.reason, 'AutoApproved', 'and auto-approved (selfnodeclient)');

  // Connections made with the old certificate were closed: the Lease renews over new ones.
  const leasePath = `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${nodeName}`;
  const rotatedAt = Date.now();
  const renewed = await waitFor('the Lease renewed after the rotation', async () => {
    const l = await admin.request<Lease>('GET', leasePath);
    const at = Date.parse(l.spec?.renewTime ?? '');
    return at > rotatedAt ? l : undefined;
  }, 30_000);
  t.ok(renewed.spec?.renewTime, 'renewed');
  const n = await admin.request<Node>('GET', `/api/v1/nodes/${nodeName}`);
  t.equal(n.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True', 'still Ready');
});

t.test('the serving certificate rotates too: a new CSR, approved, swapped in without a restart', async (t) => {
  const first = await servedCertificate();
  t.ok(first.verified, 'the first issued certificate is served');
  const next = await waitFor('a second kubelet-serving CSR', async () =>
    (await csrs('kubernetes.io/kubelet-serving')).find((c) => c.spec.username === `system:node:${nodeName}` && !condition(c, 'Approved')), ROTATE_AFTER_MS + 30_000);
  const approve = await cp.kubectl(['certificate', 'approve', next.metadata?.name ?? '']);
  t.equal(approve.code, 0, `kubectl certificate approve ${approve.stderr}`);
  const served = await waitFor('the new serving certificate served', async () => {
    const s = await servedCertificate();
    return s.verified && s.cert.serialNumber !== first.cert.serialNumber ? s.cert : undefined;
  }, 30_000);
  t.ok(served.checkIssued(ca), 'a new certificate of the cluster CA, served by the same process');
  const logs = await cp.kubectl(['logs', 'echo']);
  t.equal(logs.stdout, 'hello-from-nodelet\n', `kubectl logs still works: ${logs.stderr}`);
});

t.test('a restart uses the stored certificates: no new bootstrap CSR', async (t) => {
  const bootstrapCSRs = async () => (await csrs('kubernetes.io/kube-apiserver-client-kubelet')).filter((c) => c.spec.username?.startsWith('system:bootstrap:')).length;
  const before = await bootstrapCSRs();
  const served = (await servedCertificate()).cert.serialNumber;
  await node.stop();
  await node.restart();
  t.equal(await bootstrapCSRs(), before, 'the kubeconfig written at bootstrap was still valid');
  const after = await servedCertificate();
  t.ok(after.verified, 'the stored serving certificate is served from the start');
  t.equal(after.cert.serialNumber, served);
});
