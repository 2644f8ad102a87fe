import type { Container, Pod } from './types.js';

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
 * The kubelet's `ComputePodQOS` over containers and init containers:
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
  for (const c of [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])]) {
    const { requests: req, limits: lim } = effectiveResources(c);
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
    if (!QOS_RESOURCES.every((name) => limited.has(name))) guaranteed = false;
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

function effectiveResources(c: Container): { requests: ResourceList; limits: ResourceList } {
  const limits: ResourceList = c.resources?.limits ?? {};
  return { requests: { ...limits, ...c.resources?.requests }, limits };
}

const DECIMAL_SUFFIX: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIX: Readonly<Record<string, bigint>> = { Ki: 1n << 10n, Mi: 1n << 20n, Gi: 1n << 30n, Ti: 1n << 40n, Pi: 1n << 50n, Ei: 1n << 60n };
const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/**
 * A resource quantity (`100m`, `1.5Gi`, `2e3`) in nano-units, exact, so sums and comparisons match
 * `resource.Quantity.Cmp`. Fractions of a nano-unit round up, as Quantity does. Unparsable values
 * count as 0: validation rejects such pods before they get here.
 */
export function quantityOf(value: string | number | undefined): bigint {
  if (value === undefined) return 0n;
  const m = QUANTITY.exec(String(value).trim());
  if (!m) return 0n;
  const [, sign = '', mantissa = '', exponent, suffix = ''] = m;
  const [whole = '', fraction = ''] = mantissa.split('.');
  const digits = BigInt(`${whole}${fraction}` || '0');
  const binary = BINARY_SUFFIX[suffix];
  const power = 9 - fraction.length + (exponent !== undefined ? Number(exponent) : binary !== undefined ? 0 : (DECIMAL_SUFFIX[suffix] ?? 0));
  // Quantity's own range ends far before this; the bound keeps `1e999999` from costing memory.
  if (Math.abs(power) > 64) return 0n;
  let nano = power >= 0 ? digits * 10n ** BigInt(power) : ceilDiv(digits * (binary ?? 1n), 10n ** BigInt(-power));
  if (power >= 0 && binary !== undefined) nano *= binary;
  return sign === '-' ? -nano : nano;
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}
