import { setFromString, type Settings } from './convert.js';
import { ConfigError, ValueError, quote } from './errors.js';
import { displayName, findFlag, findShorthand, type FlagSpec } from './flags.js';

export { ConfigError } from './errors.js';

function set(out: Settings, spec: FlagSpec, raw: string): void {
  try {
    setFromString(out, spec, raw);
  } catch (err) {
    if (!(err instanceof ValueError)) throw err;
    throw new ConfigError(`invalid argument ${quote(raw)} for ${quote(displayName(spec))} flag: ${err.message}`);
  }
}

/**
 * Parses argv (without `node` and the script) the way pflag does for the kubelet, returning only
 * the values given explicitly so they can override the config file. Messages match pflag's.
 */
export function parseFlags(argv: readonly string[]): Settings {
  const out: Settings = {};
  const positional: string[] = [];
  const args = [...argv];
  while (args.length > 0) {
    const arg = args.shift() ?? '';
    if (arg === '--') {
      positional.push(...args);
      break;
    }
    if (!arg.startsWith('-') || arg === '-') {
      // pflag intersperses: keep parsing flags, report stray arguments afterwards.
      positional.push(arg);
      continue;
    }
    if (arg.startsWith('--')) {
      parseLong(arg.slice(2), args, out);
    } else {
      parseShorts(arg.slice(1), args, out);
    }
  }
  const stray = positional[0];
  // The kubelet's own check after parsing: it takes no positional arguments.
  if (stray !== undefined) throw new ConfigError(`unknown command ${quote(stray)}`);
  return out;
}

function parseLong(body: string, rest: string[], out: Settings): void {
  if (body.startsWith('-') || body.startsWith('=')) throw new ConfigError(`bad flag syntax: --${body}`);
  const eq = body.indexOf('=');
  const name = eq < 0 ? body : body.slice(0, eq);
  const spec = findFlag(name);
  if (spec === undefined) throw new ConfigError(`unknown flag: --${name}`);
  let value: string;
  if (eq >= 0) value = body.slice(eq + 1);
  else if (spec.kind === 'bool') value = 'true';
  else if (rest.length > 0) value = rest.shift() ?? ''; // pflag takes the next word even if it starts with '-'
  else throw new ConfigError(`flag needs an argument: --${name}`);
  set(out, spec, value);
}

/** `-v 4`, `-v=4`, `-v4`, and bool shorthands that may be grouped (`-hv4`), as pflag does. */
function parseShorts(shorts: string, rest: string[], out: Settings): void {
  let s = shorts;
  while (s.length > 0) {
    const c = s.charAt(0);
    const spec = findShorthand(c);
    if (spec === undefined) throw new ConfigError(`unknown shorthand flag: '${c}' in -${shorts}`);
    let value: string;
    if (s.length > 2 && s[1] === '=') {
      value = s.slice(2);
      s = '';
    } else if (spec.kind === 'bool') {
      value = 'true';
      s = s.slice(1);
    } else if (s.length > 1) {
      value = s.slice(1);
      s = '';
    } else if (rest.length > 0) {
      value = rest.shift() ?? '';
      s = '';
    } else {
      throw new ConfigError(`flag needs an argument: '${c}' in -${shorts}`);
    }
    set(out, spec, value);
  }
}
