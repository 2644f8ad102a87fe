import type { Taint } from 'kubernetes-types/core/v1.js';

/** `--node-labels` syntax: `key=value,key2=value2`. Throws with the offending entry. */
export function parseNodeLabels(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of text.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    if (eq <= 0) throw new Error(`invalid node label ${JSON.stringify(part)}: expected key=value`);
    out[part.slice(0, eq)] = part.slice(eq + 1);
  }
  return out;
}

/** `--register-with-taints` syntax: `key=value:Effect` or `key:Effect`, comma-separated. */
export function parseTaints(text: string): Taint[] {
  const effects = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((part) => {
      const colon = part.lastIndexOf(':');
      const effect = colon === -1 ? '' : part.slice(colon + 1);
      if (!effects.includes(effect)) throw new Error(`invalid taint ${JSON.stringify(part)}: the effect must be one of ${effects.join(', ')}`);
      const kv = part.slice(0, colon);
      const eq = kv.indexOf('=');
      const key = eq === -1 ? kv : kv.slice(0, eq);
      if (key === '') throw new Error(`invalid taint ${JSON.stringify(part)}: empty key`);
      return eq === -1 ? { key, effect } : { key, value: kv.slice(eq + 1), effect };
    });
}
