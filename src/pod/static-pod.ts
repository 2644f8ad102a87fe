import { createHash } from 'node:crypto';
import { applyPodSpecDefaults } from '../api/defaults.js';
import type { ObjectMeta, Pod, PodSpec } from '../api/types.js';
import { ConfigFirstSeenAnnotationKey, ConfigHashAnnotationKey, ConfigSourceAnnotationKey } from '../api/annotations.js';
import { canonicalJSON } from '../api/canonical-json.js';
import { rfc3339Nano } from '../api/time.js';

type Toleration = NonNullable<PodSpec['tolerations']>[number];

export interface StaticPodOptions {
  nodeName: string;
  /** The manifest's path; part of the UID so the same manifest in two files is two pods. */
  source: string;
  /** First-seen time, written to `kubernetes.io/config.seen`. */
  now: Date;
}

/**
 * The kubelet's `applyDefaults` (pkg/kubelet/config/common.go) for a pod read from a file, plus
 * the source and first-seen annotations its config merger adds and the apiserver-style defaults
 * decoding would apply. The manifest's `status` is dropped. Returns a new object.
 */
export function applyStaticPodDefaults(parsed: Pod, opts: StaticPodOptions): Pod {
  const pod = structuredClone(parsed);
  const meta = isObject(pod.metadata) ? pod.metadata : {};
  const uid = staticPodUIDOf(parsed, opts.nodeName, opts.source);
  const metadata: ObjectMeta = {
    ...meta,
    uid,
    // The kubelet's generatePodName; an empty name stays empty so validation reports it as missing.
    ...(meta.name ? { name: `${meta.name}-${opts.nodeName.toLowerCase()}` } : {}),
    namespace: meta.namespace || 'default',
    annotations: {
      ...(isObject(meta.annotations) ? meta.annotations : {}),
      [ConfigHashAnnotationKey]: uid,
      [ConfigSourceAnnotationKey]: 'file',
      [ConfigFirstSeenAnnotationKey]: rfc3339Nano(opts.now),
    },
  };
  const spec = pod.spec ?? { containers: [] };
  if (isObject(spec)) {
    // So static pods are not evicted for node problems (NoExecute taints).
    spec.tolerations = addOrUpdateToleration(spec.tolerations, { operator: 'Exists', effect: 'NoExecute' });
    spec.nodeName = opts.nodeName;
  }
  // A static pod's status is nodelet's, never the file's: whatever `status` the manifest holds
  // (mistyped, or claiming Running) is dropped, as the kubelet's status manager owns it.
  return applyPodSpecDefaults({ ...pod, metadata, spec, status: { phase: 'Pending' } });
}

/** The UID a parsed manifest pod gets: its own `metadata.uid` if set, else `staticPodUID`. */
export function staticPodUIDOf(parsed: Pod, nodeName: string, source: string): string {
  const own: unknown = isObject(parsed.metadata) ? parsed.metadata.uid : undefined;
  return typeof own === 'string' && own !== '' ? own : staticPodUID(parsed, nodeName, source);
}

/**
 * A static pod's UID: hex MD5 of the pod as parsed, then `host:<node>` and `file:<path>`, as the
 * kubelet does. The kubelet hashes a Go deep-print of the object; nodelet hashes canonical
 * (sorted-key) JSON, so UIDs are stable across restarts but differ from a real kubelet's.
 */
export function staticPodUID(parsed: Pod, nodeName: string, source: string): string {
  const h = createHash('md5');
  h.update(canonicalJSON(parsed));
  h.update(`host:${nodeName}`);
  h.update(`file:${source}`);
  return h.digest('hex');
}



/** `AddOrUpdateTolerationInPod`: replace a matching toleration (same key/operator/value/effect), else append. */
function addOrUpdateToleration(existing: unknown, t: Toleration): Toleration[] {
  const list = Array.isArray(existing) ? (existing as Toleration[]) : [];
  const same = (o: Toleration) =>
    isObject(o) && (o.key ?? '') === (t.key ?? '') && (o.operator ?? '') === (t.operator ?? '') && (o.value ?? '') === (t.value ?? '') && (o.effect ?? '') === (t.effect ?? '');
  if (!list.some(same)) return [...list, t];
  return list.map((o) => (same(o) ? { ...t } : o));
}

function isObject(v: unknown): v is object {
  return typeof v === 'object' && v !== null;
}
