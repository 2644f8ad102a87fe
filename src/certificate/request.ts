import type { CertificateSigningRequest } from 'kubernetes-types/certificates/v1.js';
import { isConflict, isNotFound, type KubeClient } from '../apiserver/client.js';
import type { Logger } from '../logging/index.js';
import { RetryDelay, delay } from '../cluster/retry.js';
import { CertificateRequestError, compatibleRequest, csrObject, issuedCertificate, type KeyUsage } from './csr.js';

const CSRS = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

/** What the CSR calls need of the apiserver client (tests pass a fake). */
export type CsrClient = Pick<KubeClient, 'request'>;

export interface RequestOptions {
  client: CsrClient;
  requestPem: string;
  signerName: string;
  usages: readonly KeyUsage[];
  /** A fixed name (bootstrap's digested name); else `generateName: csr-`. */
  name?: string;
  /** With `name`: the request's public key (DER SPKI), to recognize an existing CSR as ours. */
  publicKeyDer?: Buffer;
  expirationSeconds?: number;
  /** How long to wait for approval and signing (the kubelet: an hour at bootstrap, 15 min when rotating). */
  timeoutMs: number;
  signal?: AbortSignal;
  log: Logger;
  /** Polling back-off (tests shorten it). */
  pollMs?: { initial: number; max: number };
}

/**
 * Creates the CSR and waits until it is issued (client-go csr.go `RequestCertificate` and
 * `WaitForCertificate`); resolves with the certificate PEM. A named CSR that already exists is
 * reused when it asks for the same thing (a bootstrap restarted with the same key). Waiting polls
 * the object with back-off (0.5 s doubling to 5 s): one GET per step, which the bootstrap identity's
 * `system:node-bootstrapper` role allows. Rejects with CertificateRequestError when denied, failed,
 * deleted or timed out, and with the client's error when the create is refused.
 */
export async function requestCertificate(o: RequestOptions): Promise<string> {
  const body = csrObject({ requestPem: o.requestPem, signerName: o.signerName, usages: o.usages, ...(o.name ? { name: o.name } : {}), ...(o.expirationSeconds !== undefined ? { expirationSeconds: o.expirationSeconds } : {}) });
  let created: CertificateSigningRequest;
  try {
    created = await o.client.request<CertificateSigningRequest>('POST', CSRS, { body });
    o.log.info({ csr: created.metadata?.name, signerName: o.signerName }, 'Certificate signing request created; waiting for it to be approved and issued');
  } catch (err) {
    if (!(o.name && isConflict(err))) throw err;
    created = await o.client.request<CertificateSigningRequest>('GET', `${CSRS}/${encodeURIComponent(o.name)}`);
    if (o.publicKeyDer === undefined || !compatibleRequest(created, o.publicKeyDer, o.signerName, o.usages)) {
      throw new CertificateRequestError(`certificate signing request ${o.name} already exists with a different request`);
    }
    o.log.info({ csr: o.name }, 'Certificate signing request already exists; waiting for it');
  }
  const name = created.metadata?.name ?? '';
  const uid = created.metadata?.uid;
  const deadline = Date.now() + o.timeoutMs;
  const retry = new RetryDelay({ initialMs: o.pollMs?.initial ?? 500, maxMs: o.pollMs?.max ?? 5_000, jitter: 0.1 });
  const signal = o.signal ?? new AbortController().signal;
  let csr: CertificateSigningRequest | undefined = created;
  for (;;) {
    if (csr) {
      if (uid !== undefined && csr.metadata?.uid !== uid) throw new CertificateRequestError(`certificate signing request ${name} was deleted and re-created`);
      const cert = issuedCertificate(csr);
      if (cert !== undefined) return cert;
    }
    if (signal.aborted) throw new CertificateRequestError(`stopped waiting for certificate signing request ${name}`);
    const now = Date.now();
    if (now >= deadline) throw new CertificateRequestError(`timed out waiting for certificate signing request ${name} to be issued`);
    // Kept alive: at bootstrap this wait is all nodelet does.
    await delay(Math.min(retry.next(), deadline - now), signal, true);
    try {
      csr = await o.client.request<CertificateSigningRequest>('GET', `${CSRS}/${encodeURIComponent(name)}`, { timeoutMs: 10_000 });
    } catch (err) {
      if (isNotFound(err)) throw new CertificateRequestError(`certificate signing request ${name} was deleted`);
      o.log.debug({ err, csr: name }, 'Reading the certificate signing request failed; retrying');
      csr = undefined;
    }
  }
}
