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
  /** `field.Forbidden`. */
  forbidden(path: string, detail: string): void {
    this.list.push(`${path}: Forbidden: ${detail}`);
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

/** A JSON object (not null, not an array): what decoded documents are checked against. */
export function isRecord(v: unknown): v is Record<string, unknown> {
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
  validateMetaTypes(m, errs);
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
 * What a typed decode into `ObjectMeta` would refuse: the remaining fields with the wrong JSON
 * type, and timestamps that are not RFC 3339 (`metav1.Time`). The kubelet's sources decode into
 * a typed Pod, so such a pod never exists for it; here the fields would reach the API answers
 * (the AGE and STATUS columns read the timestamps).
 */
function validateMetaTypes(m: Record<string, unknown>, errs: FieldErrors): void {
  for (const field of ['generateName', 'resourceVersion', 'selfLink'] as const) optString(m[field], `metadata.${field}`, errs);
  for (const field of ['creationTimestamp', 'deletionTimestamp'] as const) {
    const v = optString(m[field], `metadata.${field}`, errs);
    if (v && !rfc3339Re.test(v)) errs.invalid(`metadata.${field}`, bounded(v), 'must be an RFC 3339 time (e.g. 2006-01-02T15:04:05Z)');
  }
  for (const field of ['generation', 'deletionGracePeriodSeconds'] as const) {
    const v = m[field];
    if (v !== undefined && v !== null && !Number.isInteger(v)) errs.invalid(`metadata.${field}`, v, 'must be an integer');
  }
  optList(m.finalizers, 'metadata.finalizers', errs)?.forEach((f, i) => {
    if (typeof f !== 'string') errs.invalid(`metadata.finalizers[${i}]`, f, 'must be a string');
  });
  for (const field of ['ownerReferences', 'managedFields'] as const) {
    optList(m[field], `metadata.${field}`, errs)?.forEach((r, i) => {
      if (!isRecord(r)) errs.invalid(`metadata.${field}[${i}]`, r, 'must be an object');
    });
  }
}

/** `metav1.Time`'s RFC 3339 form (fractional seconds allowed, as Go's parser accepts them). */
const rfc3339Re = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/;

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
  init?.forEach((c, i) => validateContainer(c, `${path}.initContainers[${i}]`, names, volumes, errs, restartPolicies));
  const containers = optList(spec.containers, `${path}.containers`, errs);
  if (containers && containers.length === 0) errs.required(`${path}.containers`);
  containers?.forEach((c, i) => validateContainer(c, `${path}.containers[${i}]`, names, volumes, errs, restartPolicies));
  if (spec.hostNetwork === true) validateHostNetworkPorts(containers, `${path}.containers`, errs);

  validateEnum(spec.restartPolicy, `${path}.restartPolicy`, restartPolicies, errs);
  validateEnum(spec.dnsPolicy, `${path}.dnsPolicy`, dnsPolicies, errs);
  validatePodDNSConfig(spec.dnsConfig, spec.dnsPolicy, `${path}.dnsConfig`, errs);
  // ValidatePodSpec: hostname and subdomain are DNS-1123 labels (they name the pod in its hosts file).
  for (const field of ['hostname', 'subdomain'] as const) {
    const v = optString(spec[field], `${path}.${field}`, errs);
    if (v) for (const msg of isDNS1123Label(v)) errs.invalid(`${path}.${field}`, bounded(v), msg);
  }
  validatePodHostnameOverride(spec, path, errs);
  init?.forEach((c, i) => validateFileKeyRefs(c, spec, `${path}.initContainers[${i}]`, errs));
  containers?.forEach((c, i) => validateFileKeyRefs(c, spec, `${path}.containers[${i}]`, errs));
  init?.forEach((c, i) => validateStopSignal(c, spec, `${path}.initContainers[${i}]`, errs));
  containers?.forEach((c, i) => validateStopSignal(c, spec, `${path}.containers[${i}]`, errs));
  validateHostAliases(spec.hostAliases, `${path}.hostAliases`, errs);
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

/**
 * `validatePodHostName` (HostnameOverride, on since 1.35): `hostnameOverride` is a DNS-1123
 * subdomain of at most 64 characters, and meaningless beside `setHostnameAsFQDN` or the host's
 * network, which it may not be set with.
 */
function validatePodHostnameOverride(spec: Record<string, unknown>, path: string, errs: FieldErrors): void {
  const p = `${path}.hostnameOverride`;
  const v = optString(spec.hostnameOverride, p, errs);
  if (v === undefined || v === null) return;
  if (spec.setHostnameAsFQDN === true) errs.forbidden(p, 'may not be specified when setHostnameAsFQDN is true');
  if (spec.hostNetwork === true) errs.forbidden(p, 'may not be specified when hostNetwork is true');
  if (v.length > 64) errs.tooLong(p, 64);
  for (const msg of isDNS1123Subdomain(v)) errs.invalid(p, bounded(v), msg);
}

/**
 * `validateFileKeySelector` and `validateFileKeyRefVolumes` (EnvFiles): a `fileKeyRef` names a
 * key that is an environment variable name, a path without `..`, and an emptyDir volume of the pod.
 */
function validateFileKeyRefs(c: unknown, spec: Record<string, unknown>, path: string, errs: FieldErrors): void {
  if (!isRecord(c) || !Array.isArray(c.env)) return;
  const volumes = new Map((Array.isArray(spec.volumes) ? spec.volumes : []).filter(isRecord).map((v) => [v.name, v]));
  c.env.forEach((e: unknown, j: number) => {
    if (!isRecord(e) || !isRecord(e.valueFrom) || !isRecord(e.valueFrom.fileKeyRef)) return;
    const ref = e.valueFrom.fileKeyRef;
    const p = `${path}.env[${j}].valueFrom.fileKeyRef`;
    const key = ref.key;
    if (typeof key !== 'string' || key === '') errs.required(`${p}.key`);
    else if (!envNameRe.test(key)) errs.invalid(`${p}.key`, bounded(key), envNameMsg);
    const volumeName = ref.volumeName;
    if (typeof volumeName !== 'string' || volumeName === '') errs.required(`${p}.volumeName`);
    else {
      for (const msg of isDNS1123Label(volumeName)) errs.invalid(`${p}.volumeName`, bounded(volumeName), msg);
      const v = volumes.get(volumeName);
      if (!v) errs.notFound(`${p}.volumeName`, volumeName);
      else if (!isRecord(v.emptyDir)) errs.invalid(`${p}.volumeName`, volumeName, 'referenced volume must be of type emptyDir');
    }
    const filePath = ref.path;
    if (typeof filePath !== 'string' || filePath === '') errs.required(`${p}.path`);
    else if (filePath.split('/').includes('..')) errs.invalid(`${p}.path`, bounded(filePath), "must not contain '..'");
  });
}

/** `supportedStopSignalsLinux` (pkg/apis/core/validation/validation.go). */
const LINUX_STOP_SIGNALS = new Set([
  'SIGABRT', 'SIGALRM', 'SIGBUS', 'SIGCHLD', 'SIGCLD', 'SIGCONT', 'SIGFPE', 'SIGHUP', 'SIGILL', 'SIGINT', 'SIGIO', 'SIGIOT',
  'SIGKILL', 'SIGPIPE', 'SIGPOLL', 'SIGPROF', 'SIGPWR', 'SIGQUIT', 'SIGSEGV', 'SIGSTKFLT', 'SIGSTOP', 'SIGSYS', 'SIGTERM', 'SIGTRAP',
  'SIGTSTP', 'SIGTTIN', 'SIGTTOU', 'SIGURG', 'SIGUSR1', 'SIGUSR2', 'SIGVTALRM', 'SIGWINCH', 'SIGXCPU', 'SIGXFSZ', 'SIGRTMIN',
  ...Array.from({ length: 15 }, (_, i) => `SIGRTMIN+${i + 1}`), ...Array.from({ length: 14 }, (_, i) => `SIGRTMAX-${14 - i}`), 'SIGRTMAX',
]);

/**
 * `validateStopSignal` (ContainerStopSignals): a container's `lifecycle.stopSignal` needs the
 * pod's `spec.os.name`, and on Linux one of the signals the apiserver lists (Windows pods do not
 * run here at all).
 */
function validateStopSignal(c: unknown, spec: Record<string, unknown>, path: string, errs: FieldErrors): void {
  if (!isRecord(c) || !isRecord(c.lifecycle)) return;
  const signal = c.lifecycle.stopSignal;
  if (signal === undefined || signal === null) return;
  const p = `${path}.lifecycle.stopSignal`;
  const os = isRecord(spec.os) ? spec.os.name : undefined;
  if (os === undefined || os === null || os === '') errs.forbidden(p, 'may not be set for containers with empty `spec.os.name`');
  else if (os === 'linux' && (typeof signal !== 'string' || !LINUX_STOP_SIGNALS.has(signal))) errs.notSupported(p, signal, [...LINUX_STOP_SIGNALS].sort());
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
    if (!isRecord(option) || typeof option.name !== 'string' || option.name === '') return errs.required(`${path}.options[${i}]`, 'must not be empty');
    // nodelet's own, stricter than the apiserver: an option is one word of the `options` line.
    if (!resolvWordRe.test(option.name)) errs.invalid(`${path}.options[${i}].name`, bounded(option.name), resolvWordMsg);
    const value = optString(option.value, `${path}.options[${i}].value`, errs);
    if (value && !resolvWordRe.test(value)) errs.invalid(`${path}.options[${i}].value`, bounded(value), resolvWordMsg);
  });
}

/**
 * A word of a resolv.conf line: printable ASCII, no whitespace. The apiserver checks option names
 * for emptiness only, but a space, newline or NUL in a name or value would split or add lines of
 * the pod's resolv.conf (resolv-conf.ts refuses to write one too).
 */
const resolvWordRe = /^[\x21-\x7e]+$/;
const resolvWordMsg = 'must consist of printable ASCII characters other than whitespace';

/**
 * The apiserver's `ValidateHostAliases`: each alias's `ip` is an IP address (`IsValidIP`), each of
 * its `hostnames` a DNS-1123 subdomain. Both become fields of the pod's /etc/hosts.
 */
function validateHostAliases(v: unknown, path: string, errs: FieldErrors): void {
  optList(v, path, errs)?.forEach((alias, i) => {
    const p = `${path}[${i}]`;
    if (!isRecord(alias)) return errs.invalid(p, alias, 'must be an object');
    const ip = optString(alias.ip, `${p}.ip`, errs);
    if (ip !== null && isIP(ip ?? '') === 0) errs.invalid(`${p}.ip`, bounded(ip ?? ''), 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)');
    optList(alias.hostnames, `${p}.hostnames`, errs)?.forEach((hostname, j) => {
      if (typeof hostname !== 'string') return errs.invalid(`${p}.hostnames[${j}]`, hostname, 'must be a string');
      for (const msg of isDNS1123Subdomain(hostname)) errs.invalid(`${p}.hostnames[${j}]`, bounded(hostname), msg);
    });
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
    validateVolumeItems(vol, p, errs);
  });
  return names;
}

/**
 * The apiserver's `validateLocalDescendingPath`: relative, no `..` element (the item paths of
 * volumes, `subPath`); `validateLocalNonReservedPath` also refuses a leading `..`, which would
 * clash with the atomic writer's `..data`.
 */
function validateLocalDescendingPath(target: string, path: string, errs: FieldErrors): void {
  if (target.startsWith('/')) errs.invalid(path, bounded(target), 'must be a relative path');
  if (target.split('/').includes('..')) errs.invalid(path, bounded(target), "must not contain '..'");
}

function validateLocalNonReservedPath(target: string, path: string, errs: FieldErrors): void {
  validateLocalDescendingPath(target, path, errs);
  if (target.startsWith('..')) errs.invalid(path, bounded(target), "must not start with '..'");
}

/** The apiserver's `fileModeErrorMsg`. */
const fileModeErrorMsg = 'must be a number between 0 and 0777 (octal), both inclusive';

/**
 * Every file mode a volume source sets: `defaultMode` of secret, configMap, downwardAPI and
 * projected volumes, and `mode` of their items (`validateSecretVolumeSource`,
 * `validateConfigMapVolumeSource`, `validateDownwardAPIVolumeSource`, `validateProjectedVolumeSource`
 * with `validateKeyToPath`/`validateDownwardAPIVolumeFile`): 0 to 0777, so no setuid, setgid or
 * sticky bit ever reaches a file nodelet writes. Item paths are relative and descend
 * (`validateKeyToPath`, `validateDownwardAPIVolumeFile`).
 */
function validateVolumeItems(vol: Record<string, unknown>, path: string, errs: FieldErrors): void {
  const mode = (v: unknown, p: string) => {
    if (v === undefined || v === null) return;
    if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > 0o777) errs.invalid(p, v, fileModeErrorMsg);
  };
  const items = (source: Record<string, unknown>, p: string) =>
    optList(source.items, `${p}.items`, errs)?.forEach((item, j) => {
      if (!isRecord(item)) return errs.invalid(`${p}.items[${j}]`, item, 'must be an object');
      mode(item.mode, `${p}.items[${j}].mode`);
      const target = optString(item.path, `${p}.items[${j}].path`, errs);
      if (target === undefined || target === '') errs.required(`${p}.items[${j}].path`);
      else if (target !== null) validateLocalNonReservedPath(target, `${p}.items[${j}].path`, errs);
    });
  for (const kind of ['secret', 'configMap', 'downwardAPI'] as const) {
    const source = vol[kind];
    if (source === undefined || source === null) continue;
    if (!isRecord(source)) {
      errs.invalid(`${path}.${kind}`, source, 'must be an object');
      continue;
    }
    mode(source.defaultMode, `${path}.${kind}.defaultMode`);
    items(source, `${path}.${kind}`);
  }
  const projected = vol.projected;
  if (projected === undefined || projected === null) return;
  if (!isRecord(projected)) return errs.invalid(`${path}.projected`, projected, 'must be an object');
  mode(projected.defaultMode, `${path}.projected.defaultMode`);
  optList(projected.sources, `${path}.projected.sources`, errs)?.forEach((src, k) => {
    const p = `${path}.projected.sources[${k}]`;
    if (!isRecord(src)) return errs.invalid(p, src, 'must be an object');
    for (const kind of ['secret', 'configMap', 'downwardAPI'] as const) {
      const source = src[kind];
      if (source === undefined || source === null) continue;
      if (!isRecord(source)) errs.invalid(`${p}.${kind}`, source, 'must be an object');
      else items(source, `${p}.${kind}`);
    }
  });
}

/**
 * One container; `restartPolicy` may be one of `containerRestartPolicies`: any pod policy, for an
 * init container (`Always`: a sidecar) as for a regular one (ContainerRestartRules, on since 1.35;
 * `validateInitContainerRestartPolicy`).
 */
function validateContainer(c: unknown, path: string, names: Set<string>, volumes: Set<string>, errs: FieldErrors, containerRestartPolicies: readonly string[]): void {
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
  validateEnum(c.restartPolicy, `${path}.restartPolicy`, containerRestartPolicies, errs);
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
    const subPath = optString(m.subPath, `${p}.subPath`, errs);
    if (subPath) validateLocalDescendingPath(subPath, `${p}.subPath`, errs);
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

/** An environment variable name under RelaxedEnvironmentVariableValidation (on by default since 1.32): printable ASCII except '='. */
export const envNameRe = /^[\x20-\x3c\x3e-\x7e]+$/;
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

