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
