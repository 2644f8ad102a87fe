import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { setFromYaml, type Settings } from './convert.js';
import { ConfigError, ValueError, quote } from './errors.js';
import { FLAGS, type FlagSpec } from './flags.js';
import { isMapping, parseMapping } from './yaml-mapping.js';

export const KUBELET_CONFIG_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
export const KUBELET_CONFIG_KIND = 'KubeletConfiguration';

export interface ConfigFileResult {
  /** Only the fields present in the file (null counts as absent, as in Go's JSON decoding). */
  readonly values: Settings;
  /** Fields nodelet ignores; the kubelet also decodes leniently and only warns. */
  readonly warnings: string[];
}

/** Dotted field path → flag, for the flags that also have a KubeletConfiguration field. */
const FILE_FIELDS: ReadonlyMap<string, FlagSpec> = new Map(
  FLAGS.flatMap((f) => (f.fileField === undefined ? [] : [[f.fileField, f] as const])),
);
/** Intermediate mappings (e.g. `logging`) that contain supported fields. */
const BRANCHES: ReadonlySet<string> = new Set(
  [...FILE_FIELDS.keys()].flatMap((path) => {
    const parts = path.split('.');
    return parts.slice(1).map((_, i) => parts.slice(0, i + 1).join('.'));
  }),
);

/** Loads a `kubelet.config.k8s.io/v1beta1` KubeletConfiguration; throws ConfigError naming the file. */
export function loadConfigFile(path: string): ConfigFileResult {
  const fail = (why: string): ConfigError => new ConfigError(`failed to load kubelet config file ${quote(path)}: ${why}`);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw fail(err instanceof Error ? err.message : String(err));
  }
  const root = parseMapping(text, `a ${KUBELET_CONFIG_KIND} mapping`, fail);

  for (const [field, want] of [['apiVersion', KUBELET_CONFIG_API_VERSION], ['kind', KUBELET_CONFIG_KIND]] as const) {
    const got = root[field];
    if (got === undefined || got === null) throw fail(`${field} is missing; expected ${quote(want)}`);
    if (got !== want) throw fail(`unsupported ${field} ${JSON.stringify(got)}; expected ${quote(want)}`);
  }

  const values: Settings = {};
  const warnings: string[] = [];
  const walk = (node: Record<string, unknown>, prefix: string): void => {
    for (const [key, value] of Object.entries(node)) {
      const field = prefix + key;
      if (prefix === '' && (key === 'apiVersion' || key === 'kind')) continue;
      const spec = FILE_FIELDS.get(field);
      if (spec !== undefined) {
        if (value === null) continue;
        try {
          setFromYaml(values, spec, value);
        } catch (err) {
          if (!(err instanceof ValueError)) throw err;
          throw fail(`invalid value for ${field}: ${err.message}`);
        }
      } else if (BRANCHES.has(field) && isMapping(value)) {
        walk(value, `${field}.`);
      } else if (BRANCHES.has(field) && value !== null) {
        throw fail(`invalid value for ${field}: expected a mapping`);
      } else if (!BRANCHES.has(field)) {
        warnings.push(`kubelet config file ${quote(path)}: ignoring field ${quote(field)}, which nodelet does not support`);
      }
    }
  };
  walk(root, '');

  // The kubelet resolves relative paths in its config file against the file's directory.
  if (values.staticPodPath !== undefined && values.staticPodPath !== '' && !isAbsolute(values.staticPodPath)) {
    values.staticPodPath = resolve(dirname(path), values.staticPodPath);
  }
  return { values, warnings };
}
