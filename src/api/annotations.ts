import type { Pod } from './types.js';

// The kubelet's `kubetypes` annotation keys (pkg/kubelet/types/pod_update.go).
/** Hash of a pod from a non-apiserver source; the static pod's UID. */
export const ConfigHashAnnotationKey = 'kubernetes.io/config.hash';
/** Where a pod came from: `file`, `http` or `api`. */
export const ConfigSourceAnnotationKey = 'kubernetes.io/config.source';
/** When the kubelet first saw the pod (RFC3339 with nanoseconds). */
export const ConfigFirstSeenAnnotationKey = 'kubernetes.io/config.seen';
/** Set on the apiserver copy (mirror pod) of a static pod. */
export const ConfigMirrorAnnotationKey = 'kubernetes.io/config.mirror';

/** Annotations the kubelet sets itself, so they don't make a pod "changed" (`isAnnotationMapEqual`). */
export const localAnnotations: ReadonlySet<string> = new Set([ConfigSourceAnnotationKey, ConfigMirrorAnnotationKey, ConfigFirstSeenAnnotationKey]);

/** The kubelet's `IsMirrorPod`. */
export function isMirrorPod(pod: Pick<Pod, 'metadata'>): boolean {
  const a = pod.metadata?.annotations;
  return a !== undefined && a !== null && Object.hasOwn(a, ConfigMirrorAnnotationKey);
}

/** The kubelet's `IsStaticPod`: from any source other than the apiserver. */
export function isStaticPod(pod: Pick<Pod, 'metadata'>): boolean {
  const source = pod.metadata?.annotations?.[ConfigSourceAnnotationKey];
  return source !== undefined && source !== 'api';
}
