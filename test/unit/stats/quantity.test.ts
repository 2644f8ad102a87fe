import t from 'tap';
import { formatBytes, formatNanoCores, formatWindow } from '../../../src/stats/quantity.js';
import { usageNanoCores } from '../../../src/stats/rate.js';

t.test('nanocores print as apimachinery DecimalSI quantities', async (t) => {
  const cases: Array<[number, string]> = [
    [0, '0'],
    [3_000_000, '3m'],
    [1_000_000_000, '1'],
    [2_500_000_000, '2500m'],
    [1_500_000, '1500u'],
    [1_234_567, '1234567n'],
    [10, '10n'],
    [120_000, '120u'],
    [5_000_000_000_000, '5k'],
    [1_234_567.6, '1234568n'],
    [-5, '0'],
  ];
  for (const [n, want] of cases) t.equal(formatNanoCores(n), want, `${n}`);
});

t.test('bytes print as apimachinery BinarySI quantities', async (t) => {
  const cases: Array<[number, string]> = [
    [0, '0'],
    [1000, '1000'],
    [1024, '1Ki'],
    [2048 * 1024, '2Mi'],
    [2049 * 1024, '2049Ki'],
    [606_208, '592Ki'],
    [606_209, '606209'],
    [3 * 2 ** 30, '3Gi'],
    [2 ** 70, '1024Ei'],
  ];
  for (const [n, want] of cases) t.equal(formatBytes(n), want, `${n}`);
});

t.test('windows print as Go durations', async (t) => {
  const cases: Array<[number, string]> = [
    [0, '0s'],
    [500, '500ms'],
    [10_000, '10s'],
    [9_998, '9.998s'],
    [10_500, '10.5s'],
    [60_500, '1m0.5s'],
    [3_600_000 + 61_000, '1h1m1s'],
  ];
  for (const [ms, want] of cases) t.equal(formatWindow(ms), want, `${ms}`);
});

t.test('CPU rate from two samples', async (t) => {
  const at = (ms: number, cpu: number) => ({ timestamp: new Date(1_700_000_000_000 + ms), cpuUsageCoreNanoSeconds: cpu });
  t.equal(usageNanoCores(undefined, at(0, 5)), undefined, 'one sample is no rate');
  // 0.5 s of CPU over 10 s: 50 millicores.
  t.equal(usageNanoCores(at(0, 1e9), at(10_000, 1.5e9)), 50_000_000);
  // A full core over 2 s.
  t.equal(usageNanoCores(at(0, 0), at(2_000, 2e9)), 1e9);
  t.equal(usageNanoCores(at(1000, 0), at(1000, 10)), undefined, 'no time passed');
  t.equal(usageNanoCores(at(0, 10), at(1000, 5)), undefined, 'counter went backwards');
  t.equal(usageNanoCores(at(0, 10), at(1000, 10)), 0, 'idle');
});
