import { parseAllDocuments } from 'yaml';
import type { Pod } from '../api/types.js';

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
  if (fileName.toLowerCase().endsWith('.json')) {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch (err) {
      return { pods: [], errors: [`${fileName}: invalid JSON: ${(err as Error).message}`] };
    }
    return collect([value], fileName);
  }
  const parsed = parseAllDocuments(body);
  // An empty stream (only comments/whitespace) is not an array.
  if (!Array.isArray(parsed)) return { pods: [], errors: [] };
  const syntax = parsed.flatMap((doc) => doc.errors);
  if (syntax.length > 0) {
    return { pods: [], errors: syntax.map((e) => `${fileName}: invalid YAML: ${e.message.split('\n')[0]}`) };
  }
  let values: unknown[];
  try {
    values = parsed.map((doc) => doc.toJS() as unknown);
  } catch (err) {
    // e.g. too many aliases (a "billion laughs" file) or an unresolved alias.
    return { pods: [], errors: [`${fileName}: invalid YAML: ${(err as Error).message}`] };
  }
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
      errors.push(`${where}: expected apiVersion "v1" and kind "Pod", got apiVersion ${JSON.stringify(obj.apiVersion ?? '')} and kind ${JSON.stringify(obj.kind ?? '')}`);
      return;
    }
    pods.push(obj as Pod);
  });
  return { pods, errors };
}
