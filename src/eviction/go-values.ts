// The Go value syntaxes the kubelet's eviction flags are written in, parsed and printed as Go does:
// resource.ParseQuantity / Quantity.String (k8s.io/apimachinery/pkg/api/resource/quantity.go),
// strconv.ParseFloat(s, 32) and time.ParseDuration. Errors carry Go's own messages, because the
// kubelet returns them unwrapped from ParseThresholdConfig (pkg/kubelet/eviction/helpers.go).
// nodelet's quantityOf (api/quantity.ts) is lenient (bad text counts as 0) for pods validation
// already vetted; configuration needs the errors, hence this module.
import type { QuantityFormat } from './types.js';

/** resource.ErrFormatWrong, ErrNumeric and ErrSuffix. */
const SPLIT_RE = '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$';
export const ERR_FORMAT_WRONG = `quantities must match the regular expression '${SPLIT_RE}'`;
export const ERR_NUMERIC = 'unable to parse numeric part of quantity';
export const ERR_SUFFIX = "unable to parse quantity's suffix";

const NANO = 1_000_000_000n;
const DECIMAL_EXP: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_EXP: Readonly<Record<string, number>> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL_SUFFIX = new Map(Object.entries(DECIMAL_EXP).map(([s, e]) => [e, s]));
const BINARY_SUFFIX = new Map(Object.entries(BINARY_EXP).map(([s, e]) => [e, s]));

/** A parsed quantity: exact in nano-units, with the format it prints in. */
export interface ParsedQuantity {
  readonly nano: bigint;
  readonly format: QuantityFormat;
}

/** resource.ParseQuantity: throws Error with apimachinery's messages. */
export function parseQuantity(text: string): ParsedQuantity {
  if (text === '') throw new Error(ERR_FORMAT_WRONG);
  if (text === '0') return { nano: 0n, format: 'DecimalSI' };
  const m = new RegExp(SPLIT_RE).exec(text);
  if (!m) throw new Error(ERR_FORMAT_WRONG);
  const [, number = '', suffix = ''] = m;
  const num = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(number);
  if (!num || (num[2] === '' && (num[3] ?? '') === '')) throw new Error(ERR_FORMAT_WRONG);
  const [, sign = '', whole = '', fraction = ''] = num;
  let format: QuantityFormat;
  let power: number;
  let factor = 1n;
  const exponent = /^[eE]([+-]?\d+)$/.exec(suffix);
  if (exponent) {
    format = 'DecimalExponent';
    power = Number(exponent[1]);
  } else if (Object.hasOwn(BINARY_EXP, suffix)) {
    format = 'BinarySI';
    power = 0;
    factor = 1n << BigInt(10 * (BINARY_EXP[suffix] ?? 0));
  } else if (Object.hasOwn(DECIMAL_EXP, suffix)) {
    format = 'DecimalSI';
    power = DECIMAL_EXP[suffix] ?? 0;
  } else {
    throw new Error(ERR_SUFFIX);
  }
  // Quantity itself stops far before this; the bound keeps `1e999999` from costing memory.
  if (Math.abs(power) > 64) throw new Error(ERR_NUMERIC);
  const digits = BigInt(`${whole}${fraction}` || '0') * factor;
  const scale = 9 + power - fraction.length; // nano = digits · 10^scale
  // Sub-nano precision rounds up (away from zero), as Quantity does.
  const magnitude = scale >= 0 ? digits * 10n ** BigInt(scale) : (digits + 10n ** BigInt(-scale) - 1n) / 10n ** BigInt(-scale);
  return { nano: sign === '-' ? -magnitude : magnitude, format };
}

/** Quantity.Value(): whole units, rounded away from zero. */
export function quantityValue(q: ParsedQuantity): bigint {
  const whole = q.nano / NANO;
  if (q.nano % NANO === 0n) return whole;
  return q.nano > 0n ? whole + 1n : whole - 1n;
}

/**
 * Quantity.String() of `value` whole units (or `nano` nano-units) in `format`
 * (Quantity.CanonicalizeBytes): `100Mi`, `1536Mi`, `500M`, `1k`, `1e3`, `1500m`, `0`.
 */
export function formatQuantity(value: bigint, format: QuantityFormat = 'BinarySI', unit: 'whole' | 'nano' = 'whole'): string {
  const nano = unit === 'nano' ? value : value * NANO;
  if (nano === 0n) return '0';
  let fmt = format;
  if (fmt === 'BinarySI') {
    // Small values print decimal (avoids "confusion"); fractions too (no precision lost).
    if ((nano > -1024n * NANO && nano < 1024n * NANO) || nano % NANO !== 0n) fmt = 'DecimalSI';
  }
  const negative = nano < 0n;
  const abs = negative ? -nano : nano;
  const sign = negative ? '-' : '';
  if (fmt === 'BinarySI') {
    let amount = abs / NANO;
    let exp = 0;
    while (exp < 6 && amount % 1024n === 0n) {
      amount /= 1024n;
      exp++;
    }
    return `${sign}${amount}${BINARY_SUFFIX.get(exp) ?? ''}`;
  }
  // AsCanonicalBytes: strip factors of ten, then bring the exponent to a multiple of three.
  let amount = abs;
  let exp = -9;
  while (amount % 10n === 0n) {
    amount /= 10n;
    exp++;
  }
  const mod = ((exp % 3) + 3) % 3;
  amount *= 10n ** BigInt(mod);
  exp -= mod;
  if (exp === 0) return `${sign}${amount}`;
  if (fmt === 'DecimalSI') {
    const suffix = DECIMAL_SUFFIX.get(exp);
    if (suffix !== undefined) return `${sign}${amount}${suffix}`;
  }
  return `${sign}${amount}e${exp}`;
}

const FLOAT_RE = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)$/i;

/**
 * strconv.ParseFloat(s, 32): the float32 nearest to `s`, as a number. Decimal and special
 * (`inf`, `nan`) forms; Go's hexadecimal floats and digit underscores are refused as syntax.
 */
export function parseFloat32(text: string): number {
  if (!FLOAT_RE.test(text)) throw new Error(`strconv.ParseFloat: parsing ${quote(text)}: invalid syntax`);
  const lower = text.toLowerCase().replace(/^[+-]/, '');
  const negative = text.startsWith('-');
  if (lower === 'nan') return Number.NaN;
  if (lower === 'inf' || lower === 'infinity') return negative ? -Infinity : Infinity;
  const value = Math.fround(Number(text));
  if (!Number.isFinite(value)) throw new Error(`strconv.ParseFloat: parsing ${quote(text)}: value out of range`);
  return value;
}

/** Go's `%q` for the printable strings configuration carries; JSON escaping is close enough. */
export function quote(s: string): string {
  return JSON.stringify(s);
}
