import { parseDuration } from './duration.js';
import { ValueError, quote } from './errors.js';
import type { EnumTarget, FlagSpec, FlagValues } from './flags.js';
import { parseBool, parseInt32 } from './strconv.js';

export type Settings = Partial<FlagValues>;

function checkInt(spec: FlagSpec & { kind: 'int' | 'port' }, n: number): number {
  if (spec.kind === 'port' && (n < 1 || n > 65535)) throw new ValueError('must be between 1 and 65535, inclusive');
  if (spec.kind === 'int' && n < (spec.min ?? 0)) throw new ValueError(spec.min === undefined ? 'must not be negative' : `must be at least ${spec.min}`);
  return n;
}

function durationMs(spec: FlagSpec & { kind: 'duration' }, raw: string): number {
  const ms = parseDuration(raw);
  if (ms < 0) throw new ValueError('must not be negative');
  // A polling period of 0 would spin the loop it paces; only timeouts may be turned off with 0.
  if (ms === 0 && spec.allowZero !== true) throw new ValueError('must be greater than zero');
  return ms;
}

/** Converts a command-line string for `spec` and stores it in `out`; throws ValueError (reason only). */
export function setFromString(out: Settings, spec: FlagSpec, raw: string): void {
  switch (spec.kind) {
    case 'string':
      if (spec.nonEmpty === true && raw === '') throw new ValueError('must not be empty');
      out[spec.target] = raw;
      return;
    case 'int':
    case 'port':
      out[spec.target] = checkInt(spec, parseInt32(raw, spec.kind === 'port' ? 0 : 10));
      return;
    case 'duration':
      out[spec.target] = durationMs(spec, raw);
      return;
    case 'bool':
      out[spec.target] = parseBool(raw);
      return;
    case 'enum':
      setEnum(out, spec, raw);
      return;
    case 'stringList':
      // pflag's StringSlice: the first use replaces the default, each further one appends.
      out[spec.target] = [...(out[spec.target] ?? []), ...splitCSV(raw)];
      return;
    case 'map':
      // cliflag's Set: the first use replaces the default (Settings hold only given values), each further one adds.
      out[spec.target] = { ...(out[spec.target] ?? {}), ...splitPairs(raw, spec.separator) };
      return;
  }
}

/**
 * cliflag's map flags: `a<sep>b,c<sep>d`, empty items skipped, key and value trimmed, split at the
 * first separator; anything else is "malformed pair, expect string<sep>string".
 */
export function splitPairs(raw: string, separator: '=' | '<'): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of raw.split(',')) {
    if (item === '') continue;
    const at = item.indexOf(separator);
    if (at < 0) throw new ValueError(`malformed pair, expect string${separator}string`);
    out[item.slice(0, at).trim()] = item.slice(at + 1).trim();
  }
  return out;
}

/** pflag's `readAsCSV`: one CSV record (`""` is none; `"a,b"` quoted keeps its comma). */
export function splitCSV(raw: string): string[] {
  if (raw === '') return [];
  const fields: string[] = [];
  let field = '';
  let quoted = false;
  let start = true;
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charAt(i);
    if (quoted) {
      if (c === '"' && raw.charAt(i + 1) === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"' && start) {
      quoted = true;
      start = false;
    } else if (c === ',') {
      fields.push(field);
      field = '';
      start = true;
    } else {
      field += c;
      start = false;
    }
  }
  if (quoted) throw new ValueError('unterminated quoted field');
  fields.push(field);
  return fields;
}

/** Generic over the target so TypeScript ties each enum flag's values to its own field. */
function setEnum<K extends EnumTarget>(out: Settings, spec: { readonly target: K; readonly values: readonly FlagValues[K][] }, raw: string): void {
  const value = spec.values.find((v) => v === raw);
  if (value === undefined) throw new ValueError(`supported values: ${spec.values.map((v) => quote(String(v))).join(', ')}`);
  out[spec.target] = value;
}

function typeName(v: unknown): string {
  return Array.isArray(v) ? 'list' : v === null ? 'null' : typeof v === 'object' ? 'mapping' : typeof v;
}

/**
 * Stores a decoded YAML value. Types follow the KubeletConfiguration JSON schema: durations are
 * strings (metav1.Duration), ports and levels are integers; a type mismatch is an error there too.
 */
export function setFromYaml(out: Settings, spec: FlagSpec, value: unknown): void {
  switch (spec.kind) {
    case 'int':
    case 'port':
      if (typeof value !== 'number' || !Number.isInteger(value)) {
        throw new ValueError(`expected an integer, got ${typeName(value)} ${JSON.stringify(value)}`);
      }
      out[spec.target] = checkInt(spec, value);
      return;
    case 'bool':
      if (typeof value !== 'boolean') throw new ValueError(`expected a boolean, got ${typeName(value)}`);
      out[spec.target] = value;
      return;
    case 'duration':
      if (typeof value !== 'string') {
        throw new ValueError(`expected a duration string such as "1m0s", got ${typeName(value)} ${JSON.stringify(value)}`);
      }
      setFromString(out, spec, value);
      return;
    case 'string':
    case 'enum':
      if (typeof value !== 'string') throw new ValueError(`expected a string, got ${typeName(value)}`);
      setFromString(out, spec, value);
      return;
    case 'stringList':
      if (!Array.isArray(value) || !value.every((v): v is string => typeof v === 'string')) {
        throw new ValueError(`expected a list of strings, got ${typeName(value)} ${JSON.stringify(value)}`);
      }
      out[spec.target] = [...value];
      return;
    case 'map': {
      // map[string]string: a mapping of strings (numbers are refused, as Go's JSON decoding does).
      if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ValueError(`expected a mapping of strings, got ${typeName(value)}`);
      const entries = Object.entries(value as Record<string, unknown>);
      const bad = entries.find(([, v]) => typeof v !== 'string');
      if (bad) throw new ValueError(`expected a string for ${quote(bad[0])}, got ${typeName(bad[1])} ${JSON.stringify(bad[1])}`);
      out[spec.target] = Object.fromEntries(entries) as Record<string, string>;
      return;
    }
  }
}

/** The table's defaults, with environment overrides (`$DOCKER_HOST`) applied. */
export function flagDefaults(specs: readonly FlagSpec[], env: NodeJS.ProcessEnv): Settings {
  const out: Settings = {};
  for (const spec of specs) {
    switch (spec.kind) {
      case 'string': {
        const fromEnv = spec.envDefault === undefined ? undefined : env[spec.envDefault];
        out[spec.target] = fromEnv !== undefined && fromEnv !== '' ? fromEnv : spec.default;
        break;
      }
      case 'int':
      case 'port':
        out[spec.target] = spec.default;
        break;
      case 'duration':
        out[spec.target] = parseDuration(spec.default);
        break;
      case 'bool':
        out[spec.target] = spec.default;
        break;
      case 'enum':
        setDefault(out, spec);
        break;
      case 'stringList':
        out[spec.target] = [...spec.default];
        break;
      case 'map':
        out[spec.target] = { ...spec.default };
        break;
    }
  }
  return out;
}

function setDefault<K extends EnumTarget>(out: Settings, spec: { readonly target: K; readonly default: FlagValues[K] }): void {
  out[spec.target] = spec.default;
}
