import t from 'tap';
import {
  formatThreshold,
  formatThresholdQuantity,
  getReclaimableThreshold,
  getThresholdQuantity,
  isHardEvictionThreshold,
  makeObservations,
  mergeThresholds,
  nodeConditions,
  nodeConditionsLastObservedAt,
  nodeConditionsObservedSince,
  parseLangleSeparatedMap,
  parseThresholdConfig,
  sortByEvictionPriority,
  thresholdsFirstObservedAt,
  thresholdsMet,
  thresholdsMetGracePeriod,
  thresholdsUpdatedStats,
} from '../../../src/eviction/thresholds.js';
import type { EvictionConfigMaps, NodeCondition, Observation, Signal, Threshold } from '../../../src/eviction/types.js';

const Mi = 1024n * 1024n;
const maps = (m: Partial<EvictionConfigMaps>): EvictionConfigMaps => ({ evictionHard: {}, evictionSoft: {}, evictionSoftGracePeriod: {}, evictionMinimumReclaim: {}, ...m });
const obs = (entries: [Signal, bigint, bigint, number?][]): Map<Signal, Observation> => new Map(entries.map(([s, available, capacity, time = 1000]) => [s, { available, capacity, time }]));

t.test('parseThresholdConfig: the kubelet defaults, quantities and percentages', async (t) => {
  const got = parseThresholdConfig(maps({ evictionHard: parseLangleSeparatedMap('memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%,imagefs.inodesFree<5%') }));
  t.equal(got.length, 5);
  t.same(got[0], { signal: 'memory.available', operator: 'LessThan', value: { quantity: 100n * Mi, format: 'BinarySI' }, gracePeriodMs: 0 });
  t.same(got[1], { signal: 'nodefs.available', operator: 'LessThan', value: { percentage: Math.fround(10 / 100) }, gracePeriodMs: 0 });
  t.ok(got.every(isHardEvictionThreshold));
  t.equal(getThresholdQuantity(got[1]!.value, 1000n), 100n, 'int64(capacity × float32 percentage)');
  t.same(parseThresholdConfig(maps({ evictionHard: { 'pid.available': '1000' } }))[0]?.value, { quantity: 1000n, format: 'DecimalSI' });
});

t.test('parseThresholdConfig: 0% and 100% are ignored; soft needs a grace period; min reclaim applies to hard and soft', async (t) => {
  t.same(parseThresholdConfig(maps({ evictionHard: { 'memory.available': '0%', 'nodefs.available': '100%' } })), []);
  const got = parseThresholdConfig(
    maps({
      evictionHard: { 'memory.available': '100Mi' },
      evictionSoft: { 'memory.available': '300Mi', 'nodefs.available': '15%' },
      evictionSoftGracePeriod: { 'memory.available': '1m30s', 'nodefs.available': '2m', 'pid.available': '1s' },
      evictionMinimumReclaim: { 'memory.available': '0.5Gi', 'nodefs.available': '5%' },
    }),
  );
  t.same(
    got.map((x) => [x.signal, x.gracePeriodMs, x.minReclaim]),
    [
      ['memory.available', 0, { quantity: 512n * Mi, format: 'BinarySI' }],
      ['memory.available', 90_000, { quantity: 512n * Mi, format: 'BinarySI' }],
      ['nodefs.available', 120_000, { percentage: Math.fround(0.05) }],
    ],
  );
  t.notOk(isHardEvictionThreshold(got[1]!));
  t.throws(() => parseThresholdConfig(maps({ evictionSoft: { 'memory.available': '300Mi' } })), { message: 'grace period must be specified for the soft eviction threshold memory.available' });
});

t.test('parseThresholdConfig: every error the kubelet returns', async (t) => {
  const cases: [Partial<EvictionConfigMaps>, string | RegExp][] = [
    [{ evictionHard: { 'memory.free': '1Gi' } }, 'unsupported eviction signal memory.free'],
    [{ evictionHard: { 'containerfs.available': '10%' } }, /^unsupported eviction signal containerfs.available: nodelet does not observe/],
    [{ evictionHard: { 'allocatableMemory.available': '100Mi' } }, /^unsupported eviction signal allocatableMemory.available: nodelet does not observe/],
    [{ evictionSoftGracePeriod: { 'containerfs.inodesFree': '1m' } }, /^unsupported eviction signal containerfs.inodesFree: /],
    [{ evictionMinimumReclaim: { bogus: '1Gi' } }, 'unsupported eviction signal bogus'],
    [{ evictionHard: { 'memory.available': '-5%' } }, 'eviction percentage threshold memory.available must be >= 0%: -5%'],
    [{ evictionHard: { 'memory.available': 'nan%' } }, 'eviction percentage threshold memory.available must be >= 0%: nan%'],
    [{ evictionHard: { 'memory.available': '150%' } }, 'eviction percentage threshold memory.available must be <= 100%: 150%'],
    [{ evictionHard: { 'memory.available': 'ten%' } }, 'strconv.ParseFloat: parsing "ten": invalid syntax'],
    [{ evictionHard: { 'memory.available': '10x' } }, /^quantities must match the regular expression/],
    [{ evictionHard: { 'memory.available': '10Ki5' } }, "unable to parse quantity's suffix"],
    [{ evictionHard: { 'memory.available': '0' } }, 'eviction threshold memory.available must be positive: 0'],
    [{ evictionHard: { 'memory.available': '-100Mi' } }, 'eviction threshold memory.available must be positive: -100Mi'],
    [{ evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '-1m' } }, 'invalid eviction grace period specified: -1m, must be a positive value'],
    [{ evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '90' } }, 'time: missing unit in duration "90"'],
    [{ evictionMinimumReclaim: { 'memory.available': '0%' } }, 'eviction percentage minimum reclaim memory.available must be positive: 0%'],
    [{ evictionMinimumReclaim: { 'memory.available': '-1Gi' } }, 'negative eviction minimum reclaim specified for memory.available'],
    [{ evictionMinimumReclaim: { 'memory.available': 'lots' } }, /^quantities must match/],
  ];
  for (const [m, message] of cases) t.throws(() => parseThresholdConfig(maps(m)), { message }, JSON.stringify(m));
  // A zero minimum reclaim quantity is allowed (only negative ones are refused).
  t.same(parseThresholdConfig(maps({ evictionHard: { 'memory.available': '1Gi' }, evictionMinimumReclaim: { 'memory.available': '0' } }))[0]?.minReclaim, { quantity: 0n, format: 'DecimalSI' });
});

t.test('parseLangleSeparatedMap: the flag form', async (t) => {
  t.same(parseLangleSeparatedMap(' memory.available < 100Mi ,,nodefs.available<10%'), { 'memory.available': '100Mi', 'nodefs.available': '10%' });
  t.same(parseLangleSeparatedMap(''), {});
  t.throws(() => parseLangleSeparatedMap('memory.available=100Mi'), { message: 'malformed pair, expect string<string' });
});

t.test('makeObservations: only what the reading has', async (t) => {
  const o = makeObservations({
    time: 5,
    dedicatedImageFs: true,
    memory: { availableBytes: 1n, capacityBytes: 2n },
    nodefs: { availableBytes: 3n, capacityBytes: 4n, inodesFree: 5n, inodes: 6n },
    imagefs: { availableBytes: 7n, capacityBytes: 8n, inodesFree: 9n },
    pid: { available: 10n, capacity: 11n },
  });
  t.same([...o.keys()], ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'pid.available']);
  t.same(o.get('nodefs.inodesFree'), { available: 5n, capacity: 6n, time: 5 });
  t.same([...makeObservations({ time: 1, dedicatedImageFs: false }).keys()], []);
});

const hardMem: Threshold = { signal: 'memory.available', operator: 'LessThan', value: { quantity: 100n * Mi }, gracePeriodMs: 0, minReclaim: { quantity: 50n * Mi } };
const softDisk: Threshold = { signal: 'nodefs.available', operator: 'LessThan', value: { percentage: 0.1 }, gracePeriodMs: 60_000, minReclaim: { percentage: 0.05 } };
const pids: Threshold = { signal: 'pid.available', operator: 'LessThan', value: { quantity: 100n }, gracePeriodMs: 0 };

t.test('thresholdsMet with and without minimum reclaim', async (t) => {
  const o = obs([
    ['memory.available', 120n * Mi, 1024n * Mi],
    ['nodefs.available', 120n, 1000n],
  ]);
  t.same(thresholdsMet([hardMem, softDisk, pids], o, false), [], 'above both thresholds; pid not observed');
  t.same(thresholdsMet([hardMem, softDisk, pids], o, true), [hardMem, softDisk], 'but below threshold + min reclaim');
  t.same(thresholdsMet([hardMem], obs([['memory.available', 100n * Mi, 1024n * Mi]]), false), [], 'equal is not less than');
  t.same(thresholdsMet([hardMem], obs([['memory.available', 100n * Mi - 1n, 1024n * Mi]]), false), [hardMem]);
  t.same(thresholdsMet([hardMem], obs([['memory.available', 150n * Mi, 1024n * Mi]]), true), [], 'min reclaim reached');
  t.same(thresholdsMet([pids], obs([['pid.available', 99n, 4096n]]), true), [pids], 'no min reclaim');
});

t.test('first observation, grace periods and updated stats', async (t) => {
  const first = thresholdsFirstObservedAt([hardMem, softDisk], new Map(), 1000);
  t.same([...first.values()], [1000, 1000]);
  t.same(thresholdsMetGracePeriod(first, 1000), [hardMem], 'hard at once, soft not yet');
  const later = thresholdsFirstObservedAt([softDisk], first, 50_000);
  t.equal(later.get(softDisk), 1000, 'keeps the first time');
  t.notOk(later.has(hardMem), 'a threshold no longer met is forgotten');
  t.same(thresholdsMetGracePeriod(later, 60_999), []);
  t.same(thresholdsMetGracePeriod(later, 61_000), [softDisk], 'grace period over');

  const now = obs([['memory.available', 1n, 2n, 2000], ['nodefs.available', 1n, 2n, 1000]]);
  const last = obs([['memory.available', 1n, 2n, 1000], ['nodefs.available', 1n, 2n, 1000]]);
  t.same(thresholdsUpdatedStats([hardMem, softDisk, pids], now, last), [hardMem], 'only newer readings; unobserved dropped');
  t.same(thresholdsUpdatedStats([softDisk], now, new Map()), [softDisk], 'no previous reading');
  t.same(thresholdsUpdatedStats([softDisk], obs([['nodefs.available', 1n, 2n, 0]]), last), [softDisk], 'a reading without time always counts');
});

t.test('node conditions and the transition period', async (t) => {
  t.same(nodeConditions([pids, softDisk, hardMem, softDisk]), ['MemoryPressure', 'DiskPressure', 'PIDPressure']);
  t.same(nodeConditions([]), []);
  let seen = nodeConditionsLastObservedAt(['DiskPressure'], new Map(), 1000);
  seen = nodeConditionsLastObservedAt(['MemoryPressure'], seen, 2000);
  t.same([...seen], [['MemoryPressure', 2000], ['DiskPressure', 1000]]);
  const period = 300_000;
  t.same(nodeConditionsObservedSince(seen, period, 2000), ['MemoryPressure', 'DiskPressure']);
  t.same(nodeConditionsObservedSince(seen, period, 300_999), ['MemoryPressure', 'DiskPressure']);
  t.same(nodeConditionsObservedSince(seen, period, 301_000), ['MemoryPressure'], 'DiskPressure clears once the period passed');
  t.same(nodeConditionsObservedSince(new Map<NodeCondition, number>(), period, 0), []);
});

t.test('mergeThresholds, ordering and the reclaimable threshold', async (t) => {
  const sameAsHard: Threshold = { ...hardMem, minReclaim: undefined };
  const otherValue: Threshold = { ...hardMem, value: { quantity: 1n } };
  const pct: Threshold = { ...hardMem, value: { percentage: 0.1 } };
  t.same(mergeThresholds([hardMem], [sameAsHard, otherValue, pct, pct]), [hardMem, otherValue, pct], 'duplicates by signal, operator, value and grace period');
  t.same(mergeThresholds([pct], [{ ...pct, value: { percentage: 0.2 } }, hardMem]).length, 3);
  t.same(sortByEvictionPriority([softDisk, pids, hardMem]), [hardMem, softDisk, pids], 'memory first, the rest in order');
  t.same(getReclaimableThreshold([pids, hardMem]), { threshold: pids, resource: 'pids' });
  t.same(getReclaimableThreshold([softDisk])?.resource, 'ephemeral-storage');
  t.equal(getReclaimableThreshold([]), undefined);
});

t.test('threshold printing', async (t) => {
  t.equal(formatThresholdQuantity({ quantity: 100n * Mi, format: 'BinarySI' }, 0n), '100Mi');
  t.equal(formatThresholdQuantity({ quantity: 500_000_000n, format: 'DecimalSI' }, 0n), '500M');
  t.equal(formatThresholdQuantity({ quantity: 1000n }, 0n), '1k', 'no format: BinarySI, which prints small values decimal');
  t.equal(formatThresholdQuantity({ percentage: 0.5 }, 10n * 1024n * Mi), '5Gi');
  // float32(0.1) is 0.10000000149…: the kubelet's 10% of 10Gi is 16 bytes more than 1Gi.
  t.equal(formatThresholdQuantity({ percentage: Math.fround(0.1) }, 10n * 1024n * Mi), '1073741840');
  t.equal(formatThreshold(softDisk), 'threshold(signal=nodefs.available, operator=LessThan, value=10%, gracePeriod=60000ms)');
  t.equal(formatThreshold(hardMem), 'threshold(signal=memory.available, operator=LessThan, value=100Mi, gracePeriod=0ms)');
});
