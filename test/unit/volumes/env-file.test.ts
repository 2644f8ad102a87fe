import t from 'tap';
import { EnvFileError, parseEnvFile } from '../../../src/volumes/env-file.js';
import { podHostname, podHostnameAndDomain } from '../../../src/api/names.js';

t.test('parseEnvFile: the kubelet\'s strict subset of POSIX shell (pkg/kubelet/util/env/env_util.go)', async (t) => {
  const file = "# comment\n\n  A='one'\nB='two' # trailing comment\nC='multi\nline'\nD= 'ignored'\nE=''\nF='x=y#z'\n";
  t.same(['A', 'B', 'C', 'D', 'E', 'F', 'G'].map((k) => parseEnvFile(file, k)), ['one', 'two', 'multi\nline', '', '', 'x=y#z', '']);
  t.equal(parseEnvFile("A='first'\nA='second'\n", 'A'), 'first', 'the first definition wins (the parser returns at it)');
  const bad: [string, RegExp][] = [
    ['A\n', /line 1: missing '='/],
    ["='x'\n", /line 1: empty variable name/],
    ["A ='x'\n", /line 1: whitespace before '=' is not allowed/],
    ['A=x\n', /line 1: value must be enclosed in single quotes/],
    ["A='x' y\n", /line 1: unexpected content after closing quote/],
    ["A='open\nstill\n", /starting at line 1: unclosed single quote/],
  ];
  for (const [text, why] of bad) t.throws(() => parseEnvFile(text, 'Z'), why, JSON.stringify(text));
  let caught: unknown;
  try {
    parseEnvFile('A\n', 'Z');
  } catch (err) {
    caught = err;
  }
  t.ok(caught instanceof EnvFileError, 'an EnvFileError');
  t.equal(parseEnvFile("X='1'\nbroken\n", 'X'), '1', 'a key found before a malformed line is returned, as the kubelet stops at it');
});

t.test('hostnameOverride: the name as given, truncated, no domain; an invalid one refused', async (t) => {
  const pod = (spec: Record<string, unknown>) => ({ metadata: { name: 'web', namespace: 'ns' }, spec: { containers: [], ...spec } });
  t.same(podHostnameAndDomain(pod({ hostnameOverride: 'a.b-c', hostname: 'h', subdomain: 's' }), 'cluster.local'), { hostname: 'a.b-c', domain: '' });
  t.same(podHostnameAndDomain(pod({ hostname: 'h', subdomain: 's' }), 'cluster.local'), { hostname: 'h', domain: 's.ns.svc.cluster.local' }, 'without it, as before');
  t.equal(podHostnameAndDomain(pod({ hostnameOverride: `${'a'.repeat(62)}.b` }), '').hostname, 'a'.repeat(62), 'cut to 63 without a trailing dot');
  t.throws(() => podHostnameAndDomain(pod({ hostnameOverride: 'Bad_Name' }), ''), /pod HostnameOverride "Bad_Name" is not a valid DNS subdomain/);
  t.equal(podHostname(pod({ hostnameOverride: 'o', hostname: 'h' })), 'o');
});
