/**
 * RFC3339 with whole seconds, the precision of `metav1.Time` on the wire. The kubelet's
 * `normalizeStatus` rounds every status timestamp this way so a re-read status compares equal.
 * Strings that are not dates are returned unchanged (they are someone else's problem to validate).
 */
export function rfc3339(value: Date | string): string {
  const d = typeof value === 'string' ? new Date(value) : value;
  if (Number.isNaN(d.getTime())) return String(value);
  return d.toISOString().replace(/\.\d+Z$/, 'Z');
}

/**
 * Go's `time.RFC3339Nano` in UTC with all nine fractional digits (JavaScript clocks stop at
 * milliseconds), the format of the kubelet's `kubernetes.io/config.seen`.
 */
export function rfc3339Nano(d: Date): string {
  const iso = d.toISOString(); // 2026-01-02T03:04:05.678Z
  return `${iso.slice(0, 23)}000000Z`;
}

/**
 * Go's `time.Duration.String()` of a span truncated to milliseconds, as the kubelet's events print
 * durations: `0s`, `850ms`, `1.234s`, `2m3.5s`, `1h0m0s`.
 */
export function goDuration(ms: number): string {
  const whole = Math.max(0, Math.trunc(ms));
  if (whole === 0) return '0s';
  if (whole < 1000) return `${whole}ms`;
  const hours = Math.floor(whole / 3_600_000);
  const minutes = Math.floor((whole % 3_600_000) / 60_000);
  const seconds = `${(whole % 60_000) / 1000}s`;
  if (hours > 0) return `${hours}h${minutes}m${seconds}`;
  return minutes > 0 ? `${minutes}m${seconds}` : seconds;
}
