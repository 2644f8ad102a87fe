import { execFileSync } from 'node:child_process';
import t from 'tap';
import { startControlPlane } from '../helpers/control-plane.js';
import { controlPlaneVersion } from '../helpers/k8s-pin.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The real control plane cluster-mode tests run against (scripts/control-plane.sh): etcd,
 * kube-apiserver, kube-controller-manager and kube-scheduler built from the pinned Kubernetes
 * release, on 127.0.0.1. No Docker needed.
 */

const cp = await startControlPlane(t);

t.test('the apiserver is the pinned release, ready, on loopback https', async (t) => {
  t.match(cp.server, /^https:\/\/127\.0\.0\.1:\d+$/);
  const version = await cp.kubectl(['version', '-o', 'json']);
  t.equal(version.code, 0, version.stderr);
  const parsed = JSON.parse(version.stdout) as { serverVersion?: { gitVersion?: string; major?: string; minor?: string } };
  // The pinned release: v1.37.2 (v1.34.4 with NODELET_K8S=1.34).
  const pinned = controlPlaneVersion();
  t.match(pinned, /^v1\.(37\.2|34\.4)$/);
  t.equal(parsed.serverVersion?.gitVersion, pinned);
  t.equal(parsed.serverVersion?.minor, pinned.split('.')[1]);
  const readyz = await cp.kubectl(['get', '--raw', '/readyz']);
  t.equal(readyz.code, 0, readyz.stderr);
  t.equal(readyz.stdout.trim(), 'ok');
});

t.test('the controller-manager made what pods need: the default ServiceAccount and kube-root-ca.crt', async (t) => {
  const sa = await cp.kubectl(['get', 'serviceaccount', 'default', '-n', 'default', '-o', 'jsonpath={.metadata.name}']);
  t.equal(sa.code, 0, sa.stderr);
  t.equal(sa.stdout, 'default');
  const cm = await cp.kubectl(['get', 'configmap', 'kube-root-ca.crt', '-n', 'default', '-o', 'jsonpath={.data.ca\\.crt}']);
  t.equal(cm.code, 0, cm.stderr);
  const ca = execFileSync('openssl', ['x509', '-in', cp.caFile, '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' });
  const published = execFileSync('openssl', ['x509', '-noout', '-fingerprint', '-sha256'], { input: cm.stdout, encoding: 'utf8' });
  t.equal(published, ca, 'kube-root-ca.crt holds the test CA');
  await waitFor(
    'the pod-garbage-collector service account',
    async () => ((await cp.kubectl(['get', 'serviceaccount', 'pod-garbage-collector', '-n', 'kube-system'])).code === 0 ? true : undefined),
    20_000,
    200,
  );
  t.pass('controllers run with their own service-account credentials');
});

t.test('the apiserver reaches kubelets as kube-apiserver-kubelet-client in system:masters', async (t) => {
  const subject = execFileSync('openssl', ['x509', '-in', cp.kubeletClientCert, '-noout', '-subject', '-nameopt', 'RFC2253'], { encoding: 'utf8' });
  t.match(subject, /CN=kube-apiserver-kubelet-client/);
  t.match(subject, /O=system:masters/);
  const issuer = execFileSync('openssl', ['verify', '-CAfile', cp.caFile, cp.kubeletClientCert], { encoding: 'utf8' });
  t.match(issuer, /: OK/);
});

t.test('a node identity gets the Node authorizer: its own Node, not every Secret', async (t) => {
  const kubeconfig = await cp.nodeKubeconfig('n-x');
  const as = { kubeconfig };
  const who = await cp.kubectl(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username} {.status.userInfo.groups}'], as);
  t.equal(who.code, 0, who.stderr);
  t.match(who.stdout, /^system:node:n-x \[.*"system:nodes".*\]$/);

  const own = await cp.kubectl(['get', 'node', 'n-x'], as);
  t.not(own.code, 0);
  t.match(own.stderr, /\(NotFound\): nodes "n-x" not found/, 'its own (absent) Node: 404, so it may read it');
  t.notMatch(own.stderr, /Forbidden/);

  const secrets = await cp.kubectl(['get', 'secrets', '--all-namespaces'], as);
  t.not(secrets.code, 0);
  t.match(secrets.stderr, /\(Forbidden\).*User "system:node:n-x" cannot list resource "secrets"/);

  // What nodelet's webhook authentication/authorization of proxied requests relies on.
  for (const resource of ['tokenreviews.authentication.k8s.io', 'subjectaccessreviews.authorization.k8s.io']) {
    const can = await cp.kubectl(['auth', 'can-i', 'create', resource], as);
    t.equal(can.stdout.trim(), 'yes', `a node may create ${resource}`, { stderr: can.stderr });
  }
  const other = await cp.kubectl(['get', 'node', 'n-y'], as);
  t.match(other.stderr, /\(Forbidden\)/, 'another node is out of reach');
});

t.test('an apiserver outage: stop, then start on the same port', async (t) => {
  await cp.stopApiserver();
  const down = await cp.kubectl(['get', '--raw', '/readyz', '--request-timeout=5s']);
  t.not(down.code, 0, 'readyz fails while the apiserver is stopped');
  t.match(down.stderr, /connection refused|unable to connect|was refused/i);
  await cp.startApiserver();
  const up = await cp.kubectl(['get', '--raw', '/readyz']);
  t.equal(up.code, 0, up.stderr);
  t.equal(up.stdout.trim(), 'ok');
  const sa = await cp.kubectl(['get', 'serviceaccount', 'default', '-o', 'name']);
  t.equal(sa.stdout.trim(), 'serviceaccount/default', 'the data survived in etcd');
});
