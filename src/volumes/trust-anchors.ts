import { createHash, randomBytes } from 'node:crypto';
import type { LabelSelector } from 'kubernetes-types/meta/v1.js';

/**
 * The pure half of the kubelet's ClusterTrustBundle manager
 * (pkg/kubelet/clustertrustbundle/clustertrustbundle_manager.go): which bundles a projection
 * selects, and the file it gets (`normalizeTrustAnchors`). The apiserver half is
 * src/cluster/trust-bundles.ts.
 */

/** A ClusterTrustBundle as the projection reads it (the fields of certificates.k8s.io v1, v1beta1 and v1alpha1 alike). */
export interface ClusterTrustBundle {
  metadata?: { name?: string; labels?: Record<string, string> };
  spec?: { signerName?: string; trustBundle?: string };
}

/** `maxLabelSelectorLength`: the longest label selector (as its string form) a projection may use. */
export const MAX_LABEL_SELECTOR_LENGTH = 100 * 1024;
/**
 * nodelet's caps (the kubelet has none): the bundles one `signerName` projection merges, and the
 * bytes of one projected trust-anchors file. A bundle is at most 1 MiB (the apiserver's
 * validation), so a file by `name` always fits; 150 small bundles of one signer (the conformance
 * spec "a big number (>100) of CTBs") are far below both.
 */
export const MAX_MERGED_BUNDLES = 1024;
export const MAX_TRUST_ANCHORS_BYTES = 4 * 1024 * 1024;
/** nodelet's cap on the trust anchors of all `clusterTrustBundle` sources of one projected volume together (it lives on tmpfs). */
export const MAX_TRUST_ANCHORS_BYTES_PER_VOLUME = 16 * 1024 * 1024;

/**
 * The blocks of PEM text as Go's `pem.Decode` loop finds them: `-----BEGIN T-----`, optional
 * `Key: value` headers ended by a blank line, base64 (whitespace allowed), `-----END T-----`.
 * Text between blocks is skipped; a block whose end or base64 is wrong is skipped too. Any block
 * type counts (the kubelet re-labels every block CERTIFICATE).
 */
export function decodePemBlocks(text: string): Buffer[] {
  const out: Buffer[] = [];
  const begin = /-----BEGIN ([^\r\n]*?)-----\r?\n/g;
  let m: RegExpExecArray | null;
  while ((m = begin.exec(text)) !== null) {
    const type = m[1] ?? '';
    const bodyStart = begin.lastIndex;
    const endMarker = `-----END ${type}-----`;
    const end = text.indexOf(endMarker, bodyStart);
    if (end < 0) continue;
    const bytes = decodeBody(text.slice(bodyStart, end));
    if (!bytes) continue;
    out.push(bytes);
    begin.lastIndex = end + endMarker.length;
  }
  return out;
}

function decodeBody(body: string): Buffer | undefined {
  const lines = body.split(/\r?\n/);
  // Headers: leading `Key: value` lines, then one blank line.
  if (lines.length > 0 && (lines[0] ?? '').includes(':')) {
    while (lines.length > 0 && (lines[0] ?? '').trim() !== '') {
      if (!(lines[0] ?? '').includes(':')) return undefined;
      lines.shift();
    }
    lines.shift();
  }
  const b64 = lines.join('').replace(/[ \t\r\n]/g, '');
  if (b64.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(b64)) return undefined;
  return Buffer.from(b64, 'base64');
}

/** `pem.EncodeToMemory` of a CERTIFICATE block: base64 in lines of 64. */
export function encodeCertificatePem(der: Buffer): string {
  const b64 = der.toString('base64');
  let out = '-----BEGIN CERTIFICATE-----\n';
  for (let i = 0; i < b64.length; i += 64) out += `${b64.slice(i, i + 64)}\n`;
  return `${out}-----END CERTIFICATE-----\n`;
}

/** This process's ordering salt: the kubelet shuffles the merged anchors so that nobody comes to rely on an order. */
const processSalt = randomBytes(16);

/**
 * `normalizeTrustAnchors`: every PEM block of every bundle, de-duplicated by its bytes and written
 * back as CERTIFICATE blocks. The kubelet sorts the set and then shuffles it (`rand.Shuffle`,
 * "a stable ordering that changes each time Kubelet restarts"); nodelet orders by a salted hash
 * of each certificate instead: random per process as there, but the same on every refresh, so an
 * unchanged set never rewrites the file.
 */
export function normalizeTrustAnchors(bundles: readonly string[], salt: Buffer = processSalt): string {
  const unique = new Map<string, Buffer>();
  for (const bundle of bundles) {
    for (const der of decodePemBlocks(bundle)) unique.set(der.toString('base64'), der);
  }
  const keyed = [...unique.values()].map((der) => ({ der, key: createHash('sha256').update(salt).update(der).digest('hex') }));
  keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : Buffer.compare(a.der, b.der)));
  return keyed.map(({ der }) => encodeCertificatePem(der)).join('');
}

/** A compiled `metav1.LabelSelector` (`LabelSelectorAsSelector`). */
export interface LabelMatcher {
  matches(labels: Readonly<Record<string, string>> | undefined): boolean;
  /** The selector's string form (`labels.Selector.String()`), whose length is capped. */
  readonly text: string;
}

type Requirement = { key: string; op: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values: string[] };

/**
 * `metav1.LabelSelectorAsSelector`: undefined matches nothing, an empty selector everything;
 * `matchLabels` are `key=value` requirements, `matchExpressions` In, NotIn, Exists, DoesNotExist.
 * An unknown operator, or values where there may be none (or none where some are needed), throws.
 */
export function labelMatcher(selector: LabelSelector | undefined): LabelMatcher {
  if (selector === undefined || selector === null) return { matches: () => false, text: '<none>' };
  const reqs: Requirement[] = [];
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) reqs.push({ key, op: 'In', values: [value] });
  for (const e of selector.matchExpressions ?? []) {
    const values = [...(e.values ?? [])];
    switch (e.operator) {
      case 'In':
      case 'NotIn':
        if (values.length === 0) throw new Error(`for 'in', 'notin' operators, values set can't be empty`);
        reqs.push({ key: e.key, op: e.operator, values });
        break;
      case 'Exists':
      case 'DoesNotExist':
        if (values.length > 0) throw new Error(`values set must be empty for exists and does not exist`);
        reqs.push({ key: e.key, op: e.operator, values });
        break;
      default:
        throw new Error(`${JSON.stringify(e.operator)} is not a valid label selector operator`);
    }
  }
  reqs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const text = reqs
    .map((r) => {
      if (r.op === 'Exists') return r.key;
      if (r.op === 'DoesNotExist') return `!${r.key}`;
      const values = [...new Set(r.values)].sort();
      if (r.op === 'In' && values.length === 1) return `${r.key}=${values[0]}`;
      return `${r.key} ${r.op === 'In' ? 'in' : 'notin'} (${values.join(',')})`;
    })
    .join(',');
  return {
    text,
    matches(labels) {
      const l = labels ?? {};
      return reqs.every((r) => {
        const has = Object.hasOwn(l, r.key);
        switch (r.op) {
          case 'In':
            return has && r.values.includes(l[r.key] ?? '');
          case 'NotIn':
            return !has || !r.values.includes(l[r.key] ?? '');
          case 'Exists':
            return has;
          case 'DoesNotExist':
            return !has;
        }
        return false;
      });
    },
  };
}

/**
 * `GetTrustAnchorsBySigner`'s selection: the bundles whose labels match and whose
 * `spec.signerName` is `signerName`. Throws past `MAX_LABEL_SELECTOR_LENGTH`.
 */
export function selectBySigner<T extends ClusterTrustBundle>(bundles: Iterable<T>, signerName: string, selector: LabelSelector | undefined): T[] {
  const matcher = labelMatcher(selector);
  if (matcher.text.length > MAX_LABEL_SELECTOR_LENGTH) throw new Error(`label selector length (${matcher.text.length}) is larger than ${MAX_LABEL_SELECTOR_LENGTH}`);
  const out: T[] = [];
  for (const b of bundles) if (matcher.matches(b.metadata?.labels) && (b.spec?.signerName ?? '') === signerName) out.push(b);
  return out;
}

/**
 * The file of a `signerName` projection from the bundles `selectBySigner` chose: empty when none
 * matched and the source is optional, else the kubelet's error; past nodelet's caps an error too.
 */
export function trustAnchorsOfSigner(selected: readonly ClusterTrustBundle[], allowMissing: boolean, salt?: Buffer): string {
  if (selected.length === 0) {
    if (allowMissing) return '';
    throw new Error('combination of signerName and labelSelector matched zero ClusterTrustBundles');
  }
  if (selected.length > MAX_MERGED_BUNDLES) throw new Error(`combination of signerName and labelSelector matched ${selected.length} ClusterTrustBundles, more than the ${MAX_MERGED_BUNDLES} nodelet merges into one file`);
  return capped(normalizeTrustAnchors(selected.map((b) => b.spec?.trustBundle ?? ''), salt));
}

/** The file of a `name` projection: that bundle's anchors; a missing one is empty when optional, else the kubelet's error. */
export function trustAnchorsOfBundle(name: string, bundle: ClusterTrustBundle | undefined, allowMissing: boolean, salt?: Buffer): string {
  if (!bundle) {
    if (allowMissing) return '';
    throw new Error(`while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io ${JSON.stringify(name)} not found`);
  }
  return capped(normalizeTrustAnchors([bundle.spec?.trustBundle ?? ''], salt));
}

function capped(pem: string): string {
  const bytes = Buffer.byteLength(pem);
  if (bytes > MAX_TRUST_ANCHORS_BYTES) throw new Error(`while normalizing trust anchors: ${bytes} bytes of trust anchors, more than the ${MAX_TRUST_ANCHORS_BYTES} nodelet projects into one file`);
  return pem;
}
