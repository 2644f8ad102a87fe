import type { Pod } from './types.js';
import { quantityOf } from './quantity.js';

export type PodQOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

/** Only these resources decide the QoS class (the kubelet's `isSupportedQoSComputeResource`). */
const QOS_RESOURCES = ['cpu', 'memory'] as const;

type ResourceList = Readonly<Record<string, string | undefined>>;

/**
 * The pod's QoS class: the recorded `status.qosClass` if any (it never changes once set), else
 * computed like the kubelet's `ComputePodQOS`.
 */
export function getPodQOS(pod: Pod): PodQOSClass {
  const recorded = pod.status?.qosClass;
  if (recorded === 'Guaranteed' || recorded === 'Burstable' || recorded === 'BestEffort') return recorded;
  return computePodQOS(pod);
}

/**
 * The kubelet's `ComputePodQOS` (pkg/apis/core/v1/helper/qos/qos.go) over containers and init
 * containers, or over the pod-level `spec.resources` alone when the pod has them:
 * - BestEffort: no container requests or limits a positive cpu or memory amount;
 * - Guaranteed: every container limits both cpu and memory, and the summed requests equal the
 *   summed limits for each resource;
 * - Burstable: anything else.
 * A request missing where a limit is set counts as equal to the limit, as the apiserver's
 * `SetDefaults_Pod` makes it, so static pods that skipped defaulting classify the same.
 */
export function computePodQOS(pod: Pod): PodQOSClass {
  const requests = new Map<string, bigint>();
  const limits = new Map<string, bigint>();
  let guaranteed = true;
  // With pod-level resources (PodLevelResources, on since 1.34) they alone decide the class.
  const podLevel = pod.spec?.resources;
  const sources = podLevel ? [podLevel] : [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])].map((c) => c.resources ?? {});
  for (const resources of sources) {
    const { requests: req, limits: lim } = effectiveResources(resources);
    const limited = new Set<string>();
    for (const name of QOS_RESOURCES) {
      const r = quantityOf(req[name]);
      if (r > 0n) requests.set(name, (requests.get(name) ?? 0n) + r);
      const l = quantityOf(lim[name]);
      if (l > 0n) {
        limits.set(name, (limits.get(name) ?? 0n) + l);
        limited.add(name);
      }
    }
    // Pod-level: a pod with requests and no limits at all is Burstable by the count below.
    if ((!podLevel || Object.keys(lim).length) && !QOS_RESOURCES.every((name) => limited.has(name))) guaranteed = false;
  }
  if (requests.size === 0 && limits.size === 0) return 'BestEffort';
  if (guaranteed) {
    for (const [name, r] of requests) {
      if (limits.get(name) !== r) {
        guaranteed = false;
        break;
      }
    }
  }
  return guaranteed && requests.size === limits.size ? 'Guaranteed' : 'Burstable';
}

function effectiveResources(r: { limits?: ResourceList; requests?: ResourceList }): { requests: ResourceList; limits: ResourceList } {
  const limits: ResourceList = r.limits ?? {};
  return { requests: { ...limits, ...r.requests }, limits };
}
