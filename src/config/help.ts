import { FLAGS, type FlagSpec } from './flags.js';
import { mapText } from './zpages.js';

/** pflag's value placeholder per kind (`--port int32`, `-v, --v Level`); bools have none. */
const TYPE_NAME: Record<FlagSpec['kind'], string> = {
  string: 'string',
  enum: 'string',
  int: 'Level',
  port: 'int32',
  duration: 'duration',
  bool: '',
  stringList: 'strings',
  map: 'mapStringString',
};

/** pflag prints a default only when it differs from the type's zero value. */
function defaultText(spec: FlagSpec): string {
  switch (spec.kind) {
    case 'string':
    case 'enum':
      return spec.default === '' ? '' : ` (default ${JSON.stringify(spec.default)})`;
    case 'int':
    case 'port':
      return spec.default === 0 ? '' : ` (default ${spec.default})`;
    case 'duration':
      return spec.default === '0s' ? '' : ` (default ${spec.default})`;
    case 'bool':
      return spec.default ? ' (default true)' : '';
    case 'stringList':
      return spec.default.length === 0 ? '' : ` (default [${spec.default.join(',')}])`;
    case 'map': {
      const text = mapText(spec.default, spec.separator);
      return text === '' ? '' : ` (default ${text})`;
    }
  }
}

/** `nodelet --help`, laid out like pflag's FlagUsages (sorted, aligned, defaults appended). */
export function usage(): string {
  const rows = [...FLAGS]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((spec) => {
      const names = spec.short === undefined ? `      --${spec.name}` : `  -${spec.short}, --${spec.name}`;
      const type = TYPE_NAME[spec.kind];
      return { left: type === '' ? names : `${names} ${type}`, right: spec.help + defaultText(spec) };
    });
  const width = Math.max(...rows.map((r) => r.left.length));
  return [
    'nodelet is a Kubelet-compatible node agent that runs pods as Docker containers.',
    '',
    'Usage:',
    '  nodelet [flags]',
    '',
    'Flags:',
    ...rows.map((r) => `${r.left.padEnd(width)}   ${r.right}`),
    '',
  ].join('\n');
}
