import { goDuration } from '../api/time.js';

/**
 * Quantities as apimachinery serializes them (`resource.Quantity.String()`), for the values
 * metrics-server builds: CPU is `NewScaledQuantity(nanocores, -9)` (DecimalSI) and memory
 * `NewQuantity(bytes, BinarySI)`. kubectl parses either spelling, so canonical output matters
 * only for byte-for-byte parity with metrics-server.
 */

const decimalSuffix: Record<number, string> = { [-9]: 'n', [-6]: 'u', [-3]: 'm', 0: '', 3: 'k', 6: 'M', 9: 'G', 12: 'T', 15: 'P', 18: 'E' };
const binarySuffix = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];

/** Nanocores in canonical DecimalSI form: `3000000` → `3m`, `1500000` → `1500u`, `1234567` → `1234567n`. */
export function formatNanoCores(nanocores: number): string {
  let value = Math.max(0, Math.round(nanocores));
  if (value === 0) return '0';
  // Strip trailing zeros, then settle on an exponent that is a multiple of three (AsCanonicalBytes).
  let exponent = -9;
  while (value % 10 === 0) {
    value /= 10;
    exponent++;
  }
  const extra = ((exponent % 3) + 3) % 3;
  value *= 10 ** extra;
  exponent -= extra;
  return `${value}${decimalSuffix[exponent] ?? `e${exponent}`}`;
}

/** Bytes in canonical BinarySI form: `2097152` → `2Mi`, `2098176` → `2049Ki`, `1000` → `1000`. */
export function formatBytes(bytes: number): string {
  let value = Math.max(0, Math.round(bytes));
  let power = 0;
  while (value >= 1024 && value % 1024 === 0 && power < binarySuffix.length - 1) {
    value /= 1024;
    power++;
  }
  return `${value}${binarySuffix[power]}`;
}

/**
 * A `metav1.Duration` as Go prints it (`time.Duration.String`), to the millisecond:
 * `10s`, `9.998s`, `1m0.5s`, `500ms`.
 */
export function formatWindow(ms: number): string {
  return goDuration(Math.round(ms));
}
