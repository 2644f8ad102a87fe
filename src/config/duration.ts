import { ValueError, quote } from './errors.js';

/** Nanoseconds per Go time unit (`time.ParseDuration`'s unitMap, both micro signs included). */
const UNIT_NS: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n],
  ['us', 1_000n],
  ['\u00b5s', 1_000n],
  ['\u03bcs', 1_000n],
  ['ms', 1_000_000n],
  ['s', 1_000_000_000n],
  ['m', 60_000_000_000n],
  ['h', 3_600_000_000_000n],
]);

/** Go's Duration is an int64 of nanoseconds; larger values are a syntax error there too. */
const MAX_NS = (1n << 63n) - 1n;

const isDigit = (c: string | undefined): boolean => c !== undefined && c >= '0' && c <= '9';

/**
 * Parses Go duration syntax (`20s`, `1m30s`, `1.5h`, `500ms`, `0`) exactly as `time.ParseDuration`
 * accepts it, returning milliseconds (fractional below 1ms). Throws ValueError with Go's wording.
 */
export function parseDuration(orig: string): number {
  let s = orig;
  let negative = false;
  if (s.startsWith('-') || s.startsWith('+')) {
    negative = s.startsWith('-');
    s = s.slice(1);
  }
  if (s === '0') return 0;
  const invalid = (): ValueError => new ValueError(`time: invalid duration ${quote(orig)}`);
  if (s === '') throw invalid();

  let total = 0n;
  while (s !== '') {
    if (!(s[0] === '.' || isDigit(s[0]))) throw invalid();
    let i = 0;
    while (isDigit(s[i])) i++;
    const intDigits = s.slice(0, i);
    let fracDigits = '';
    if (s[i] === '.') {
      let j = i + 1;
      while (isDigit(s[j])) j++;
      fracDigits = s.slice(i + 1, j);
      i = j;
    }
    if (intDigits === '' && fracDigits === '') throw invalid();
    s = s.slice(i);

    let u = 0;
    while (u < s.length && s[u] !== '.' && !isDigit(s[u])) u++;
    if (u === 0) throw new ValueError(`time: missing unit in duration ${quote(orig)}`);
    const unitName = s.slice(0, u);
    const unit = UNIT_NS.get(unitName);
    if (unit === undefined) throw new ValueError(`time: unknown unit ${quote(unitName)} in duration ${quote(orig)}`);
    s = s.slice(u);

    total += BigInt(intDigits === '' ? '0' : intDigits) * unit;
    if (fracDigits !== '') total += (BigInt(fracDigits) * unit) / 10n ** BigInt(fracDigits.length);
    if (total > MAX_NS + (negative ? 1n : 0n)) throw invalid();
  }
  const ms = Number(total) / 1e6;
  return negative ? -ms : ms;
}
