import { X509Certificate } from 'node:crypto';
import { readFile, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { ApiError, KubeClient } from '../apiserver/client.js';
import { loadKubeconfig, type ApiserverConnection } from '../config/kubeconfig.js';
import type { Logger } from '../logging/index.js';
import { delay } from '../cluster/retry.js';
import { CLIENT_SIGNER, CLIENT_USAGES, digestedName, newKeyAndRequest, nodeTemplate } from './csr.js';
import { requestCertificate } from './request.js';
import { CertificateStore } from './store.js';

/**
 * TLS bootstrap (pkg/kubelet/certificate/bootstrap/bootstrap.go `LoadClientCert`): when
 * `--kubeconfig` is missing or its client certificate is unusable or expired, the bootstrap
 * kubeconfig (a bootstrap token) requests a client certificate for `system:node:<node>` with a
 * CSR, and `--kubeconfig` is written pointing at `<cert-dir>/kubelet-client-current.pem`.
 */

/** The key of a bootstrap in progress, kept until its CSR is issued (bootstrap.go `tmpPrivateKeyFile`). */
export const TMP_PRIVATE_KEY_FILE = 'kubelet-client.key.tmp';
/** How long bootstrap waits for its CSR (bootstrap.go: 3600 s). */
const BOOTSTRAP_WAIT_MS = 3600_000;

/**
 * Whether `kubeconfigPath` can be used as it is (bootstrap.go `isClientConfigStillValid`): it
 * exists, parses, and holds client certificates none of which has expired. Anything else means
 * bootstrap (logged with the reason); only an unreadable existing file is an error.
 */
export async function isClientConfigStillValid(kubeconfigPath: string, log: Logger, now = new Date()): Promise<boolean> {
  try {
    await stat(kubeconfigPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new Error(`error reading existing bootstrap kubeconfig ${kubeconfigPath}: ${(err as Error).message}`);
  }
  let conn: ApiserverConnection;
  try {
    conn = loadKubeconfig(kubeconfigPath);
  } catch (err) {
    log.warn({ err: (err as Error).message }, `Unable to read existing bootstrap client config from ${kubeconfigPath}`);
    return false;
  }
  const pems = conn.clientCert?.toString('utf8').match(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g) ?? [];
  if (pems.length === 0) {
    log.warn(`Unable to read TLS certificates from existing bootstrap client config read from ${kubeconfigPath}`);
    return false;
  }
  for (const pem of pems) {
    let notAfter: Date;
    try {
      notAfter = new Date(new X509Certificate(pem).validTo);
    } catch (err) {
      log.warn({ err: (err as Error).message }, `Unable to load TLS certificates from existing bootstrap client config read from ${kubeconfigPath}`);
      return false;
    }
    if (now > notAfter) {
      log.warn({ notAfter: notAfter.toISOString() }, `Part of the existing bootstrap client certificate in ${kubeconfigPath} is expired`);
      return false;
    }
  }
  return true;
}

/**
 * The kubeconfig bootstrap writes (bootstrap.go `writeKubeconfigFromBootstrapping`): the bootstrap
 * kubeconfig's cluster (server, CA data or insecure-skip-tls-verify, TLS server name) and a user
 * whose client certificate and key are both `pemPath`.
 */
export function kubeconfigFromBootstrapping(bootstrap: ApiserverConnection, pemPath: string): string {
  return stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'default-cluster',
          cluster: {
            server: bootstrap.server,
            ...(bootstrap.insecureSkipTLSVerify ? { 'insecure-skip-tls-verify': true } : {}),
            ...(bootstrap.ca ? { 'certificate-authority-data': bootstrap.ca.toString('base64') } : {}),
            ...(bootstrap.tlsServerName ? { 'tls-server-name': bootstrap.tlsServerName } : {}),
          },
        },
      ],
      users: [{ name: 'default-auth', user: { 'client-certificate': pemPath, 'client-key': pemPath } }],
      contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', user: 'default-auth', namespace: 'default' } }],
      'current-context': 'default-context',
      preferences: {},
    },
    { lineWidth: 0 },
  );
}

export interface BootstrapOptions {
  kubeconfigPath: string;
  bootstrapKubeconfigPath: string;
  certDir: string;
  nodeName: string;
  log: Logger;
  userAgent?: string;
  signal?: AbortSignal;
}

/**
 * `LoadClientCert`: nothing when `kubeconfigPath` is still valid; else the CSR with the bootstrap
 * credentials (after waiting up to a minute for the apiserver's /healthz), the certificate and key
 * stored in `certDir`, and the kubeconfig written. Returns whether it bootstrapped.
 */
export async function loadClientCert(o: BootstrapOptions): Promise<boolean> {
  const log = o.log.child({ component: 'bootstrap' });
  if (await isClientConfigStillValid(o.kubeconfigPath, log)) {
    log.info({ path: o.kubeconfigPath }, 'Kubeconfig exists and is valid, skipping bootstrap');
    return false;
  }
  log.info({ bootstrapKubeconfig: o.bootstrapKubeconfigPath }, 'Using bootstrap kubeconfig to generate TLS client cert, key and kubeconfig file');
  let bootstrap: ApiserverConnection;
  try {
    bootstrap = loadKubeconfig(o.bootstrapKubeconfigPath);
  } catch (err) {
    throw new Error(`unable to load bootstrap kubeconfig: ${(err as Error).message}`);
  }
  const store = new CertificateStore(o.certDir, 'kubelet-client');
  await mkdir(o.certDir, { recursive: true, mode: 0o700 });
  // The key is kept until the CSR is issued, so a restarted bootstrap asks with the same key (and
  // so the same CSR name) instead of piling up requests.
  const keyPath = join(o.certDir, TMP_PRIVATE_KEY_FILE);
  const savedKey = await readFile(keyPath, 'utf8').catch(() => undefined);
  const template = nodeTemplate(o.nodeName);
  let request;
  try {
    request = await newKeyAndRequest(template, savedKey);
  } catch {
    log.info('No valid private key found, creating a new one');
    request = await newKeyAndRequest(template);
  }
  if (request.keyPem !== savedKey) await writeFile(keyPath, request.keyPem, { mode: 0o600 });

  const client = new KubeClient(bootstrap, { userAgent: o.userAgent ?? 'nodelet-bootstrap', maxSockets: 2 });
  try {
    await waitForServer(client, log, o.signal);
    const certPem = await requestCertificate({
      client,
      requestPem: request.requestPem,
      signerName: CLIENT_SIGNER,
      usages: CLIENT_USAGES,
      name: digestedName(request.publicKeyDer, template, CLIENT_USAGES),
      publicKeyDer: request.publicKeyDer,
      timeoutMs: BOOTSTRAP_WAIT_MS,
      log,
      ...(o.signal ? { signal: o.signal } : {}),
    });
    const pair = await store.update(certPem, request.keyPem);
    await rm(keyPath, { force: true });
    await mkdir(dirname(o.kubeconfigPath), { recursive: true });
    await writeFile(o.kubeconfigPath, kubeconfigFromBootstrapping(bootstrap, store.currentPath), { mode: 0o600 });
    log.info({ kubeconfig: o.kubeconfigPath, certificate: store.currentPath, serial: pair.serial, notAfter: pair.notAfter.toISOString() }, 'Bootstrap: client certificate issued; kubeconfig written');
    return true;
  } finally {
    client.close();
  }
}

/**
 * bootstrap.go `waitForServer`: the apiserver asked every ~2 s for up to a minute; failing that,
 * the CSR is tried anyway. `/version` (JSON, readable by everyone) instead of `/healthz` (text).
 */
async function waitForServer(client: KubeClient, log: Logger, signal = new AbortController().signal): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!signal.aborted) {
    try {
      await client.request('GET', '/version', { timeoutMs: 1_000 });
      return;
    } catch (err) {
      // Any answer at all (a 401 for a bad token included) means the apiserver is up.
      if (err instanceof ApiError) return;
      log.info({ err: (err as Error).message }, 'Failed to connect to apiserver');
    }
    if (Date.now() >= deadline) {
      log.info('Error waiting for apiserver to come up: timed out waiting to connect to apiserver');
      return;
    }
    await delay(2_000 * (1 + Math.random() * 0.2), signal, true);
  }
}
