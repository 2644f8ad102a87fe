import { ValueError, quote } from './errors.js';

/** Digit patterns for Go's base-0 integer literals; `_` is only legal between digits. */
const BASE0: readonly { re: RegExp; radix: 2 | 8 | 10 | 16; prefix: number }[] = [
  { re: /^0[xX](_?[0-9a-fA-F])+$/, radix: 16, prefix: 2 },
  { re: /^0[bB](_?[01])+$/, radix: 2, prefix: 2 },
  { re: /^0[oO](_?[0-7])+$/, radix: 8, prefix: 2 },
  { re: /^0(_?[0-7])+$/, radix: 8, prefix: 1 },
  { re: /^(0|[1-9](_?[0-9])*)$/, radix: 10, prefix: 0 }, // a leading 0 means octal
];

const RADIX_PREFIX = { 2: '0b', 8: '0o', 10: '', 16: '0x' } as const;

/**
 * Go's `strconv.ParseInt(s, base, 32)`: pflag's Int32Var uses base 0 (so `0x2800` and octal `010`
 * are accepted), klog's `-v` uses base 10. Throws ValueError with Go's wording.
 */
export function parseInt32(s: string, base: 0 | 10): number {
  const syntax = (): ValueError => new ValueError(`strconv.ParseInt: parsing ${quote(s)}: invalid syntax`);
  const sign = s.startsWith('-') ? -1n : 1n;
  const body = s.startsWith('-') || s.startsWith('+') ? s.slice(1) : s;
  let value: bigint;
  if (base === 10) {
    if (!/^[0-9]+$/.test(body)) throw syntax();
    value = BigInt(body);
  } else {
    const form = BASE0.find((f) => f.re.test(body));
    if (form === undefined) throw syntax();
    value = BigInt(RADIX_PREFIX[form.radix] + body.slice(form.prefix).replaceAll('_', ''));
  }
  value *= sign;
  if (value < -(2n ** 31n) || value > 2n ** 31n - 1n) {
    throw new ValueError(`strconv.ParseInt: parsing ${quote(s)}: value out of range`);
  }
  return Number(value);
}

const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False']);

/** Go's `strconv.ParseBool`, which pflag uses for `--flag=value` on booleans. */
export function parseBool(s: string): boolean {
  if (TRUE.has(s)) return true;
  if (FALSE.has(s)) return false;
  throw new ValueError(`strconv.ParseBool: parsing ${quote(s)}: invalid syntax`);
}
