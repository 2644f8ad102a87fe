// The layering of src/ as a lint rule: the "must not import" column of docs/architecture.md's layer
// table, one row per folder.
// A relative import is resolved against the importing file, so `../server/x.js` from src/auth/
// and `../../server/x.js` from src/kubelet/prober/ are the same edge; a bare specifier is checked
// by its package name. Exceptions are listed per file with a reason.
import path from 'node:path';

const srcRoot = path.resolve(import.meta.dirname, '..', 'src');

/** Top-level unit of src/ a path belongs to: a folder name, or a file name without `.ts`/`.js`. */
function unitOf(absolute) {
  const rel = path.relative(srcRoot, absolute);
  if (rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  return rel.split(path.sep)[0].replace(/\.(ts|js)$/, '');
}

function packageOf(spec) {
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

/** @type {import('eslint').Rule.RuleModule} */
export const layeringRule = {
  meta: {
    type: 'problem',
    docs: { description: "enforce docs/architecture.md's must-not-import column per folder of src/" },
    schema: [{ type: 'object', additionalProperties: true }],
    messages: { forbidden: '{{from}}/ must not import {{what}} ({{why}})' },
  },
  create(context) {
    const { layers, exceptions = [] } = context.options[0];
    const filename = context.filename;
    const from = unitOf(filename);
    const layer = from === undefined ? undefined : layers[from];
    if (layer === undefined) return {};
    const relFile = path.relative(path.dirname(srcRoot), filename).split(path.sep).join('/');
    const check = (node, spec) => {
      if (typeof spec !== 'string' || spec.startsWith('node:')) return;
      let target;
      let what;
      if (spec.startsWith('.')) {
        target = unitOf(path.resolve(path.dirname(filename), spec));
        if (target === undefined || target === from) return;
        what = `${target}/`;
      } else {
        target = packageOf(spec);
        what = target;
      }
      const denied = layer.deny.includes(target) || (layer.allowOnly !== undefined && what.endsWith('/') && !layer.allowOnly.includes(target));
      if (!denied) return;
      if (exceptions.some((e) => e.file === relFile && e.imports === target)) return;
      context.report({ node, messageId: 'forbidden', data: { from, what, why: layer.why } });
    };
    return {
      ImportDeclaration: (node) => check(node.source, node.source.value),
      ExportNamedDeclaration: (node) => node.source && check(node.source, node.source.value),
      ExportAllDeclaration: (node) => check(node.source, node.source.value),
      ImportExpression: (node) => node.source.type === 'Literal' && check(node.source, node.source.value),
    };
  },
};
