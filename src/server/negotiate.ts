/**
 * Accept-header negotiation for the apiserver's server-side printing: kubectl get asks for
 * `application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json`.
 * Like the apiserver, take the first acceptable media range by preference (q, then order). JSON is
 * the only encoding nodelet writes: protobuf and YAML ranges are skipped, and when nothing
 * matches the answer is still JSON (kubectl's protobuf Accept always lists JSON as a fallback).
 */

export type TableVersion = 'v1' | 'v1beta1';

interface MediaRange {
  type: string;
  params: Map<string, string>;
  q: number;
  index: number;
}

function parseAccept(header: string): MediaRange[] {
  const ranges: MediaRange[] = [];
  header.split(',').forEach((part, index) => {
    const [typePart, ...paramParts] = part.split(';');
    const type = (typePart ?? '').trim().toLowerCase();
    if (type === '') return;
    const params = new Map<string, string>();
    for (const p of paramParts) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      params.set(p.slice(0, eq).trim().toLowerCase(), p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1'));
    }
    const q = params.has('q') ? Number(params.get('q')) : 1;
    ranges.push({ type, params, q: Number.isFinite(q) ? q : 0, index });
  });
  return ranges.filter((r) => r.q > 0).sort((a, b) => b.q - a.q || a.index - b.index);
}

const jsonTypes = new Set(['application/json', 'application/*', '*/*']);

/**
 * The `meta.k8s.io` Table version the client prefers, or undefined when the plain object (JSON)
 * should be sent.
 */
export function preferredTableVersion(accept: string | undefined): TableVersion | undefined {
  if (!accept) return undefined;
  for (const r of parseAccept(accept)) {
    if (!jsonTypes.has(r.type)) continue; // protobuf, yaml, …: not served
    const as = r.params.get('as');
    if (as === undefined) return undefined; // plain JSON preferred
    if (as !== 'Table' || r.params.get('g') !== 'meta.k8s.io') continue; // e.g. PartialObjectMetadataList
    const v = r.params.get('v');
    if (v === 'v1' || v === 'v1beta1') return v;
  }
  return undefined;
}
