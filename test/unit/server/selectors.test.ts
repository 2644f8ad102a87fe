import t from 'tap';
import { StatusError } from '../../../src/api/errors.js';
import { matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector } from '../../../src/server/selectors.js';

const fields = new Set(['metadata.name', 'status.phase']);

t.test('label selectors: equality, inequality, existence', async (t) => {
  t.same(parseLabelSelector(undefined), []);
  t.same(parseLabelSelector(''), []);
  t.same(parseLabelSelector('a=b, c!=d,e==f,g,!h'), [
    { key: 'a', op: '=', value: 'b' },
    { key: 'c', op: '!=', value: 'd' },
    { key: 'e', op: '=', value: 'f' },
    { key: 'g', op: 'exists' },
    { key: 'h', op: '!exists' },
  ]);
  const reqs = parseLabelSelector('app=web,tier!=db');
  t.ok(matchesLabels(reqs, { app: 'web' }), 'missing key satisfies !=');
  t.ok(matchesLabels(reqs, { app: 'web', tier: 'fe' }));
  t.notOk(matchesLabels(reqs, { app: 'web', tier: 'db' }));
  t.notOk(matchesLabels(reqs, { app: 'api' }));
  t.notOk(matchesLabels(reqs, undefined));
  t.ok(matchesLabels(parseLabelSelector('example.com/x'), { 'example.com/x': '' }));
  t.notOk(matchesLabels(parseLabelSelector('!x'), { x: '1' }));
  t.ok(matchesLabels(parseLabelSelector('a='), { a: '' }), 'empty value is a valid label value');
});

t.test('bad label selectors are 400 BadRequest', async (t) => {
  for (const bad of ['a b=c', 'a=b c', 'a in (x,y)', 'a=b,,c=d', '-a=b', 'a/b/c=d', `a=${'x'.repeat(64)}`, 'Bad_Prefix/a=b']) {
    let err: unknown;
    try {
      parseLabelSelector(bad);
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof StatusError, `${bad} throws a StatusError`);
    t.match(err, { code: 400, reason: 'BadRequest', message: /^unable to parse requirement: / }, bad);
  }
});

t.test('field selectors', async (t) => {
  t.same(parseFieldSelector('metadata.name=web,status.phase!=Failed', fields), [
    { field: 'metadata.name', op: '=', value: 'web' },
    { field: 'status.phase', op: '!=', value: 'Failed' },
  ]);
  t.same(parseFieldSelector('metadata.name==a\\,b\\=c\\\\', fields), [{ field: 'metadata.name', op: '=', value: 'a,b=c\\' }]);
  const reqs = parseFieldSelector('metadata.name=web,status.phase!=Failed', fields);
  const get = (phase: string) => (f: string) => ({ 'metadata.name': 'web', 'status.phase': phase })[f];
  t.ok(matchesFields(reqs, get('Running')));
  t.notOk(matchesFields(reqs, get('Failed')));
  t.ok(matchesFields(parseFieldSelector('metadata.name=', fields), () => undefined), 'absent reads as empty');
});

t.test('unsupported fields and syntax are 400 with the apiserver message', async (t) => {
  t.throws(() => parseFieldSelector('spec.foo=x', fields), { message: 'field label not supported: spec.foo', code: 400 });
  t.throws(() => parseFieldSelector('metadata.name', fields), { code: 400 });
  t.throws(() => parseFieldSelector('metadata.name=a=b', fields), { code: 400 });
  t.throws(() => parseFieldSelector('metadata.name=a\\x', fields), { code: 400 });
});
