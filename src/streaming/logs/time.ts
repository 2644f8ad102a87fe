/**
 * RFC 3339 timestamps as Go's `time.Parse(time.RFC3339, s)` reads them (fractional seconds of any
 * length allowed, `.` or `,` before them, `Z` or `±hh:mm`), kept at nanosecond precision: JavaScript
 * dates stop at milliseconds, and log lines must be compared and printed with all nine digits.
 */
export interface Timestamp {
  /** Milliseconds since the epoch, rounded down. */
  readonly epochMs: number;
  /** The nanoseconds below `epochMs` (0–999999). */
  readonly subMsNanos: number;
  /** The kubelet's `RFC3339NanoFixed` (`2006-01-02T15:04:05.000000000Z07:00`): always nine digits. */
  readonly fixed: string;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(Z|[+-]\d{2}:\d{2})$/;

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const isLeap = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
const daysIn = (year: number, month: number): number => (month === 2 && isLeap(year) ? 29 : (DAYS[month - 1] ?? 0));

/** Parses an RFC 3339 timestamp; undefined when Go's `time.Parse` would refuse it. */
export function parseTimestamp(text: string): Timestamp | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [, ys, mos, ds, hs, mis, ss, frac = '', zone = 'Z'] = m;
  const [year, month, day, hour, minute, second] = [ys, mos, ds, hs, mis, ss].map(Number) as [number, number, number, number, number, number];
  // Go's range checks: no hour 24, no leap second 60, no 30 February.
  if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMin = 0;
  if (zone !== 'Z') {
    const oh = Number(zone.slice(1, 3));
    const om = Number(zone.slice(4, 6));
    if (oh > 23 || om > 59) return undefined;
    offsetMin = (zone.startsWith('-') ? -1 : 1) * (oh * 60 + om);
  }
  // Go keeps nine digits and drops the rest.
  const nanos = (frac + '000000000').slice(0, 9);
  const base = new Date(0);
  base.setUTCFullYear(year, month - 1, day);
  base.setUTCHours(hour, minute, second, Number(nanos.slice(0, 3)));
  return {
    epochMs: base.getTime() - offsetMin * 60_000,
    subMsNanos: Number(nanos.slice(3)),
    fixed: `${ys}-${mos}-${ds}T${hs}:${mis}:${ss}.${nanos}${zone}`,
  };
}
