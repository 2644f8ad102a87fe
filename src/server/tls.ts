import { constants, createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import type { ServerOptions as HttpServerOptions } from 'node:http';
import type { ServerOptions as HttpsServerOptions } from 'node:https';
import { isIP } from 'node:net';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';
import type { Config } from '../config/types.js';
import { isLoopbackAddress, isUnspecifiedAddress } from '../config/host.js';
import type { Logger } from '../logging/index.js';

/** Certificate material for the main port. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  /** `--client-ca-file`: client certificates are requested and verified against it. */
  readonly clientCA?: Buffer;
}

/** The kubelet's `MaxHeaderBytes` (1 MiB): request line plus headers; beyond it Node answers 431. */
export const MAX_HEADER_BYTES = 1 << 20;
/** Slowloris: the request head must arrive within this (Node's check runs every 5 s here). */
export const HEADERS_TIMEOUT_MS = 30_000;

/**
 * TLS 1.2 suites: ECDHE with AEAD only (virtual-kubelet's list minus CBC); the TLS 1.3 suites are
 * named too, since a list without them would turn TLS 1.3 off.
 */
const CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/**
 * Plain HTTP only on loopback: TLS in the embedded default (generated credentials), whenever the
 * address is not loopback, a certificate is given, or a credential travels (client certificates need TLS; kubectl sends its bearer token only over
 * https, and a token on plain HTTP is a token on the wire).
 */
export function servesTLS(config: Config): boolean {
  // Cluster mode too: the apiserver always dials its nodes over HTTPS.
  return (
    config.generatedCredentials || !isLoopbackAddress(config.address) || config.tlsCertFile !== '' || config.clientCAFile !== '' || config.tokenAuthFile !== '' || config.kubeconfig !== ''
  );
}

/**
 * Node server options for a listener: header size and slowloris limits always; with `tls`, an
 * HTTPS server pinned to TLS ≥ 1.2 and ALPN `http/1.1` (exec and port-forward upgrades need
 * HTTP/1.1, and no HTTP/2 means no rapid-reset exposure, CVE-2023-44487). Client certificates are
 * requested, not required (`rejectUnauthorized: false`): the x509 authenticator checks
 * `socket.authorized`, so bearer tokens keep working on the same port, like the kubelet's
 * `tls.RequestClientCert`. Renegotiation is refused (`SSL_OP_NO_RENEGOTIATION`): Go's TLS server,
 * the kubelet's, never renegotiates (`crypto/tls` `handshake_server.go`), and OpenSSL's
 * client-initiated renegotiation costs the server a handshake per request of the client.
 */
export function listenerOptions(tls?: TlsMaterial): { http: HttpServerOptions } | { https: HttpsServerOptions } {
  const limits = { maxHeaderSize: MAX_HEADER_BYTES, headersTimeout: HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 5_000 };
  if (tls === undefined) return { http: limits };
  return {
    https: {
      ...limits,
      cert: tls.cert,
      key: tls.key,
      minVersion: 'TLSv1.2',
      secureOptions: constants.SSL_OP_NO_RENEGOTIATION,
      ciphers: CIPHERS,
      honorCipherOrder: true,
      ALPNProtocols: ['http/1.1'],
      ...(tls.clientCA ? { ca: tls.clientCA, requestCert: true, rejectUnauthorized: false } : { requestCert: false }),
    },
  };
}

/**
 * Swaps the serving certificate of a listening HTTPS server (`server.setSecureContext`): new
 * handshakes get it, open connections keep theirs. The kubelet's serving certificate manager does
 * the same through `tls.Config.GetCertificate`. False when `server` does not serve TLS.
 */
export function replaceServingCertificate(server: unknown, tls: TlsMaterial): boolean {
  const options = listenerOptions(tls);
  if (!('https' in options) || typeof server !== 'object' || server === null || !('setSecureContext' in server)) return false;
  (server as { setSecureContext(options: HttpsServerOptions): void }).setSecureContext(options.https);
  return true;
}

const exists = (path: string) => stat(path).then(() => true, () => false);

/**
 * The serving certificate: `--tls-cert-file`/`--tls-private-key-file`, else (like the kubelet)
 * a self-signed one in `--cert-dir` (`nodelet.crt`, `nodelet.key`), generated once (ECDSA P-256
 * with Node's WebCrypto, the certificate encoded by @peculiar/x509: no system binary) and reused.
 */
export async function loadTlsMaterial(config: Config, log: Logger): Promise<TlsMaterial> {
  const clientCA = config.clientCAFile !== '' ? await readFile(config.clientCAFile) : undefined;
  const withCA = (m: { cert: Buffer; key: Buffer }): TlsMaterial => (clientCA ? { ...m, clientCA } : m);
  if (config.tlsCertFile !== '') {
    return withCA({ cert: await readFile(config.tlsCertFile), key: await readFile(config.tlsPrivateKeyFile) });
  }
  const certFile = join(config.certDir, 'nodelet.crt');
  const keyFile = join(config.certDir, 'nodelet.key');
  if (!((await exists(certFile)) && (await exists(keyFile)))) {
    await mkdir(config.certDir, { recursive: true, mode: 0o700 });
    await generateSelfSigned(certFile, keyFile, config);
    log.warn({ certFile, keyFile }, 'No --tls-cert-file given: generated a self-signed serving certificate; clients cannot verify it (use --tls-cert-file and --tls-private-key-file in production)');
  } else {
    log.warn({ certFile }, 'No --tls-cert-file given: serving the self-signed certificate from --cert-dir');
  }
  return withCA({ cert: await readFile(certFile), key: await readFile(keyFile) });
}

/** Subject alternative names: the node name, localhost, loopback, the node IP and a specific bind address. */
export function subjectAltNames(config: Pick<Config, 'nodeName' | 'nodeIP' | 'address'>): string[] {
  const names = new Set([`DNS:${config.nodeName}`, 'DNS:localhost', 'IP:127.0.0.1', 'IP:::1']);
  for (const ip of [config.nodeIP, config.address]) {
    if (isIP(ip) !== 0 && !isUnspecifiedAddress(ip)) names.add(`IP:${ip}`);
  }
  return [...names];
}

/** Signing algorithm of every certificate nodelet makes. */
const ECDSA_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 24 * 3600_000;

/** A certificate and its key, PEM (the key PKCS#8). */
export interface CertificateAndKey {
  readonly cert: string;
  readonly key: string;
}

/** A positive INTEGER of 128 random bits, hex. */
function randomSerial(): string {
  const serial = randomBytes(16);
  serial[0] = (serial[0] ?? 0) & 0x7f;
  return serial.toString('hex');
}

async function pkcs8Pem(key: CryptoKey): Promise<string> {
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${pkcs8.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
}

const newKeys = (): Promise<CryptoKeyPair> => webcrypto.subtle.generateKey(ECDSA_P256, true, ['sign', 'verify']);
const crypto = webcrypto as unknown as Crypto;

function serverExtensions(config: Pick<Config, 'nodeName' | 'nodeIP' | 'address'>): x509.Extension[] {
  const names = subjectAltNames(config).map((n) => (n.startsWith('IP:') ? { type: 'ip' as const, value: n.slice(3) } : { type: 'dns' as const, value: n.slice(4) }));
  return [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    new x509.SubjectAlternativeNameExtension(names),
  ];
}

/** The self-signed serving certificate, PEM: `{ cert, key }` (the key PKCS#8). */
export async function selfSignedCertificate(config: Pick<Config, 'nodeName' | 'nodeIP' | 'address'>, now = new Date()): Promise<CertificateAndKey> {
  const keys = await newKeys();
  // The kubelet names its self-signed certificate `<host>@<unix time>`.
  const cn = `${config.nodeName}@${Math.floor(now.getTime() / 1000)}`;
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: randomSerial(),
      // A name parsed from text would split on the CN's characters; give it as an attribute list.
      name: [{ CN: [cn] }],
      notBefore: new Date(now.getTime() - 60_000),
      notAfter: new Date(now.getTime() + 365 * DAY_MS),
      keys,
      signingAlgorithm: ECDSA_P256,
      extensions: serverExtensions(config),
    },
    crypto,
  );
  return { cert: cert.toString('pem') + '\n', key: await pkcs8Pem(keys.privateKey) };
}

/** How long a generated CA is valid (the kubelet's self-signed CA: ten years too). */
export const CA_VALIDITY_MS = 10 * 365 * DAY_MS;
/** How long a serving certificate signed by that CA is valid. */
export const SERVING_VALIDITY_MS = 365 * DAY_MS;

/**
 * A certificate authority of its own for the embedded default (src/server/embedded.ts): like the
 * kubelet's `GenerateSelfSignedCertKey`, named `<host>-ca@<unix time>`, signing certificates only.
 */
export async function certificateAuthority(nodeName: string, now = new Date()): Promise<CertificateAndKey> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: randomSerial(),
      name: [{ CN: [`${nodeName}-ca@${Math.floor(now.getTime() / 1000)}`] }],
      notBefore: new Date(now.getTime() - 60_000),
      notAfter: new Date(now.getTime() + CA_VALIDITY_MS),
      keys,
      signingAlgorithm: ECDSA_P256,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, crypto),
      ],
    },
    crypto,
  );
  return { cert: cert.toString('pem') + '\n', key: await pkcs8Pem(keys.privateKey) };
}

/** A serving certificate for this node (`<host>@<unix time>`, the same names as the self-signed one) signed by `ca`. */
export async function servingCertificate(config: Pick<Config, 'nodeName' | 'nodeIP' | 'address'>, ca: CertificateAndKey, now = new Date()): Promise<CertificateAndKey> {
  const caCert = new x509.X509Certificate(ca.cert);
  const caKey = await webcrypto.subtle.importKey('pkcs8', createPrivateKey(ca.key).export({ type: 'pkcs8', format: 'der' }), ECDSA_P256, false, ['sign']);
  const keys = await newKeys();
  const notAfter = Math.min(now.getTime() + SERVING_VALIDITY_MS, caCert.notAfter.getTime());
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: randomSerial(),
      subject: [{ CN: [`${config.nodeName}@${Math.floor(now.getTime() / 1000)}`] }],
      issuer: caCert.subjectName,
      notBefore: new Date(now.getTime() - 60_000),
      notAfter: new Date(notAfter),
      publicKey: keys.publicKey,
      signingKey: caKey,
      signingAlgorithm: ECDSA_P256,
      extensions: [...serverExtensions(config), await x509.AuthorityKeyIdentifierExtension.create(caCert, false, crypto)],
    },
    crypto,
  );
  return { cert: cert.toString('pem') + '\n', key: await pkcs8Pem(keys.privateKey) };
}

async function generateSelfSigned(certFile: string, keyFile: string, config: Config): Promise<void> {
  const { cert, key } = await selfSignedCertificate(config);
  await writeFile(keyFile, key, { mode: 0o600 });
  await writeFile(certFile, cert, { mode: 0o644 });
}
