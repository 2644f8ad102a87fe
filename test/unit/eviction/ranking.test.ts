import t from 'tap';
import { evictionMessage, formatSpecQuantity, fsStatsFor, podDiskBytes, podRequestNano, rankPods, usageNeeds } from '../../../src/eviction/ranking.js';
import type { Observation, Signal, Threshold } from '../../../src/eviction/types.js';
import { Gi, Mi, names, pod, usageOf } from './fixtures.js';

const NANO = 1_000_000_000n;

t.test('usageNeeds asks only for what the signal ranks by', async (t) => {
  t.same(usageNeeds('memory.available'), { memory: true });
  t.same(usageNeeds('nodefs.available'), { disk: true });
  t.same(usageNeeds('imagefs.available'), { disk: true });
  t.same(usageNeeds('imagefs.inodesFree'), { inodes: true });
  t.same(usageNeeds('pid.available'), { pids: true });
});

t.test('podRequestNano: containers, sidecars, init peaks, pod-level requests, overhead', async (t) => {
  const two = pod('two', {
    containers: [
      { name: 'a', resources: { requests: { memory: '100Mi' } } },
      { name: 'b', resources: { limits: { memory: '50Mi' } } },
    ],
  });
  t.equal(podRequestNano(two, 'memory'), 150n * Mi * NANO, 'a limit stands in for a missing request');
  const init = pod('init', { requests: { memory: '100Mi' }, initContainers: [{ name: 'i', resources: { requests: { memory: '1Gi' } } }] });
  t.equal(podRequestNano(init, 'memory'), Gi * NANO, 'an init container larger than the rest');
  const sidecar = pod('sidecar', { requests: { memory: '100Mi' }, initContainers: [{ name: 's', restartPolicy: 'Always', resources: { requests: { memory: '20Mi' } } }] });
  t.equal(podRequestNano(sidecar, 'memory'), 120n * Mi * NANO, 'sidecars add up');
  const podLevel = pod('pl', { requests: { memory: '100Mi', 'ephemeral-storage': '1Gi' }, podResources: { limits: { memory: '300Mi' } } });
  t.equal(podRequestNano(podLevel, 'memory'), 300n * Mi * NANO, 'pod-level (limit standing in for the request)');
  t.equal(podRequestNano(podLevel, 'ephemeral-storage'), 0n, 'with pod-level resources, containers request nothing else (SkipContainerLevelResources)');
  t.equal(podRequestNano(pod('oh', { requests: { memory: '100Mi' }, overhead: { memory: '10Mi' } }), 'memory'), 110n * Mi * NANO);
  t.equal(podRequestNano(pod('oh0', { overhead: { memory: '10Mi' } }), 'memory'), 0n, 'overhead only on a non-zero request');
  t.equal(podRequestNano(pod('none'), 'inodes'), 0n);
});

t.test('rankMemoryPressure: over requests first, then priority, then usage above requests; no stats first of all', async (t) => {
  const a = pod('a'); // BestEffort, 50Mi: over its (zero) request
  const b = pod('b', { requests: { memory: '100Mi' } }); // 80Mi: under
  const c = pod('c', { requests: { memory: '100Mi' }, priority: 1000 }); // 500Mi: over, but higher priority
  const d = pod('d', { requests: { memory: '1Gi' } }); // no stats
  const e = pod('e'); // BestEffort, 200Mi
  const f = pod('f', { requests: { memory: '10Mi' } }); // 100Mi: 90Mi above
  const stats = usageOf([
    [a, { memoryWorkingSetBytes: 50n * Mi }],
    [b, { memoryWorkingSetBytes: 80n * Mi }],
    [c, { memoryWorkingSetBytes: 500n * Mi }],
    [e, { memoryWorkingSetBytes: 200n * Mi }],
    [f, { memoryWorkingSetBytes: 100n * Mi }],
  ]);
  t.same(names(rankPods('memory.available', [a, b, c, d, e, f], stats, false)), ['d', 'e', 'f', 'a', 'c', 'b']);
  t.same(names(rankPods('memory.available', [b, d], new Map(), false)), ['b', 'd'], 'no stats at all: order kept');
});

t.test('rankPIDPressure: priority, then most processes', async (t) => {
  const low = pod('low', { priority: -10 });
  const few = pod('few');
  const many = pod('many');
  const high = pod('high', { priority: 100 });
  const stats = usageOf([
    [low, { processes: 1n }],
    [few, { processes: 2n }],
    [many, { processes: 30n }],
    [high, { processes: 500n }],
  ]);
  t.same(names(rankPods('pid.available', [high, few, many, low], stats, false)), ['low', 'many', 'few', 'high']);
});

t.test('rankDiskPressure: what counts depends on a dedicated imagefs', async (t) => {
  // `layer` writes 1Gi in its writable layer; `logger` writes 500Mi of logs and 100Mi in an emptyDir.
  const layer = pod('layer');
  const logger = pod('logger');
  const quiet = pod('quiet', { requests: { 'ephemeral-storage': '1Gi' } });
  const stats = usageOf([
    [layer, { containerBytes: new Map([['c', Gi]]), containerLogBytes: new Map([['c', 0n]]), inodes: 10n }],
    [logger, { containerBytes: new Map([['c', 500n * Mi]]), containerLogBytes: new Map([['c', 500n * Mi]]), volumeBytes: new Map([['data', 100n * Mi]]), inodes: 500n }],
    [quiet, { containerBytes: new Map([['c', 10n * Mi]]), inodes: 0n }],
  ]);
  const pods = [quiet, logger, layer];
  t.same(names(rankPods('nodefs.available', pods, stats, false)), ['layer', 'logger', 'quiet'], 'one filesystem: everything counts');
  t.same(names(rankPods('imagefs.available', pods, stats, false)), ['layer', 'logger', 'quiet'], 'imagefs shares the ranking');
  t.same(names(rankPods('nodefs.available', pods, stats, true)), ['logger', 'layer', 'quiet'], 'dedicated imagefs: nodefs counts logs and volumes (layer: 0 above a 0 request; quiet: 1Gi below)');
  t.same(names(rankPods('imagefs.available', pods, stats, true)), ['layer', 'logger', 'quiet'], 'dedicated imagefs: imagefs counts writable layers');
  t.same(names(rankPods('nodefs.inodesFree', pods, stats, false)), ['logger', 'layer', 'quiet'], 'inodes: most inodes first');
  t.same(names(rankPods('imagefs.inodesFree', pods, stats, true)), ['logger', 'layer', 'quiet']);
  const low = pod('low', { priority: -1 });
  t.same(names(rankPods('nodefs.available', [layer, low], usageOf([[layer, { containerBytes: new Map([['c', Gi]]) }], [low, { containerBytes: new Map([['c', 1n]]) }]]), false)), ['low', 'layer'], 'both over requests: lower priority first');
});

t.test('podDiskBytes and fsStatsFor', async (t) => {
  const u = { containerBytes: new Map([['a', 100n], ['b', 50n]]), containerLogBytes: new Map([['a', 30n]]), volumeBytes: new Map([['v', 7n]]) };
  t.equal(podDiskBytes(u, fsStatsFor('nodefs.available', false)), 157n);
  t.equal(podDiskBytes(u, fsStatsFor('nodefs.available', true)), 37n);
  t.equal(podDiskBytes(u, fsStatsFor('imagefs.inodesFree', true)), 120n);
  t.equal(podDiskBytes({}, fsStatsFor('nodefs.available', false)), 0n);
});

const obs = (entries: [Signal, bigint, bigint][]): Map<Signal, Observation> => new Map(entries.map(([s, available, capacity]) => [s, { available, capacity, time: 1 }]));

t.test('evictionMessage: memory, with the offending containers', async (t) => {
  const p = pod('web', {
    containers: [
      { name: 'app', resources: { requests: { memory: '100Mi' } } },
      { name: 'side', resources: { requests: { memory: '1Gi' } } },
      { name: 'nolimit' },
    ],
    initContainers: [{ name: 'init', resources: { limits: { memory: '64Mi' } } }],
  });
  const thresholds: Threshold[] = [
    { signal: 'nodefs.available', operator: 'LessThan', value: { percentage: 0.1 }, gracePeriodMs: 0 },
    { signal: 'memory.available', operator: 'LessThan', value: { quantity: 100n * Mi, format: 'BinarySI' }, gracePeriodMs: 0 },
  ];
  const usage = {
    memoryWorkingSetBytes: 900n * Mi,
    containerMemoryBytes: new Map([['app', 300n * Mi], ['side', 500n * Mi], ['nolimit', 1500n], ['init', 65n * Mi], ['gone', Gi]]),
  };
  const got = evictionMessage('memory', p, usage, thresholds, obs([['memory.available', 50n * Mi, 4n * Gi]]));
  t.equal(
    got.message,
    'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. ' +
      'Container app was using 300Mi, request is 100Mi, has larger consumption of memory. ' +
      'Container nolimit was using 1500, request is 0, has larger consumption of memory. ' +
      'Container init was using 65Mi, request is 64Mi, has larger consumption of memory. ',
  );
  t.same(got.annotations, { offending_containers: 'app,nolimit,init', offending_containers_usage: '300Mi,1500,65Mi', starved_resource: 'memory' });
});

t.test('evictionMessage: pod-level resources, disk, inodes, and a pod without stats', async (t) => {
  const thresholds: Threshold[] = [{ signal: 'memory.available', operator: 'LessThan', value: { quantity: 100n * Mi, format: 'BinarySI' }, gracePeriodMs: 0 }];
  const pl = pod('pl', { podResources: { requests: { memory: '256Mi' } } });
  const got = evictionMessage('memory', pl, { memoryWorkingSetBytes: 300n * Mi }, thresholds, obs([['memory.available', 99n * Mi, Gi]]));
  t.equal(got.message, 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 99Mi. Pod pl was using 300Mi, request is 256Mi, has larger consumption of memory. ');
  t.same(got.annotations, { offending_pod: 'pl', offending_pod_usage: '300Mi', offending_containers: '', offending_containers_usage: '', starved_resource: 'memory' });

  const none = evictionMessage('memory', pl, undefined, thresholds, obs([['memory.available', 99n * Mi, Gi]]));
  t.equal(none.message, 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 99Mi. ');
  t.same(none.annotations, {}, 'no stats: no annotations, as upstream');
  t.equal(evictionMessage('memory', pl, undefined, thresholds, new Map()).message, 'The node was low on resource: memory. ', 'no observation: no threshold sentence');

  const disk: Threshold[] = [
    { signal: 'imagefs.available', operator: 'LessThan', value: { percentage: 0.15 }, gracePeriodMs: 0 },
    { signal: 'nodefs.available', operator: 'LessThan', value: { quantity: Gi, format: 'BinarySI' }, gracePeriodMs: 0 },
  ];
  const d = pod('d', { requests: { 'ephemeral-storage': '1G' } });
  const dm = evictionMessage('ephemeral-storage', d, { containerBytes: new Map([['c', 2n * Gi]]) }, disk, obs([['nodefs.available', 512n * Mi, 100n * Gi]]));
  t.equal(dm.message, 'The node was low on resource: ephemeral-storage. Threshold quantity: 1Gi, available: 512Mi. Container c was using 2Gi, request is 1G, has larger consumption of ephemeral-storage. ', 'the first threshold with an observation');

  const inodes: Threshold[] = [{ signal: 'nodefs.inodesFree', operator: 'LessThan', value: { percentage: 0.05 }, gracePeriodMs: 0 }];
  const im = evictionMessage('inodes', d, { inodes: 5000n }, inodes, obs([['nodefs.inodesFree', 4000n, 100_000n]]));
  t.equal(im.message, 'The node was low on resource: inodes. Threshold quantity: 5000, available: 4k. ');
  t.same(im.annotations, { offending_containers: '', offending_containers_usage: '', starved_resource: 'inodes' });
});

t.test('formatSpecQuantity', async (t) => {
  t.equal(formatSpecQuantity('128Mi'), '128Mi');
  t.equal(formatSpecQuantity('1024Mi'), '1Gi');
  t.equal(formatSpecQuantity(undefined), '0');
  t.equal(formatSpecQuantity('junk'), 'junk');
  t.equal(formatSpecQuantity(2000), '2k');
});
