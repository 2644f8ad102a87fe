import t from 'tap';
import { isDNS1123Label, isDNS1123Subdomain, isValidUID, podFullName } from '../../../src/api/names.js';

const labelRegexMsg =
  "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const subdomainRegexMsg =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

t.test('podFullName is name_namespace', async (t) => {
  t.equal(podFullName({ metadata: { name: 'web', namespace: 'prod' } }), 'web_prod');
  t.equal(podFullName({ metadata: {} }), '_');
});

t.test('isDNS1123Label', async (t) => {
  const good = ['a', '0', 'ab', 'a-b', '1-2', 'a--b', '123-abc', 'my-name', 'a'.repeat(63)];
  for (const s of good) t.same(isDNS1123Label(s), [], `good: ${s}`);
  const bad = ['', 'A', 'Abc', '-a', 'a-', 'a_b', 'a b', 'ä', ' a', 'a\n'];
  for (const s of bad) t.same(isDNS1123Label(s), [labelRegexMsg], `bad: ${JSON.stringify(s)}`);
  t.same(isDNS1123Label('a.b'), ['must not contain dots']);
  t.same(isDNS1123Label('a'.repeat(64)), ['must be no more than 63 characters']);
  t.same(isDNS1123Label('A'.repeat(64)), ['must be no more than 63 characters', labelRegexMsg]);
});

t.test('isDNS1123Subdomain', async (t) => {
  const label63 = 'a'.repeat(63);
  const max = [label63, label63, label63, 'a'.repeat(61)].join('.');
  t.equal(max.length, 253);
  const good = ['a', 'example.com', 'a.b.c', 'a-1.b-2', '1.2.3.4', max];
  for (const s of good) t.same(isDNS1123Subdomain(s), [], `good: ${s.slice(0, 20)}`);
  const bad = ['', 'Foo', '.a', 'a.', 'a..b', '-a.b', 'a.b-', 'a_b.c', 'a/b'];
  for (const s of bad) t.same(isDNS1123Subdomain(s), [subdomainRegexMsg], `bad: ${s}`);
  t.same(isDNS1123Subdomain(max + 'a'), ['must be no more than 253 characters']);
});

t.test('isValidUID', async (t) => {
  for (const s of ['0123456789abcdef0123456789abcdef', '8a6f3c1e-0b2d-4c5e-9f7a-1b2c3d4e5f60', 'A-z', '1']) t.ok(isValidUID(s), s);
  for (const s of ['', 'a/b', '../x', 'a b', 'a'.repeat(65), 'ü']) t.notOk(isValidUID(s), s);
});
