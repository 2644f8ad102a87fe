import { BlockList, isIP, isIPv6 } from 'node:net';
import type { NetworkInterfaceInfo } from 'node:os';

/** What nodelet reads from the host to name itself; injectable so tests are deterministic. */
export interface HostInfo {
  readonly hostname: string;
  /** Shaped like `os.networkInterfaces()`. */
  readonly interfaces: NodeJS.Dict<readonly Pick<NetworkInterfaceInfo, 'address' | 'family' | 'internal'>[]>;
}

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4'); // also matches IPv4-mapped ::ffff:127.x
loopback.addAddress('::1', 'ipv6');

/** 127.0.0.0/8, ::1 (any spelling) or `localhost`. */
export function isLoopbackAddress(address: string): boolean {
  if (address.toLowerCase() === 'localhost') return true;
  if (isIP(address) === 0) return false;
  try {
    return loopback.check(address, isIPv6(address) ? 'ipv6' : 'ipv4');
  } catch {
    return false; // e.g. a zone-scoped link-local address, which BlockList cannot parse
  }
}

const unspecified = new BlockList();
unspecified.addAddress('0.0.0.0', 'ipv4');
unspecified.addAddress('::', 'ipv6');

/** `0.0.0.0` or `::` (any spelling): meaningless as a reported hostIP. */
export function isUnspecifiedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  try {
    return unspecified.check(address, family === 6 ? 'ipv6' : 'ipv4');
  } catch {
    return false;
  }
}

const DNS1123_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
const DNS1123_SUBDOMAIN = new RegExp(`^${DNS1123_LABEL}(\\.${DNS1123_LABEL})*$`);

/** Kubernetes' IsDNS1123Subdomain: node names must be one. Returns why not, or undefined. */
export function dns1123SubdomainError(name: string): string | undefined {
  if (name.length > 253) return 'must be no more than 253 characters';
  if (!DNS1123_SUBDOMAIN.test(name)) {
    return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
  }
  return undefined;
}

/** The first non-internal IPv4 address, the fallback `hostIP` when `--node-ip` is not given. */
export function firstExternalIPv4(interfaces: HostInfo['interfaces']): string | undefined {
  for (const addrs of Object.values(interfaces)) {
    const hit = addrs?.find((a) => a.family === 'IPv4' && !a.internal);
    if (hit !== undefined) return hit.address;
  }
  return undefined;
}
