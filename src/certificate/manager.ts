import { X509Certificate } from 'node:crypto';
import type { Logger } from '../logging/index.js';
import { RetryDelay, delay } from '../cluster/retry.js';
import { newKeyAndRequest, type CertificateTemplate, type KeyUsage } from './csr.js';
import { nextRotationDeadline } from './deadline.js';
import { requestCertificate, type CsrClient } from './request.js';
import type { CertificatePair, CertificateStore } from './store.js';

/** How long one rotation waits for its CSR (certificate_manager.go `certificateWaitTimeout`: 15 min). */
const CERTIFICATE_WAIT_MS = 15 * 60_000;

/**
 * Whether `pair`'s leaf certifies everything `template` asks for (certificate_manager.go
 * `certSatisfiesTemplate`): the same CN, every organization, and every DNS name and IP address
 * among its SANs. A serving certificate whose node addresses changed no longer does.
 */
export function satisfiesTemplate(certPem: string, template: CertificateTemplate): boolean {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    return false;
  }
  const subject = cert.subject.split('\n');
  if (!subject.includes(`CN=${template.commonName}`)) return false;
  if (!template.organizations.every((o) => subject.includes(`O=${o}`))) return false;
  const sans = new Set((cert.subjectAltName ?? '').split(', ').filter((s) => s !== ''));
  if (!template.dnsNames.every((d) => sans.has(`DNS:${d}`))) return false;
  // Node prints IPv6 SANs expanded (0:0:…:1): compare the certificate's own check.
  return template.ipAddresses.every((ip) => cert.checkIP(ip) !== undefined);
}

export interface CertificateManagerOptions {
  /** For logs: `client` or `serving`. */
  readonly kind: 'client' | 'serving';
  readonly store: CertificateStore;
  /** What to ask for; undefined while not known yet (a serving certificate needs the Node's addresses). */
  readonly template: () => CertificateTemplate | undefined;
  readonly signerName: string;
  readonly usages: readonly KeyUsage[];
  /** The client CSRs are sent with (for the client certificate: the one it authenticates). */
  readonly client: () => CsrClient;
  /** The pair to start from when the store has none (the kubeconfig's client certificate). */
  readonly initial?: CertificatePair;
  /** Called with each new pair, after it is stored. */
  readonly onRotated: (pair: CertificatePair) => void;
  readonly log: Logger;
  /** Test-only: rotate this long after a pair became current, instead of at 70–90 % of its validity. */
  readonly rotateAfterMs?: number;
  /** Test-only: the polling back-off while waiting for a CSR. */
  readonly pollMs?: { initial: number; max: number };
}

/**
 * The kubelet's certificate manager (k8s.io/client-go/util/certificate/certificate_manager.go):
 * keeps a certificate current by sending a new CSR (a new ECDSA key each time) at the jittered
 * rotation deadline, or at once when there is none, it has expired, or it no longer satisfies the
 * template; a failed rotation is retried with back-off (2 s doubling to 32 s). The new pair goes
 * to the store first, then to `onRotated`, so a restart finds it.
 */
export class CertificateManager {
  readonly #o: CertificateManagerOptions;
  readonly #log: Logger;
  #current: CertificatePair | undefined;
  #currentSince = Date.now();
  #deadline: Date | undefined;
  readonly #abort = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(o: CertificateManagerOptions) {
    this.#o = o;
    this.#log = o.log.child({ component: 'certificate-manager', certificate: o.kind });
  }

  /** The pair in use; undefined before the first one is loaded or issued. */
  current(): CertificatePair | undefined {
    return this.#current;
  }

  /** When the current pair will be renewed (undefined: at once, or not started). */
  get rotationDeadline(): Date | undefined {
    return this.#deadline;
  }

  /** Loads the stored pair unless expired (else `initial`) and returns it; rotation runs from `start()`. */
  async load(): Promise<CertificatePair | undefined> {
    try {
      // An expired stored pair is no use; a fresh one is requested at once.
      const stored = await this.#o.store.current();
      this.#current = stored && Date.now() < stored.notAfter.getTime() ? stored : this.#o.initial;
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, 'The stored certificate is unusable; a new one will be requested');
      this.#current = this.#o.initial;
    }
    this.#currentSince = Date.now();
    return this.#current;
  }

  start(): void {
    this.#loop ??= this.#run();
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }

  #nextDeadline(pair: CertificatePair | undefined): Date {
    const now = new Date();
    const template = this.#o.template();
    if (pair === undefined || now >= pair.notAfter || (template !== undefined && !satisfiesTemplate(pair.certPem, template))) return now;
    if (this.#o.rotateAfterMs !== undefined) return new Date(this.#currentSince + this.#o.rotateAfterMs);
    return nextRotationDeadline(pair.notBefore, pair.notAfter);
  }

  async #run(): Promise<void> {
    const signal = this.#abort.signal;
    const retry = new RetryDelay({ initialMs: 2_000, maxMs: 32_000, jitter: 0.1 });
    while (!signal.aborted) {
      const deadline = this.#nextDeadline(this.#current);
      this.#deadline = deadline;
      const wait = deadline.getTime() - Date.now();
      if (wait > 0) {
        this.#log.info({ expiration: this.#current?.notAfter.toISOString(), rotationDeadline: deadline.toISOString() }, 'Certificate expiration is set; waiting for the next certificate rotation');
        // Re-checked at least every minute: a serving template changes with the node's addresses.
        await delay(Math.min(wait, 60_000), signal);
        if (Date.now() < deadline.getTime()) continue;
      }
      if (signal.aborted) return;
      const template = this.#o.template();
      if (template === undefined) {
        await delay(1_000, signal);
        continue;
      }
      try {
        await this.#rotate(template, signal);
        retry.reset();
      } catch (err) {
        if (signal.aborted) return;
        const ms = retry.next();
        this.#log.error({ err: (err as Error).message, retryInMs: ms }, 'Failed while requesting a signed certificate from the control plane');
        await delay(ms, signal);
      }
    }
  }

  async #rotate(template: CertificateTemplate, signal: AbortSignal): Promise<void> {
    this.#log.info('Rotating certificates');
    const { keyPem, requestPem } = await newKeyAndRequest(template);
    const certPem = await requestCertificate({
      client: this.#o.client(),
      requestPem,
      signerName: this.#o.signerName,
      usages: this.#o.usages,
      timeoutMs: CERTIFICATE_WAIT_MS,
      signal,
      log: this.#log,
      ...(this.#o.pollMs ? { pollMs: this.#o.pollMs } : {}),
    });
    const pair = await this.#o.store.update(certPem, keyPem);
    this.#current = pair;
    this.#currentSince = Date.now();
    this.#log.info({ serial: pair.serial, notBefore: pair.notBefore.toISOString(), notAfter: pair.notAfter.toISOString() }, 'Certificate rotated');
    this.#o.onRotated(pair);
  }
}
