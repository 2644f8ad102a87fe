import { parseDocument } from 'yaml';

/** A YAML/JSON mapping (object), not a list, scalar or null. */
export const isMapping = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * One YAML (or JSON) document that must be a mapping: the `--config`, `--kubeconfig` and
 * `--authorization-policy-file` loaders. Fails with `fail(why)`, so each caller keeps its own error
 * class and prefix; `why` is `YAML: <first line of the first syntax error>` (duplicate keys
 * included), `YAML: <reason>` when building the value fails (e.g. an alias bomb past the yaml
 * package's alias limit), or `expected <expected>` when the root is not a mapping (an empty file
 * included). Multi-document pod manifests are src/pod/manifest.ts's.
 */
export function parseMapping(text: string, expected: string, fail: (why: string) => Error): Record<string, unknown> {
  const doc = parseDocument(text);
  const syntax = doc.errors[0];
  if (syntax !== undefined) throw fail(`YAML: ${syntax.message.split('\n')[0] ?? ''}`);
  let root: unknown;
  try {
    root = doc.toJS();
  } catch (err) {
    throw fail(`YAML: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!isMapping(root)) throw fail(`expected ${expected}`);
  return root;
}
