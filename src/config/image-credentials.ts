/**
 * The kubelet's image credential verification settings (`KubeletEnsureSecretPulledImages`):
 * KubeletConfiguration `imagePullCredentialsVerificationPolicy` and
 * `preloadedImagesVerificationAllowlist` (`pkg/kubelet/apis/config/types.go`), their checks
 * (`pkg/kubelet/apis/config/validation/validation.go`) and the image-name helpers they need
 * (`pkg/kubelet/images/pullmanager/image_pull_policies.go`), pure.
 */

/** KubeletConfiguration `imagePullCredentialsVerificationPolicy` (`pkg/kubelet/apis/config/types.go`). */
export const VERIFICATION_POLICIES = ['NeverVerify', 'NeverVerifyPreloadedImages', 'NeverVerifyAllowlistedImages', 'AlwaysVerify'] as const;
export type VerificationPolicy = (typeof VERIFICATION_POLICIES)[number];

/**
 * `getAllowlistImagePattern`: an allowlist entry is an image name without tag or digest, or a
 * prefix ending in `/*`. Returns the normalized pattern and whether it is a prefix; throws the
 * kubelet's message for an invalid one.
 */
export function allowlistPattern(pattern: string): { pattern: string; prefix: boolean } {
  if (pattern !== pattern.trim()) throw new Error(`leading/trailing spaces are not allowed: ${pattern}`);
  const prefix = pattern.endsWith('/*');
  const trimmed = prefix ? pattern.slice(0, -1) : pattern;
  if (trimmed.length === 0) throw new Error(`the supplied pattern is too short: ${pattern}`);
  if (trimmed.includes('*')) throw new Error(`not a valid wildcard pattern, only patterns ending with '/*' are allowed: ${pattern}`);
  if (prefix) {
    if (trimmed.length === 1) throw new Error('at least registry hostname is required');
    return { pattern: trimmed, prefix: true };
  }
  if (!IMAGE_NAME.test(trimmed)) throw new Error(`failed to parse as an image name: invalid reference format: ${pattern}`);
  if (trimImageTagDigest(trimmed) !== trimmed) throw new Error(`neither tag nor digest is accepted in an image reference: ${pattern}`);
  return { pattern: normalizedName(trimmed), prefix: false };
}

/**
 * The kubelet's configuration check (`pkg/kubelet/apis/config/validation/validation.go`): an
 * allowlist only with `NeverVerifyAllowlistedImages`, and each pattern valid.
 */
export function validateVerificationConfig(policy: VerificationPolicy, allowlist: readonly string[]): string | undefined {
  if (allowlist.length > 0 && policy !== 'NeverVerifyAllowlistedImages') {
    return 'invalid configuration: can\'t set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not "NeverVerifyAllowlistedImages"';
  }
  for (const p of allowlist) {
    try {
      allowlistPattern(p);
    } catch (err) {
      return `invalid configuration: invalid image pattern in \`preloadedImagesVerificationAllowlist\`: ${(err as Error).message}`;
    }
  }
  return undefined;
}

// A reference's name part: lower-case path components, an optional registry host[:port] first.
const IMAGE_NAME = /^(?:[a-zA-Z0-9.-]+(?::\d+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::[\w][\w.-]{0,127})?(?:@[a-z0-9]+(?:[+._-][a-z0-9]+)*:[a-fA-F0-9]{32,})?$/;

/**
 * `trimImageTagDigest`: the image name without its `@digest` and `:tag` (a colon before the last
 * slash is a registry port, not a tag).
 */
export function trimImageTagDigest(image: string): string {
  const at = image.indexOf('@');
  const name = at >= 0 ? image.slice(0, at) : image;
  const colon = name.lastIndexOf(':');
  return colon > name.lastIndexOf('/') ? name.slice(0, colon) : name;
}

/**
 * `reference.ParseNormalizedNamed(…).Name()` for matching allowlists: Docker Hub names get their
 * `docker.io/` (and `library/` for official images) as the kubelet compares them.
 */
export function normalizedName(name: string): string {
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  const hasRegistry = first.includes('.') || first.includes(':') || first === 'localhost';
  if (hasRegistry) return name;
  return slash < 0 ? `docker.io/library/${name}` : `docker.io/${name}`;
}

