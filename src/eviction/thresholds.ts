// Eviction thresholds: parsing the KubeletConfiguration maps and the pure bookkeeping of
// pkg/kubelet/eviction/helpers.go (thresholds met, first observation, grace periods, node
// conditions with their transition period, ordering). Thresholds are compared by identity:
// the manager keeps the objects parsed once, as the kubelet keys its maps by the Threshold value.
import { parseDuration } from '../config/duration.js';
import { formatQuantity, parseFloat32, parseQuantity, quantityValue } from './go-values.js';
import type { EvictionConfigMaps, NodeCondition, NodeReadings, Observation, Observations, Signal, StarvedResource, Threshold, ThresholdValue } from './types.js';

/** helpers.go `signalToResource`, restricted to the signals nodelet observes. */
export const SIGNAL_TO_RESOURCE: Readonly<Record<Signal, StarvedResource>> = {
  'memory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

/** helpers.go `signalToNodeCondition`. */
export const SIGNAL_TO_NODE_CONDITION: Readonly<Record<Signal, NodeCondition>> = {
  'memory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

/** Signals the kubelet knows (api/types.go) that nodelet has no reading for, and why. */
const UNOBSERVED_SIGNALS: Readonly<Record<string, string>> = {
  'allocatableMemory.available': 'nodelet does not observe the working set of the pods cgroup (enforceNodeAllocatable)',
  'containerfs.available': 'nodelet does not observe a container filesystem apart from nodefs and imagefs',
  'containerfs.inodesFree': 'nodelet does not observe a container filesystem apart from nodefs and imagefs',
};

const unsupportedEvictionSignal = (signal: string): string => `unsupported eviction signal ${signal}`;

/** helpers.go `validSignal`, throwing: unknown signals and those nodelet cannot observe. */
function checkSignal(signal: string): Signal {
  if (Object.hasOwn(SIGNAL_TO_RESOURCE, signal)) return signal as Signal;
  const why = UNOBSERVED_SIGNALS[signal];
  throw new Error(why === undefined ? unsupportedEvictionSignal(signal) : `${unsupportedEvictionSignal(signal)}: ${why}`);
}

/**
 * helpers.go `ParseThresholdConfig` (without `allocatableConfig`: see UNOBSERVED_SIGNALS): hard
 * thresholds, then soft ones (each needs a grace period), minimum reclaims applied to both.
 * Throws Error with the kubelet's messages. Keys are read in the maps' order (Go's is random).
 */
export function parseThresholdConfig(maps: EvictionConfigMaps): Threshold[] {
  const hard = parseThresholdStatements(maps.evictionHard);
  const soft = parseThresholdStatements(maps.evictionSoft);
  const gracePeriods = parseGracePeriods(maps.evictionSoftGracePeriod);
  const minReclaims = parseMinimumReclaims(maps.evictionMinimumReclaim);
  const results: Threshold[] = [...hard];
  for (const t of soft) {
    const period = gracePeriods.get(t.signal);
    if (period === undefined) throw new Error(`grace period must be specified for the soft eviction threshold ${t.signal}`);
    results.push({ ...t, gracePeriodMs: period });
  }
  return results.map((t) => {
    const minReclaim = minReclaims.get(t.signal);
    return minReclaim === undefined ? t : { ...t, minReclaim };
  });
}

function parseThresholdStatements(statements: Readonly<Record<string, string>>): Threshold[] {
  const results: Threshold[] = [];
  for (const [signal, value] of Object.entries(statements)) {
    const t = parseThresholdStatement(signal, value);
    if (t !== undefined) results.push(t);
  }
  return results;
}

/** helpers.go `parseThresholdStatement`: undefined for the ignored `0%` and `100%`. */
function parseThresholdStatement(name: string, val: string): Threshold | undefined {
  const signal = checkSignal(name);
  if (val.endsWith('%')) {
    if (val === '0%' || val === '100%') return undefined;
    const percentage = parsePercentage(val);
    // Go lets NaN through both checks; nodelet refuses it here rather than compare against NaN.
    if (percentage < 0 || Number.isNaN(percentage)) throw new Error(`eviction percentage threshold ${signal} must be >= 0%: ${val}`);
    if (percentage > 1) throw new Error(`eviction percentage threshold ${signal} must be <= 100%: ${val}`);
    return { signal, operator: 'LessThan', value: { percentage }, gracePeriodMs: 0 };
  }
  const q = parseQuantity(val);
  if (q.nano <= 0n) throw new Error(`eviction threshold ${signal} must be positive: ${formatQuantity(q.nano, q.format, 'nano')}`);
  return { signal, operator: 'LessThan', value: { quantity: quantityValue(q), format: q.format }, gracePeriodMs: 0 };
}

/** helpers.go `parsePercentage`: float32 of the number before the `%`s, over 100 (in float32). */
function parsePercentage(input: string): number {
  return Math.fround(parseFloat32(input.replace(/%+$/, '')) / 100);
}

function parseGracePeriods(statements: Readonly<Record<string, string>>): Map<Signal, number> {
  const results = new Map<Signal, number>();
  for (const [name, val] of Object.entries(statements)) {
    const signal = checkSignal(name);
    const gracePeriod = parseDuration(val);
    if (gracePeriod < 0) throw new Error(`invalid eviction grace period specified: ${val}, must be a positive value`);
    results.set(signal, gracePeriod);
  }
  return results;
}

function parseMinimumReclaims(statements: Readonly<Record<string, string>>): Map<Signal, ThresholdValue> {
  const results = new Map<Signal, ThresholdValue>();
  for (const [name, val] of Object.entries(statements)) {
    const signal = checkSignal(name);
    if (val.endsWith('%')) {
      const percentage = parsePercentage(val);
      if (!(percentage > 0)) throw new Error(`eviction percentage minimum reclaim ${signal} must be positive: ${val}`);
      results.set(signal, { percentage });
      continue;
    }
    const q = parseQuantity(val);
    if (q.nano < 0n) throw new Error(`negative eviction minimum reclaim specified for ${signal}`);
    results.set(signal, { quantity: quantityValue(q), format: q.format });
  }
  return results;
}

/**
 * The `--eviction-hard`-style flag syntax (component-base's LangleSeparatedMapStringString):
 * `memory.available<100Mi,nodefs.available<10%` → { 'memory.available': '100Mi', … }.
 */
export function parseLangleSeparatedMap(text: string): Record<string, string> {
  const result: Record<string, string> = {};
  for (const pair of text.split(',')) {
    if (pair.length === 0) continue;
    const at = pair.indexOf('<');
    if (at < 0) throw new Error('malformed pair, expect string<string');
    result[pair.slice(0, at).trim()] = pair.slice(at + 1).trim();
  }
  return result;
}

/** helpers.go `isHardEvictionThreshold`: no grace period. */
export function isHardEvictionThreshold(t: Threshold): boolean {
  return t.gracePeriodMs === 0;
}

/** api/types.go `GetThresholdQuantity`: the quantity itself, or int64(capacity × percentage). */
export function getThresholdQuantity(value: ThresholdValue, capacity: bigint): bigint {
  if ('quantity' in value) return value.quantity;
  return BigInt(Math.trunc(Number(capacity) * value.percentage));
}

/** How a threshold quantity prints: the configured text's format, BinarySI for percentages (as GetThresholdQuantity). */
export function formatThresholdQuantity(value: ThresholdValue, capacity: bigint): string {
  return formatQuantity(getThresholdQuantity(value, capacity), 'quantity' in value ? (value.format ?? 'BinarySI') : 'BinarySI');
}

/** How an observed amount of the signal's resource prints (BinarySI bytes, DecimalSI counts). */
export function formatObserved(signal: Signal, amount: bigint): string {
  const resource = SIGNAL_TO_RESOURCE[signal];
  return formatQuantity(amount, resource === 'memory' || resource === 'ephemeral-storage' ? 'BinarySI' : 'DecimalSI');
}

/**
 * helpers.go `makeSignalObservations` from nodelet's reading: a signal is observed only when
 * its fields are there (inodes need both free and total).
 */
export function makeObservations(r: NodeReadings): Map<Signal, Observation> {
  const obs = new Map<Signal, Observation>();
  const time = r.time;
  if (r.memory) obs.set('memory.available', { available: r.memory.availableBytes, capacity: r.memory.capacityBytes, time });
  for (const [fs, reading] of [['nodefs', r.nodefs], ['imagefs', r.imagefs]] as const) {
    if (!reading) continue;
    obs.set(`${fs}.available`, { available: reading.availableBytes, capacity: reading.capacityBytes, time });
    if (reading.inodesFree !== undefined && reading.inodes !== undefined) obs.set(`${fs}.inodesFree`, { available: reading.inodesFree, capacity: reading.inodes, time });
  }
  if (r.pid) obs.set('pid.available', { available: r.pid.available, capacity: r.pid.capacity, time });
  return obs;
}

/**
 * helpers.go `thresholdsMet`: the thresholds whose signal is below the threshold, independent of
 * grace periods; with `enforceMinReclaim`, below threshold + minimum reclaim (not yet resolved).
 */
export function thresholdsMet(thresholds: readonly Threshold[], obs: Observations, enforceMinReclaim: boolean): Threshold[] {
  return thresholds.filter((t) => {
    const observed = obs.get(t.signal);
    if (observed === undefined) return false;
    let quantity = getThresholdQuantity(t.value, observed.capacity);
    if (enforceMinReclaim && t.minReclaim !== undefined) quantity += getThresholdQuantity(t.minReclaim, observed.capacity);
    return quantity > observed.available;
  });
}

/** helpers.go `thresholdsUpdatedStats`: only thresholds whose signal has a reading newer than the last pass's. */
export function thresholdsUpdatedStats(thresholds: readonly Threshold[], obs: Observations, last: Observations): Threshold[] {
  return thresholds.filter((t) => {
    const observed = obs.get(t.signal);
    if (observed === undefined) return false;
    const previous = last.get(t.signal);
    return previous === undefined || observed.time === 0 || observed.time > previous.time;
  });
}

/** helpers.go `thresholdsFirstObservedAt`: when each threshold of the active set was first met (kept from before, else now). */
export function thresholdsFirstObservedAt(thresholds: readonly Threshold[], lastObservedAt: ReadonlyMap<Threshold, number>, now: number): Map<Threshold, number> {
  const results = new Map<Threshold, number>();
  for (const t of thresholds) results.set(t, lastObservedAt.get(t) ?? now);
  return results;
}

/** helpers.go `thresholdsMetGracePeriod`: the thresholds met for at least their grace period. */
export function thresholdsMetGracePeriod(observedAt: ReadonlyMap<Threshold, number>, now: number): Threshold[] {
  return [...observedAt].filter(([t, at]) => now - at >= t.gracePeriodMs).map(([t]) => t);
}

/** The order conditions are listed in (Go iterates a map; nodelet keeps the node status order). */
const CONDITION_ORDER: readonly NodeCondition[] = ['MemoryPressure', 'DiskPressure', 'PIDPressure'];

/** helpers.go `nodeConditions`: the conditions the thresholds trigger, once each. */
export function nodeConditions(thresholds: readonly Threshold[]): NodeCondition[] {
  const found = new Set(thresholds.map((t) => SIGNAL_TO_NODE_CONDITION[t.signal]));
  return CONDITION_ORDER.filter((c) => found.has(c));
}

/** helpers.go `nodeConditionsLastObservedAt`: the conditions seen now at `now`, the others at their old time. */
export function nodeConditionsLastObservedAt(conditions: readonly NodeCondition[], lastObservedAt: ReadonlyMap<NodeCondition, number>, now: number): Map<NodeCondition, number> {
  const results = new Map<NodeCondition, number>();
  for (const c of conditions) results.set(c, now);
  for (const [c, at] of lastObservedAt) if (!results.has(c)) results.set(c, at);
  return results;
}

/** helpers.go `nodeConditionsObservedSince`: the conditions observed less than `periodMs` ago. */
export function nodeConditionsObservedSince(observedAt: ReadonlyMap<NodeCondition, number>, periodMs: number, now: number): NodeCondition[] {
  return CONDITION_ORDER.filter((c) => {
    const at = observedAt.get(c);
    return at !== undefined && now - at < periodMs;
  });
}

/** helpers.go `compareThresholdValue`. */
function sameValue(a: ThresholdValue, b: ThresholdValue): boolean {
  if ('quantity' in a) return 'quantity' in b && a.quantity === b.quantity;
  return !('quantity' in b) && a.percentage === b.percentage;
}

/** helpers.go `hasThreshold`: same signal, operator, value and grace period. */
function hasThreshold(list: readonly Threshold[], t: Threshold): boolean {
  return list.some((o) => o.gracePeriodMs === t.gracePeriodMs && o.operator === t.operator && o.signal === t.signal && sameValue(o.value, t.value));
}

/** helpers.go `mergeThresholds`: `a`, then the thresholds of `b` not already in it. */
export function mergeThresholds(a: readonly Threshold[], b: readonly Threshold[]): Threshold[] {
  const results = [...a];
  for (const t of b) if (!hasThreshold(results, t)) results.push(t);
  return results;
}

/**
 * helpers.go `byEvictionPriority`: memory before every other resource; the rest keep their order
 * (a stable sort where the kubelet's is not).
 */
export function sortByEvictionPriority(thresholds: readonly Threshold[]): Threshold[] {
  const rank = (t: Threshold) => (t.signal === 'memory.available' ? 0 : 1);
  return [...thresholds].sort((a, b) => rank(a) - rank(b));
}

/** helpers.go `getReclaimableThreshold`: the first threshold and the resource it starves. */
export function getReclaimableThreshold(thresholds: readonly Threshold[]): { threshold: Threshold; resource: StarvedResource } | undefined {
  const threshold = thresholds[0];
  return threshold === undefined ? undefined : { threshold, resource: SIGNAL_TO_RESOURCE[threshold.signal] };
}

/** helpers.go `formatThreshold`, for logs. */
export function formatThreshold(t: Threshold): string {
  const value = 'quantity' in t.value ? formatQuantity(t.value.quantity, t.value.format) : `${+(t.value.percentage * 100).toPrecision(6)}%`;
  return `threshold(signal=${t.signal}, operator=${t.operator}, value=${value}, gracePeriod=${t.gracePeriodMs}ms)`;
}
