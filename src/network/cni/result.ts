import { isIP } from 'node:net';
import { isRecord } from '../../api/validation.js';

/**
 * Pod IPs from a CNI result of any spec version (containernetworking/cni `pkg/types/040`,
 * `pkg/types/100`, `pkg/types/020`): 0.1.0/0.2.0 `ip4.ip`/`ip6.ip`; 0.3.x/0.4.0 `ips[]` with a
 * `version`; 1.x `ips[]` without it (the family is the address's). Pure; malformed input throws
 * a `ResultError` saying what is wrong.
 */

export class ResultError extends Error {
  override name = 'ResultError';
}

/** `10.0.0.2/24` → `10.0.0.2`, checked to be an address of the family (when one is given). */
function address(cidr: unknown, where: string, family?: 4 | 6): { ip: string; family: 4 | 6 } {
  if (typeof cidr !== 'string') throw new ResultError(`${where}: address is not a string`);
  const slash = cidr.indexOf('/');
  const ip = slash < 0 ? cidr : cidr.slice(0, slash);
  const fam = isIP(ip);
  if (fam !== 4 && fam !== 6) throw new ResultError(`${where}: invalid address ${JSON.stringify(cidr.slice(0, 100))}`);
  if (slash >= 0) {
    const len = cidr.slice(slash + 1);
    if (!/^\d{1,3}$/.test(len) || Number(len) > (fam === 4 ? 32 : 128)) throw new ResultError(`${where}: invalid prefix length in ${JSON.stringify(cidr.slice(0, 100))}`);
  }
  if (family !== undefined && fam !== family) throw new ResultError(`${where}: ${ip} is not IPv${family}`);
  return { ip, family: fam };
}

/**
 * The addresses of the container's interface, in result order. With `netns`, an `ips[]` entry
 * whose `interface` index names an interface whose `sandbox` is another netns (the host side of
 * a veth, the bridge) is left out; an entry without `interface` is kept.
 */
export function resultAddresses(result: unknown, netns?: string): { ip: string; family: 4 | 6 }[] {
  if (!isRecord(result)) throw new ResultError('result is not a JSON object');
  if (result.ips !== undefined) {
    if (!Array.isArray(result.ips)) throw new ResultError('result "ips" is not a list');
    let interfaces: unknown[] | undefined;
    if (result.interfaces !== undefined && result.interfaces !== null) {
      if (!Array.isArray(result.interfaces)) throw new ResultError('result "interfaces" is not a list');
      interfaces = result.interfaces;
    }
    const out: { ip: string; family: 4 | 6 }[] = [];
    result.ips.forEach((entry: unknown, i) => {
      const where = `result ips[${i}]`;
      if (!isRecord(entry)) throw new ResultError(`${where}: not an object`);
      let family: 4 | 6 | undefined;
      if (entry.version !== undefined) {
        if (entry.version !== '4' && entry.version !== '6') throw new ResultError(`${where}: invalid "version" ${JSON.stringify(entry.version)}`);
        family = entry.version === '4' ? 4 : 6;
      }
      const a = address(entry.address, where, family);
      if (entry.interface !== undefined && entry.interface !== null) {
        const idx = entry.interface;
        if (typeof idx !== 'number' || !Number.isInteger(idx) || idx < 0) throw new ResultError(`${where}: invalid "interface" ${JSON.stringify(idx)}`);
        if (interfaces) {
          const iface = interfaces[idx];
          if (!isRecord(iface)) throw new ResultError(`${where}: "interface" ${idx} names no interface`);
          if (netns !== undefined && netns !== '' && iface.sandbox !== netns) return;
        }
      }
      out.push(a);
    });
    return out;
  }
  // 0.1.0 / 0.2.0
  const out: { ip: string; family: 4 | 6 }[] = [];
  for (const [key, family] of [['ip4', 4], ['ip6', 6]] as const) {
    const v = result[key];
    if (v === undefined || v === null) continue;
    if (!isRecord(v)) throw new ResultError(`result "${key}" is not an object`);
    out.push(address(v.ip, `result ${key}`, family));
  }
  return out;
}

/** `status.podIPs` from a result: the first IPv4, then the first IPv6, without prefix length. */
export function podIPsFromResult(result: unknown, netns?: string): string[] {
  const addrs = resultAddresses(result, netns);
  const v4 = addrs.find((a) => a.family === 4);
  const v6 = addrs.find((a) => a.family === 6);
  return [v4?.ip, v6?.ip].filter((x): x is string => x !== undefined);
}

/** `a.b.c` compared as numbers; malformed parts count as 0. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map((x) => Number.parseInt(x, 10) || 0);
  const pb = b.split('.').map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < 3; i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
