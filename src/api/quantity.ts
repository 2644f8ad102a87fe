/**
 * The one resource-quantity parser of nodelet (apimachinery's `resource.Quantity`), exact in
 * nano-units as bigint, used for QoS, the downward API, volume sizes and the runtime's limits.
 */

const DECIMAL_SUFFIX: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIX: Readonly<Record<string, bigint>> = { Ki: 1n << 10n, Mi: 1n << 20n, Gi: 1n << 30n, Ti: 1n << 40n, Pi: 1n << 50n, Ei: 1n << 60n };
const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:[eE]([+-]?\d+)|(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])?)$/;

/**
 * A resource quantity (`100m`, `1.5Gi`, `2e3`) in nano-units, exact, so sums and comparisons match
 * `resource.Quantity.Cmp`. Fractions of a nano-unit round up, as Quantity does. Unparsable values
 * count as 0: validation rejects such pods before they get here.
 */
export function quantityOf(value: string | number | undefined): bigint {
  if (value === undefined) return 0n;
  const m = QUANTITY.exec(String(value).trim());
  if (!m) return 0n;
  const [, sign = '', mantissa = '', exponent, suffix = ''] = m;
  const [whole = '', fraction = ''] = mantissa.split('.');
  const digits = BigInt(`${whole}${fraction}` || '0');
  const binary = BINARY_SUFFIX[suffix];
  const power = 9 - fraction.length + (exponent !== undefined ? Number(exponent) : binary !== undefined ? 0 : (DECIMAL_SUFFIX[suffix] ?? 0));
  // Quantity's own range ends far before this; the bound keeps `1e999999` from costing memory.
  if (Math.abs(power) > 64) return 0n;
  let nano = power >= 0 ? digits * 10n ** BigInt(power) : ceilDiv(digits * (binary ?? 1n), 10n ** BigInt(-power));
  if (power >= 0 && binary !== undefined) nano *= binary;
  return sign === '-' ? -nano : nano;
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}
