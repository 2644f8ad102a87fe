import { readFile } from 'node:fs/promises';
import { nodenameForKernel, podHostnameAndDomain } from '../api/names.js';
import type { Pod } from '../api/types.js';
import type { SandboxConfig } from '../runtime/types.js';
import type { VolumeManager } from '../volumes/manager.js';
import { MaxResolvConfLength, podDNSConfig, resolvConfContent, resolvConfLimitProblem, type DNSEvent, type NodeDNS } from '../volumes/resolv-conf.js';

export interface SandboxConfigDeps {
  /** `--cluster-dns`, `--cluster-domain`, `--resolv-conf` and the node's IPs. */
  readonly dns: NodeDNS;
  /** Writes the pod's resolv.conf; absent: containers keep Docker's file. */
  readonly volumes: VolumeManager | undefined;
  /** Records a Warning event on the pod or on the node (`MissingClusterDNS`, `DNSConfigForming`). */
  readonly warn: (on: DNSEvent['on'], reason: string, message: string) => void;
  /** Reads the node's resolver file; tests pass their own. */
  readonly readResolvConf?: (path: string) => Promise<string>;
}

/**
 * What the kubelet's `generatePodSandboxConfig` resolves before the sandbox is created: the
 * hostname (`GeneratePodHostNameAndDomain`, then `GetNodenameForKernel` for
 * `setHostnameAsFQDN`; none on the host network) and the pod's DNS settings (`GetPodDNS`),
 * written to `<root-dir>/pods/<uid>/resolv.conf` and bind-mounted at /etc/resolv.conf in every
 * container. Throws what the kubelet fails the sandbox with (event `FailedCreatePodSandBox`): an
 * invalid hostname or subdomain, an FQDN over 64 characters, an unreadable `--resolv-conf`.
 */
export async function podSandboxConfig(pod: Pod, deps: SandboxConfigDeps): Promise<SandboxConfig> {
  let hostname: string | undefined;
  if (pod.spec?.hostNetwork !== true) {
    const named = podHostnameAndDomain(pod, deps.dns.clusterDomain);
    hostname = nodenameForKernel(named.hostname, named.domain, pod.spec?.setHostnameAsFQDN);
  }
  // getHostDNSConfig reads the file for every policy, so an unreadable one fails every pod.
  const hostFile = deps.dns.resolvConf ? await (deps.readResolvConf ?? readNodeResolvConf)(deps.dns.resolvConf) : '';
  const events: DNSEvent[] = [];
  const config = podDNSConfig(pod, deps.dns, hostFile, events);
  for (const e of events) deps.warn(e.on, e.reason, e.message);
  await deps.volumes?.writeResolvConf(pod, resolvConfContent(config));
  return hostname === undefined ? {} : { hostname };
}

/**
 * `CheckLimitsForResolvConf` at the start of the sync loop: a `--resolv-conf` that cannot be read
 * or parsed, or whose search line pods could not take, is reported once with `warn` (the node's
 * Warning event); pods still start (their own file is cut to the limits, `DNSConfigForming`).
 */
export async function checkLimitsForResolvConf(dns: Pick<NodeDNS, 'resolvConf' | 'clusterDomain'>, warn: (reason: string, message: string) => void, read: (path: string) => Promise<string> = readNodeResolvConf): Promise<void> {
  if (!dns.resolvConf) return;
  let problem: string | undefined;
  try {
    problem = resolvConfLimitProblem(dns.resolvConf, await read(dns.resolvConf), dns.clusterDomain);
  } catch (err) {
    // Go's *PathError text: `open <path>: <strerror>`.
    const why = (err as NodeJS.ErrnoException).code ? String((err as Error).message).replace(/^[A-Z]+: ([^,]+),.*$/, '$1') : (err as Error).message;
    problem = `open ${dns.resolvConf}: ${why}`;
  }
  if (problem !== undefined) warn('CheckLimitsForResolvConf', problem);
}

/** `utilio.ReadAtMost`: more than 10 MiB is refused. */
async function readNodeResolvConf(path: string): Promise<string> {
  const text = await readFile(path, 'utf8');
  if (Buffer.byteLength(text) > MaxResolvConfLength) throw new Error('the read limit is reached');
  return text;
}
