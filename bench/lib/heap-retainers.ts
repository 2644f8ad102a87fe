/**
 * `node dist-bench/bench/lib/heap-retainers.js SNAPSHOT KIND [PATHS]`: what holds the objects of
 * one kind (as `heap-diff.js` names kinds: a constructor name, `(closure) name`, `(string)`…) in a
 * V8 heap snapshot: their direct retainers grouped by edge and retainer kind, then PATHS (default
 * 3) sampled retainer paths up to 6 steps, weak edges left out. The next step after `heap-diff.js`
 * named a kind that grows per session (it found the request an upgrade socket's listeners kept).
 * A diagnostic, not a bench figure.
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]]; edge_fields: string[]; edge_types: [string[], ...unknown[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

const [file, want, pathsArg] = process.argv.slice(2);
if (!file || !want) {
  console.error('usage: heap-retainers SNAPSHOT KIND [PATHS]');
  process.exit(2);
}
const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
const { node_fields: nf, node_types: nt, edge_fields: ef, edge_types: et } = s.snapshot.meta;
const nodeTypes = nt[0];
const edgeTypes = et[0];
const NW = nf.length;
const EW = ef.length;
const [iType, iName, iEdges] = ['type', 'name', 'edge_count'].map((f) => nf.indexOf(f)) as [number, number, number];
const [eType, eName, eTo] = ['type', 'name_or_index', 'to_node'].map((f) => ef.indexOf(f)) as [number, number, number];
const count = s.nodes.length / NW;
const num = (xs: number[], i: number): number => xs[i] ?? 0;

/** The kind of node `n` (an index, not an offset), as heap-diff names it. */
function kindOf(n: number): string {
  const type = nodeTypes[num(s.nodes, n * NW + iType)] ?? '?';
  const name = s.strings[num(s.nodes, n * NW + iName)] ?? '';
  return type === 'object' || type === 'native' ? name : type === 'closure' ? `(closure) ${name}` : `(${type})`;
}

function edgeName(e: number): string {
  const type = edgeTypes[num(s.edges, e + eType)];
  const v = num(s.edges, e + eName);
  return type === 'element' || type === 'hidden' ? `[${v}]` : (s.strings[v] ?? String(v));
}

// Reverse edges (retainers), weak ones left out: CSR arrays by target node.
const start = new Uint32Array(count + 1);
const weak = edgeTypes.indexOf('weak');
for (let n = 0, e = 0; n < count; n++) {
  for (let k = num(s.nodes, n * NW + iEdges); k > 0; k--, e += EW) {
    if (num(s.edges, e + eType) === weak) continue;
    const to = num(s.edges, e + eTo) / NW;
    start[to + 1] = (start[to + 1] ?? 0) + 1;
  }
}
for (let n = 0; n < count; n++) start[n + 1] = (start[n + 1] ?? 0) + (start[n] ?? 0);
const fill = start.slice();
const from = new Uint32Array(start[count] ?? 0);
const via = new Uint32Array(start[count] ?? 0);
for (let n = 0, e = 0; n < count; n++) {
  for (let k = num(s.nodes, n * NW + iEdges); k > 0; k--, e += EW) {
    if (num(s.edges, e + eType) === weak) continue;
    const to = num(s.edges, e + eTo) / NW;
    const slot = fill[to] ?? 0;
    from[slot] = n;
    via[slot] = e;
    fill[to] = slot + 1;
  }
}

const matches: number[] = [];
for (let n = 0; n < count; n++) if (kindOf(n) === want) matches.push(n);
console.log(`${matches.length} objects of kind ${want}`);

const groups = new Map<string, number>();
for (const n of matches) {
  for (let r = start[n] ?? 0; r < (start[n + 1] ?? 0); r++) {
    const key = `.${edgeName(via[r] ?? 0)} of ${kindOf(from[r] ?? 0)}`;
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
}
console.log('direct retainers (count, edge of retainer kind):');
for (const [key, n] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`${String(n).padStart(9)}  ${key}`);

/** Retainer paths from `n`, depth-first, at most 3 retainers per step. */
function paths(n: number, depth: number, indent: string, seen: Set<number>): void {
  if (depth === 0) return;
  let shown = 0;
  for (let r = start[n] ?? 0; r < (start[n + 1] ?? 0); r++) {
    const by = from[r] ?? 0;
    if (seen.has(by)) continue;
    if (++shown > 3) {
      console.log(`${indent}…`);
      return;
    }
    seen.add(by);
    console.log(`${indent}<- .${edgeName(via[r] ?? 0)} of ${kindOf(by)}`);
    paths(by, depth - 1, `${indent}  `, seen);
  }
}
const samples = Math.min(Number(pathsArg ?? 3), matches.length);
for (let k = 0; k < samples; k++) {
  const n = matches[Math.floor((matches.length * (k + 0.5)) / samples)] ?? 0;
  console.log(`--- sample ${k + 1}: ${kindOf(n)}`);
  paths(n, 6, '  ', new Set([n]));
}
