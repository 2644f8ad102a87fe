import type { KubeClient } from '../apiserver/client.js';
import type { ApiserverConnection } from '../config/kubeconfig.js';
import type { Logger } from '../logging/index.js';
import { CLIENT_SIGNER, CLIENT_USAGES, SERVING_SIGNER, SERVING_USAGES, addressesToSANs, nodeTemplate } from './csr.js';
import { CertificateManager } from './manager.js';
import { CertificateStore, parsePair, type CertificatePair } from './store.js';

export { loadClientCert } from './bootstrap.js';
export { CertificateManager } from './manager.js';
export type { CertificatePair } from './store.js';

/** Test-only timing of the certificate managers. */
export interface CertificateTiming {
  /** Rotate this long after a certificate became current (instead of at 70–90 % of its validity). */
  rotateAfterMs?: number;
  /** Polling back-off while a CSR is pending. */
  pollMs?: { initial: number; max: number };
}

/**
 * `rotateCertificates` (pkg/kubelet/certificate/kubelet.go `NewKubeletClientCertificateManager`):
 * the client certificate of `<certDir>/kubelet-client-current.pem` (else the kubeconfig's) renewed
 * by CSR with itself; each new one goes to `onRotated` (the clients swap it in). Undefined, with a
 * warning, when the kubeconfig authenticates with a token: there is no certificate to renew.
 */
export async function clientCertificateManager(o: {
  conn: ApiserverConnection;
  certDir: string;
  nodeName: string;
  client: KubeClient;
  onRotated: (pair: CertificatePair) => void;
  log: Logger;
  timing?: CertificateTiming;
}): Promise<CertificateManager | undefined> {
  if (!o.conn.clientCert || !o.conn.clientKey) {
    o.log.warn('rotateCertificates: the kubeconfig has no client certificate to rotate (a token authenticates); not rotating');
    return undefined;
  }
  let initial: CertificatePair;
  try {
    initial = parsePair(o.conn.clientCert.toString('utf8'), o.conn.clientKey.toString('utf8'));
  } catch (err) {
    throw new Error(`rotateCertificates: the kubeconfig's client certificate: ${(err as Error).message}`);
  }
  const manager = new CertificateManager({
    kind: 'client',
    store: new CertificateStore(o.certDir, 'kubelet-client'),
    template: () => nodeTemplate(o.nodeName),
    signerName: CLIENT_SIGNER,
    usages: CLIENT_USAGES,
    client: () => o.client,
    initial,
    onRotated: o.onRotated,
    log: o.log,
    ...(o.timing?.rotateAfterMs !== undefined ? { rotateAfterMs: o.timing.rotateAfterMs } : {}),
    ...(o.timing?.pollMs ? { pollMs: o.timing.pollMs } : {}),
  });
  const current = await manager.load();
  // A newer certificate in the store than the kubeconfig's (rotated before a restart): use it now.
  if (current && current.serial !== initial.serial) o.onRotated(current);
  return manager;
}

/**
 * `serverTLSBootstrap` (kubelet.go `NewKubeletServerCertificateManager`): a `kubelet-serving`
 * certificate for `system:node:<node>` whose SANs are the Node's addresses (known once the node
 * source built the Node), in `<certDir>/kubelet-server-current.pem`; call `load()` for the stored
 * one before serving, `start()` to request and renew it.
 */
export function servingCertificateManager(o: {
  certDir: string;
  nodeName: string;
  client: KubeClient;
  addresses: () => readonly { type: string; address: string }[] | undefined;
  onRotated: (pair: CertificatePair) => void;
  log: Logger;
  timing?: CertificateTiming;
}): CertificateManager {
  return new CertificateManager({
    kind: 'serving',
    store: new CertificateStore(o.certDir, 'kubelet-server'),
    template: () => {
      const addresses = o.addresses();
      return addresses && addresses.length > 0 ? nodeTemplate(o.nodeName, addressesToSANs(addresses)) : undefined;
    },
    signerName: SERVING_SIGNER,
    usages: SERVING_USAGES,
    client: () => o.client,
    onRotated: o.onRotated,
    log: o.log,
    ...(o.timing?.rotateAfterMs !== undefined ? { rotateAfterMs: o.timing.rotateAfterMs } : {}),
    ...(o.timing?.pollMs ? { pollMs: o.timing.pollMs } : {}),
  });
}
