import t from 'tap';
import { parseTimestamp } from '../../../src/streaming/logs/time.js';

t.test('Docker timestamps become nine-digit RFC3339NanoFixed', async (t) => {
  const cases: [string, string][] = [
    ['2026-11-29T20:45:37.329060525Z', '2026-11-29T20:45:37.329060525Z'],
    // Docker's RFC3339Nano drops trailing zeros; the kubelet's format never does.
    ['2026-11-29T20:45:37.32906Z', '2026-11-29T20:45:37.329060000Z'],
    ['2026-11-29T20:45:37.3Z', '2026-11-29T20:45:37.300000000Z'],
    ['2026-11-29T20:45:37Z', '2026-11-29T20:45:37.000000000Z'],
    // Go keeps nine digits and drops the rest; it also takes a comma.
    ['2026-11-29T20:45:37.1234567891234Z', '2026-11-29T20:45:37.123456789Z'],
    ['2026-11-29T20:45:37,5Z', '2026-11-29T20:45:37.500000000Z'],
    ['2026-11-29T21:45:37.5+01:00', '2026-11-29T21:45:37.500000000+01:00'],
  ];
  for (const [input, fixed] of cases) t.equal(parseTimestamp(input)?.fixed, fixed, input);
});

t.test('the instant keeps nanoseconds below the millisecond', async (t) => {
  const ts = parseTimestamp('2026-11-29T20:45:37.329060525Z');
  t.equal(ts?.epochMs, Date.parse('2026-11-29T20:45:37.329Z'));
  t.equal(ts?.subMsNanos, 60525);
  t.equal(parseTimestamp('2026-11-29T21:45:37.5+01:00')?.epochMs, Date.parse('2026-11-29T20:45:37.5Z'), 'offsets are applied');
  t.equal(parseTimestamp('2026-11-29T19:45:37-01:00')?.epochMs, Date.parse('2026-11-29T20:45:37Z'));
  t.equal(new Date(parseTimestamp('0001-01-01T00:00:00Z')?.epochMs ?? NaN).toISOString(), '0001-01-01T00:00:00.000Z', 'years below 100 are not 19xx');
  t.equal(parseTimestamp('2024-02-29T00:00:00Z')?.fixed, '2024-02-29T00:00:00.000000000Z', 'leap day');
});

t.test('what Go time.Parse(RFC3339) refuses', async (t) => {
  for (const bad of [
    'yesterday',
    '',
    '2026-11-29',
    '2026-11-29 20:45:37Z',
    '2026-11-29T20:45:37',
    '2026-11-29T20:45:37z',
    '2026-11-29T20:45:37.Z',
    '2026-13-01T00:00:00Z',
    '2026-02-29T00:00:00Z',
    '2026-04-31T00:00:00Z',
    '2026-11-29T24:00:00Z',
    '2026-11-29T20:60:00Z',
    '2026-11-29T20:45:60Z',
    '2026-11-29T20:45:37+24:00',
    '2026-11-29T20:45:37+01:60',
    '2026-11-29T20:45:37+0100',
    ' 2026-11-29T20:45:37Z',
  ]) {
    t.equal(parseTimestamp(bad), undefined, JSON.stringify(bad));
  }
});
