import type { Container, Pod } from '../api/types.js';
import { quantityOf } from '../api/quantity.js';
import { POD_LEVEL_RESOURCES, addAmounts, containersTotal, podLevelRequests, type Amounts } from '../api/pod-requests.js';


const NANO_PER_MILLI = 1_000_000n;
const NANO_PER_UNIT = 1_000_000_000n;

/** Why a pod does not fit the node: the kubelet's `OutOf<resource>` reason and its message. */
export interface ResourceFitRefusal {
  readonly reason: string;
  readonly message: string;
}

/**
 * The kubelet's resource check at admission (the predicate admit handler's `generalFilter` →
 * the scheduler's `noderesources.Fits`, pkg/kubelet/lifecycle/predicate.go and
 * pkg/scheduler/framework/plugins/noderesources/fit.go): the pod must fit in what the node's
 * `allocatable` leaves after the requests of `others`, the pods admitted before it that still
 * hold the node's resources. Checked in `fitsRequest`'s order — the pod count, then cpu, memory,
 * ephemeral-storage, then every other requested resource by name — and the first shortfall is the
 * answer, as the kubelet reports only its first reason: `OutOfpods`, `OutOfcpu`, `OutOfmemory`,
 * `OutOfephemeral-storage` or `OutOf<name>`, with `InsufficientResourceError`'s message. An
 * extended resource (a `vendor/name` one) the node does not have at all is left out first, as
 * `removeMissingExtendedResources` does (a device plugin may not have registered yet).
 */
export function resourceFitRefusal(pod: Pod, others: readonly Pod[], allocatable: Readonly<Record<string, string>>): ResourceFitRefusal | undefined {
  const capacity = amountsOf(allocatable);
  const allowedPods = capacity.get('pods') ?? 0n;
  const used = BigInt(others.length);
  if (used + 1n > allowedPods) return insufficient('pods', 1n, used, allowedPods);

  const request = podRequests(pod);
  for (const name of [...request.keys()]) {
    if (isExtendedResource(name) && !capacity.has(name)) request.delete(name);
  }
  if ([...request.values()].every((v) => v === 0n)) return undefined;
  const requested: Amounts = new Map();
  for (const other of others) addAmounts(requested, podRequests(other));

  const order = ['cpu', 'memory', 'ephemeral-storage', ...[...request.keys()].filter((n) => !NATIVE.has(n)).sort()];
  for (const name of order) {
    const want = request.get(name) ?? 0n;
    if (want <= 0n) continue;
    const cap = capacity.get(name) ?? 0n;
    const inUse = requested.get(name) ?? 0n;
    if (want > cap - inUse) return insufficient(name, want, inUse, cap);
  }
  return undefined;
}

const NATIVE = new Set(['cpu', 'memory', 'ephemeral-storage']);

function insufficient(name: string, requested: bigint, used: bigint, capacity: bigint): ResourceFitRefusal {
  // predicate.go: OutOfCPU = "OutOfcpu", … and `InsufficientResourcePrefix + name` for the rest.
  return { reason: `OutOf${name}`, message: `Node didn't have enough resource: ${name}, requested: ${requested}, used: ${used}, capacity: ${capacity}` };
}

/**
 * A pod's requests as the scheduler counts them (`resourcehelper.PodRequests`,
 * k8s.io/component-helpers/resource/helpers.go): the regular containers' and the sidecars' (init
 * containers with `restartPolicy: Always`) summed, raised to the largest need of any init
 * container while it runs (its own request plus the sidecars started before it), plus the pod's
 * `overhead`. A container's missing request is its limit, as the apiserver's defaulting makes it.
 */
export function podRequests(pod: Pod): Amounts {
  const spec = pod.spec;
  const total = containersTotal(pod, containerRequests);
  // Pod-level requests replace the containers' sum for the resources they name (PodLevelResources,
  // beta and on since 1.34).
  const podLevel = podLevelRequests(pod);
  for (const name of POD_LEVEL_RESOURCES) {
    const value = podLevel?.[name];
    if (value !== undefined) total.set(name, amountsOf({ [name]: value }).get(name) ?? 0n);
  }
  if (spec?.overhead) addAmounts(total, amountsOf(spec.overhead));
  return total;
}

function containerRequests(c: Container): Amounts {
  return amountsOf({ ...c.resources?.limits, ...c.resources?.requests });
}

/** A resource list in the scheduler's units, rounded up as `Quantity.MilliValue()` / `Value()` are. */
function amountsOf(list: Readonly<Record<string, string | number>>): Amounts {
  const out: Amounts = new Map();
  for (const [name, value] of Object.entries(list)) {
    if (!NATIVE.has(name) && name !== 'pods' && !isScalarResource(name)) continue;
    const nano = quantityOf(value);
    const unit = name === 'cpu' ? NANO_PER_MILLI : NANO_PER_UNIT;
    out.set(name, nano <= 0n ? 0n : (nano + unit - 1n) / unit);
  }
  return out;
}

/**
 * `v1helper.IsExtendedResourceName`: a name with a domain outside `kubernetes.io` (and not a quota
 * `requests.` name), such as `example.com/dongle`.
 */
function isExtendedResource(name: string): boolean {
  if (!name.includes('/') || name.startsWith('requests.')) return false;
  const domain = name.slice(0, name.indexOf('/'));
  return domain !== 'kubernetes.io' && !domain.endsWith('.kubernetes.io');
}

/** `schedutil.IsScalarResourceName`: extended, hugepages, `kubernetes.io/…` native or attachable-volume resources. */
function isScalarResource(name: string): boolean {
  return name.includes('/') || name.startsWith('hugepages-') || name.startsWith('attachable-volumes-');
}
