import type { Pod } from '../api/types.js';

/**
 * What a static pod names that only the apiserver has, as the kubelet's file source refuses it
 * (PreventStaticPodAPIReferences, beta and on since 1.34: `static pods may not reference %s`,
 * pkg/kubelet/config/common.go, with pkg/api/pod/util.go `HasAPIObjectReference`): a service
 * account, a secret or a configMap by any route (image pull secrets, `env`, `envFrom`, volumes of
 * every kind, in any container, init and ephemeral ones included), resource claims, CSI drivers,
 * Gluster endpoints, PVCs and ephemeral volumes, and the API-backed projected sources. Returns the
 * resource as the kubelet names it, or `undefined` when the pod stands alone. The manifest is read
 * as parsed (anything may be mistyped): whatever is not the expected shape names nothing here, and
 * validation reports it.
 */
export function apiObjectReference(pod: Pod): string | undefined {
  const spec = record(pod.spec);
  if (!spec) return undefined;
  if (nonEmpty(spec.serviceAccountName)) return 'serviceaccounts';
  if (referencesSecret(spec)) return 'secrets';
  if (referencesConfigMap(spec)) return 'configmaps';
  if (list(spec.resourceClaims).length > 0) return 'resourceclaims';
  for (const v of list(spec.volumes).map(record)) {
    if (!v) continue;
    if (v.configMap !== undefined) return 'configmaps (via configmap volumes)';
    if (v.secret !== undefined) return 'secrets (via secret volumes)';
    if (v.csi !== undefined) return 'csidrivers (via CSI volumes)';
    if (v.glusterfs !== undefined) return 'endpoints (via glusterFS volumes)';
    if (v.persistentVolumeClaim !== undefined) return 'persistentvolumeclaims';
    if (v.ephemeral !== undefined) return 'persistentvolumeclaims (via ephemeral volumes)';
    if (v.azureFile !== undefined) return 'secrets (via azureFile volumes)';
    for (const s of list(record(v.projected)?.sources).map(record)) {
      if (s?.configMap !== undefined) return 'configmaps (via projected volumes)';
      if (s?.secret !== undefined) return 'secrets (via projected volumes)';
      if (s?.serviceAccountToken !== undefined) return 'serviceaccounts (via projected volumes)';
      if (s?.clusterTrustBundle !== undefined) return 'clustertrustbundles';
      if (s?.podCertificate !== undefined) return 'podcertificates';
    }
  }
  return undefined;
}

type Obj = Record<string, unknown>;

function record(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

function list(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** `skipEmptyNames`: a reference with an empty name references nothing. */
function nonEmpty(v: unknown): boolean {
  return typeof v === 'string' && v !== '';
}

const named = (ref: unknown, key = 'name') => nonEmpty(record(ref)?.[key]);

/** Every container of the pod, `VisitContainers(…, AllContainers)`. */
function containers(spec: Obj): Obj[] {
  return [...list(spec.initContainers), ...list(spec.containers), ...list(spec.ephemeralContainers)].map(record).filter((c): c is Obj => c !== undefined);
}

/** `VisitPodSecretNames` finds a name. */
function referencesSecret(spec: Obj): boolean {
  if (list(spec.imagePullSecrets).some((r) => named(r))) return true;
  for (const c of containers(spec)) {
    if (list(c.envFrom).some((e) => named(record(e)?.secretRef))) return true;
    if (list(c.env).some((e) => named(record(record(e)?.valueFrom)?.secretKeyRef))) return true;
  }
  for (const v of list(spec.volumes).map(record)) {
    if (!v) continue;
    if (named(v.azureFile, 'secretName') || named(v.secret, 'secretName')) return true;
    for (const kind of ['cephfs', 'cinder', 'flexVolume', 'rbd', 'scaleIO', 'iscsi', 'storageos'] as const) {
      if (named(record(v[kind])?.secretRef)) return true;
    }
    if (named(record(v.csi)?.nodePublishSecretRef)) return true;
    if (list(record(v.projected)?.sources).some((s) => named(record(s)?.secret))) return true;
  }
  return false;
}

/** `VisitPodConfigmapNames` finds a name. */
function referencesConfigMap(spec: Obj): boolean {
  for (const c of containers(spec)) {
    if (list(c.envFrom).some((e) => named(record(e)?.configMapRef))) return true;
    if (list(c.env).some((e) => named(record(record(e)?.valueFrom)?.configMapKeyRef))) return true;
  }
  for (const v of list(spec.volumes).map(record)) {
    if (!v) continue;
    if (named(v.configMap)) return true;
    if (list(record(v.projected)?.sources).some((s) => named(record(s)?.configMap))) return true;
  }
  return false;
}
