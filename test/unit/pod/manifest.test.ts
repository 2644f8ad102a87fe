import t from 'tap';
import { parseManifest } from '../../../src/pod/manifest.js';
import { MAX_MANIFEST_DEPTH, scanJSON } from '../../../src/pod/syntax.js';
import { fuzzSeed, prng } from '../../helpers/prng.js';

const podYAML = (name: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
    - name: app
      image: nginx
`;

t.test('single YAML document', async (t) => {
  const r = parseManifest(podYAML('web'), 'web.yaml');
  t.same(r.errors, []);
  t.equal(r.pods.length, 1);
  t.same(r.pods[0], { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web' }, spec: { containers: [{ name: 'app', image: 'nginx' }] } });
});

t.test('multi-document YAML skips empty documents', async (t) => {
  const text = `---\n${podYAML('a')}---\n# only a comment\n---\n${podYAML('b')}---\n`;
  const r = parseManifest(text, 'm.yml');
  t.same(r.errors, []);
  t.same(r.pods.map((p) => p.metadata?.name), ['a', 'b']);
});

t.test('empty and comment-only files have no pods and no errors', async (t) => {
  t.same(parseManifest('', 'e.yaml'), { pods: [], errors: [] });
  t.same(parseManifest('# nothing\n', 'e.yaml'), { pods: [], errors: [] });
});

t.test('JSON', async (t) => {
  const r = parseManifest(JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'j' }, spec: { containers: [] } }), 'pod.json');
  t.same(r.errors, []);
  t.equal(r.pods[0]?.metadata?.name, 'j');
  const bom = parseManifest('\uFEFF{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"}}', 'b.JSON');
  t.same(bom.errors, []);
  t.equal(bom.pods.length, 1);
});

t.test('syntax errors are errors, never throws', async (t) => {
  const j = parseManifest('{"apiVersion": "v1",', 'bad.json');
  t.same(j.pods, []);
  t.equal(j.errors.length, 1);
  t.match(j.errors[0], /^bad\.json: invalid JSON: /);

  const y = parseManifest(`${podYAML('ok')}---\nmetadata: [unclosed\n`, 'bad.yaml');
  t.same(y.pods, [], 'a syntax error drops the whole file');
  t.ok(y.errors.length >= 1);
  t.match(y.errors[0], /^bad\.yaml: invalid YAML: /);
  t.notMatch(y.errors[0], /\n/, 'one line per error');

  const dupKey = parseManifest('apiVersion: v1\napiVersion: v1\nkind: Pod\n', 'd.yaml');
  t.same(dupKey.pods, []);
  t.match(dupKey.errors[0], /unique/);

  const alias = parseManifest('a: *nope\n', 'alias.yaml');
  t.same(alias.pods, []);
  t.match(alias.errors[0], /^alias\.yaml: invalid YAML: /);
});

t.test('a wrong kind or apiVersion only drops that document', async (t) => {
  const deploy = 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n';
  const r = parseManifest(`${podYAML('a')}---\n${deploy}---\n${podYAML('b').replace('apiVersion: v1', 'apiVersion: v2')}---\n- 1\n---\n42\n`, 'mix.yaml');
  t.same(r.pods.map((p) => p.metadata?.name), ['a']);
  t.same(r.errors, [
    'mix.yaml: document 2: expected apiVersion "v1" and kind "Pod", got apiVersion "apps/v1" and kind "Deployment"',
    'mix.yaml: document 3: expected apiVersion "v1" and kind "Pod", got apiVersion "v2" and kind "Pod"',
    'mix.yaml: document 4: expected a Pod object, got a list',
    'mix.yaml: document 5: expected a Pod object, got number',
  ]);
  t.same(parseManifest(deploy, 'one.yaml').errors, ['one.yaml: expected apiVersion "v1" and kind "Pod", got apiVersion "apps/v1" and kind "Deployment"']);
});

t.test('nesting is bounded: 20,000 levels of JSON or YAML are refused with a position, never thrown', async (t) => {
  const deep = `[${'['.repeat(20_000)}${']'.repeat(20_000)}]`;
  const prefix = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x"},"spec":{"x":';
  const json = parseManifest(`${prefix}${deep}}}`, 'deep.json');
  t.same(json.pods, []);
  // Levels 1 and 2 are the pod and spec; the bracket opening level MAX + 1 is the one reported.
  t.same(json.errors, [`deep.json: invalid JSON: nested deeper than ${MAX_MANIFEST_DEPTH} levels at line 1, column ${prefix.length + MAX_MANIFEST_DEPTH - 1}`]);
  const yaml = parseManifest(`apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  x: ${deep}\n`, 'deep.yaml');
  t.same(yaml.pods, []);
  t.same(yaml.errors, [`deep.yaml: invalid YAML: nested deeper than ${MAX_MANIFEST_DEPTH} levels`], 'the same message however deep the stack');
  // Below the YAML composer's own limit, the decoded value is checked.
  const mid = `${'['.repeat(300)}${']'.repeat(300)}`;
  t.same(parseManifest(`apiVersion: v1\nkind: Pod\nspec: {x: ${mid}}\n`, 'mid.yaml').errors, [`mid.yaml: invalid YAML: nested deeper than ${MAX_MANIFEST_DEPTH} levels`]);
  let block = 'apiVersion: v1\nkind: Pod\nspec:\n';
  for (let i = 1; i <= 150; i++) block += `${' '.repeat(i)}k:\n`;
  t.same(parseManifest(`${block}${' '.repeat(151)}v\n`, 'block.yaml').errors, [`block.yaml: invalid YAML: nested deeper than ${MAX_MANIFEST_DEPTH} levels`]);
  const circular = parseManifest('apiVersion: v1\nkind: Pod\nspec: &s {x: *s}\n', 'loop.yaml');
  t.same(circular.pods, []);
  t.equal(circular.errors.length, 1, 'a circular alias is an error, never a loop');
  // The limit itself is fine: a pod nested exactly MAX_MANIFEST_DEPTH levels parses.
  const ok = `${'['.repeat(MAX_MANIFEST_DEPTH - 2)}${']'.repeat(MAX_MANIFEST_DEPTH - 2)}`;
  t.same(parseManifest(`{"apiVersion":"v1","kind":"Pod","spec":{"x":${ok}}}`, 'ok.json').errors, []);
  t.same(parseManifest(`apiVersion: v1\nkind: Pod\nspec: {x: ${ok}}\n`, 'ok.yaml').errors, []);
});

t.test('parse errors say where, never what: no byte of the file reaches the message', async (t) => {
  const secrets = ['root:$6$s3cr3tHash:20200:0:99999:7:::', 's3cr3t-token-value'];
  const files: [string, string][] = [
    ['shadow.json', `${secrets[0]}\nbin:*:20200:0:99999:7:::\n`],
    ['shadow.yaml', `${secrets[0]}\n- ${secrets[1]}: [\n`],
    ['tokens.json', `{"token": "${secrets[1]}", ${secrets[1]}}`],
    ['tokens.json', `{"a": ${secrets[1]}}`],
    ['tokens.yaml', `token: "${secrets[1]}\n`],
    ['tokens.yaml', `a: 1\n${secrets[1]}: x\n  ${secrets[1]}: y\n`],
    ['tokens.yaml', `a: *${secrets[1]}\n`],
    ['tokens.yaml', `a: !${secrets[1]} x\nb: [\n`],
    ['kind.yaml', `apiVersion: v1\nkind: "${secrets[1]} ${secrets[0]}"\n`],
    ['bin.yaml', Buffer.from(Array.from({ length: 2048 }, (_, i) => (i * 7919) % 256)).toString('latin1')],
  ];
  for (const [name, text] of files) {
    const { pods, errors } = parseManifest(text, name);
    t.same(pods, [], `${name}: no pods`);
    t.equal(errors.length, 1, `${name}: one error: ${errors.join(' | ')}`);
    for (const secret of [...secrets, 's3cr3t', 'root', '20200']) {
      if (errors.some((e) => e.includes(secret))) t.fail(`${name}: ${JSON.stringify(secret)} leaked into ${JSON.stringify(errors)}`);
    }
  }
  t.same(parseManifest(files[0]![1], 'shadow.json').errors, ['shadow.json: invalid JSON: unexpected character at line 1, column 1']);
  t.same(parseManifest('{\n  "apiVersion": "v1",\n  "kind" "Pod"\n}', 'p.json').errors, ["p.json: invalid JSON: expected ':' after a property name at line 3, column 10"]);
  t.match(parseManifest(files[1]![1], 'shadow.yaml').errors, [/^shadow\.yaml: invalid YAML: [a-z ]+ at line \d+, column \d+( \(and \d+ more\))?$/]);
  t.same(parseManifest('apiVersion: v1\napiVersion: v1\n', 'd.yaml').errors, ['d.yaml: invalid YAML: map keys must be unique at line 2, column 1']);
});

t.test('scanJSON agrees with JSON.parse (seeded fuzz)', async (t) => {
  const seed = fuzzSeed();
  t.comment(`FUZZ_SEED=${seed}`);
  const rand = prng(seed);
  const pieces = ['{', '}', '[', ']', ',', ':', '"a"', '"\\u00e9"', '"\\x"', '"\\u12"', '"\u0001"', '1', '-', '-0', '01', '1.', '1.5', '1e5', '1e', 'true', 'tru', 'null', ' ', '\n', '\t', '"', '\\', 'x', '\u00a0'];
  const valid = ['{}', '[]', '{"a":[1,2,{"b":null}]}', ' [true , false] ', '"x"', '0', '-1.5e-3', '{"a":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u00FF"}'];
  const cases = [...valid, ...valid.map((v) => v.slice(0, -1)), ...valid.map((v) => `${v},`)];
  for (let i = 0; i < 3000; i++) {
    const n = 1 + Math.floor(rand() * 12);
    cases.push(Array.from({ length: n }, () => pieces[Math.floor(rand() * pieces.length)]).join(''));
  }
  let disagree = 0;
  for (const text of cases) {
    let parses = true;
    try {
      JSON.parse(text);
    } catch {
      parses = false;
    }
    const problem = scanJSON(text, 1000);
    if (parses !== (problem === undefined)) {
      disagree++;
      t.fail(`${JSON.stringify(text)}: JSON.parse ${parses ? 'accepts' : 'refuses'}, scanJSON says ${JSON.stringify(problem)}`);
    }
  }
  t.equal(disagree, 0, `${cases.length} inputs`);
});
