import type { Container, ObjectFieldSelector, Pod, ResourceFieldSelector } from 'kubernetes-types/core/v1.js';
import { statfsSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';
import { quantityOf } from '../api/quantity.js';

/** What the downward API needs beyond the pod object: addresses and the node's allocatable resources. */
export interface PodRuntimeInfo {
  readonly hostIPs: readonly string[];
  /** The pod's IPs (the host's for host-network pods); empty until the sandbox has one. */
  readonly podIPs: readonly string[];
  /** Node allocatable: what `limits.*` report for a container without a limit (as the kubelet merges it). */
  readonly allocatable: { readonly cpuMilli: bigint; readonly memoryBytes: bigint; readonly ephemeralStorageBytes: bigint };
}

/** Go's `strconv.Quote`: `"`-delimited, with Go escapes for control and non-printable characters. */
export function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0) ?? 0;
    switch (ch) {
      case '"': out += '\\"'; continue;
      case '\\': out += '\\\\'; continue;
      case '\x07': out += '\\a'; continue;
      case '\b': out += '\\b'; continue;
      case '\f': out += '\\f'; continue;
      case '\n': out += '\\n'; continue;
      case '\r': out += '\\r'; continue;
      case '\t': out += '\\t'; continue;
      case '\v': out += '\\v'; continue;
    }
    if (cp < 0x20 || cp === 0x7f) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (cp < 0x7f || /^[\p{L}\p{M}\p{N}\p{P}\p{S}]$/u.test(ch)) out += ch;
    else if (cp >= 0xd800 && cp <= 0xdfff) out += '\\ufffd'; // a lone surrogate is no valid UTF-8
    else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

/** The kubelet's `fieldpath.FormatMap`: `key="value"` lines, keys sorted, no trailing newline. */
export function formatMap(m: Readonly<Record<string, string>> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${goQuote(m?.[k] ?? '')}`)
    .join('\n');
}

/** `metadata.labels['key']` → `['metadata.labels', 'key']` (the kubelet's `SplitMaybeSubscriptedPath`). */
function splitSubscript(path: string): [string, string] | undefined {
  if (!path.endsWith("']")) return undefined;
  const s = path.slice(0, -2);
  const at = s.indexOf("['");
  if (at <= 0) return undefined;
  return [s.slice(0, at), s.slice(at + 2)];
}

const qualifiedName = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;

/**
 * A downward-API field of the pod as a string: `podFieldSelectorRuntimeValue` plus
 * `fieldpath.ExtractFieldPathAsString` (env and volumes accept the same set here). Throws the
 * kubelet's message for a path it does not support.
 */
export function podFieldValue(pod: Pod, ref: ObjectFieldSelector, info: PodRuntimeInfo): string {
  const version = ref.apiVersion || 'v1';
  if (version !== 'v1') throw new Error(`unsupported pod version: ${version}`);
  const path = ref.fieldPath;
  const m = pod.metadata ?? {};
  const sub = splitSubscript(path);
  if (sub) {
    const [field, key] = sub;
    if (field !== 'metadata.labels' && field !== 'metadata.annotations') throw new Error(`fieldPath ${JSON.stringify(path)} does not support subscript`);
    if (key.length > 316 || !qualifiedName.test(key.toLowerCase())) throw new Error(`invalid key subscript in ${path}`);
    return (field === 'metadata.labels' ? m.labels : m.annotations)?.[key] ?? '';
  }
  switch (path) {
    case 'metadata.name': return m.name ?? '';
    case 'metadata.namespace': return m.namespace ?? '';
    case 'metadata.uid': return m.uid ?? '';
    case 'metadata.labels': return formatMap(m.labels);
    case 'metadata.annotations': return formatMap(m.annotations);
    case 'spec.nodeName': return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName': return pod.spec?.serviceAccountName ?? '';
    case 'status.hostIP': return info.hostIPs[0] ?? '';
    case 'status.hostIPs': return info.hostIPs.join(',');
    case 'status.podIP': return info.podIPs[0] ?? '';
    case 'status.podIPs': return info.podIPs.join(',');
    default: throw new Error(`unsupported fieldPath: ${path}`);
  }
}

const ceilDiv = (a: bigint, b: bigint): bigint => (a <= 0n ? a / b : (a + b - 1n) / b);
/** `Quantity.MilliValue()` and `Quantity.Value()` (rounded up) of a nano-unit amount. */
const milli = (nano: bigint) => ceilDiv(nano, 1_000_000n);
const units = (nano: bigint) => ceilDiv(nano, 1_000_000_000n);

/**
 * A container resource through the downward API (`ExtractContainerResourceValue`): CPU in
 * multiples of the divisor (default 1 core, rounded up), memory, ephemeral storage and huge pages
 * in multiples of the divisor (default 1 byte). A limit the container does not set reports the
 * node's allocatable; a request it does not set reports its limit, else 0.
 */
export function resourceFieldValue(pod: Pod, container: Container | undefined, ref: ResourceFieldSelector, info: PodRuntimeInfo): string {
  const target = ref.containerName ? [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find((c) => c.name === ref.containerName) : container;
  if (!target) throw new Error(`cannot find container: ${ref.containerName ?? ''}`);
  const [kind, name] = splitResource(ref.resource);
  if (!kind || !name) throw new Error(`unsupported container resource : ${ref.resource}`);
  const limits = target.resources?.limits ?? {};
  const requests = target.resources?.requests ?? {};
  const specified = kind === 'limits' ? limits[name] : (requests[name] ?? limits[name]);
  let nano: bigint;
  if (specified !== undefined) nano = quantityOf(specified);
  else if (kind === 'requests' || name.startsWith('hugepages-')) nano = 0n;
  else if (name === 'cpu') nano = info.allocatable.cpuMilli * 1_000_000n;
  else if (name === 'memory') nano = info.allocatable.memoryBytes * 1_000_000_000n;
  else nano = info.allocatable.ephemeralStorageBytes * 1_000_000_000n;
  const divisorNano = quantityOf(ref.divisor ?? '0');
  const divisor = divisorNano > 0n ? divisorNano : 1_000_000_000n;
  if (name === 'cpu') return String(ceilDiv(milli(nano), milli(divisor) || 1n));
  return String(ceilDiv(units(nano), units(divisor) || 1n));
}

function splitResource(resource: string): [('limits' | 'requests')?, string?] {
  const dot = resource.indexOf('.');
  const kind = resource.slice(0, dot);
  const name = resource.slice(dot + 1);
  if (dot < 0 || (kind !== 'limits' && kind !== 'requests')) return [];
  if (name !== 'cpu' && name !== 'memory' && name !== 'ephemeral-storage' && !/^hugepages-.+/.test(name)) return [];
  return [kind, name];
}

/** Whether anything in the pod reads its own IP (so the kubelet must learn it before starting containers). */
export function readsPodIP(pod: Pod): boolean {
  const paths: string[] = [];
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    for (const e of c.env ?? []) if (e.valueFrom?.fieldRef) paths.push(e.valueFrom.fieldRef.fieldPath);
  }
  for (const v of pod.spec?.volumes ?? []) {
    for (const item of v.downwardAPI?.items ?? []) if (item.fieldRef) paths.push(item.fieldRef.fieldPath);
    for (const s of v.projected?.sources ?? []) for (const item of s.downwardAPI?.items ?? []) if (item.fieldRef) paths.push(item.fieldRef.fieldPath);
  }
  return paths.some((p) => p.startsWith('status.podIP'));
}

let allocatable: PodRuntimeInfo['allocatable'] | undefined;

/** This node's capacity as allocatable (nodelet reserves nothing): cores, memory, root filesystem size. */
export function nodeAllocatable(): PodRuntimeInfo['allocatable'] {
  if (!allocatable) {
    let disk = 0n;
    try {
      const st = statfsSync('/', { bigint: true });
      disk = st.blocks * st.bsize;
    } catch {
      // No statfs: ephemeral storage reads 0.
    }
    allocatable = { cpuMilli: BigInt(availableParallelism()) * 1000n, memoryBytes: BigInt(totalmem()), ephemeralStorageBytes: disk };
  }
  return allocatable;
}
