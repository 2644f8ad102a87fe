/**
 * The decisions of the kubelet's image pull manager (`KubeletEnsureSecretPulledImages`, β and on
 * since 1.35; `pkg/kubelet/images/pullmanager/image_pull_manager.go`,
 * `image_pull_policies.go`), pure. An image already on the node is reused by a pod with
 * `IfNotPresent` or `Never` only when the credentials that pulled it are the pod's too (the same
 * pull secret, by coordinates or by credential hash) or needed none; otherwise the kubelet pulls
 * again with the pod's own credentials, so a pod cannot borrow an image another tenant's secret
 * pulled. Images the kubelet did not pull itself ("preloaded") are judged by the configured policy.
 */

import { allowlistPattern, normalizedName, trimImageTagDigest, type VerificationPolicy } from '../config/image-credentials.js';

/** A pull secret as a pulled record remembers it (`ImagePullSecret` of the kubelet's config API). */
export interface ImagePullSecretRef {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
  /** sha256 (hex) of the credential's JSON (`credentialprovider`'s `hashAuthConfig`). */
  readonly credentialHash: string;
}

/** What may reuse an image pulled under one name (`ImagePullCredentials`). */
export interface ImagePullCredentials {
  readonly kubernetesSecrets?: readonly ImagePullSecretRef[];
  /** Pulled with no credentials at all (or node-wide ones, which nodelet does not read): anyone may. */
  readonly nodePodsAccessible?: boolean;
}

/** One image (by the engine's ID) the kubelet pulled, and who may reuse it under which name (`ImagePulledRecord`). */
export interface ImagePulledRecord {
  readonly lastUpdatedTime: string;
  readonly imageRef: string;
  /** Image name without tag or digest → the credentials seen pulling it under that name. */
  readonly credentialMapping: Readonly<Record<string, ImagePullCredentials>>;
}

/**
 * `writeRecordWhileMatchingLimit`: a record that already names this many secrets is not grown
 * further by matches alone (high namespace turnover must not make writes unbounded).
 */
export const WRITE_RECORD_WHILE_MATCHING_LIMIT = 100;

/** Whether credentials must be verified for `image` (`ImagePullPolicyEnforcer`). */
export type VerificationEnforcer = (image: string, pulledByKubelet: boolean) => boolean;

/** `NewImagePullCredentialVerificationPolicy`. */
export function verificationEnforcer(policy: VerificationPolicy, allowlist: readonly string[] = []): VerificationEnforcer {
  switch (policy) {
    case 'NeverVerify':
      return () => false;
    case 'NeverVerifyPreloadedImages':
      return (_image, pulledByKubelet) => pulledByKubelet;
    case 'AlwaysVerify':
      return () => true;
    case 'NeverVerifyAllowlistedImages': {
      const patterns = allowlist.map(allowlistPattern);
      return (image) => {
        const name = normalizedName(trimImageTagDigest(image));
        return !patterns.some((p) => (p.prefix ? name.startsWith(p.pattern) : name === p.pattern));
      };
    }
  }
}

/** What `mustAttemptImagePull` found: pull or not, and a secret the record should learn. */
export interface PullDecision {
  readonly pull: boolean;
  /** A matching secret whose coordinates or hash the record does not list yet (written back). */
  readonly learn?: ImagePullSecretRef;
}

/**
 * `MustAttemptImagePull` once the records are read: `record` is the image's pulled record (by
 * its ID), `pulledByKubelet` whether a record or a pull intent exists for it. `podSecrets` is
 * asked only when the decision depends on them.
 */
export async function mustAttemptImagePull(
  image: string,
  record: ImagePulledRecord | undefined,
  pulledByKubelet: boolean,
  enforcer: VerificationEnforcer,
  podSecrets: () => Promise<readonly ImagePullSecretRef[]>,
): Promise<PullDecision> {
  if (!enforcer(image, pulledByKubelet)) return { pull: false };
  if (!record) return { pull: true };
  const cached = record.credentialMapping[trimImageTagDigest(image)];
  if (!cached) return { pull: true };
  if (cached.nodePodsAccessible) return { pull: false };
  const known = cached.kubernetesSecrets ?? [];
  if (known.length === 0) return { pull: true };
  const canLearn = known.length < WRITE_RECORD_WHILE_MATCHING_LIMIT;
  for (const secret of await podSecrets()) {
    for (const c of known) {
      const hashesMatch = c.credentialHash.length > 0 && secret.credentialHash === c.credentialHash;
      const coordinatesMatch = secret.uid === c.uid && secret.namespace === c.namespace && secret.name === c.name;
      // The same credentials in another secret, or the same secret with rotated credentials:
      // the pod may use the image, and the record learns this secret for next time.
      if (hashesMatch) return coordinatesMatch || !canLearn ? { pull: false } : { pull: false, learn: secret };
      if (coordinatesMatch) return canLearn ? { pull: false, learn: secret } : { pull: false };
    }
  }
  return { pull: true };
}

/**
 * `pulledRecordMergeNewCreds` (or a new record when there is none): `credentials` added under
 * the image's name. `undefined` credentials (a pull seen under unknown circumstances) make a
 * record with no mapping, which forces verification next time. Returns the record unchanged
 * (same object) when there was nothing to add.
 */
export function mergePulledRecord(
  record: ImagePulledRecord | undefined,
  image: string,
  imageRef: string,
  credentials: ImagePullCredentials | undefined,
  now: string,
): ImagePulledRecord {
  const name = trimImageTagDigest(image);
  if (!record) return { lastUpdatedTime: now, imageRef, credentialMapping: credentials ? { [name]: credentials } : {} };
  const secrets = credentials?.kubernetesSecrets ?? [];
  if (!credentials || (!credentials.nodePodsAccessible && secrets.length === 0)) return record;
  const selected = record.credentialMapping[name];
  const put = (c: ImagePullCredentials): ImagePulledRecord => ({ lastUpdatedTime: now, imageRef, credentialMapping: { ...record.credentialMapping, [name]: c } });
  if (!selected) return put(credentials);
  // Node-accessible is the widest grant: the secrets no longer matter.
  if (credentials.nodePodsAccessible) return selected.nodePodsAccessible ? record : put({ nodePodsAccessible: true });
  if (selected.nodePodsAccessible) return record;
  const merged = [...(selected.kubernetesSecrets ?? [])];
  let changed = false;
  for (const s of secrets) {
    const i = merged.findIndex((m) => m.uid === s.uid && m.namespace === s.namespace && m.name === s.name);
    if (i < 0) {
      merged.push(s);
      changed = true;
    } else if (merged[i]?.credentialHash !== s.credentialHash) {
      merged[i] = s;
      changed = true;
    }
  }
  // Sorted by namespace, name, UID (`imagePullSecretLess`), so equal sets are equal files.
  merged.sort((a, b) => byteOrder(a.namespace, b.namespace) || byteOrder(a.name, b.name) || byteOrder(a.uid, b.uid));
  return changed ? put({ kubernetesSecrets: merged }) : record;
}

/** Go's `strings.Compare`. */
const byteOrder = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
