import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import t from 'tap';

/**
 * docs/architecture.md's layer table is the map of src/: one row per folder (`src/x/`) and per
 * top-level file (`src/x.ts`), none for a unit that does not exist. Its "must not import" column
 * says what the `layers` table of eslint.config.js (the lint rule's source of truth) denies: for
 * each layer there, the row names exactly its denied folders, files and packages — or, for a layer
 * that may import only some folders, says "every other unit of `src/`" and names exactly those.
 */

const root = new URL('../../../', import.meta.url).pathname;
const src = join(root, 'src');
const doc = readFileSync(join(root, 'docs', 'architecture.md'), 'utf8');

interface Row {
  unit: string;
  mustNotImport: string;
}

/** The rows of the table under `## Layers`: its first column names the unit, its third what it must not import. */
function layerRows(text: string): Row[] {
  const start = text.indexOf('\n## Layers\n');
  if (start < 0) return [];
  const next = text.indexOf('\n## ', start + 1);
  const section = text.slice(start, next < 0 ? undefined : next);
  const rows: Row[] = [];
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    const unit = /^`(src\/[^`]+)`$/.exec(cells[1] ?? '')?.[1];
    if (unit !== undefined) rows.push({ unit, mustNotImport: cells[3] ?? '' });
  }
  return rows;
}

/** Every folder of src/ as `src/x/` and every top-level TypeScript file as `src/x.ts`. */
function srcUnits(): string[] {
  return readdirSync(src)
    .flatMap((name) => {
      if (statSync(join(src, name)).isDirectory()) return [`src/${name}/`];
      return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [`src/${name}`] : [];
    })
    .sort();
}

/** How a lint name reads in the table: a folder `x/`, a file `x.ts`, a package as is. */
function spelled(name: string): string {
  if (existsSync(join(src, name)) && statSync(join(src, name)).isDirectory()) return `${name}/`;
  if (existsSync(join(src, `${name}.ts`))) return `${name}.ts`;
  return name;
}

interface Layer {
  deny: readonly string[];
  allowOnly?: readonly string[];
}

function isLayers(value: unknown): value is Record<string, Layer> {
  if (typeof value !== 'object' || value === null) return false;
  return Object.values(value).every((l: unknown) => {
    if (typeof l !== 'object' || l === null) return false;
    const { deny, allowOnly } = l as { deny?: unknown; allowOnly?: unknown };
    return Array.isArray(deny) && (allowOnly === undefined || Array.isArray(allowOnly));
  });
}

const rows = layerRows(doc);

t.test('the table has one row per folder and top-level file of src/, and no other', async (t) => {
  t.ok(rows.length > 10, 'the Layers table is found');
  const named = rows.map((r) => r.unit);
  t.same(named.filter((u, i) => named.indexOf(u) !== i), [], 'no unit has two rows');
  const units = srcUnits();
  t.same(units.filter((u) => !named.includes(u)), [], 'every unit of src/ has a row');
  t.same(named.filter((u) => !units.includes(u)).sort(), [], 'every row names a unit that exists');
});

t.test("the must-not-import column says what eslint.config.js's layers deny", async (t) => {
  const config: unknown = await import(pathToFileURL(join(root, 'eslint.config.js')).href);
  const layers: unknown = (config as { layers?: unknown }).layers;
  if (!isLayers(layers)) throw new Error('eslint.config.js exports no `layers` table of { deny, allowOnly? }');
  t.ok(Object.keys(layers).length > 10, 'the lint table is found');
  for (const [name, layer] of Object.entries(layers)) {
    const row = rows.find((r) => r.unit === `src/${spelled(name)}`);
    if (row === undefined) {
      t.fail(`layer ${name} of eslint.config.js has no row`);
      continue;
    }
    const named = [...row.mustNotImport.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '').filter((n) => n !== 'src/');
    const packages = (names: readonly string[]) => names.filter((n) => !n.endsWith('/') && !n.endsWith('.ts')).sort();
    const units = (names: readonly string[]) => names.filter((n) => n.endsWith('/') || n.endsWith('.ts')).sort();
    const denied = layer.deny.map(spelled);
    t.same(packages(named), packages(denied), `${row.unit}: the packages it must not import`);
    if (layer.allowOnly !== undefined) {
      t.ok(row.mustNotImport.includes('every other unit of `src/`'), `${row.unit}: may import only some of src/`);
      t.same(units(named), units(layer.allowOnly.map(spelled)), `${row.unit}: the units it may import`);
    } else {
      t.notOk(row.mustNotImport.includes('every other unit'), `${row.unit}: may import any unit it is not denied`);
      t.same(units(named), units(denied), `${row.unit}: the units it must not import`);
    }
  }
});
