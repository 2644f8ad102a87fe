import { X509Certificate, createPrivateKey } from 'node:crypto';
import { mkdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The kubelet's certificate file store (k8s.io/client-go/util/certificate/certificate_store.go):
 * each certificate and its key in one file, `<prefix>-<timestamp>.pem` (certificate, then key),
 * and `<prefix>-current.pem`, a symlink to the newest, swapped atomically (a temporary
 * `<prefix>-updated.pem` link renamed over it). Prefixes: `kubelet-client`, `kubelet-server`.
 */

/** A certificate with its key, as the TLS stack takes them, and the dates rotation works from. */
export interface CertificatePair {
  /** PEM: the leaf certificate (and any chain after it). */
  readonly certPem: string;
  /** PEM private key. */
  readonly keyPem: string;
  readonly notBefore: Date;
  readonly notAfter: Date;
  /** The leaf's serial number, hex (for logs). */
  readonly serial: string;
}

export class CertificateFileError extends Error {
  override name = 'CertificateFileError';
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----\n?/g;

/**
 * Parses certificate and key PEM (one file holding both, or two): the first certificate must be
 * the key's, and is the leaf whose dates count. Throws CertificateFileError naming what is wrong,
 * never quoting the key.
 */
export function parsePair(certText: string, keyText: string = certText): CertificatePair {
  const certs = [...certText.matchAll(PEM_BLOCK)].filter((m) => m[1] === 'CERTIFICATE').map((m) => m[0]);
  const keys = [...keyText.matchAll(PEM_BLOCK)].filter((m) => /PRIVATE KEY$/.test(m[1] ?? '')).map((m) => m[0]);
  const first = certs[0];
  const keyPem = keys[0];
  if (first === undefined) throw new CertificateFileError('no PEM certificate');
  if (keyPem === undefined) throw new CertificateFileError('no PEM private key');
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(first);
  } catch (err) {
    throw new CertificateFileError(`the certificate does not parse: ${(err as Error).message}`);
  }
  try {
    if (!leaf.checkPrivateKey(createPrivateKey(keyPem))) throw new CertificateFileError('the private key does not match the certificate');
  } catch (err) {
    if (err instanceof CertificateFileError) throw err;
    throw new CertificateFileError('the private key does not parse');
  }
  const certPem = certs.map((c) => (c.endsWith('\n') ? c : `${c}\n`)).join('');
  return { certPem, keyPem: keyPem.endsWith('\n') ? keyPem : `${keyPem}\n`, notBefore: new Date(leaf.validFrom), notAfter: new Date(leaf.validTo), serial: leaf.serialNumber };
}

/** Go's `time.Format("2006-01-02-15-04-05")`, in UTC. */
export function storeTimestamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())}-${p(d.getUTCHours())}-${p(d.getUTCMinutes())}-${p(d.getUTCSeconds())}`;
}

export class CertificateStore {
  constructor(
    readonly dir: string,
    readonly prefix: 'kubelet-client' | 'kubelet-server',
  ) {}

  /** `<dir>/<prefix>-current.pem`: what a kubeconfig written by bootstrap points at. */
  get currentPath(): string {
    return join(this.dir, `${this.prefix}-current.pem`);
  }

  /** The file a pair issued at `at` is written to. */
  fileFor(at: Date): string {
    return join(this.dir, `${this.prefix}-${storeTimestamp(at)}.pem`);
  }

  /** The current pair; undefined when there is none, CertificateFileError when it is unusable. */
  async current(): Promise<CertificatePair | undefined> {
    let text: string;
    try {
      text = await readFile(this.currentPath, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new CertificateFileError(`cannot read ${this.currentPath}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    try {
      return parsePair(text);
    } catch (err) {
      throw new CertificateFileError(`${this.currentPath}: ${(err as Error).message}`);
    }
  }

  /**
   * Writes a new pair (mode 0600: it holds the key) and points `-current.pem` at it; returns the
   * pair parsed back. The certificate is checked against the key before anything is written.
   */
  async update(certPem: string, keyPem: string, now = new Date()): Promise<CertificatePair> {
    const pair = parsePair(certPem, keyPem);
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const file = this.fileFor(now);
    await writeFile(file, pair.certPem + pair.keyPem, { mode: 0o600 });
    const updated = join(this.dir, `${this.prefix}-updated.pem`);
    await rm(updated, { force: true });
    await symlink(file, updated);
    await rename(updated, this.currentPath);
    return pair;
  }
}
