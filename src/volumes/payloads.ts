import type { ConfigMap, Container, DownwardAPIVolumeFile, KeyToPath, Pod, Secret } from 'kubernetes-types/core/v1.js';
import type { FileProjection } from './atomic-writer.js';
import { podFieldValue, resourceFieldValue, type PodRuntimeInfo } from './downward-api.js';

/** The API default of `defaultMode` for secret, configMap, downwardAPI and projected volumes. */
export const DEFAULT_MODE = 0o644;

/**
 * Files of a secret volume or projection (the kubelet's secret `MakePayload`): every key, or
 * only `items` (each with its own path and mode). A missing item key fails unless `optional`.
 */
export function secretPayload(secret: Secret, items: readonly KeyToPath[] | undefined, defaultMode: number, optional: boolean): Map<string, FileProjection> {
  const data = new Map(Object.entries(secret.data ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')]));
  return keysToFiles(data, items, defaultMode, optional, (key) => `references non-existent secret key: ${key}`);
}

/** Files of a configMap volume or projection: `data` and `binaryData` keys, as `secretPayload`. */
export function configMapPayload(cm: ConfigMap, items: readonly KeyToPath[] | undefined, defaultMode: number, optional: boolean): Map<string, FileProjection> {
  const data = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(cm.data ?? {})) data.set(k, Buffer.from(v, 'utf8'));
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) data.set(k, Buffer.from(v, 'base64'));
  return keysToFiles(data, items, defaultMode, optional, (key) => `configmap references non-existent config key: ${key}`);
}

function keysToFiles(data: ReadonlyMap<string, Buffer>, items: readonly KeyToPath[] | undefined, defaultMode: number, optional: boolean, missing: (key: string) => string): Map<string, FileProjection> {
  const out = new Map<string, FileProjection>();
  if (!items?.length) {
    for (const [key, bytes] of data) out.set(key, { data: bytes, mode: defaultMode });
    return out;
  }
  for (const item of items) {
    const bytes = data.get(item.key);
    if (!bytes) {
      if (optional) continue;
      throw new Error(missing(item.key));
    }
    out.set(item.path, { data: bytes, mode: item.mode ?? defaultMode });
  }
  return out;
}

/** Files of a downwardAPI volume or projection: each item's field or resource, formatted as the kubelet does. */
export function downwardAPIPayload(pod: Pod, items: readonly DownwardAPIVolumeFile[] | undefined, defaultMode: number, info: PodRuntimeInfo): Map<string, FileProjection> {
  const out = new Map<string, FileProjection>();
  const errors: string[] = [];
  for (const item of items ?? []) {
    try {
      let data: string;
      if (item.fieldRef) data = podFieldValue(pod, item.fieldRef, info);
      else if (item.resourceFieldRef) data = resourceFieldValue(pod, undefined as Container | undefined, item.resourceFieldRef, info);
      else throw new Error(`downwardAPI item ${JSON.stringify(item.path)} has neither fieldRef nor resourceFieldRef`);
      out.set(item.path, { data, mode: item.mode ?? defaultMode });
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  if (errors.length) throw new Error(errors.length === 1 ? errors[0] : `[${errors.join(', ')}]`);
  return out;
}
