import t from 'tap';
import { ERR_FORMAT_WRONG, ERR_NUMERIC, ERR_SUFFIX, formatQuantity, parseFloat32, parseQuantity, quantityValue } from '../../../src/eviction/go-values.js';
import { parseDuration as parseGoDuration } from '../../../src/config/duration.js';

t.test('parseQuantity keeps value and format, with apimachinery errors', async (t) => {
  t.same(parseQuantity('100Mi'), { nano: 100n * 1024n * 1024n * 1_000_000_000n, format: 'BinarySI' });
  t.same(parseQuantity('1k'), { nano: 1000n * 1_000_000_000n, format: 'DecimalSI' });
  t.same(parseQuantity('1e3'), { nano: 1000n * 1_000_000_000n, format: 'DecimalExponent' });
  t.same(parseQuantity('0'), { nano: 0n, format: 'DecimalSI' });
  t.same(parseQuantity('-5'), { nano: -5_000_000_000n, format: 'DecimalSI' });
  t.same(parseQuantity('1.5n'), { nano: 2n, format: 'DecimalSI' }, 'sub-nano rounds up');
  t.equal(quantityValue(parseQuantity('1.5')), 2n, 'Value() rounds away from zero');
  t.equal(quantityValue(parseQuantity('-1.5')), -2n);
  t.equal(quantityValue(parseQuantity('1.5Gi')), 1_610_612_736n);
  t.throws(() => parseQuantity(''), { message: ERR_FORMAT_WRONG });
  t.throws(() => parseQuantity('abc'), { message: ERR_FORMAT_WRONG });
  t.throws(() => parseQuantity('1.2.3'), { message: ERR_FORMAT_WRONG });
  t.throws(() => parseQuantity('.'), { message: ERR_FORMAT_WRONG });
  t.throws(() => parseQuantity('10K'), { message: ERR_SUFFIX });
  t.throws(() => parseQuantity('10KiB'), { message: ERR_FORMAT_WRONG });
  t.throws(() => parseQuantity('10Kii'), { message: ERR_SUFFIX });
  t.throws(() => parseQuantity('1e999'), { message: ERR_NUMERIC });
  t.match(ERR_FORMAT_WRONG, /^quantities must match the regular expression '\^\(\[\+-\]\?\[0-9\.\]\+\)/);
});

t.test('formatQuantity prints as Quantity.String', async (t) => {
  const cases: [bigint, Parameters<typeof formatQuantity>[1], string][] = [
    [0n, 'BinarySI', '0'],
    [104857600n, 'BinarySI', '100Mi'],
    [1610612736n, 'BinarySI', '1536Mi'],
    [1500n, 'BinarySI', '1500'],
    [1000n, 'BinarySI', '1k'],
    [52428800n, 'BinarySI', '50Mi'],
    [1n << 62n, 'BinarySI', '4Ei'],
    [-2048n, 'BinarySI', '-2Ki'],
    [5000n, 'DecimalSI', '5k'],
    [1500n, 'DecimalSI', '1500'],
    [10n ** 21n, 'DecimalSI', '1e21'],
    [500_000_000n, 'DecimalSI', '500M'],
    [1000n, 'DecimalExponent', '1e3'],
    [1234n, 'DecimalExponent', '1234'],
  ];
  for (const [v, f, want] of cases) t.equal(formatQuantity(v, f), want, `${v} ${f}`);
  t.equal(formatQuantity(1_500_000_000n, 'BinarySI', 'nano'), '1500m', 'a fraction prints decimal');
  t.equal(formatQuantity(2048n), '2Ki', 'BinarySI by default');
});

t.test('parseFloat32 is strconv.ParseFloat(s, 32)', async (t) => {
  t.equal(parseFloat32('10'), 10);
  t.equal(parseFloat32('0.1'), Math.fround(0.1));
  t.equal(parseFloat32('1e2'), 100);
  t.equal(parseFloat32('-Inf'), -Infinity);
  t.equal(parseFloat32('infinity'), Infinity);
  t.ok(Number.isNaN(parseFloat32('NaN')));
  t.throws(() => parseFloat32('ten'), { message: 'strconv.ParseFloat: parsing "ten": invalid syntax' });
  t.throws(() => parseFloat32(''), { message: 'strconv.ParseFloat: parsing "": invalid syntax' });
  t.throws(() => parseFloat32('1e39'), { message: 'strconv.ParseFloat: parsing "1e39": value out of range' });
});

t.test('the grace periods\' parser (config/duration.ts) is time.ParseDuration', async (t) => {
  t.equal(parseGoDuration('1m30s'), 90_000);
  t.equal(parseGoDuration('1.5h'), 5_400_000);
  t.equal(parseGoDuration('500ms'), 500);
  t.equal(parseGoDuration('0'), 0);
  t.equal(parseGoDuration('-1s'), -1000);
  t.equal(parseGoDuration('+2s'), 2000);
  t.equal(parseGoDuration('1\u00b5s'), 0.001);
  t.throws(() => parseGoDuration(''), { message: 'time: invalid duration ""' });
  t.throws(() => parseGoDuration('-'), { message: 'time: invalid duration "-"' });
  t.throws(() => parseGoDuration('.s'), { message: 'time: invalid duration ".s"' });
  t.throws(() => parseGoDuration('10'), { message: 'time: missing unit in duration "10"' });
  t.throws(() => parseGoDuration('10x'), { message: 'time: unknown unit "x" in duration "10x"' });
  t.throws(() => parseGoDuration('9999999999h'), { message: 'time: invalid duration "9999999999h"' });
});
