import t from 'tap';
import { parseManifest } from '../../../src/pod/manifest.js';

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
