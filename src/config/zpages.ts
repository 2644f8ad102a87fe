import { FLAGS, type FlagSpec } from './flags.js';
import type { Config } from './types.js';

/**
 * What the node's z-pages show of its configuration: `/flagz`, every flag with the value in
 * effect (pflag's `Value.String()`), and `/configz`, the `KubeletConfiguration` fields those
 * values came from or went to (the kubelet's `configz.New("kubeletconfig")`, as v1beta1 names).
 */

/** Go's `time.Duration.String()` of a whole number of milliseconds: `0s`, `1.5s`, `2m0s`, `4h0m0s`. */
export function goDuration(ms: number): string {
  if (ms === 0) return '0s';
  const sign = ms < 0 ? '-' : '';
  let rest = Math.abs(ms);
  if (rest < 1000) return `${sign}${rest}ms`;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = (rest / 1000).toString();
  if (hours) return `${sign}${hours}h${minutes}m${seconds}s`;
  if (minutes) return `${sign}${minutes}m${seconds}s`;
  return `${sign}${seconds}s`;
}

/** cliflag's map `String()`: `key<sep>value` pairs sorted by key, comma-separated. */
export function mapText(map: Readonly<Record<string, string>>, separator: string): string {
  return Object.keys(map).sort().map((k) => `${k}${separator}${map[k]}`).join(',');
}

function valueOf(config: Config, spec: FlagSpec): unknown {
  return (config as unknown as Record<string, unknown>)[spec.target];
}

/** A flag's value as pflag prints it; undefined for flags that only steer the command line (`--config`, `--help`). */
function flagText(spec: FlagSpec, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  switch (spec.kind) {
    case 'duration':
      return goDuration(value as number);
    case 'stringList':
      return `[${(value as readonly string[]).join(',')}]`;
    case 'map':
      return mapText(value as Readonly<Record<string, string>>, spec.separator);
    default:
      return String(value);
  }
}

/** `/flagz`'s flags: name → value, for every flag nodelet has. */
export function flagzValues(config: Config): Record<string, string> {
  const out: Record<string, string> = {};
  for (const spec of FLAGS) {
    const text = flagText(spec, valueOf(config, spec));
    if (text !== undefined) out[spec.name] = text;
  }
  return out;
}

/** `/configz`'s `kubeletconfig`: each configurable field at its dotted KubeletConfiguration path. */
export function kubeletConfiguration(config: Config): Record<string, unknown> {
  const out: Record<string, unknown> = { kind: 'KubeletConfiguration', apiVersion: 'kubelet.config.k8s.io/v1beta1' };
  for (const spec of FLAGS) {
    if (!spec.fileField) continue;
    const value = valueOf(config, spec);
    if (value === undefined) continue;
    const parts = spec.fileField.split('.');
    let into = out;
    for (const part of parts.slice(0, -1)) {
      const next = into[part];
      into = (typeof next === 'object' && next !== null ? next : (into[part] = {})) as Record<string, unknown>;
    }
    into[parts[parts.length - 1] as string] = spec.kind === 'duration' ? goDuration(value as number) : spec.kind === 'stringList' ? [...(value as readonly string[])] : spec.kind === 'map' ? { ...(value as Readonly<Record<string, string>>) } : value;
  }
  return out;
}
