import t from 'tap';
import { ExpansionBudget, ExpansionTooLong, MAX_CONTAINER_EXPANSION_BYTES, MAX_EXPANDED_VALUE_BYTES, MAX_SUBPATH_BYTES, expand, mappingFor } from '../../../src/volumes/expansion.js';

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

t.test('expand stops before its output would pass maxBytes, and only then', async (t) => {
  const m = mappingFor(new Map([['A', 'a'.repeat(10)], ['E', 'é']]));
  t.equal(expand('$(A)$(A)', m, 20), 'a'.repeat(20), 'exactly the cap fits');
  t.throws(() => expand('$(A)$(A)x', m, 20), ExpansionTooLong, 'one literal byte over');
  t.throws(() => expand('$(A)$(A)$(A)', m, 20), { name: 'ExpansionTooLong', maxBytes: 20 });
  t.equal(expand('$(E)$(E)', m, 4), 'éé', 'UTF-8 bytes: é is 2');
  t.throws(() => expand('$(E)$(E)$(E)', m, 5), ExpansionTooLong, 'bytes, not UTF-16 units');
  t.throws(() => expand('x'.repeat(21), m, 20), ExpansionTooLong, 'a literal counts too');
  t.equal(expand('$$(A)', m, 5), '$(A)', 'an escape is not a reference');
});

t.test('a doubling bomb costs the cap, not 2^i: the mapping value is refused unbuilt', async (t) => {
  // V0 = 32 bytes, V{i} = V{i-1}V{i-1}: V21 would be 64 MiB.
  const vars = new Map<string, string>([['V0', 'x'.repeat(32)]]);
  let failedAt = -1;
  const started = performance.now();
  for (let i = 1; i < 22; i++) {
    try {
      vars.set(`V${i}`, expand(`$(V${i - 1})$(V${i - 1})`, mappingFor(vars), MAX_EXPANDED_VALUE_BYTES));
    } catch (err) {
      t.type(err, ExpansionTooLong);
      failedAt = i;
      break;
    }
  }
  t.equal(failedAt, 13, 'V13 (256 KiB) is the first past 128 KiB');
  t.equal(vars.get('V12')?.length, 128 * 1024, 'V12 is exactly 128 KiB and allowed');
  t.ok(performance.now() - started < 500, 'cheap');
});

t.test('$( without ) is linear, not quadratic', async (t) => {
  const input = '$('.repeat(100_000);
  const started = performance.now();
  t.equal(expand(input, mappingFor(new Map())), input);
  t.ok(performance.now() - started < 500, `took ${Math.round(performance.now() - started)} ms`);
});

t.test('ExpansionBudget: per-value caps, one share per container, refusals name the field', async (t) => {
  const m = mappingFor(new Map([['K', 'k'.repeat(1024)]]));
  const b = new ExpansionBudget(4096);
  t.equal(b.expand('env A', '$(K)$(K)', m, 2048).length, 2048);
  t.throws(() => b.expand('env B', '$(K)$(K)$(K)', m, 2048), {
    name: 'ContainerConfigError',
    reason: 'CreateContainerConfigError',
    message: "env B: $(VAR) expansion would exceed 2048 bytes (MAX_ARG_STRLEN, the kernel's limit on one argument or env string)",
  });
  b.spend('env C', 'c'.repeat(1024));
  t.throws(() => b.expand('args[0]', '$(K)x', m, 2048), { message: "args[0]: $(VAR) expansion would exceed 4096 bytes (the container's env, command, args and subpaths together)" }, 'what is left of the share is the cap');
  t.equal(b.expand('args[1]', '$(K)', m, 2048).length, 1024, 'a value that fits what is left still goes');
  t.throws(() => b.spend('env D', 'd'), { message: /exceed 4096 bytes \(the container's env/ }, 'the share is spent');
  t.throws(() => new ExpansionBudget().expand('volumeMount "v": subPathExpr', 'a/$(K)$(K)$(K)$(K)', m, MAX_SUBPATH_BYTES), {
    message: `volumeMount "v": subPathExpr: $(VAR) expansion would exceed ${MAX_SUBPATH_BYTES} bytes (PATH_MAX, the kernel's limit on a path)`,
  });
  t.equal(new ExpansionBudget().totalBytes, MAX_CONTAINER_EXPANSION_BYTES);
});
