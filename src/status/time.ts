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
