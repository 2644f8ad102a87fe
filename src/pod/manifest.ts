import { parseAllDocuments } from 'yaml';
import type { Pod } from '../api/types.js';
import { MAX_MANIFEST_DEPTH, deeperThan, describeYamlConversionError, describeYamlError, lineColumn, scanJSON } from './syntax.js';

export interface ParsedManifest {
  pods: Pod[];
  /** One line per problem, prefixed with the file name (and document number when several). */
  errors: string[];
}

/**
 * Parses a static pod manifest: `.json` as one JSON object, anything else as (multi-document)
 * YAML, skipping empty documents. Like the kubelet's file source, a document must be a `v1` Pod;
 * a wrong kind only drops that document, while a syntax error drops the whole file because its
 * document boundaries can no longer be trusted. Never throws.
 */
export function parseManifest(text: string, fileName: string): ParsedManifest {
  const body = text.startsWith('\uFEFF') ? text.slice(1) : text;
  const fail = (message: string): ParsedManifest => ({ pods: [], errors: [`${fileName}: ${message}`] });
  if (fileName.toLowerCase().endsWith('.json')) {
    // Checked first, without recursion: JSON.parse's messages quote the file, and its result
    // could be nested too deeply for everything after it.
    const problem = scanJSON(body, MAX_MANIFEST_DEPTH);
    if (problem) return fail(`invalid JSON: ${problem.reason} at ${lineColumn(body, problem.offset)}`);
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return fail('invalid JSON');
    }
    return collect([value], fileName);
  }
  let parsed: ReturnType<typeof parseAllDocuments>;
  try {
    parsed = parseAllDocuments(body);
  } catch (err) {
    return fail(`invalid YAML: ${describeYamlConversionError(err)}`);
  }
  // An empty stream (only comments/whitespace) is not an array.
  if (!Array.isArray(parsed)) return { pods: [], errors: [] };
  const syntax = parsed.flatMap((doc) => doc.errors);
  const tooDeep = `nested deeper than ${MAX_MANIFEST_DEPTH} levels`;
  // The library catches its own stack overflow; where (and how often) depends on the stack left,
  // so the message names no position: it must be the same on every rescan.
  if (syntax.some((e) => e.code === 'RESOURCE_EXHAUSTION')) return fail(`invalid YAML: ${tooDeep}`);
  if (syntax.length > 0) {
    // The first error says where; the rest often follow from it (a binary file has thousands).
    const more = syntax.length > 1 ? ` (and ${syntax.length - 1} more)` : '';
    return fail(`invalid YAML: ${describeYamlError(syntax[0] ?? { code: 'IMPOSSIBLE' })}${more}`);
  }
  let values: unknown[];
  try {
    values = parsed.map((doc) => doc.toJS() as unknown);
  } catch (err) {
    // e.g. too many aliases (a "billion laughs" file), an unresolved or a circular alias.
    return fail(`invalid YAML: ${describeYamlConversionError(err)}`);
  }
  if (values.some((v) => deeperThan(v, MAX_MANIFEST_DEPTH))) return fail(`invalid YAML: ${tooDeep}`);
  return collect(values, fileName);
}

function collect(values: unknown[], fileName: string): ParsedManifest {
  const pods: Pod[] = [];
  const errors: string[] = [];
  const many = values.length > 1;
  values.forEach((value, i) => {
    if (value === null || value === undefined) return; // an empty document, e.g. a trailing `---`
    const where = many ? `${fileName}: document ${i + 1}` : fileName;
    if (typeof value !== 'object' || Array.isArray(value)) {
      errors.push(`${where}: expected a Pod object, got ${Array.isArray(value) ? 'a list' : typeof value}`);
      return;
    }
    const obj = value as Record<string, unknown>;
    if (obj.kind !== 'Pod' || obj.apiVersion !== 'v1') {
      errors.push(`${where}: expected apiVersion "v1" and kind "Pod", got apiVersion ${shown(obj.apiVersion)} and kind ${shown(obj.kind)}`);
      return;
    }
    pods.push(obj as Pod);
  });
  return { pods, errors };
}

/**
 * A wrong apiVersion or kind is quoted only when it looks like one (`apps/v1`, `Deployment`):
 * the file may be any file on the host, and the message goes into events.
 */
function shown(v: unknown): string {
  if (v === undefined || v === null) return '""';
  return typeof v === 'string' && /^[A-Za-z0-9][A-Za-z0-9./-]{0,62}$/.test(v) ? JSON.stringify(v) : '(a value not shown)';
}
