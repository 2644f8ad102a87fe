import t from 'tap';
import { parseDuration } from '../../../src/config/duration.js';

t.test('Go duration syntax to milliseconds', async (t) => {
  const table: [string, number][] = [
    ['0', 0],
    ['-0', 0],
    ['0s', 0],
    ['20s', 20_000],
    ['1m', 60_000],
    ['1m0s', 60_000],
    ['1m30s', 90_000],
    ['4h', 14_400_000],
    ['500ms', 500],
    ['1.5h', 5_400_000],
    ['.5s', 500],
    ['1.s', 1000],
    ['+5s', 5000],
    ['-5s', -5000],
    ['2h45m10s', 9_910_000],
    ['1500us', 1.5],
    ['1500\u00b5s', 1.5],
    ['1500\u03bcs', 1.5],
    ['1000000ns', 1],
    ['1s500ms', 1500],
  ];
  for (const [input, ms] of table) t.equal(parseDuration(input), ms, input);
});

t.test('Go duration errors use Go wording', async (t) => {
  const table: [string, string][] = [
    ['', 'time: invalid duration ""'],
    ['abc', 'time: invalid duration "abc"'],
    ['.s', 'time: invalid duration ".s"'],
    ['-', 'time: invalid duration "-"'],
    ['5', 'time: missing unit in duration "5"'],
    ['1m5', 'time: missing unit in duration "1m5"'],
    ['5x', 'time: unknown unit "x" in duration "5x"'],
    ['5 s', 'time: unknown unit " s" in duration "5 s"'],
    ['3000000h', 'time: invalid duration "3000000h"'],
  ];
  for (const [input, message] of table) t.throws(() => parseDuration(input), { message }, JSON.stringify(input));
});
