import type { Pod } from './types.js';

/**
 * The kubelet's `GetPodFullName`: `<name>_<namespace>`. It keys pods across sources (and
 * pairs a static pod with its mirror pod), so two pods with the same full name cannot coexist.
 */
export function podFullName(pod: Pick<Pod, 'metadata'>): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}`;
}

/**
 * The pod's hostname (`GeneratePodHostNameAndDomain`, `truncatePodHostnameIfNeeded`):
 * `spec.hostname` or the pod name, cut to 63 characters without a trailing `-` or `.`.
 */
export function podHostname(pod: Pick<Pod, 'metadata' | 'spec'>): string {
  return truncateHostname(pod.spec?.hostnameOverride || pod.spec?.hostname || pod.metadata?.name || '');
}

/** `truncatePodHostnameIfNeeded`: longer than 63 characters, cut to 63 and trailing `-` and `.` dropped. */
function truncateHostname(hostname: string): string {
  return hostname.length <= 63 ? hostname : hostname.slice(0, 63).replace(/[-.]+$/, '');
}

/**
 * The kubelet's `GeneratePodHostNameAndDomain`: the pod's short hostname (`spec.hostnameOverride`
 * alone, without a domain, when set; else `spec.hostname` or the pod name, truncated) and, with `spec.subdomain`, its domain
 * `<subdomain>.<namespace>.svc.<clusterDomain>` (formed as the kubelet does even when the
 * cluster domain is empty). Throws the kubelet's error for a hostname or subdomain that is not a
 * DNS label.
 */
export function podHostnameAndDomain(pod: Pick<Pod, 'metadata' | 'spec'>, clusterDomain: string): { hostname: string; domain: string } {
  const name = pod.metadata?.name ?? '';
  const override = pod.spec?.hostnameOverride;
  if (override !== undefined && override !== null) {
    // HostnameOverride (on since 1.35): the name as given, truncated, and no domain at all.
    const msgs = isDNS1123Subdomain(override);
    if (msgs.length) throw new Error(`pod HostnameOverride ${JSON.stringify(override)} is not a valid DNS subdomain: ${msgs.join(';')}`);
    return { hostname: truncateHostname(override), domain: '' };
  }
  let hostname = name;
  const given = pod.spec?.hostname ?? '';
  if (given) {
    const msgs = isDNS1123Label(given);
    if (msgs.length) throw new Error(`pod Hostname ${JSON.stringify(given)} is not a valid DNS label: ${msgs.join(';')}`);
    hostname = given;
  }
  hostname = truncateHostname(hostname);
  if (!hostname) throw new Error(`hostname for pod ${JSON.stringify(name)} was invalid: ${JSON.stringify(given || name)}`);
  const subdomain = pod.spec?.subdomain ?? '';
  if (!subdomain) return { hostname, domain: '' };
  const msgs = isDNS1123Label(subdomain);
  if (msgs.length) throw new Error(`pod Subdomain ${JSON.stringify(subdomain)} is not a valid DNS label: ${msgs.join(';')}`);
  return { hostname, domain: `${subdomain}.${pod.metadata?.namespace ?? ''}.svc.${clusterDomain}` };
}

/** The Linux kernel's nodename field holds 64 characters (plus the terminating NUL). */
export const FQDNMaxLength = 64;

/**
 * The kubelet's `GetNodenameForKernel`: the hostname the pod's UTS namespace gets — the short
 * hostname, or with `setHostnameAsFQDN` and a domain the FQDN `<hostname>.<domain>`, which must fit
 * the kernel's 64 characters (the kubelet's error otherwise; the sandbox is not created).
 */
export function nodenameForKernel(hostname: string, domain: string, setHostnameAsFQDN: boolean | undefined): string {
  if (!domain || setHostnameAsFQDN !== true) return hostname;
  const fqdn = `${hostname}.${domain}`;
  if (fqdn.length > FQDNMaxLength) {
    throw new Error(`failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (${FQDNMaxLength} characters is the max, ${fqdn.length} characters requested)`);
  }
  return fqdn;
}

// Formats and messages are apimachinery's (k8s.io/apimachinery/pkg/util/validation), verbatim,
// so clients see the same text as from an apiserver.
const dns1123LabelFmt = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const dns1123LabelErrMsg =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
export const DNS1123LabelMaxLength = 63;
const dns1123LabelRe = new RegExp(`^${dns1123LabelFmt}$`);

const dns1123SubdomainFmt = `${dns1123LabelFmt}(\\.${dns1123LabelFmt})*`;
const dns1123SubdomainErrMsg =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
export const DNS1123SubdomainMaxLength = 253;
const dns1123SubdomainRe = new RegExp(`^${dns1123SubdomainFmt}$`);

/** apimachinery's `MaxLenError`. */
export function maxLenError(length: number): string {
  return `must be no more than ${length} characters`;
}

/** apimachinery's `RegexError`, including its odd `',  or '` spacing between examples. */
export function regexError(msg: string, fmt: string, ...examples: string[]): string {
  if (examples.length === 0) return `${msg} (regex used for validation is '${fmt}')`;
  let out = `${msg} (e.g. `;
  examples.forEach((ex, i) => {
    if (i > 0) out += ' or ';
    out += `'${ex}', `;
  });
  return `${out}regex used for validation is '${fmt}')`;
}

/** `IsDNS1123Label`: empty array when valid, else the apiserver's messages. */
export function isDNS1123Label(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123LabelMaxLength) errs.push(maxLenError(DNS1123LabelMaxLength));
  if (!dns1123LabelRe.test(value)) {
    // A valid subdomain that is not a valid label can only be wrong because of its dots.
    if (dns1123SubdomainRe.test(value)) errs.push('must not contain dots');
    else errs.push(regexError(dns1123LabelErrMsg, dns1123LabelFmt, 'my-name', '123-abc'));
  }
  return errs;
}

/** `IsDNS1123Subdomain`: empty array when valid, else the apiserver's messages. */
export function isDNS1123Subdomain(value: string): string[] {
  const errs: string[] = [];
  if (value.length > DNS1123SubdomainMaxLength) errs.push(maxLenError(DNS1123SubdomainMaxLength));
  if (!dns1123SubdomainRe.test(value)) errs.push(regexError(dns1123SubdomainErrMsg, dns1123SubdomainFmt, 'example.com'));
  return errs;
}

const qnameCharFmt = '[A-Za-z0-9]';
const qnameExtCharFmt = '[-A-Za-z0-9_.]';
const qualifiedNameFmt = `(${qnameCharFmt}${qnameExtCharFmt}*)?${qnameCharFmt}`;
const qualifiedNameErrMsg = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const qualifiedNameMaxLength = 63;
const qualifiedNameRe = new RegExp(`^${qualifiedNameFmt}$`);

/** `IsQualifiedName` (label and annotation keys): `[prefix/]name`, prefix a DNS subdomain, name ≤ 63. */
export function isQualifiedName(value: string): string[] {
  const errs: string[] = [];
  const parts = value.split('/');
  let name: string;
  if (parts.length === 1) {
    name = parts[0] ?? '';
  } else if (parts.length === 2) {
    const prefix = parts[0] ?? '';
    name = parts[1] ?? '';
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else for (const msg of isDNS1123Subdomain(prefix)) errs.push(`prefix part ${msg}`);
  } else {
    return [`a qualified name ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > qualifiedNameMaxLength) errs.push(`name part ${maxLenError(qualifiedNameMaxLength)}`);
  if (!qualifiedNameRe.test(name)) errs.push(`name part ${regexError(qualifiedNameErrMsg, qualifiedNameFmt, 'MyName', 'my.name', '123-abc')}`);
  return errs;
}

const labelValueFmt = `(${qualifiedNameFmt})?`;
const labelValueErrMsg =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
export const LabelValueMaxLength = 63;
const labelValueRe = new RegExp(`^${labelValueFmt}$`);

/** `IsValidLabelValue`: empty, or a qualified name's name part (≤ 63 characters). */
export function isValidLabelValue(value: string): string[] {
  const errs: string[] = [];
  if (value.length > LabelValueMaxLength) errs.push(maxLenError(LabelValueMaxLength));
  if (!labelValueRe.test(value)) errs.push(regexError(labelValueErrMsg, labelValueFmt, 'MyValue', 'my_value', '12345'));
  return errs;
}

const uidRe = /^[0-9a-zA-Z-]{1,64}$/;

/**
 * Whether a route parameter can be a pod UID (apiserver UUIDs, or the kubelet's 32-hex-digit
 * static pod hashes). Rejecting anything else early keeps odd bytes out of lookups and logs.
 */
export function isValidUID(value: string): boolean {
  return uidRe.test(value);
}
