import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import type { Pod } from 'kubernetes-types/core/v1.js';
import type { FileProjection } from './atomic-writer.js';
import { decodePemBlocks, encodeCertificatePem } from './trust-anchors.js';

/**
 * The pure half of the kubelet's pod certificate manager
 * (pkg/kubelet/podcertificate/podcertificatemanager.go) and of the projected volume's
 * `podCertificate` branch (pkg/volume/projected/projected.go `collectData`): the key pair and
 * stub PKCS#10 request, the PodCertificateRequest object, what its status means, when to
 * refresh, and the files written. The apiserver half is src/cluster/pod-certificates.ts.
 */

/** `PodCertificateProjection` (k8s.io/api/core/v1/types.go at v0.37.2; kubernetes-types predates it). */
export interface PodCertificateProjection {
  signerName: string;
  keyType: string;
  maxExpirationSeconds?: number;
  credentialBundlePath?: string;
  keyPath?: string;
  certificateChainPath?: string;
  userAnnotations?: Record<string, string>;
}

/** A `metav1.Condition` as a PodCertificateRequest's status carries it. */
export interface PCRCondition {
  type: string;
  status?: string;
  reason?: string;
  message?: string;
}

/** certificates.k8s.io/v1 `PodCertificateRequest` (k8s.io/api/certificates/v1/types.go at v0.37.2), the fields nodelet writes or reads. */
export interface PodCertificateRequest {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; generateName?: string; creationTimestamp?: string; resourceVersion?: string; ownerReferences?: { apiVersion: string; kind: string; name: string; uid: string }[] };
  spec?: {
    signerName: string;
    podName: string;
    podUID: string;
    serviceAccountName: string;
    serviceAccountUID: string;
    nodeName: string;
    nodeUID: string;
    maxExpirationSeconds?: number;
    /** Base64 of the DER request (a `[]byte` in JSON). */
    stubPKCS10Request: string;
    unverifiedUserAnnotations?: Record<string, string>;
  };
  status?: {
    conditions?: PCRCondition[];
    certificateChain?: string;
    notBefore?: string;
    beginRefreshAt?: string;
    notAfter?: string;
  };
}

/** The key types a projection may ask for (`generateKeyAndProof`), with the Web Crypto algorithms that make and sign with them. */
const KEY_ALGORITHMS: Readonly<Record<string, { generate: RsaHashedKeyGenParams | EcKeyGenParams | Algorithm; sign: Algorithm | EcdsaParams }>> = {
  // Go's x509.CreateCertificateRequest signs with SHA-256 and PKCS #1 v1.5 for RSA keys, and with
  // the hash that matches the curve for ECDSA (P-256 SHA-256, P-384 SHA-384, P-521 SHA-512).
  RSA3072: { generate: { name: 'RSASSA-PKCS1-v1_5', modulusLength: 3072, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, sign: { name: 'RSASSA-PKCS1-v1_5' } },
  RSA4096: { generate: { name: 'RSASSA-PKCS1-v1_5', modulusLength: 4096, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }, sign: { name: 'RSASSA-PKCS1-v1_5' } },
  ECDSAP256: { generate: { name: 'ECDSA', namedCurve: 'P-256' }, sign: { name: 'ECDSA', hash: 'SHA-256' } },
  ECDSAP384: { generate: { name: 'ECDSA', namedCurve: 'P-384' }, sign: { name: 'ECDSA', hash: 'SHA-384' } },
  ECDSAP521: { generate: { name: 'ECDSA', namedCurve: 'P-521' }, sign: { name: 'ECDSA', hash: 'SHA-512' } },
  ED25519: { generate: { name: 'Ed25519' }, sign: { name: 'Ed25519' } },
};

export const KEY_TYPES: readonly string[] = Object.freeze(Object.keys(KEY_ALGORITHMS));

/**
 * `maxExpirationSeconds` bounds of pod validation (pkg/apis/core/validation: `[3600, 7862400]`,
 * with 24 h for `kubernetes.io/` signers); the apiserver refuses other pods, these are for the record.
 */
export const MIN_MAX_EXPIRATION_SECONDS = 3600;
export const MAX_MAX_EXPIRATION_SECONDS = 7_862_400;

/**
 * nodelet's cap on a certificate chain it writes: above the apiserver's own limit on
 * `status.certificateChain` (pkg/apis/certificates/types.go `MaxCertificateChainSize`, 100 KiB)
 * by the room re-wrapping its base64 in lines of 64 may take, so every chain the apiserver accepts
 * fits, and nothing much larger is ever held should a server let one through.
 */
export const MAX_CERTIFICATE_CHAIN_BYTES = 128 * 1024;

/** `assumeDeletedThreshold`: a request not seen this long after its creation is taken as deleted. */
export const ASSUME_DELETED_MS = 10 * 60_000;
/** `jitterDuration`: up to 5 minutes, so that projections do not all refresh at once. */
export const MAX_JITTER_MS = 5 * 60_000;

export interface KeyAndRequest {
  /** The private key, PKCS #8, one `PRIVATE KEY` PEM block (`pemEncodeKey`). */
  readonly keyPem: string;
  /** The stub PKCS #10 request, DER: empty subject, no attributes, signed by the key. */
  readonly stubPKCS10Request: Buffer;
}

/**
 * `generateKeyAndProof` and `pemEncodeKey`: a fresh key of `keyType` and an empty PKCS #10 request
 * signed with it (`x509.CreateCertificateRequest` with an empty template), which the apiserver
 * verifies on create as the proof that the requester holds the key. Throws on an unknown type,
 * with the kubelet's message.
 */
export async function generateKeyAndRequest(keyType: string): Promise<KeyAndRequest> {
  const alg = KEY_ALGORITHMS[keyType];
  if (!alg) throw new Error(`unknown key type ${JSON.stringify(keyType)}`);
  const keys = (await webcrypto.subtle.generateKey(alg.generate, true, ['sign', 'verify'])) as CryptoKeyPair;
  const request = await x509.Pkcs10CertificateRequestGenerator.create({ keys, signingAlgorithm: alg.sign }, webcrypto as unknown as Crypto);
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  return { keyPem: pemBlock('PRIVATE KEY', pkcs8), stubPKCS10Request: Buffer.from(request.rawData) };
}

function pemBlock(type: string, der: Buffer): string {
  const b64 = der.toString('base64');
  let out = `-----BEGIN ${type}-----\n`;
  for (let i = 0; i < b64.length; i += 64) out += `${b64.slice(i, i + 64)}\n`;
  return `${out}-----END ${type}-----\n`;
}

/**
 * `createPodCertificateRequest`'s object: `generateName: req-`, owned by the pod (so it goes with
 * it), every spec field from the pod, its service account, the node and the projection;
 * `maxExpirationSeconds` and the annotations copied as they are (the apiserver defaults the former).
 */
export function podCertificateRequest(o: {
  pod: Pod;
  serviceAccountUID: string;
  nodeName: string;
  nodeUID: string;
  source: PodCertificateProjection;
  stubPKCS10Request: Buffer;
}): PodCertificateRequest {
  const meta = o.pod.metadata ?? {};
  const { signerName, maxExpirationSeconds, userAnnotations } = o.source;
  return {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'PodCertificateRequest',
    metadata: {
      namespace: meta.namespace ?? 'default',
      generateName: 'req-',
      ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: meta.name ?? '', uid: meta.uid ?? '' }],
    },
    spec: {
      signerName,
      podName: meta.name ?? '',
      podUID: meta.uid ?? '',
      serviceAccountName: o.pod.spec?.serviceAccountName ?? '',
      serviceAccountUID: o.serviceAccountUID,
      nodeName: o.nodeName,
      nodeUID: o.nodeUID,
      ...(maxExpirationSeconds !== undefined && maxExpirationSeconds !== null ? { maxExpirationSeconds } : {}),
      stubPKCS10Request: o.stubPKCS10Request.toString('base64'),
      ...(userAnnotations ? { unverifiedUserAnnotations: userAnnotations } : {}),
    },
  };
}

/** What a request's status says: the first of Denied, Failed or Issued among its conditions, in their order (as the kubelet loops), or pending. */
export type RequestOutcome =
  | { kind: 'pending' }
  | { kind: 'denied' | 'failed'; reason: string; message: string }
  | { kind: 'issued'; certChain: string; beginRefreshAt: number; notAfter: number };

export function requestOutcome(pcr: PodCertificateRequest): RequestOutcome {
  for (const c of pcr.status?.conditions ?? []) {
    if (c.type === 'Denied') return { kind: 'denied', reason: c.reason ?? '', message: c.message ?? '' };
    if (c.type === 'Failed') return { kind: 'failed', reason: c.reason ?? '', message: c.message ?? '' };
    if (c.type === 'Issued') {
      const s = pcr.status ?? {};
      return { kind: 'issued', certChain: cleanCertificateChain(s.certificateChain ?? ''), beginRefreshAt: timeOf(s.beginRefreshAt), notAfter: timeOf(s.notAfter) };
    }
  }
  return { kind: 'pending' };
}

/** A `metav1.Time`; absent or unreadable is the zero time (so a refresh is due at once). */
function timeOf(text: string | undefined): number {
  const ms = text ? Date.parse(text) : NaN;
  return Number.isNaN(ms) ? 0 : ms;
}

/**
 * `cleanCertificateChain`: every PEM block of the issued chain, in order, re-labelled
 * `CERTIFICATE` with headers and the text between blocks dropped. Past
 * `MAX_CERTIFICATE_CHAIN_BYTES` it throws (the apiserver never lets one through).
 */
export function cleanCertificateChain(chain: string): string {
  const out = decodePemBlocks(chain).map(encodeCertificatePem).join('');
  const bytes = Buffer.byteLength(out);
  if (bytes > MAX_CERTIFICATE_CHAIN_BYTES) throw new Error(`certificate chain of ${bytes} bytes, more than the ${MAX_CERTIFICATE_CHAIN_BYTES} bytes nodelet projects`);
  return out;
}

/** When to begin refreshing: the signer's `beginRefreshAt` plus the kubelet's jitter (`jitterDuration`, [0, 5 min)). */
export function refreshAt(beginRefreshAt: number, random: () => number = Math.random): number {
  return beginRefreshAt + Math.floor(random() * MAX_JITTER_MS);
}

/**
 * The files of one `podCertificate` source (projected.go): the key then the chain at
 * `credentialBundlePath`, the key alone at `keyPath`, the chain alone at `certificateChainPath`,
 * whichever are set, each with `mode` (the caller narrows it to 0600 with fsUser or fsGroup).
 */
export function podCertificateFiles(source: PodCertificateProjection, bundle: { keyPem: string; certChain: string }, mode: number, fsUser?: number): Map<string, FileProjection> {
  const files = new Map<string, FileProjection>();
  const file = (data: string): FileProjection => ({ data, mode, ...(fsUser !== undefined ? { fsUser } : {}) });
  if (source.credentialBundlePath) files.set(source.credentialBundlePath, file(bundle.keyPem + bundle.certChain));
  if (source.keyPath) files.set(source.keyPath, file(bundle.keyPem));
  if (source.certificateChainPath) files.set(source.certificateChainPath, file(bundle.certChain));
  return files;
}
