import t from 'tap';
import { isMapping, parseMapping } from '../../../src/config/yaml-mapping.js';
import { parsePolicy, PolicyError } from '../../../src/auth/policy.js';
import { KubeconfigError, parseKubeconfig } from '../../../src/config/kubeconfig.js';

class Wrapped extends Error {}
const parse = (text: string) => parseMapping(text, 'a test mapping', (why) => new Wrapped(`prefix: ${why}`));

/** 10 levels of 10 aliases each: far past the yaml package's alias limit. */
const BOMB = ['a: &a [x]', ...Array.from({ length: 9 }, (_, i) => `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(10).fill(`*${String.fromCharCode(97 + i)}`).join(', ')}]`), 'z: *j', ''].join('\n');

t.test('a mapping comes back as a plain object, YAML or JSON', async (t) => {
  t.same(parse('a: 1\nb: [x]\n'), { a: 1, b: ['x'] });
  t.same(parse('{"a": {"b": null}}'), { a: { b: null } });
});

t.test('every failure goes through the caller\'s error factory', async (t) => {
  for (const [text, why] of [
    ['a: [', /^prefix: YAML: /],
    ['a: 1\na: 2\n', /^prefix: YAML: Map keys must be unique/],
    [BOMB, /^prefix: YAML: Excessive alias count/],
    ['', /^prefix: expected a test mapping$/],
    ['- a\n', /^prefix: expected a test mapping$/],
    ['just a string', /^prefix: expected a test mapping$/],
  ] as const) {
    const err = t.throws(() => parse(text), why, JSON.stringify(text.slice(0, 20)));
    t.ok(err instanceof Wrapped);
    t.notMatch((err as Error).message, /\n/, 'one line');
  }
});

t.test('the policy and kubeconfig loaders refuse an alias bomb with their own error class', async (t) => {
  const policy = t.throws(() => parsePolicy(BOMB), /^YAML: Excessive alias count/);
  t.ok(policy instanceof PolicyError, 'PolicyError');
  const kubeconfig = t.throws(() => parseKubeconfig(BOMB, '/'), /^YAML: Excessive alias count/);
  t.ok(kubeconfig instanceof KubeconfigError, 'KubeconfigError');
});

t.test('isMapping', async (t) => {
  t.ok(isMapping({}));
  for (const v of [null, undefined, [], 'x', 1]) t.notOk(isMapping(v), String(v));
});
