import t from 'tap';
import { expand, mappingFor } from '../../../src/volumes/expansion.js';

// The kubelet's expansion test table (third_party/forked/golang/expansion/expand_test.go).
const vars = new Map([
  ['VAR_A', 'A'],
  ['VAR_B', 'B'],
  ['VAR_C', 'C'],
  ['VAR_REF', '$(VAR_A)'],
  ['VAR_EMPTY', ''],
]);
const mapping = mappingFor(vars);

t.test('expansion follows the kubelet rules', async (t) => {
  const cases: Array<[string, string]> = [
    ['$(VAR_A)', 'A'],
    ['___$(VAR_B)___', '___B___'],
    ['$(VAR_A)-$(VAR_A)', 'A-A'],
    ['foo\\$(VAR_C)bar', 'foo\\Cbar'],
    ['$(VAR_REF)', '$(VAR_A)'], // no recursion
    ['$(VAR_EMPTY)', ''],
    ['$(UNKNOWN)', '$(UNKNOWN)'],
    ['$$(VAR_A)', '$(VAR_A)'], // escaped
    ['$$$(VAR_A)', '$A'],
    ['$$$$(VAR_A)', '$$(VAR_A)'],
    ['$(VAR_A', '$(VAR_A'], // unterminated
    ['$(', '$('],
    ['$', '$'],
    ['foo$', 'foo$'],
    ['$VAR_A', '$VAR_A'], // no parentheses: not a reference
    ['f00__(VAR_A)__', 'f00__(VAR_A)__'],
    ['$()', '$()'],
    ['$(VAR_A)$(VAR_B)$(VAR_C)', 'ABC'],
    ['héllo $(VAR_A) wörld', 'héllo A wörld'],
  ];
  for (const [input, want] of cases) t.equal(expand(input, mapping), want, input);
});

t.test('the first map holding a name wins', async (t) => {
  const m = mappingFor(new Map([['X', '1']]), new Map([['X', '2'], ['Y', '3']]));
  t.equal(expand('$(X)$(Y)', m), '13');
});
