import { canonicalJSON } from '../api/canonical-json.js';
import type { Container } from '../api/types.js';

/**
 * The container spec hash the kubelet stores in `annotation.io.kubernetes.container.hash`
 * (`HashContainer`: FNV-1a 32 over the spec's JSON). A running container whose hash differs from
 * the current spec is killed and recreated. Keys are sorted so the hash does not depend on the
 * order fields appeared in the manifest.
 */
export function hashContainer(container: Container): string {
  const text = canonicalJSON(container);
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16);
}
