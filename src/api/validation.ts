import { isIP } from 'node:net';
import { isDNS1123Label, isDNS1123Subdomain, isQualifiedName, isValidLabelValue } from './names.js';
import type { Pod } from './types.js';

/**
 * A subset of the apiserver's `ValidatePod` (pkg/apis/core/validation), with its messages and
 * field paths (`spec.containers[1].name: Duplicate value: "app"`). Input is treated as untrusted
 * JSON: wrong types are reported rather than thrown on. Fields the defaulting fills in
 * (restartPolicy, dnsPolicy, imagePullPolicy, port protocol) may be absent.
 */
export function validatePod(pod: Pod): string[] {
  const errs = new FieldErrors();
  const root: unknown = pod;
  if (!isRecord(root)) {
    errs.invalid('', root, 'must be an object');
    return errs.list;
  }
  validateObjectMeta(root.metadata, errs);
  const spec = root.spec ?? {};
  if (!isRecord(spec)) errs.invalid('spec', spec, 'must be an object');
  else validatePodSpec(spec, 'spec', errs);
  return errs.list;
}

/** Collects apimachinery `field.Error` strings (`<path>: <type>: <value>: <detail>`). */
class FieldErrors {
  readonly list: string[] = [];

  required(path: string, detail = ''): void {
    this.list.push(`${path}: Required value${detail ? `: ${detail}` : ''}`);
  }
  invalid(path: string, value: unknown, detail: string): void {
    this.list.push(`${path ? `${path}: ` : ''}Invalid value: ${formatValue(value)}: ${detail}`);
  }
  duplicate(path: string, value: unknown): void {
    this.list.push(`${path}: Duplicate value: ${formatValue(value)}`);
  }
  /** `field.TooLong`: the value is never printed. */
  tooLong(path: string, maxBytes: number): void {
    this.list.push(`${path}: Too long: must have at most ${maxBytes} bytes`);
  }
  notFound(path: string, value: unknown): void {
    this.list.push(`${path}: Not found: ${formatValue(value)}`);
  }
  notSupported(path: string, value: unknown, supported: readonly string[]): void {
    this.list.push(`${path}: Unsupported value: ${formatValue(value)}: supported values: ${supported.map((s) => JSON.stringify(s)).join(', ')}`);
  }
}

/** Go's `%q` for strings, `%v` for numbers and booleans, JSON otherwise – as `field.Error` prints. */
function formatValue(value: unknown): string {
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === undefined) return 'null';
  return JSON.stringify(value) ?? 'null';
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An optional string field: `undefined` when absent, `null` (after reporting) when mistyped. */
function optString(v: unknown, path: string, errs: FieldErrors): string | undefined | null {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'string') return v;
  errs.invalid(path, v, 'must be a string');
  return null;
}

/** An optional list field: `[]` when absent, `undefined` (after reporting) when mistyped. */
function optList(v: unknown, path: string, errs: FieldErrors): unknown[] | undefined {
  if (v === undefined || v === null) return [];
  if (Array.isArray(v)) return v;
  errs.invalid(path, v, 'must be a list');
  return undefined;
}

function validateObjectMeta(meta: unknown, errs: FieldErrors): void {
  if (meta !== undefined && !isRecord(meta)) {
    errs.invalid('metadata', meta, 'must be an object');
    return;
  }
  const m: Record<string, unknown> = isRecord(meta) ? meta : {};
  // ValidateObjectMeta with ValidatePodName (DNS subdomain) and a namespaced kind (DNS label).
  const name = optString(m.name, 'metadata.name', errs);
  if (name === undefined || name === '') errs.required('metadata.name', 'name or generateName is required');
  else if (name !== null) for (const msg of isDNS1123Subdomain(name)) errs.invalid('metadata.name', name, msg);
  const ns = optString(m.namespace, 'metadata.namespace', errs);
  if (ns === undefined || ns === '') errs.required('metadata.namespace');
  else if (ns !== null) for (const msg of isDNS1123Label(ns)) errs.invalid('metadata.namespace', ns, msg);
  optString(m.uid, 'metadata.uid', errs);
  for (const field of ['labels', 'annotations'] as const) {
    const map = m[field];
    if (map === undefined || map === null) continue;
    if (!isRecord(map) || Object.values(map).some((v) => typeof v !== 'string')) {
      errs.invalid(`metadata.${field}`, map, 'must be a map of string keys to string values');
      continue;
    }
    if (field === 'labels') validateLabels(map as Record<string, string>, 'metadata.labels', errs);
    else validateAnnotations(map as Record<string, string>, 'metadata.annotations', errs);
  }
}

/**
 * apimachinery's `TotalAnnotationSizeLimitB`: keys plus values of all annotations, in bytes. Larger
 * pods never exist in a cluster, and their annotations become sandbox labels Docker cannot hold.
 */
export const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES = 256 * 1024;

/** Longest key or value quoted in an error; an absurd one (up to the manifest cap) is cut. */
const MAX_QUOTED_CHARS = 256;
const bounded = (v: string): string => (v.length > MAX_QUOTED_CHARS ? `${v.slice(0, MAX_QUOTED_CHARS)}...` : v);

/** `ValidateLabels`: keys are qualified names, values valid label values (both ≤ 63 characters). */
function validateLabels(labels: Record<string, string>, path: string, errs: FieldErrors): void {
  for (const [k, v] of Object.entries(labels)) {
    for (const msg of isQualifiedName(k)) errs.invalid(path, bounded(k), msg);
    for (const msg of isValidLabelValue(v)) errs.invalid(path, bounded(v), msg);
  }
}

/** `ValidateAnnotations`: keys are qualified names (any case), and the total size is bounded. */
function validateAnnotations(annotations: Record<string, string>, path: string, errs: FieldErrors): void {
  let total = 0;
  for (const [k, v] of Object.entries(annotations)) {
    for (const msg of isQualifiedName(k.toLowerCase())) errs.invalid(path, bounded(k), msg);
    total += Buffer.byteLength(k) + Buffer.byteLength(v);
  }
  if (total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES) errs.tooLong(path, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
}

const restartPolicies = ['Always', 'OnFailure', 'Never'];
const dnsPolicies = ['ClusterFirst', 'ClusterFirstWithHostNet', 'Default', 'None'];
const pullPolicies = ['Always', 'IfNotPresent', 'Never'];
const protocols = ['SCTP', 'TCP', 'UDP'];

function validatePodSpec(spec: Record<string, unknown>, path: string, errs: FieldErrors): void {
  const volumes = validateVolumes(spec.volumes, `${path}.volumes`, errs);
  // Container names must be unique across init and regular containers (the apiserver's allNames).
  const names = new Set<string>();
  const init = optList(spec.initContainers, `${path}.initContainers`, errs);
  init?.forEach((c, i) => validateContainer(c, `${path}.initContainers[${i}]`, names, volumes, errs));
  const containers = optList(spec.containers, `${path}.containers`, errs);
  if (containers && containers.length === 0) errs.required(`${path}.containers`);
  containers?.forEach((c, i) => validateContainer(c, `${path}.containers[${i}]`, names, volumes, errs));
  if (spec.hostNetwork === true) validateHostNetworkPorts(containers, `${path}.containers`, errs);

  validateEnum(spec.restartPolicy, `${path}.restartPolicy`, restartPolicies, errs);
  validateEnum(spec.dnsPolicy, `${path}.dnsPolicy`, dnsPolicies, errs);
  validatePodDNSConfig(spec.dnsConfig, spec.dnsPolicy, `${path}.dnsConfig`, errs);
  const grace = spec.terminationGracePeriodSeconds;
  if (grace !== undefined && grace !== null) {
    if (!Number.isInteger(grace)) errs.invalid(`${path}.terminationGracePeriodSeconds`, grace, 'must be an integer');
    else if ((grace as number) < 0) errs.invalid(`${path}.terminationGracePeriodSeconds`, grace, 'must be greater than or equal to 0');
  }
  const deadline = spec.activeDeadlineSeconds;
  if (deadline !== undefined && deadline !== null) {
    if (!Number.isInteger(deadline) || (deadline as number) < 1 || (deadline as number) > 2147483647) {
      errs.invalid(`${path}.activeDeadlineSeconds`, deadline, 'must be between 1 and 2147483647, inclusive');
    }
  }
}

/** `validation.MaxDNSNameservers`. */
export const MaxDNSNameservers = 3;
/** `validation.MaxDNSSearchPaths` (the expanded limits, GA since Kubernetes 1.28). */
export const MaxDNSSearchPaths = 32;
/** `validation.MaxDNSSearchListChars`. */
export const MaxDNSSearchListChars = 2048;

/**
 * The apiserver's `validatePodDNSConfig`: `None` needs a `dnsConfig` with a nameserver; at most 3
 * nameservers, each an IP; at most 32 search domains (DNS-1123 subdomains, a trailing dot
 * allowed, `.` alone as relaxed validation allows), 2048 characters joined; options named.
 */
function validatePodDNSConfig(config: unknown, policy: unknown, path: string, errs: FieldErrors): void {
  if (config !== undefined && config !== null && !isRecord(config)) return errs.invalid(path, config, 'must be an object');
  const nameservers = isRecord(config) ? optList(config.nameservers, `${path}.nameservers`, errs) : undefined;
  if (policy === 'None') {
    if (!isRecord(config)) return errs.required(path, 'must provide `dnsConfig` when `dnsPolicy` is None');
    if (!nameservers?.length) return errs.required(`${path}.nameservers`, 'must provide at least one DNS nameserver when `dnsPolicy` is None');
  }
  if (!isRecord(config)) return;
  if (nameservers && nameservers.length > MaxDNSNameservers) errs.invalid(`${path}.nameservers`, nameservers, `must not have more than ${MaxDNSNameservers} nameservers`);
  nameservers?.forEach((ns, i) => {
    if (typeof ns !== 'string' || isIP(ns) === 0) errs.invalid(`${path}.nameservers[${i}]`, ns, 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)');
  });
  const searches = optList(config.searches, `${path}.searches`, errs);
  if (searches && searches.length > MaxDNSSearchPaths) errs.invalid(`${path}.searches`, searches, `must not have more than ${MaxDNSSearchPaths} search paths`);
  if (searches && searches.join(' ').length > MaxDNSSearchListChars) errs.invalid(`${path}.searches`, searches, `must not have more than ${MaxDNSSearchListChars} characters (including spaces) in the search list`);
  searches?.forEach((search, i) => {
    if (typeof search !== 'string') return errs.invalid(`${path}.searches[${i}]`, search, 'must be a string');
    if (search === '.') return;
    const name = search.endsWith('.') ? search.slice(0, -1) : search;
    // RelaxedDNSSearchValidation (on by default): underscores are allowed too.
    for (const msg of isDNS1123Subdomain(name.replaceAll('_', 'a'))) errs.invalid(`${path}.searches[${i}]`, name, msg);
  });
  optList(config.options, `${path}.options`, errs)?.forEach((option, i) => {
    if (!isRecord(option) || typeof option.name !== 'string' || option.name === '') errs.required(`${path}.options[${i}]`, 'must not be empty');
  });
}

/**
 * The apiserver's `validateHostNetwork`: a host-network container listens on the host itself,
 * so `hostPort` must be its `containerPort` (an unset one was defaulted to it, see defaults.ts).
 */
function validateHostNetworkPorts(containers: unknown[] | undefined, path: string, errs: FieldErrors): void {
  containers?.forEach((c, i) => {
    if (!isRecord(c) || !Array.isArray(c.ports)) return;
    c.ports.forEach((port: unknown, j) => {
      if (!isRecord(port) || port.hostPort === undefined || port.hostPort === null || port.hostPort === 0) return;
      if (port.hostPort !== port.containerPort) errs.invalid(`${path}[${i}].ports[${j}].containerPort`, port.containerPort, 'must match `hostPort` when `hostNetwork` is true');
    });
  });
}

/** An enum the defaulting fills in: absent or `""` is fine here, anything else must be listed. */
function validateEnum(v: unknown, path: string, supported: readonly string[], errs: FieldErrors): void {
  const s = optString(v, path, errs);
  if (s && !supported.includes(s)) errs.notSupported(path, s, supported);
}

function validateVolumes(v: unknown, path: string, errs: FieldErrors): Set<string> {
  const names = new Set<string>();
  optList(v, path, errs)?.forEach((vol, i) => {
    const p = `${path}[${i}]`;
    if (!isRecord(vol)) return errs.invalid(p, vol, 'must be an object');
    const name = optString(vol.name, `${p}.name`, errs);
    if (name === undefined || name === '') errs.required(`${p}.name`);
    else if (name !== null) {
      for (const msg of isDNS1123Label(name)) errs.invalid(`${p}.name`, name, msg);
      if (names.has(name)) errs.duplicate(`${p}.name`, name);
      names.add(name);
    }
  });
  return names;
}

function validateContainer(c: unknown, path: string, names: Set<string>, volumes: Set<string>, errs: FieldErrors): void {
  if (!isRecord(c)) return errs.invalid(path, c, 'must be an object');
  const name = optString(c.name, `${path}.name`, errs);
  if (name === undefined || name === '') errs.required(`${path}.name`);
  else if (name !== null) {
    for (const msg of isDNS1123Label(name)) errs.invalid(`${path}.name`, name, msg);
    if (names.has(name)) errs.duplicate(`${path}.name`, name);
    names.add(name);
  }
  const image = optString(c.image, `${path}.image`, errs);
  if (image === undefined || image === '') errs.required(`${path}.image`);
  else if (image !== null && image !== image.trim()) errs.invalid(`${path}.image`, image, 'must not have leading or trailing whitespace');
  validateEnum(c.imagePullPolicy, `${path}.imagePullPolicy`, pullPolicies, errs);
  validatePorts(c.ports, `${path}.ports`, errs);
  validateEnv(c.env, `${path}.env`, errs);
  optList(c.volumeMounts, `${path}.volumeMounts`, errs)?.forEach((m, i) => {
    const p = `${path}.volumeMounts[${i}]`;
    if (!isRecord(m)) return errs.invalid(p, m, 'must be an object');
    const vol = optString(m.name, `${p}.name`, errs);
    if (vol === undefined || vol === '') errs.required(`${p}.name`);
    else if (vol !== null && !volumes.has(vol)) errs.notFound(`${p}.name`, vol);
    const mountPath = optString(m.mountPath, `${p}.mountPath`, errs);
    if (mountPath === undefined || mountPath === '') errs.required(`${p}.mountPath`);
  });
}

const portRangeMsg = 'must be between 1 and 65535, inclusive';
const validPort = (v: unknown): boolean => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= 65535;

function validatePorts(v: unknown, path: string, errs: FieldErrors): void {
  optList(v, path, errs)?.forEach((port, i) => {
    const p = `${path}[${i}]`;
    if (!isRecord(port)) return errs.invalid(p, port, 'must be an object');
    if (port.containerPort === undefined || port.containerPort === null || port.containerPort === 0) errs.required(`${p}.containerPort`);
    else if (!validPort(port.containerPort)) errs.invalid(`${p}.containerPort`, port.containerPort, portRangeMsg);
    const host = port.hostPort;
    if (host !== undefined && host !== null && host !== 0 && !validPort(host)) errs.invalid(`${p}.hostPort`, host, portRangeMsg);
    validateEnum(port.protocol, `${p}.protocol`, protocols, errs);
  });
}

// RelaxedEnvironmentVariableValidation (on by default since 1.32): printable ASCII except '='.
const envNameRe = /^[\x20-\x3c\x3e-\x7e]+$/;
const envNameMsg = "a valid environment variable name must consist only of printable ASCII characters other than '='";

function validateEnv(v: unknown, path: string, errs: FieldErrors): void {
  optList(v, path, errs)?.forEach((ev, i) => {
    const p = `${path}[${i}]`;
    if (!isRecord(ev)) return errs.invalid(p, ev, 'must be an object');
    const name = optString(ev.name, `${p}.name`, errs);
    if (name === undefined || name === '') errs.required(`${p}.name`);
    else if (name !== null && !envNameRe.test(name)) errs.invalid(`${p}.name`, name, envNameMsg);
  });
}

/** Go's `utilerrors.NewAggregate(...).Error()`: one message bare, several as `[a, b]`. */
export function aggregate(errs: readonly string[]): string {
  return errs.length === 1 ? (errs[0] ?? '') : `[${errs.join(', ')}]`;
}

