// Which pod goes first: the rankers of pkg/kubelet/eviction/helpers.go (rankMemoryPressure,
// rankDiskPressureFunc, rankPIDPressure), the requests they compare usage with
// (pkg/api/v1/resource/helpers.go GetResourceRequestQuantity) and the eviction message.
import { containersTotal, podLevelRequests, POD_LEVEL_RESOURCES } from '../api/pod-requests.js';
import { quantityOf } from '../api/quantity.js';
import type { Container, Pod } from '../api/types.js';
import { formatQuantity, parseQuantity } from './go-values.js';
import { formatObserved, formatThresholdQuantity, SIGNAL_TO_RESOURCE } from './thresholds.js';
import type { Observations, PodUsage, Signal, StarvedResource, Threshold, UsageNeeds } from './types.js';

const NANO = 1_000_000_000n;

/** Usage of the pods, by UID; a pod missing from it had no stats (the kubelet's statsFunc `found`). */
export type UsageByPod = ReadonlyMap<string, PodUsage>;

/** What to measure of each pod to rank it for a signal (and to write its eviction message). */
export function usageNeeds(signal: Signal): UsageNeeds {
  switch (SIGNAL_TO_RESOURCE[signal]) {
    case 'memory':
      return { memory: true };
    case 'ephemeral-storage':
      return { disk: true };
    case 'inodes':
      return { inodes: true };
    case 'pids':
      return { pids: true };
  }
}

type ResourceList = Readonly<Record<string, string | number | undefined>>;

/** A container's requests as the apiserver defaults them: a limit stands in for a missing request. */
function containerRequests(c: Container): ResourceList {
  return { ...c.resources?.limits, ...c.resources?.requests };
}

/** component-helpers' `IsPodLevelResourcesSet`: pod-level requests or limits of cpu or memory. */
export function isPodLevelResourcesSet(pod: Pod): boolean {
  const r = pod.spec?.resources;
  return POD_LEVEL_RESOURCES.some((name) => r?.requests?.[name] !== undefined || r?.limits?.[name] !== undefined);
}

/**
 * GetResourceRequestQuantity (pkg/api/v1/resource/helpers.go, 1.34), in nano-units: the
 * containers' requests aggregated as the scheduler does (sidecars, init peaks), or the pod-level
 * request alone when the pod has pod-level resources (then other resources request nothing); the
 * pod overhead added to a non-zero request.
 */
export function podRequestNano(pod: Pod, resource: string): bigint {
  let request: bigint;
  if (isPodLevelResourcesSet(pod)) {
    request = POD_LEVEL_RESOURCES.includes(resource) ? quantityOf(podLevelRequests(pod)?.[resource]) : 0n;
  } else {
    const own = (c: Container) => new Map([[resource, quantityOf(containerRequests(c)[resource])]]);
    request = containersTotal(pod, own).get(resource) ?? 0n;
  }
  const overhead = pod.spec?.overhead?.[resource];
  if (overhead !== undefined && request !== 0n) request += quantityOf(overhead);
  return request;
}

/** Quantity.String() of a quantity from a pod spec (`128Mi` stays `128Mi`), the text itself if it is not one. */
export function formatSpecQuantity(text: string | number | undefined): string {
  if (text === undefined) return '0';
  try {
    const q = parseQuantity(String(text));
    return formatQuantity(q.nano, q.format, 'nano');
  } catch {
    return String(text);
  }
}

/** Which of a pod's filesystem usage a disk ranker counts (helpers.go `fsStatsType`). */
export interface FsStatsToMeasure {
  /** Containers' writable layers. */
  readonly root: boolean;
  readonly logs: boolean;
  /** Local volumes (emptyDir on disk, …). */
  readonly localVolumes: boolean;
}

const ALL_FS: FsStatsToMeasure = { root: true, logs: true, localVolumes: true };

/**
 * buildSignalToRankFunc's choice of stats (no split container filesystem in nodelet): one
 * filesystem counts everything; with a dedicated imagefs, nodefs counts logs and local volumes,
 * imagefs the writable layers.
 */
export function fsStatsFor(signal: Signal, dedicatedImageFs: boolean): FsStatsToMeasure {
  if (!dedicatedImageFs) return ALL_FS;
  if (signal.startsWith('imagefs.')) return { root: true, logs: false, localVolumes: false };
  return { root: false, logs: true, localVolumes: true };
}

/** helpers.go `podDiskUsage` in bytes for the ephemeral-storage resource. */
export function podDiskBytes(usage: PodUsage, measure: FsStatsToMeasure): bigint {
  let total = 0n;
  for (const [name, bytes] of usage.containerBytes ?? []) {
    const logs = usage.containerLogBytes?.get(name) ?? 0n;
    if (measure.root) total += bytes - logs;
    if (measure.logs) total += logs;
  }
  if (measure.localVolumes) for (const bytes of usage.volumeBytes?.values() ?? []) total += bytes;
  return total;
}

/** A comparison: negative when p1 is to be evicted before p2. */
type CmpFunc = (p1: Pod, p2: Pod) => number;

/** helpers.go `cmpBool`: true before false. */
function cmpBool(a: boolean, b: boolean): number {
  if (a === b) return 0;
  return a ? -1 : 1;
}

function cmpBigint(a: bigint, b: bigint): number {
  return a === b ? 0 : a < b ? -1 : 1;
}

/** corev1helpers.PodPriority: the spec's priority, 0 when unset. */
export function podPriority(pod: Pod): number {
  return pod.spec?.priority ?? 0;
}

/** helpers.go `priority`: lower priority first. */
const priority: CmpFunc = (p1, p2) => Math.sign(podPriority(p1) - podPriority(p2));

/** Wraps a comparison of two pods' usage: a pod without stats goes first (as every kubelet cmpFunc). */
function withStats(stats: UsageByPod, cmp: (u1: PodUsage, u2: PodUsage, p1: Pod, p2: Pod) => number): CmpFunc {
  return (p1, p2) => {
    const u1 = stats.get(p1.metadata?.uid ?? '');
    const u2 = stats.get(p2.metadata?.uid ?? '');
    if (u1 === undefined || u2 === undefined) return cmpBool(u1 === undefined, u2 === undefined);
    return cmp(u1, u2, p1, p2);
  };
}

/** helpers.go `exceedMemoryRequests` then `memory`. */
function memoryCmps(stats: UsageByPod): [CmpFunc, CmpFunc] {
  const used = (u: PodUsage) => (u.memoryWorkingSetBytes ?? 0n) * NANO;
  return [
    withStats(stats, (u1, u2, p1, p2) => cmpBool(used(u1) > podRequestNano(p1, 'memory'), used(u2) > podRequestNano(p2, 'memory'))),
    withStats(stats, (u1, u2, p1, p2) => cmpBigint(used(u2) - podRequestNano(p2, 'memory'), used(u1) - podRequestNano(p1, 'memory'))),
  ];
}

/** helpers.go `exceedDiskRequests` then `disk` (which, as upstream, subtracts the ephemeral-storage request for inodes too). */
function diskCmps(stats: UsageByPod, measure: FsStatsToMeasure, resource: 'ephemeral-storage' | 'inodes'): [CmpFunc, CmpFunc] {
  const used = (u: PodUsage) => (resource === 'inodes' ? (u.inodes ?? 0n) : podDiskBytes(u, measure)) * NANO;
  return [
    withStats(stats, (u1, u2, p1, p2) => cmpBool(used(u1) > podRequestNano(p1, resource), used(u2) > podRequestNano(p2, resource))),
    withStats(stats, (u1, u2, p1, p2) => cmpBigint(used(u2) - podRequestNano(p2, 'ephemeral-storage'), used(u1) - podRequestNano(p1, 'ephemeral-storage'))),
  ];
}

/** helpers.go `process`: more processes first. */
function processCmp(stats: UsageByPod): CmpFunc {
  return withStats(stats, (u1, u2) => cmpBigint(u2.processes ?? 0n, u1.processes ?? 0n));
}

/** helpers.go `orderedBy(...).Sort`: a stable sort by the comparisons in turn. */
function orderedBy(pods: readonly Pod[], ...cmps: CmpFunc[]): Pod[] {
  return [...pods].sort((a, b) => {
    for (const cmp of cmps) {
      const r = cmp(a, b);
      if (r !== 0) return r;
    }
    return 0;
  });
}

/** helpers.go `rankMemoryPressure`: usage above requests first, then lower priority, then most memory above requests. */
export function rankMemoryPressure(pods: readonly Pod[], stats: UsageByPod): Pod[] {
  const [exceeds, memory] = memoryCmps(stats);
  return orderedBy(pods, exceeds, priority, memory);
}

/** helpers.go `rankPIDPressure`: lower priority first, then most processes. */
export function rankPIDPressure(pods: readonly Pod[], stats: UsageByPod): Pod[] {
  return orderedBy(pods, priority, processCmp(stats));
}

/** helpers.go `rankDiskPressureFunc`: usage above requests first, then lower priority, then most usage above requests. */
export function rankDiskPressure(pods: readonly Pod[], stats: UsageByPod, measure: FsStatsToMeasure, resource: 'ephemeral-storage' | 'inodes'): Pod[] {
  const [exceeds, disk] = diskCmps(stats, measure, resource);
  return orderedBy(pods, exceeds, priority, disk);
}

/** helpers.go `buildSignalToRankFunc` applied: the pods in the order they are to be evicted for `signal`. */
export function rankPods(signal: Signal, pods: readonly Pod[], stats: UsageByPod, dedicatedImageFs: boolean): Pod[] {
  const resource = SIGNAL_TO_RESOURCE[signal];
  switch (resource) {
    case 'memory':
      return rankMemoryPressure(pods, stats);
    case 'pids':
      return rankPIDPressure(pods, stats);
    default:
      return rankDiskPressure(pods, stats, fsStatsFor(signal, dedicatedImageFs), resource);
  }
}

/** helpers.go's event annotation keys. */
export const OffendingContainersKey = 'offending_containers';
export const OffendingContainersUsageKey = 'offending_containers_usage';
export const OffendingPodKey = 'offending_pod';
export const OffendingPodUsageKey = 'offending_pod_usage';
export const StarvedResourceKey = 'starved_resource';

/**
 * helpers.go `evictionMessage`: "The node was low on resource: memory. Threshold quantity: 100Mi,
 * available: 51200Ki. " then, per container (regular and init) using more than it requests,
 * "Container app was using 300Mi, request is 100Mi, has larger consumption of memory. ", and the
 * event annotations. A pod without stats gets the first sentences and no annotations, as upstream.
 */
export function evictionMessage(resource: StarvedResource, pod: Pod, usage: PodUsage | undefined, thresholds: readonly Threshold[], obs: Observations): { message: string; annotations: Record<string, string> } {
  const annotations: Record<string, string> = {};
  let message = `The node was low on resource: ${resource}. `;
  for (const t of thresholds) {
    if (SIGNAL_TO_RESOURCE[t.signal] !== resource) continue;
    const observed = obs.get(t.signal);
    if (observed === undefined) continue;
    message += `Threshold quantity: ${formatThresholdQuantity(t.value, observed.capacity)}, available: ${formatObserved(t.signal, observed.available)}. `;
    break;
  }
  if (usage === undefined) return { message, annotations };

  // With pod-level resources, the pod's own request and usage are named too (PodLevelResources).
  if (resource === 'memory' && isPodLevelResourcesSet(pod)) {
    const request = podLevelRequests(pod)?.memory;
    if (request !== undefined && usage.memoryWorkingSetBytes !== undefined) {
      const used = formatQuantity(usage.memoryWorkingSetBytes, 'BinarySI');
      message += `Pod ${pod.metadata?.name ?? ''} was using ${used}, request is ${formatSpecQuantity(request)}, has larger consumption of ${resource}. `;
      annotations[OffendingPodKey] = pod.metadata?.name ?? '';
      annotations[OffendingPodUsageKey] = used;
    }
  }

  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  const perContainer = resource === 'memory' ? usage.containerMemoryBytes : resource === 'ephemeral-storage' ? usage.containerBytes : undefined;
  const exceeded: string[] = [];
  const used: string[] = [];
  for (const [name, bytes] of perContainer ?? []) {
    const container = containers.find((c) => c.name === name);
    if (container === undefined) continue;
    const request = container.resources?.requests?.[resource] ?? container.resources?.limits?.[resource];
    if (bytes * NANO > quantityOf(request)) {
      const text = formatQuantity(bytes, 'BinarySI');
      message += `Container ${name} was using ${text}, request is ${formatSpecQuantity(request)}, has larger consumption of ${resource}. `;
      exceeded.push(name);
      used.push(text);
    }
  }
  annotations[OffendingContainersKey] = exceeded.join(',');
  annotations[OffendingContainersUsageKey] = used.join(',');
  annotations[StarvedResourceKey] = resource;
  return { message, annotations };
}
