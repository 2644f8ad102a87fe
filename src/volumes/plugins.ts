import type { Volume, VolumeMount } from 'kubernetes-types/core/v1.js';

/** The volume types nodelet sets up. */
export type VolumeKind = 'emptyDir' | 'hostPath' | 'secret' | 'configMap' | 'downwardAPI' | 'projected';

/** The kubelet's plugin directory names: `<rootDir>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>`. */
export const pluginDir: Readonly<Record<VolumeKind, string>> = {
  emptyDir: 'kubernetes.io~empty-dir',
  hostPath: 'kubernetes.io~host-path',
  secret: 'kubernetes.io~secret',
  configMap: 'kubernetes.io~configmap',
  downwardAPI: 'kubernetes.io~downward-api',
  projected: 'kubernetes.io~projected',
};

const kinds = new Set<string>(Object.keys(pluginDir));

/** Volume kinds written with the atomic writer and refreshed while the pod runs. */
export const refreshable = new Set<VolumeKind>(['secret', 'configMap', 'downwardAPI', 'projected']);
/** Volume kinds the kubelet always mounts read-only. */
export const alwaysReadOnly = refreshable;
/** Volume kinds the kubelet backs with memory (a tmpfs), so their contents never reach a disk. */
export const memoryBacked = new Set<VolumeKind>(['secret', 'projected']);

/**
 * A volume's type: the one source field it sets. A volume with none is an emptyDir, as the
 * apiserver's defaulting makes it. Returns the field name for types nodelet does not support.
 */
export function volumeKindOf(v: Volume): { kind: VolumeKind } | { unsupported: string } {
  const field = Object.keys(v).find((k) => k !== 'name' && (v as unknown as Record<string, unknown>)[k] != null);
  if (field === undefined) return { kind: 'emptyDir' };
  return kinds.has(field) ? { kind: field as VolumeKind } : { unsupported: field };
}

const projectionSources = new Set(['secret', 'configMap', 'downwardAPI', 'serviceAccountToken', 'clusterTrustBundle', 'podCertificate']);
const emptyDirMedia = new Set(['', 'Memory']);

/** Why nodelet refuses this volume, or undefined when it can set it up. */
export function volumeRefusal(v: Volume): string | undefined {
  const k = volumeKindOf(v);
  const prefix = `volume ${JSON.stringify(v.name)}: `;
  if ('unsupported' in k) return `${prefix}${k.unsupported} volumes are not supported by nodelet`;
  if (k.kind === 'emptyDir' && !emptyDirMedia.has(v.emptyDir?.medium ?? '')) {
    return `${prefix}emptyDir medium ${JSON.stringify(v.emptyDir?.medium)} is not supported by nodelet (only "" and "Memory")`;
  }
  // `emptyDir.mode` (k8s.io/api/core/v1/types.go at 1.37, the alpha EmptyDirVolumeMode, off by
  // default: the apiserver drops it, pkg/api/pod/util.go): the kubelet's emptydir plugin
  // (pkg/volume/emptydir/empty_dir.go) gives the directory that mode instead of 0777 only with the
  // gate on; nodelet makes 0777 directories, so a pod that still carries the field is refused.
  const emptyDirMode = (v.emptyDir as { mode?: unknown } | undefined)?.mode;
  if (k.kind === 'emptyDir' && emptyDirMode != null) {
    return `${prefix}emptyDir.mode is not supported by nodelet (the alpha EmptyDirVolumeMode feature: the directory is made 0777, as the kubelet makes it without the feature)`;
  }
  const userField = fileOwnerField(v);
  if (userField !== undefined) return `${prefix}${userField} is not supported by nodelet (the alpha AtomicWriteVolumeUserFields feature: files are owned as the kubelet owns them without it)`;
  if (k.kind === 'projected') {
    for (const source of v.projected?.sources ?? []) {
      const field = Object.keys(source).find((f) => (source as Record<string, unknown>)[f] != null);
      if (field !== undefined && !projectionSources.has(field)) return `${prefix}${field} projections are not supported by nodelet`;
      const seconds = source.serviceAccountToken?.expirationSeconds;
      if (seconds !== undefined && seconds < 600) return `${prefix}serviceAccountToken expirationSeconds may not be less than 600 (10 minutes)`;
    }
  }
  return undefined;
}

/**
 * The first file-owner field of the alpha AtomicWriteVolumeUserFields feature the volume sets
 * (k8s.io/api/core/v1/types.go at 1.37: `defaultUser` of secret, configMap, downwardAPI and projected
 * volumes; `user` of their items, of downwardAPI files and of every projection source), as a
 * field path, or undefined. The apiserver drops them while the gate is off (its default); a pod
 * that still carries one is refused rather than given files owned otherwise than it asked.
 */
function fileOwnerField(v: Volume): string | undefined {
  const set = (o: unknown, field: 'user' | 'defaultUser') => typeof o === 'object' && o !== null && (o as Record<string, unknown>)[field] != null;
  const items = (list: unknown, path: string) => {
    if (!Array.isArray(list)) return undefined;
    const i = list.findIndex((item) => set(item, 'user'));
    return i < 0 ? undefined : `${path}.items[${i}].user`;
  };
  for (const kind of ['secret', 'configMap', 'downwardAPI', 'projected'] as const) {
    const source: unknown = v[kind];
    if (source == null) continue;
    if (set(source, 'defaultUser')) return `${kind}.defaultUser`;
    if (kind !== 'projected') {
      const item = items((source as { items?: unknown }).items, kind);
      if (item) return item;
      continue;
    }
    const sources = (source as { sources?: unknown }).sources;
    if (!Array.isArray(sources)) continue;
    for (const [i, projection] of sources.entries()) {
      if (typeof projection !== 'object' || projection === null) continue;
      for (const [name, p] of Object.entries(projection as Record<string, unknown>)) {
        const path = `projected.sources[${i}].${name}`;
        if (set(p, 'user')) return `${path}.user`;
        const item = typeof p === 'object' && p !== null ? items((p as { items?: unknown }).items, path) : undefined;
        if (item) return item;
      }
    }
  }
  return undefined;
}

/** Why nodelet refuses this volume mount, or undefined. */
export function mountRefusal(m: VolumeMount): string | undefined {
  const prefix = `volumeMount ${JSON.stringify(m.name)} at ${m.mountPath}: `;
  if (m.mountPropagation && m.mountPropagation !== 'None') return `${prefix}mountPropagation ${m.mountPropagation} is not supported by nodelet (only None)`;
  if (m.subPath && m.subPathExpr) return `${prefix}subPath and subPathExpr are mutually exclusive`;
  // `bindMountOptions` (noexec, nodev, nosuid; the alpha VolumeBindMountOptions of 1.37, off by
  // default: the apiserver drops it, pkg/api/pod/util.go): the kubelet passes them to the runtime
  // as the mount's options (pkg/kubelet/kuberuntime/kuberuntime_container.go); nodelet's binds
  // have none, so a mount that still carries them is refused rather than mounted without them.
  const bindOptions = (m as { bindMountOptions?: unknown }).bindMountOptions;
  if (Array.isArray(bindOptions) && bindOptions.length) {
    return `${prefix}bindMountOptions ${bindOptions.map(String).join(',')} is not supported by nodelet (the alpha VolumeBindMountOptions feature)`;
  }
  const rro = m.recursiveReadOnly;
  if (rro && !['Disabled', 'IfPossible', 'Enabled'].includes(rro)) return `${prefix}recursiveReadOnly ${rro} is not one of Disabled, IfPossible, Enabled`;
  if (rro && rro !== 'Disabled' && !m.readOnly) return `${prefix}recursiveReadOnly ${rro} may only be specified when readOnly is true`;
  return undefined;
}

/**
 * The kubelet's token manager `requiresRefresh`: a token is renewed once 80 % of its requested
 * lifetime has passed, or 24 h after issue, each less a jitter of up to 10 s. The issue time is
 * `expirationTimestamp - expirationSeconds` (the apiserver may extend the expiry, not the issue).
 */
export function tokenNeedsRefresh(t: { expirationTimestamp: Date; expirationSeconds: number }, now: number, jitterMs: number): boolean {
  const exp = t.expirationTimestamp.getTime();
  const iat = exp - t.expirationSeconds * 1000;
  if (now > iat + 24 * 3600_000 - jitterMs) return true;
  return now > exp - Math.floor((t.expirationSeconds * 20) / 100) * 1000 - jitterMs;
}
