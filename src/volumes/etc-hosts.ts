import { readFile } from 'node:fs/promises';
import { podHostname, podHostnameAndDomain } from '../api/names.js';
import type { Container, Pod } from '../api/types.js';
import { ContainerConfigError } from './errors.js';

/** Where containers see the pod's hosts file, and the header that marks it as the kubelet's. */
export const etcHostsPath = '/etc/hosts';
const managedHeader = '# Kubernetes-managed hosts file.\n';
const managedHeaderHostNetwork = '# Kubernetes-managed hosts file (host network).\n';

type HostAlias = NonNullable<NonNullable<Pod['spec']>['hostAliases']>[number];

/**
 * Whether the kubelet bind-mounts the pod's generated hosts file over `container`'s /etc/hosts
 * (`makeMounts`): always, unless the container mounts something at /etc/hosts itself.
 *
 * The kubelet also waits for a pod IP on the pod network; nodelet's pods run on network `none`
 * and never get one, so their file carries the localhost lines and host aliases only — still
 * the kubelet's content, where Docker would otherwise write its own.
 */
export function mountsEtcHosts(container: Container): boolean {
  return !(container.volumeMounts ?? []).some((m) => m.mountPath === etcHostsPath);
}

/**
 * The content of a pod's hosts file (`ensureHostsFile`): for a host-network pod the node's
 * own hosts file under the host-network header, else the managed file with the localhost lines
 * and one line per pod IP for the pod's hostname; `hostAliases` appended to both.
 */
export async function etcHostsContent(pod: Pod, podIPs: readonly string[], nodeHostsFile = etcHostsPath, clusterDomain = ''): Promise<string> {
  const aliases = hostAliasEntries(pod.spec?.hostAliases ?? []);
  if (pod.spec?.hostNetwork === true) return managedHeaderHostNetwork + (await readFile(nodeHostsFile, 'utf8')) + aliases;
  const { hostname, domain } = hostnameAndDomain(pod, clusterDomain);
  return managedHostsContent(podIPs, hostname, aliases, domain);
}

/** The sandbox was created with these (`podHostnameAndDomain` did not throw then); a spec that no longer passes keeps the plain name. */
function hostnameAndDomain(pod: Pod, clusterDomain: string): { hostname: string; domain: string } {
  try {
    return podHostnameAndDomain(pod, clusterDomain);
  } catch {
    return { hostname: podHostname(pod), domain: '' };
  }
}

/**
 * `managedHostsFileContent`, byte for byte: with a domain (`spec.subdomain`) each pod IP's line
 * is `<ip>\t<hostname>.<domain>\t<hostname>`, else `<ip>\t<hostname>`.
 */
export function managedHostsContent(podIPs: readonly string[], hostname: string, aliasEntries: string, domain = ''): string {
  for (const ip of podIPs) hostsField(ip, 'pod IP');
  hostsField(hostname, 'hostname');
  if (domain) hostsField(domain, 'domain');
  let out = managedHeader;
  out += '127.0.0.1\tlocalhost\n';
  out += '::1\tlocalhost ip6-localhost ip6-loopback\n';
  out += 'fe00::0\tip6-localnet\n';
  out += 'fe00::0\tip6-mcastprefix\n';
  out += 'fe00::1\tip6-allnodes\n';
  out += 'fe00::2\tip6-allrouters\n';
  for (const ip of podIPs) out += domain ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  return out + aliasEntries;
}

/** `hostsEntriesFromHostAliases`: one line per alias IP, its hostnames tab-separated. */
export function hostAliasEntries(aliases: readonly HostAlias[]): string {
  if (!aliases.length) return '';
  let out = '\n# Entries added by HostAliases.\n';
  for (const a of aliases) out += `${hostsField(a.ip, 'hostAliases ip')}\t${(a.hostnames ?? []).map((h) => hostsField(h, 'hostAliases hostname')).join('\t')}\n`;
  return out;
}

/**
 * One field of a hosts file line, refused (`CreateContainerConfigError`) unless it is a non-empty
 * run of characters other than whitespace and control characters: validation (api/validation.ts)
 * already allows only IPs and DNS names, and this keeps any value that slipped past it from
 * splitting a field or adding a line to the file.
 */
function hostsField(value: unknown, what: string): string {
  if (typeof value !== 'string' || value === '' || unsafeFieldRe.test(value)) throw new ContainerConfigError(`${what} ${safeQuote(value)} cannot be written to /etc/hosts: it must be a single word without whitespace or control characters`);
  return value;
}

/** Whitespace and control characters (C0, DEL, C1, and the Unicode line and paragraph separators). */
// eslint-disable-next-line no-control-regex -- control characters are what this refuses
const unsafeFieldRe = /[\x00-\x20\x7f-\x9f\u2028\u2029]/;

/** A refused value in a message: JSON-quoted (so a newline shows as `\n`) and cut at 64 characters. */
function safeQuote(value: unknown): string {
  const s = typeof value === 'string' ? value : String(value);
  return JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}...` : s);
}
