// Local ephemeral storage limits (LocalStorageCapacityIsolation), the first thing a pass of
// pkg/kubelet/eviction/eviction_manager.go enforces (localStorageEviction): an emptyDir over its
// sizeLimit, a pod over the sum of its containers' ephemeral-storage limits, a container over
// its own. Pure: says which limit a pod broke and the kubelet's message for it.
import { containersTotal } from '../api/pod-requests.js';
import { quantityOf } from '../api/quantity.js';
import type { Container, Pod } from '../api/types.js';
import { formatQuantity, parseQuantity, quote } from './go-values.js';
import { formatSpecQuantity } from './ranking.js';
import type { PodUsage, QuantityFormat } from './types.js';

const NANO = 1_000_000_000n;
const EPHEMERAL = 'ephemeral-storage';

/**
 * Whether the pod sets a limit this module enforces: a disk-backed emptyDir with a positive
 * sizeLimit, or an ephemeral-storage limit on any container. Only such pods are measured when no
 * threshold is met.
 */
export function hasLocalStorageLimit(pod: Pod): boolean {
  const diskEmptyDir = (pod.spec?.volumes ?? []).some((v) => v.emptyDir && v.emptyDir.medium !== 'Memory' && quantityOf(v.emptyDir.sizeLimit) > 0n);
  const containers = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  return diskEmptyDir || containers.some((c) => c.resources?.limits?.[EPHEMERAL] !== undefined);
}

/**
 * eviction_manager.go `emptyDirLimitEviction`, then `podEphemeralStorageLimitEviction`, then
 * `containerEphemeralStorageLimitEviction`: the message of the first limit the pod exceeds, or
 * undefined. Memory-backed emptyDirs are left out: their tmpfs is mounted at the size limit, so
 * the kernel enforces it (and nodelet does not measure them).
 */
export function localStorageViolation(pod: Pod, usage: PodUsage, dedicatedImageFs: boolean): string | undefined {
  return localStorageBreach(pod, usage, dedicatedImageFs)?.message;
}

/** The limits' pseudo-signals, the `eviction_signal` label of `kubelet_evictions` (eviction_manager.go). */
export type LocalStorageSignal = 'emptydirfs.limit' | 'ephemeralpodfs.limit' | 'ephemeralcontainerfs.limit';

/** `localStorageViolation` with the pseudo-signal of the limit broken. */
export function localStorageBreach(pod: Pod, usage: PodUsage, dedicatedImageFs: boolean): { readonly signal: LocalStorageSignal; readonly message: string } | undefined {
  const emptyDir = emptyDirViolation(pod, usage);
  if (emptyDir !== undefined) return { signal: 'emptydirfs.limit', message: emptyDir };
  const podLimit = podLimitViolation(pod, usage);
  if (podLimit !== undefined) return { signal: 'ephemeralpodfs.limit', message: podLimit };
  const container = containerLimitViolation(pod, usage, dedicatedImageFs);
  return container === undefined ? undefined : { signal: 'ephemeralcontainerfs.limit', message: container };
}

function emptyDirViolation(pod: Pod, usage: PodUsage): string | undefined {
  for (const v of pod.spec?.volumes ?? []) {
    if (!v.emptyDir || v.emptyDir.medium === 'Memory') continue;
    const size = quantityOf(v.emptyDir.sizeLimit);
    const used = usage.volumeBytes?.get(v.name);
    if (used !== undefined && size > 0n && used * NANO > size) {
      return `Usage of EmptyDir volume ${quote(v.name)} exceeds the limit ${quote(formatSpecQuantity(v.emptyDir.sizeLimit))}. `;
    }
  }
  return undefined;
}

/**
 * resourcehelper.PodLimits' ephemeral-storage: the containers' limits aggregated (sidecars, init
 * peaks) plus the overhead; undefined when no container has one. Its text keeps the format of
 * the first limit, as Quantity.Add does.
 */
export function podEphemeralStorageLimit(pod: Pod): { nano: bigint; text: string } | undefined {
  const containers: Container[] = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  const first = containers.find((c) => c.resources?.limits?.[EPHEMERAL] !== undefined);
  if (first === undefined) return undefined;
  const own = (c: Container) => {
    const limit = c.resources?.limits?.[EPHEMERAL];
    return new Map(limit === undefined ? [] : [[EPHEMERAL, quantityOf(limit)]]);
  };
  let nano = containersTotal(pod, own).get(EPHEMERAL) ?? 0n;
  const overhead = pod.spec?.overhead?.[EPHEMERAL];
  if (overhead !== undefined) nano += quantityOf(overhead);
  let format: QuantityFormat = 'DecimalSI';
  try {
    format = parseQuantity(String(first.resources?.limits?.[EPHEMERAL])).format;
  } catch {
    // Validation refuses such pods; the sum still prints.
  }
  const text = formatQuantity(nano, format, 'nano');
  return { nano, text };
}

function podLimitViolation(pod: Pod, usage: PodUsage): string | undefined {
  const limit = podEphemeralStorageLimit(pod);
  if (limit === undefined) return undefined;
  // The summary's pod ephemeral storage: containers' writable layers and logs, and local volumes.
  let used = 0n;
  for (const bytes of usage.containerBytes?.values() ?? []) used += bytes;
  for (const bytes of usage.volumeBytes?.values() ?? []) used += bytes;
  if (used * NANO > limit.nano) return `Pod ephemeral local storage usage exceeds the total limit of containers ${limit.text}. `;
  return undefined;
}

function containerLimitViolation(pod: Pod, usage: PodUsage, dedicatedImageFs: boolean): string | undefined {
  const limits = new Map<string, string | number>();
  for (const c of pod.spec?.containers ?? []) {
    const limit = c.resources?.limits?.[EPHEMERAL];
    if (limit !== undefined && quantityOf(limit) !== 0n) limits.set(c.name, limit);
  }
  for (const [name, bytes] of usage.containerBytes ?? []) {
    const limit = limits.get(name);
    if (limit === undefined) continue;
    // Logs always count; the writable layer only when it shares nodefs (no dedicated imagefs).
    const used = dedicatedImageFs ? (usage.containerLogBytes?.get(name) ?? 0n) : bytes;
    if (quantityOf(limit) < used * NANO) return `Container ${name} exceeded its local ephemeral storage limit ${quote(formatSpecQuantity(limit))}. `;
  }
  return undefined;
}
