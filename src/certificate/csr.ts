import { createHash, createPrivateKey, createPublicKey, webcrypto } from 'node:crypto';
import { isIP } from 'node:net';
import * as x509 from '@peculiar/x509';
import type { CertificateSigningRequest } from 'kubernetes-types/certificates/v1.js';

/**
 * The certificate signing requests a kubelet makes (certificates.k8s.io/v1): what goes into the
 * PKCS#10 request and the CSR object, and what an answered CSR means. Pure apart from key
 * generation; no I/O.
 */

/** `certificatesv1.KubeAPIServerClientKubeletSignerName`: the node's client certificate. */
export const CLIENT_SIGNER = 'kubernetes.io/kube-apiserver-client-kubelet';
/** `certificatesv1.KubeletServingSignerName`: the node's serving certificate (never auto-approved). */
export const SERVING_SIGNER = 'kubernetes.io/kubelet-serving';

export type KeyUsage = 'digital signature' | 'key encipherment' | 'client auth' | 'server auth';

/**
 * Usages for an ECDSA key (the only kind nodelet makes): key encipherment is for RSA keys only
 * (pkg/kubelet/certificate/kubelet.go's usages functions; the CSR approver accepts either set,
 * pkg/apis/certificates/helpers.go `ValidateKubeletClientCSR`/`ValidateKubeletServingCSR`).
 */
export const CLIENT_USAGES: readonly KeyUsage[] = Object.freeze(['digital signature', 'client auth']);
export const SERVING_USAGES: readonly KeyUsage[] = Object.freeze(['digital signature', 'server auth']);

/** What a node asks to be certified as: `CN=system:node:<node>, O=system:nodes`, plus SANs for serving. */
export interface CertificateTemplate {
  readonly commonName: string;
  readonly organizations: readonly string[];
  readonly dnsNames: readonly string[];
  readonly ipAddresses: readonly string[];
}

export function nodeTemplate(nodeName: string, sans: { dnsNames?: readonly string[]; ipAddresses?: readonly string[] } = {}): CertificateTemplate {
  return { commonName: `system:node:${nodeName}`, organizations: ['system:nodes'], dnsNames: sans.dnsNames ?? [], ipAddresses: sans.ipAddresses ?? [] };
}

/**
 * A serving template's SANs from the Node's addresses, as the kubelet's server certificate manager
 * takes them (pkg/kubelet/certificate/kubelet.go `addressesToHostnamesAndIPs`): Hostname and
 * *DNS addresses are DNS names, *IP addresses are IPs; duplicates dropped, order kept.
 */
export function addressesToSANs(addresses: readonly { type: string; address: string }[]): { dnsNames: string[]; ipAddresses: string[] } {
  const dns = new Set<string>();
  const ips = new Set<string>();
  for (const { type, address } of addresses) {
    if (address === '') continue;
    if (type === 'Hostname' || type === 'InternalDNS' || type === 'ExternalDNS') dns.add(address);
    else if ((type === 'InternalIP' || type === 'ExternalIP') && isIP(address) !== 0) ips.add(address);
  }
  return { dnsNames: [...dns], ipAddresses: [...ips] };
}

const ECDSA_P256 = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const crypto = webcrypto as unknown as Crypto;

/** A new key and the PKCS#10 request for it, PEM (the key SEC1 `EC PRIVATE KEY`, as keyutil writes it). */
export interface KeyAndRequest {
  readonly keyPem: string;
  readonly requestPem: string;
  /** The public key, DER SubjectPublicKeyInfo (what the CSR name digest covers). */
  readonly publicKeyDer: Buffer;
}

/** The key pair of an ECDSA P-256 private key PEM (SEC1 or PKCS#8); throws when it is another kind. */
async function importKeys(keyPem: string): Promise<CryptoKeyPair> {
  const key = createPrivateKey(keyPem);
  if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') throw new Error('the private key is not ECDSA P-256');
  const pkcs8 = key.export({ type: 'pkcs8', format: 'der' });
  const spki = createPublicKey(key).export({ type: 'spki', format: 'der' });
  return {
    privateKey: await webcrypto.subtle.importKey('pkcs8', pkcs8, ECDSA_P256, true, ['sign']),
    publicKey: await webcrypto.subtle.importKey('spki', spki, ECDSA_P256, true, ['verify']),
  };
}

/**
 * A CSR for `template` with a new ECDSA P-256 key, the kubelet's key type
 * (`keyutil.MakeEllipticPrivateKeyPEM`), or with `keyPem` when given (bootstrap reuses the key
 * of an earlier attempt, so its CSR name stays the same).
 */
export async function newKeyAndRequest(template: CertificateTemplate, keyPem?: string): Promise<KeyAndRequest> {
  const keys = keyPem === undefined ? await webcrypto.subtle.generateKey(ECDSA_P256, true, ['sign', 'verify']) : await importKeys(keyPem);
  const sans = [
    ...template.dnsNames.map((value) => ({ type: 'dns' as const, value })),
    ...template.ipAddresses.map((value) => ({ type: 'ip' as const, value })),
  ];
  const request = await x509.Pkcs10CertificateRequestGenerator.create(
    {
      // pkix.Name's order: O before CN. Given as attributes, not text, so no character is special.
      name: [...template.organizations.map((o) => ({ O: [o] })), { CN: [template.commonName] }],
      keys,
      signingAlgorithm: ECDSA_P256,
      extensions: sans.length ? [new x509.SubjectAlternativeNameExtension(sans)] : [],
    },
    crypto,
  );
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const sec1 = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({ type: 'sec1', format: 'pem' }).toString();
  const publicKeyDer = Buffer.from(await webcrypto.subtle.exportKey('spki', keys.publicKey));
  return { keyPem: sec1, requestPem: request.toString('pem') + '\n', publicKeyDer };
}

/**
 * The bootstrap CSR's name, `node-csr-<digest>` (pkg/kubelet/certificate/bootstrap/bootstrap.go
 * `digestedName`): SHA-512/256 over the base64url public key, CN, organizations and usages, each
 * followed by `|`, so a restarted bootstrap with the same key finds its earlier request.
 */
export function digestedName(publicKeyDer: Buffer, template: Pick<CertificateTemplate, 'commonName' | 'organizations'>, usages: readonly string[]): string {
  const hash = createHash('sha512-256');
  const write = (data: Buffer | string) => hash.update(Buffer.from(data).toString('base64url')).update('|');
  write(publicKeyDer);
  write(template.commonName);
  for (const o of template.organizations) write(o);
  for (const u of usages) write(u);
  return `node-csr-${hash.digest('base64url')}`;
}

/**
 * The CSR object (k8s.io/client-go/util/certificate/csr/csr.go `RequestCertificate`): a given
 * name, else `generateName: csr-`; `expirationSeconds` only when asked for (the kubelet never does).
 */
export function csrObject(o: { name?: string; requestPem: string; signerName: string; usages: readonly KeyUsage[]; expirationSeconds?: number }): CertificateSigningRequest {
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: o.name ? { name: o.name } : { generateName: 'csr-' },
    spec: {
      request: Buffer.from(o.requestPem).toString('base64'),
      signerName: o.signerName,
      usages: [...o.usages],
      ...(o.expirationSeconds !== undefined ? { expirationSeconds: o.expirationSeconds } : {}),
    },
  };
}

/**
 * Whether an existing CSR object was made with the key whose public half is `publicKeyDer`, for
 * the same signer and usages (csr.go `ensureCompatible`; the signatures differ each time, so the
 * request bytes are not compared). A request that does not parse is not compatible.
 */
export function compatibleRequest(existing: CertificateSigningRequest, publicKeyDer: Buffer, signerName: string, usages: readonly string[]): boolean {
  if (existing.spec.signerName !== signerName) return false;
  if ([...(existing.spec.usages ?? [])].sort().join(',') !== [...usages].sort().join(',')) return false;
  try {
    const request = new x509.Pkcs10CertificateRequest(Buffer.from(existing.spec.request, 'base64').toString('utf8'));
    return Buffer.from(request.publicKey.rawData).equals(publicKeyDer);
  } catch {
    return false;
  }
}

export class CertificateRequestError extends Error {
  override name = 'CertificateRequestError';
}

/**
 * What a CSR's status says (csr.go `WaitForCertificate`): the issued certificate PEM once approved
 * and signed; undefined while pending (or approved, not yet signed); a CertificateRequestError
 * when denied or failed, with the condition's reason and message.
 */
export function issuedCertificate(csr: CertificateSigningRequest): string | undefined {
  for (const c of csr.status?.conditions ?? []) {
    if (c.type === 'Denied') throw new CertificateRequestError(`certificate signing request is denied, reason: ${c.reason ?? ''}, message: ${c.message ?? ''}`);
    if (c.type === 'Failed') throw new CertificateRequestError(`certificate signing request failed, reason: ${c.reason ?? ''}, message: ${c.message ?? ''}`);
  }
  const approved = (csr.status?.conditions ?? []).some((c) => c.type === 'Approved' && c.status !== 'False');
  const cert = csr.status?.certificate;
  if (!approved || cert === undefined || cert === '') return undefined;
  return Buffer.from(cert, 'base64').toString('utf8');
}
