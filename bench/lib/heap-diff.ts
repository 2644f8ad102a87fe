/**
 * `node dist-bench/bench/lib/heap-diff.js BEFORE.heapsnapshot AFTER.heapsnapshot [N]`: what grew
 * between two V8 heap snapshots (the bench's `--heap-snapshots`, taken after forced GCs), by
 * object kind — constructor name for objects, `(closure) name`, `(string)`, `(array)`… — as
 * count and self size, largest growth first. With N sessions opened in between it also prints
 * the growth per session. A diagnostic, not a bench figure.
 */
import { readFileSync } from 'node:fs';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

/** Self size and count per kind. */
function tally(file: string): Map<string, { count: number; size: number }> {
  const s = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  const fields = s.snapshot.meta.node_fields;
  const types = s.snapshot.meta.node_types[0];
  const width = fields.length;
  const [iType, iName, iSize] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
  const out = new Map<string, { count: number; size: number }>();
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + iType]!] ?? '?';
    const name = s.strings[s.nodes[i + iName]!] ?? '';
    const kind = type === 'object' || type === 'native' ? name : type === 'closure' ? `(closure) ${name}` : `(${type})`;
    const e = out.get(kind) ?? { count: 0, size: 0 };
    e.count++;
    e.size += s.nodes[i + iSize]!;
    out.set(kind, e);
  }
  return out;
}

const [a, b, sessions] = process.argv.slice(2);
if (!a || !b) {
  console.error('usage: heap-diff BEFORE.heapsnapshot AFTER.heapsnapshot [sessions]');
  process.exit(2);
}
const before = tally(a);
const after = tally(b);
const per = sessions ? Number(sessions) : 0;
const rows = [...after.entries()].map(([kind, v]) => {
  const old = before.get(kind) ?? { count: 0, size: 0 };
  return { kind, count: v.count - old.count, size: v.size - old.size };
});
rows.sort((x, y) => y.size - x.size);
let total = 0;
for (const r of rows) total += r.size;
console.log(`${'kind'.padEnd(48)} ${'Δcount'.padStart(9)} ${'Δbytes'.padStart(11)}${per ? `  ${'count/s'.padStart(8)} ${'B/session'.padStart(10)}` : ''}`);
for (const r of rows.slice(0, 40)) {
  const extra = per ? `  ${(r.count / per).toFixed(2).padStart(8)} ${(r.size / per).toFixed(0).padStart(10)}` : '';
  console.log(`${r.kind.slice(0, 48).padEnd(48)} ${String(r.count).padStart(9)} ${String(r.size).padStart(11)}${extra}`);
}
console.log(`total self size growth: ${total} B${per ? ` (${(total / per / 1024).toFixed(2)} KiB per session)` : ''}`);
