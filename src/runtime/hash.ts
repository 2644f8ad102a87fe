import { canonicalJSON } from '../api/canonical-json.js';
import type { Container } from '../api/types.js';

/**
 * The container spec hash nodelet stores in `annotation.io.kubernetes.container.hash`: FNV-1a 32
 * over the spec's JSON, keys sorted so the hash does not depend on the order fields appeared in
 * the manifest. A running container whose hash differs from the current spec is killed and
 * recreated.
 *
 * `resources` and `resizePolicy` are left out: those are what an in-place resize changes (the
 * apiserver's `pods/resize` subresource), and a resize is applied to the running container
 * (src/kubelet/resize.ts), never by recreating it. The kubelet goes further since 1.31 and hashes
 * only `name` and `image` (pkg/kubelet/container/helpers.go `HashContainer`/`pickFieldsToHash`),
 * the only other fields an apiserver pod may change; nodelet keeps the rest of the spec in the
 * hash because a static pod whose manifest sets its own `metadata.uid` keeps its UID when the
 * file changes, and such a change must still replace the container.
 */
export function hashContainer(container: Container): string {
  const { resources: _resources, resizePolicy: _resizePolicy, ...rest } = container;
  return fnv1a(canonicalJSON(rest));
}

/**
 * The hash nodelet stored before resources left it: the whole spec. A container created by an
 * older nodelet carries this one; it is still recognised (see `containerHashMatches`) so that an
 * upgrade of nodelet restarts nothing. The kubelet accepted one recreation of every container when
 * its hash changed; nodelet's pods are often long-lived static pods with no controller to absorb it.
 */
export function legacyHashContainer(container: Container): string {
  return fnv1a(canonicalJSON(container));
}

/**
 * Whether a running container whose label says `hash` was created from `container`'s spec: the
 * current hash, or the legacy whole-spec one of the spec as it is, or as it was with `legacy`'s
 * resources and resize policy (what the spec held when the container was first recognised by its
 * legacy hash, recorded by the allocation manager, so a later resize does not turn an upgraded
 * container into a "changed" one).
 */
export function containerHashMatches(hash: string, container: Container, legacy?: Pick<Container, 'resources' | 'resizePolicy'>): boolean {
  if (hash === hashContainer(container) || hash === legacyHashContainer(container)) return true;
  if (!legacy) return false;
  const { resources: _r, resizePolicy: _p, ...rest } = container;
  return hash === legacyHashContainer({ ...rest, ...(legacy.resources ? { resources: legacy.resources } : {}), ...(legacy.resizePolicy ? { resizePolicy: legacy.resizePolicy } : {}) });
}

function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16);
}
