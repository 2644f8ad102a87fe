import { X509Certificate, createPrivateKey, randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { loopbackServerURL, renderKubeconfig } from '../config/kubeconfig.js';
import type { Config } from '../config/types.js';
import type { Logger } from '../logging/index.js';
import { certificateAuthority, servingCertificate, type CertificateAndKey, type TlsMaterial } from './tls.js';

/**
 * The embedded default (`Config.generatedCredentials`: no serving certificate, no authenticator,
 * standalone): nodelet makes its own credentials, once, and reuses them on every start.
 *
 *   <cert-dir>/nodelet-ca.crt, nodelet-ca.key          a CA of its own (ten years)
 *   <cert-dir>/nodelet-server.crt, nodelet-server.key  the serving certificate it signs (a year;
 *                                                      re-issued when it nears its end, stops
 *                                                      chaining to the CA or is unreadable)
 *   <cert-dir>/admin-token                             the admin's bearer token (256 random bits)
 *   <root-dir>/kubeconfig                              server, CA and token, for kubectl;
 *                                                      rewritten at each start (the port may change)
 *
 * Keys, token and kubeconfig are mode 0600, the directories 0700; every file is written to a
 * temporary name and renamed, so a crash never leaves half a file. A CA or token that is there but
 * unusable stops nodelet with the file's name: replacing it would silently invalidate every
 * kubeconfig handed out, so removing it is the operator's call.
 */
export interface EmbeddedCredentials {
  readonly tls: TlsMaterial;
  /** PEM of the CA clients trust. */
  readonly caCert: string;
  readonly adminToken: string;
  /** Where they live. */
  readonly files: { readonly caCert: string; readonly caKey: string; readonly cert: string; readonly key: string; readonly token: string };
}

/** A serving certificate with less than this left is re-issued at start. */
const RENEW_BEFORE_MS = 30 * 24 * 3600_000;
/** What the token file may hold: at least 16 visible ASCII characters, no comma or double quote (the token-file format's separators). */
const TOKEN = /^[\x21\x23-\x2b\x2d-\x7e]{16,}$/;

export function embeddedFiles(certDir: string): EmbeddedCredentials['files'] {
  return {
    caCert: join(certDir, 'nodelet-ca.crt'),
    caKey: join(certDir, 'nodelet-ca.key'),
    cert: join(certDir, 'nodelet-server.crt'),
    key: join(certDir, 'nodelet-server.key'),
    token: join(certDir, 'admin-token'),
  };
}

/** Where the admin kubeconfig is written. */
export function adminKubeconfigPath(rootDir: string): string {
  return join(rootDir, 'kubeconfig');
}

/** A problem with the persisted credentials: names the file, never its content. */
export class EmbeddedCredentialsError extends Error {}

async function readIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new EmbeddedCredentialsError(`cannot read ${JSON.stringify(path)}: ${(err as Error).message}`);
  }
}

/** Writes `text` to `path` (mode `mode`) through a temporary file and a rename. */
async function writeAtomically(path: string, text: string, mode: number): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await writeFile(tmp, text, { mode, flag: 'wx' });
    // The umask may have taken bits away; a key must be exactly 0600 either way.
    await chmod(tmp, mode);
    await rename(tmp, path);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}

const removeHint = (path: string) => `; remove ${JSON.stringify(path)} to have nodelet generate a new one (kubeconfigs made from the old one stop working)`;

/** The persisted CA, checked: a CA certificate, its key, not expired. */
function checkCA(pair: CertificateAndKey, files: EmbeddedCredentials['files'], now: Date): void {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pair.cert);
  } catch {
    throw new EmbeddedCredentialsError(`${JSON.stringify(files.caCert)} is not a PEM certificate${removeHint(files.caCert)}`);
  }
  let matches: boolean;
  try {
    matches = cert.checkPrivateKey(createPrivateKey(pair.key));
  } catch {
    throw new EmbeddedCredentialsError(`${JSON.stringify(files.caKey)} is not a PEM private key${removeHint(files.caKey)}`);
  }
  if (!matches) throw new EmbeddedCredentialsError(`${JSON.stringify(files.caKey)} is not the key of ${JSON.stringify(files.caCert)}${removeHint(files.caCert)}`);
  if (!cert.ca) throw new EmbeddedCredentialsError(`${JSON.stringify(files.caCert)} is not a CA certificate${removeHint(files.caCert)}`);
  if (new Date(cert.validTo) <= now) throw new EmbeddedCredentialsError(`the CA ${JSON.stringify(files.caCert)} expired on ${new Date(cert.validTo).toISOString()}${removeHint(files.caCert)}`);
}

/** Why the persisted serving certificate cannot be used as it is, or undefined when it can. */
function servingProblem(pair: CertificateAndKey, ca: X509Certificate, now: Date): string | undefined {
  try {
    const cert = new X509Certificate(pair.cert);
    if (!cert.checkPrivateKey(createPrivateKey(pair.key))) return 'its key does not match';
    if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey)) return 'it is not signed by the CA';
    if (new Date(cert.validTo).getTime() - now.getTime() < RENEW_BEFORE_MS) return `it expires on ${new Date(cert.validTo).toISOString()}`;
    return undefined;
  } catch {
    return 'it cannot be read';
  }
}

/**
 * Loads the embedded credentials from `config.certDir`, generating what is missing (see the
 * interface's comment). Throws EmbeddedCredentialsError for a CA or token that cannot be used.
 */
export async function loadEmbeddedCredentials(config: Pick<Config, 'certDir' | 'nodeName' | 'nodeIP' | 'address'>, log: Logger, now = new Date()): Promise<EmbeddedCredentials> {
  const files = embeddedFiles(config.certDir);
  await mkdir(config.certDir, { recursive: true, mode: 0o700 });

  const caCertText = await readIfExists(files.caCert);
  const caKeyText = await readIfExists(files.caKey);
  let ca: CertificateAndKey;
  if (caCertText === undefined && caKeyText === undefined) {
    ca = await certificateAuthority(config.nodeName, now);
    await writeAtomically(files.caKey, ca.key, 0o600);
    await writeAtomically(files.caCert, ca.cert, 0o644);
    log.info({ caCert: files.caCert }, 'Generated a CA for the serving certificate');
  } else if (caCertText === undefined || caKeyText === undefined) {
    const [have, missing] = caCertText === undefined ? [files.caKey, files.caCert] : [files.caCert, files.caKey];
    throw new EmbeddedCredentialsError(`found ${JSON.stringify(have)} but not ${JSON.stringify(missing)}${removeHint(have)}`);
  } else {
    ca = { cert: caCertText, key: caKeyText };
    checkCA(ca, files, now);
  }

  const certText = await readIfExists(files.cert);
  const keyText = await readIfExists(files.key);
  const found: CertificateAndKey | undefined = certText !== undefined && keyText !== undefined ? { cert: certText, key: keyText } : undefined;
  const problem = found === undefined ? 'it does not exist' : servingProblem(found, new X509Certificate(ca.cert), now);
  let serving: CertificateAndKey;
  if (found !== undefined && problem === undefined) serving = found;
  else {
    serving = await servingCertificate(config, ca, now);
    await writeAtomically(files.key, serving.key, 0o600);
    await writeAtomically(files.cert, serving.cert, 0o644);
    log.info({ cert: files.cert, reason: problem }, 'Issued a serving certificate from the CA');
  }

  let adminToken = (await readIfExists(files.token))?.trim();
  if (adminToken === undefined) {
    adminToken = randomBytes(32).toString('base64url');
    await writeAtomically(files.token, `${adminToken}\n`, 0o600);
    log.info({ file: files.token }, 'Generated the admin token');
  } else if (!TOKEN.test(adminToken)) {
    throw new EmbeddedCredentialsError(`${JSON.stringify(files.token)} must hold one token of at least 16 visible ASCII characters (no spaces, commas or quotes)${removeHint(files.token)}`);
  }

  return { tls: { cert: Buffer.from(serving.cert), key: Buffer.from(serving.key) }, caCert: ca.cert, adminToken, files };
}

/**
 * Writes `<root-dir>/kubeconfig` (0600) for the admin: the listener's address (loopback for an
 * unspecified one) and `port`, the CA, the token. Returns its path.
 */
export async function writeAdminKubeconfig(config: Pick<Config, 'rootDir' | 'address' | 'nodeName'>, port: number, creds: Pick<EmbeddedCredentials, 'caCert' | 'adminToken'>): Promise<string> {
  const path = adminKubeconfigPath(config.rootDir);
  await mkdir(config.rootDir, { recursive: true });
  const text = renderKubeconfig({ name: config.nodeName, server: loopbackServerURL(config.address, port), caPem: creds.caCert, token: creds.adminToken });
  await writeAtomically(path, text, 0o600);
  return path;
}
