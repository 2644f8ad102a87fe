import { DNS1123SubdomainMaxLength } from '../api/names.js';
import type { Container, Pod } from '../api/types.js';
import { MaxDNSNameservers, MaxDNSSearchListChars, MaxDNSSearchPaths } from '../api/validation.js';

/**
 * A pod's DNS resolver settings, as the kubelet's `dns.Configurer` forms them (`GetPodDNS`,
 * pkg/kubelet/network/dns) and a CRI runtime writes them into the pod's `resolv.conf`. Pure:
 * the node's resolver file is read by the caller and passed in as text.
 */

/** Where containers see the pod's resolver file. */
export const resolvConfPath = '/etc/resolv.conf';

/** The CRI's `DNSConfig`: nameservers, search domains and options (`name` or `name:value`). */
export interface DNSConfig {
  readonly servers: readonly string[];
  readonly searches: readonly string[];
  readonly options: readonly string[];
}

/** The node's side of `GetPodDNS`: the kubelet's `--cluster-dns`, `--cluster-domain`, `--resolv-conf`. */
export interface NodeDNS {
  readonly clusterDNS: readonly string[];
  readonly clusterDomain: string;
  /** `--resolv-conf`: empty means none (pods then get a localhost nameserver). */
  readonly resolvConf: string;
  /** The node's IPs (`--node-ip`), for the localhost nameserver's family when `resolvConf` is empty. */
  readonly nodeIPs: readonly string[];
}

/** An event `GetPodDNS` records: on the pod, or on the node (`MissingClusterDNS` is both). */
export interface DNSEvent {
  readonly on: 'pod' | 'node';
  readonly reason: string;
  readonly message: string;
}

/** A search path longer than a DNS subdomain (253) makes some resolvers (glibc 2.28) abort. */
const maxSearchPathLength = DNS1123SubdomainMaxLength;
/** `maxResolveConfLength`: the kubelet reads at most 10 MiB of the node's file. */
export const MaxResolvConfLength = 10 * (1 << 20);

/** `defaultDNSOptions`. */
const defaultDNSOptions = ['ndots:5'];

type PodDNSType = 'cluster' | 'host' | 'none';

/**
 * `parseResolvConf`: `nameserver` lines accumulate (one without an address is an error), the last
 * `search` line wins (each domain without its trailing dot), the last `options` line wins;
 * comments (`#`) and other keywords are ignored.
 */
export function parseResolvConf(text: string): DNSConfig {
  const servers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  const errors: string[] = [];
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('#')) continue;
    const fields = trimmed.split(/\s+/).filter(Boolean);
    if (!fields.length) continue;
    if (fields[0] === 'nameserver') {
      if (fields.length >= 2) servers.push(fields[1] ?? '');
      else errors.push('nameserver list is empty ');
    }
    if (fields[0] === 'search') searches = fields.slice(1).map((s) => (s.endsWith('.') ? s.slice(0, -1) : s));
    if (fields[0] === 'options') options = fields.slice(1);
  }
  // utilerrors.NewAggregate: one error as is, several as "[a, b]".
  if (errors.length === 1) throw new Error(errors[0]);
  if (errors.length > 1) throw new Error(`[${errors.join(', ')}]`);
  return { servers, searches, options };
}

/**
 * The kubelet's `CheckLimitsForResolvConf`, run once at start-up on `--resolv-conf`: what is wrong
 * with the node's search line for pods (the message of the node's `CheckLimitsForResolvConf`
 * warning), or undefined. With a cluster domain, three of the 32 search paths are the cluster's.
 */
export function resolvConfLimitProblem(path: string, text: string, clusterDomain: string): string | undefined {
  let searches: readonly string[];
  try {
    searches = parseResolvConf(text).searches;
  } catch (err) {
    return (err as Error).message;
  }
  const domainCountLimit = clusterDomain ? MaxDNSSearchPaths - 3 : MaxDNSSearchPaths;
  if (searches.length > domainCountLimit) return `Resolv.conf file '${path}' contains search line consisting of more than ${domainCountLimit} domains!`;
  if (searches.some((s) => s.length > maxSearchPathLength)) return `Resolv.conf file "${path}" contains a search path which length is more than allowed ${maxSearchPathLength} chars!`;
  if (searches.join(' ').length > MaxDNSSearchListChars) return `Resolv.conf file '${path}' contains search line which length is more than allowed ${MaxDNSSearchListChars} chars!`;
  return undefined;
}

/** `getPodDNSType`: `ClusterFirst` on the host network falls back to `Default`. */
function podDNSType(pod: Pod): PodDNSType {
  switch (pod.spec?.dnsPolicy) {
    case 'None':
      return 'none';
    case 'ClusterFirstWithHostNet':
      return 'cluster';
    case 'Default':
      return 'host';
    case 'ClusterFirst':
    default:
      // An unknown policy (the apiserver rejects them) is ClusterFirst, as in the kubelet; so is an
      // absent one (defaulting fills in ClusterFirst).
      return pod.spec?.hostNetwork === true ? 'host' : 'cluster';
  }
}

function omitDuplicates(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** `generateSearchesForDNSClusterFirst`: `<ns>.svc.<domain> svc.<domain> <domain>`, then the host's. */
function clusterSearches(hostSearches: readonly string[], namespace: string, clusterDomain: string): string[] {
  if (!clusterDomain) return [...hostSearches];
  return omitDuplicates([`${namespace}.svc.${clusterDomain}`, `svc.${clusterDomain}`, clusterDomain, ...hostSearches]);
}

type PodDNSOption = NonNullable<NonNullable<NonNullable<Pod['spec']>['dnsConfig']>['options']>[number];

/**
 * `mergeDNSOptions`: one entry per option name, the pod's `dnsConfig.options` overriding the
 * existing value. The kubelet rebuilds the list from a Go map (random order); nodelet keeps the
 * order in which names first appear, so the file is stable.
 */
export function mergeDNSOptions(existing: readonly string[], podOptions: readonly PodDNSOption[]): string[] {
  const merged = new Map<string, string>();
  for (const op of existing) {
    const i = op.indexOf(':');
    if (i === -1) merged.set(op, '');
    else merged.set(op.slice(0, i), op.slice(i + 1));
  }
  for (const op of podOptions) merged.set(op.name ?? '', op.value ?? '');
  return [...merged].map(([name, value]) => (value ? `${name}:${value}` : name));
}

/** `appendDNSConfig`: the pod's nameservers and searches appended (duplicates dropped), options merged. */
function appendDNSConfig(base: DNSConfig, pod: NonNullable<NonNullable<Pod['spec']>['dnsConfig']>): DNSConfig {
  return {
    servers: omitDuplicates([...base.servers, ...(pod.nameservers ?? [])]),
    searches: omitDuplicates([...base.searches, ...(pod.searches ?? [])]),
    options: mergeDNSOptions(base.options, pod.options ?? []),
  };
}

/**
 * `formDNSConfigFitsLimits`: at most 3 nameservers; at most 32 search paths, none longer than
 * 253 characters, the line at most 2048 characters (paths cut from the end). Each cut records
 * the kubelet's `DNSConfigForming` warning.
 */
export function fitDNSLimits(config: DNSConfig, events: DNSEvent[]): DNSConfig {
  let servers = [...config.servers];
  if (servers.length > MaxDNSNameservers) {
    servers = servers.slice(0, MaxDNSNameservers);
    events.push({ on: 'pod', reason: 'DNSConfigForming', message: `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${servers.join(' ')}` });
  }
  let exceeded = false;
  let searches = [...config.searches];
  if (searches.length > MaxDNSSearchPaths) {
    searches = searches.slice(0, MaxDNSSearchPaths);
    exceeded = true;
  }
  const short = searches.filter((s) => s.length <= maxSearchPathLength);
  if (short.length !== searches.length) exceeded = true;
  searches = short;
  const lineLength = searches.join(' ').length;
  if (lineLength > MaxDNSSearchListChars) {
    let cutLength = 0;
    let cut = 0;
    for (let i = searches.length - 1; i >= 0; i--) {
      cutLength += (searches[i]?.length ?? 0) + 1;
      cut++;
      if (lineLength - cutLength <= MaxDNSSearchListChars) break;
    }
    searches = searches.slice(0, searches.length - cut);
    exceeded = true;
  }
  if (exceeded) {
    events.push({ on: 'pod', reason: 'DNSConfigForming', message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${searches.join(' ')}` });
  }
  return { servers, searches, options: [...config.options] };
}

/** The kubelet's `format.Pod`: `<name>_<namespace>(<uid>)`. */
function podDesc(pod: Pod): string {
  return `${pod.metadata?.name ?? ''}_${pod.metadata?.namespace ?? ''}(${pod.metadata?.uid ?? ''})`;
}

/**
 * `GetPodDNS`: the pod's resolver settings for its `dnsPolicy` and `dnsConfig`.
 * - `ClusterFirst` (not on the host network) and `ClusterFirstWithHostNet`: the cluster
 *   nameservers only, the cluster search domains before the node's, `options ndots:5`; without
 *   `--cluster-dns`, the `MissingClusterDNS` warning and `Default` instead.
 * - `Default` (and `ClusterFirst` on the host network): the node's `--resolv-conf`; with no such
 *   file configured, a localhost nameserver (`::1` for IPv6 node IPs) and search `.`.
 * - `None`: nothing but the pod's `dnsConfig`.
 * `dnsConfig` is then appended (`appendDNSConfig`) and the result cut to the limits.
 * `hostResolvConf` is the text of `node.resolvConf` (ignored when that is empty); events to record
 * are pushed to `events`.
 */
export function podDNSConfig(pod: Pod, node: NodeDNS, hostResolvConf: string, events: DNSEvent[]): DNSConfig {
  let config: DNSConfig = node.resolvConf ? parseResolvConf(hostResolvConf) : { servers: [], searches: [], options: [] };
  let type = podDNSType(pod);
  if (type === 'none') config = { servers: [], searches: [], options: [] };
  if (type === 'cluster') {
    if (node.clusterDNS.length) {
      config = { servers: [...node.clusterDNS], searches: clusterSearches(config.searches, pod.metadata?.namespace ?? '', node.clusterDomain), options: defaultDNSOptions };
    } else {
      const nodeMessage = 'kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.';
      events.push({ on: 'node', reason: 'MissingClusterDNS', message: nodeMessage });
      events.push({ on: 'pod', reason: 'MissingClusterDNS', message: `pod: ${JSON.stringify(podDesc(pod))}. ${nodeMessage}` });
      type = 'host';
    }
  }
  if (type === 'host' && !node.resolvConf) {
    const servers = node.nodeIPs.map((ip) => (ip.includes(':') ? '::1' : '127.0.0.1'));
    config = { ...config, servers: servers.length ? servers : ['127.0.0.1'], searches: ['.'] };
  }
  const podConfig = pod.spec?.dnsConfig;
  if (podConfig) config = appendDNSConfig(config, podConfig);
  return fitDNSLimits(config, events);
}

/** Whitespace and control characters (C0, DEL, C1, and the Unicode line and paragraph separators). */
// eslint-disable-next-line no-control-regex -- control characters are what this refuses
const unsafeWordRe = /[\x00-\x20\x7f-\x9f\u2028\u2029]/;

/**
 * The file a CRI runtime writes from a `DNSConfig` (containerd's and CRI-O's
 * `parseDNSOptions`): `search …`, one `nameserver …` line each, `options …`. Empty when all
 * three are: the runtime then copies the node's /etc/resolv.conf instead. Throws (the sandbox
 * is not created) on a word with whitespace or a control character, which would split the line
 * or add lines (validation refuses such pod values already; this is the last line of defence).
 */
export function resolvConfContent(config: DNSConfig): string {
  for (const [what, words] of [['search domain', config.searches], ['nameserver', config.servers], ['option', config.options]] as const) {
    for (const word of words) {
      if (word === '' || unsafeWordRe.test(word)) throw new Error(`${what} ${JSON.stringify(word.length > 64 ? `${word.slice(0, 64)}...` : word)} cannot be written to resolv.conf: it must be a single word without whitespace or control characters`);
    }
  }
  let out = '';
  if (config.searches.length) out += `search ${config.searches.join(' ')}\n`;
  for (const server of config.servers) out += `nameserver ${server}\n`;
  if (config.options.length) out += `options ${config.options.join(' ')}\n`;
  return out;
}

/** Whether the pod's resolver file is bind-mounted over `container`'s: unless it mounts /etc/resolv.conf itself. */
export function mountsResolvConf(container: Container): boolean {
  return !(container.volumeMounts ?? []).some((m) => m.mountPath === resolvConfPath);
}
