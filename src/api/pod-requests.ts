import type { Container, Pod } from './types.js';
import { quantityOf } from './quantity.js';

/** Resource amounts by name, in the integer units the caller chose (millicores, bytes, devices). */
export type Amounts<K extends string = string> = Map<K, bigint>;

/** `into[k] += from[k]` for every resource in `from`. */
export function addAmounts<K extends string>(into: Amounts<K>, from: Amounts<K>): void {
  for (const [k, v] of from) into.set(k, (into.get(k) ?? 0n) + v);
}

/** `into[k] = max(into[k], from[k])` for every resource in `from`. */
export function raiseAmounts<K extends string>(into: Amounts<K>, from: Amounts<K>): void {
  for (const [k, v] of from) if (v > (into.get(k) ?? 0n)) into.set(k, v);
}

/**
 * The container part of `resource.PodRequests` / `PodLimits`
 * (k8s.io/component-helpers/resource/helpers.go, `AggregateContainerRequests` /
 * `AggregateContainerLimits`): the regular containers and the sidecars (init containers with
 * `restartPolicy: Always`) summed, raised to the largest need of any init container while it
 * runs — its own amount plus the sidecars started before it. `own` reads one container's amounts;
 * `each`, like helpers.go's `ContainerFn`, sees every container's amounts as counted (an init
 * container's with the sidecars before it). Pod-level resources and `overhead` are the caller's:
 * the scheduler and the pod cgroup treat them differently.
 */
export function containersTotal<K extends string>(pod: Pod, own: (c: Container) => Amounts<K>, each?: (a: Amounts<K>) => void): Amounts<K> {
  const total: Amounts<K> = new Map();
  for (const c of pod.spec?.containers ?? []) {
    const amounts = own(c);
    each?.(amounts);
    addAmounts(total, amounts);
  }
  const sidecars: Amounts<K> = new Map();
  const initPeak: Amounts<K> = new Map();
  for (const c of pod.spec?.initContainers ?? []) {
    const amounts = own(c);
    let running: Amounts<K>;
    if (c.restartPolicy === 'Always') {
      addAmounts(total, amounts);
      addAmounts(sidecars, amounts);
      running = new Map(sidecars);
    } else {
      running = new Map(amounts);
      addAmounts(running, sidecars);
    }
    each?.(running);
    raiseAmounts(initPeak, running);
  }
  raiseAmounts(total, initPeak);
  return total;
}

/**
 * Pod-level requests (`spec.resources`), its limits standing in where a request is missing, as the
 * apiserver's defaulting copies them (pkg/apis/core/v1/defaults.go, PodLevelResources).
 */
export function podLevelRequests(pod: Pod): Readonly<Record<string, string | number>> | undefined {
  const r = pod.spec?.resources;
  return r ? { ...r.limits, ...r.requests } : undefined;
}

/** The resources a pod may set at pod level (`IsSupportedPodLevelResource`, helpers.go). */
export const POD_LEVEL_RESOURCES: readonly string[] = ['cpu', 'memory'];

type ResourceList = Readonly<Record<string, string | number>>;

const isZero = (v: string | number | undefined) => v === undefined || quantityOf(v) === 0n;

/**
 * `kubeutil.GetLimits` (pkg/kubelet/util/util.go): a container's limits, the pod-level cpu or
 * memory limit standing in for the one the container does not set (or sets to zero). The
 * kubelet creates (`getCPULimit`/`getMemoryLimit`, pkg/kubelet/kuberuntime/
 * kuberuntime_container_linux.go) and resizes containers with these.
 */
export function effectiveLimits(podResources: { readonly limits?: ResourceList } | undefined, container: Pick<Container, 'resources'>): ResourceList | undefined {
  const own = container.resources?.limits as ResourceList | undefined;
  const podLimits = podResources?.limits;
  if (!podLimits || !Object.keys(podLimits).length) return own;
  const out: Record<string, string | number> = { ...own };
  for (const name of POD_LEVEL_RESOURCES) {
    if (isZero(out[name]) && !isZero(podLimits[name])) out[name] = podLimits[name] as string | number;
  }
  return out;
}

/**
 * The container as the runtime gets it: its limits the effective ones (`effectiveLimits`), and
 * without a cpu request of its own the effective cpu limit stands in for it
 * (`generateLinuxContainerResources`), as the shares are computed from it. The same object
 * when the pod has no pod-level limits.
 */
export function withPodLevelLimits(pod: Pick<Pod, 'spec'>, container: Container): Container {
  const podLimits = pod.spec?.resources?.limits;
  if (!podLimits || !Object.keys(podLimits).length) return container;
  const limits = effectiveLimits(pod.spec?.resources as { limits?: ResourceList }, container);
  if (!limits || !Object.keys(limits).length) return container;
  return { ...container, resources: { ...container.resources, limits: limits as Record<string, string> } };
}
