import type { Pod, PodList } from '../api/types.js';

/** A v1 PodList as both the kubelet (`/pods`) and the apiserver write it. */
export function podList(items: Pod[]): PodList {
  return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items };
}

/** A single Pod with its TypeMeta, which list items may lack. */
export function withPodTypeMeta(pod: Pod): Pod {
  return { ...pod, kind: 'Pod', apiVersion: 'v1' };
}
