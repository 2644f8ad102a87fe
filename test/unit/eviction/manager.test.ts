import { Writable } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { EvictionManager, isCriticalPod, type EvictionManagerOptions } from '../../../src/eviction/manager.js';
import { parseThresholdConfig } from '../../../src/eviction/thresholds.js';
import type { Eviction, EvictionConfigMaps, NodeReadings, PodUsage, UsageNeeds } from '../../../src/eviction/types.js';
import { waitFor } from '../../helpers/wait.js';
import { Gi, Mi, names, pod, usageOf } from './fixtures.js';

const MINUTE = 60_000;

/** A manager over fakes: the node reading, pods, usage and clock are plain fields the test moves. */
class Harness {
  now = 1_000_000;
  readingTime = 1;
  memory = 4n * Gi;
  nodefs = 50n * Gi;
  imagefs: bigint | undefined;
  dedicatedImageFs = false;
  pods: Pod[] = [];
  usage = new Map<string, PodUsage>();
  /** What a call of deleteUnusedImages frees on nodefs. */
  imagesFree = 0n;
  readonly calls: string[] = [];
  readonly usageAsked: [string[], UsageNeeds][] = [];
  readonly evictions: { pod: string; eviction: Eviction; grace: number }[] = [];
  readonly podEvents: { pod: string; reason: string; message: string; annotations?: Readonly<Record<string, string>> }[] = [];
  readonly nodeEvents: string[] = [];
  /** `kubelet_evictions` by signal, as counted. */
  readonly counted: string[] = [];
  readonly logs: { level: number; msg: string }[] = [];
  evictResult: (pod: Pod) => Promise<boolean> = async () => true;
  failRead = false;
  readonly manager: EvictionManager;

  constructor(maps: Partial<EvictionConfigMaps>, opts: Partial<EvictionManagerOptions> = {}) {
    const thresholds = parseThresholdConfig({ evictionHard: {}, evictionSoft: {}, evictionSoftGracePeriod: {}, evictionMinimumReclaim: {}, ...maps });
    const sink = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        const rec = JSON.parse(chunk.toString()) as { level: number; msg: string };
        this.logs.push({ level: rec.level, msg: rec.msg });
        done();
      },
    });
    this.manager = new EvictionManager({
      thresholds,
      pressureTransitionPeriodMs: 5 * MINUTE,
      maxPodGracePeriodSeconds: 30,
      readNode: async () => {
        this.calls.push('readNode');
        if (this.failRead) throw new Error('no summary');
        return this.reading();
      },
      podUsage: async (pods, needs) => {
        this.usageAsked.push([names(pods), needs]);
        return this.usage;
      },
      activePods: () => this.pods,
      deleteUnusedContainers: async () => {
        this.calls.push('deleteUnusedContainers');
      },
      deleteUnusedImages: async () => {
        this.calls.push('deleteUnusedImages');
        this.nodefs += this.imagesFree;
      },
      evict: async (p, eviction, grace) => {
        this.evictions.push({ pod: p.metadata?.name ?? '', eviction, grace });
        return this.evictResult(p);
      },
      record: {
        pod: (p, type, reason, message, annotations) => {
          t.equal(type, 'Warning');
          this.podEvents.push({ pod: p.metadata?.name ?? '', reason, message, annotations });
        },
        node: (type, reason, message) => this.nodeEvents.push(`${type} ${reason} ${message}`),
      },
      counted: (signal) => this.counted.push(signal),
      log: pino({ level: 'debug' }, sink),
      now: () => this.now,
      ...opts,
    });
  }

  reading(): NodeReadings {
    return {
      time: this.readingTime,
      dedicatedImageFs: this.dedicatedImageFs,
      memory: { availableBytes: this.memory, capacityBytes: 8n * Gi },
      nodefs: { availableBytes: this.nodefs, capacityBytes: 100n * Gi, inodesFree: 1_000_000n, inodes: 2_000_000n },
      ...(this.imagefs === undefined ? {} : { imagefs: { availableBytes: this.imagefs, capacityBytes: 100n * Gi } }),
    };
  }

  /** One pass on a fresh reading, `ms` later. */
  async pass(ms = 10_000): Promise<string[]> {
    this.now += ms;
    this.readingTime += ms;
    return names(await this.manager.synchronize());
  }

  conditions(): string[] {
    return [...this.manager.conditions()];
  }
}

const staticPod = (name: string) => pod(name, { annotations: { 'kubernetes.io/config.source': 'file' } });

t.test('isCriticalPod: static, mirror, system-critical priority', async (t) => {
  t.ok(isCriticalPod(staticPod('s')));
  t.notOk(isCriticalPod(pod('api', { annotations: { 'kubernetes.io/config.source': 'api' } })));
  t.ok(isCriticalPod(pod('m', { annotations: { 'kubernetes.io/config.mirror': 'abc' } })));
  t.ok(isCriticalPod(pod('p', { priority: 2_000_000_000 })));
  t.notOk(isCriticalPod(pod('q', { priority: 1_999_999_999 })));
  t.notOk(isCriticalPod(pod('plain')));
  t.notOk(isCriticalPod({}));
});

t.test('disk pressure: reclaim first, then one pod per pass, the condition for the transition period', async (t) => {
  const h = new Harness({ evictionHard: { 'nodefs.available': '10Gi' }, evictionMinimumReclaim: { 'nodefs.available': '1Gi' } });
  const big = pod('big');
  const small = pod('small', { requests: { 'ephemeral-storage': '1Gi' } });
  const critical = staticPod('critical');
  h.pods = [small, critical, big];
  h.usage = usageOf([
    [big, { containerBytes: new Map([['c', 5n * Gi]]) }],
    [small, { containerBytes: new Map([['c', 100n * Mi]]) }],
    [critical, { containerBytes: new Map([['c', 20n * Gi]]) }],
  ]);

  t.same(await h.pass(), [], 'no pressure');
  t.same(h.conditions(), []);
  t.same(h.usageAsked, [], 'no pod is measured without pressure or limits');

  // Pressure; unused images free enough (12Gi ≥ 10Gi + 1Gi minimum reclaim): no eviction.
  h.calls.length = 0;
  h.nodefs = 5n * Gi;
  h.imagesFree = 7n * Gi;
  t.same(await h.pass(), []);
  t.same(h.calls, ['readNode', 'deleteUnusedContainers', 'deleteUnusedImages', 'readNode'], 'containers, then images, then a new reading');
  t.same(h.nodeEvents, ['Warning EvictionThresholdMet Attempting to reclaim ephemeral-storage']);
  t.same(h.conditions(), ['DiskPressure']);
  t.same(h.evictions, []);

  // Pressure again; reclaim frees nothing: the largest non-critical consumer goes, once.
  h.nodefs = 3n * Gi;
  h.imagesFree = 0n;
  t.same(await h.pass(), ['big']);
  t.same(h.usageAsked.at(-1), [['small', 'critical', 'big'], { disk: true }]);
  t.equal(h.evictions.length, 1);
  const [ev] = h.evictions;
  t.equal(ev?.grace, 1, 'hard threshold: immediateEvictionGracePeriodSeconds');
  t.same(ev?.eviction, {
    reason: 'Evicted',
    message: 'The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 3Gi. Container c was using 5Gi, request is 0, has larger consumption of ephemeral-storage. ',
    annotations: { offending_containers: 'c', offending_containers_usage: '5Gi', starved_resource: 'ephemeral-storage' },
    disruption: 'TerminationByKubelet',
  });
  t.same(h.podEvents, [{ pod: 'big', reason: 'Evicted', message: ev?.eviction.message, annotations: ev?.eviction.annotations }]);
  t.ok(h.logs.some((l) => l.msg === 'Eviction manager: cannot evict a critical pod'), 'the critical pod, first in rank, was skipped');

  // The same reading again (no newer stats): nothing is done.
  h.pods = [small, critical];
  h.now += 10_000;
  t.same(names(await h.manager.synchronize()), [], 'stale reading');
  t.equal(h.evictions.length, 1);

  // Above the threshold but not above threshold + minimum reclaim: still starved.
  h.nodefs = 10n * Gi + 512n * Mi;
  t.same(await h.pass(), ['small']);
  t.equal(h.evictions.length, 2);
  t.same(h.counted, ['nodefs.available', 'nodefs.available'], 'kubelet_evictions by signal, once per eviction');

  // Resolved: the condition stays for the transition period, and admission refuses pods.
  h.pods = [critical];
  h.nodefs = 20n * Gi;
  t.same(await h.pass(), []);
  t.same(h.conditions(), ['DiskPressure']);
  t.same(h.manager.admit(pod('new')), { reason: 'Evicted', message: 'The node had condition: [DiskPressure]. ' });
  t.equal(h.manager.admit(staticPod('s2')), undefined, 'critical pods are admitted under pressure');
  await h.pass(5 * MINUTE - 20_000);
  t.same(h.conditions(), ['DiskPressure'], 'just inside the period');
  await h.pass(10_000);
  t.same(h.conditions(), [], 'cleared');
  t.equal(h.manager.admit(pod('new')), undefined);
  t.equal(h.evictions.length, 2);
});

t.test('soft memory threshold: grace period, then min(evictionMaxPodGracePeriod, the pod’s own)', async (t) => {
  const h = new Harness({ evictionSoft: { 'memory.available': '500Mi' }, evictionSoftGracePeriod: { 'memory.available': '1m' } });
  const hog = pod('hog', { terminationGracePeriodSeconds: 10 });
  const other = pod('other', { requests: { memory: '1Gi' } });
  h.pods = [other, hog];
  h.usage = usageOf([
    [hog, { memoryWorkingSetBytes: 2n * Gi }],
    [other, { memoryWorkingSetBytes: 100n * Mi }],
  ]);
  h.memory = 400n * Mi;
  t.same(await h.pass(), [], 'grace period not over');
  t.same(h.conditions(), ['MemoryPressure'], 'the condition does not wait for the grace period');
  t.same(await h.pass(30_000), []);
  t.same(await h.pass(30_000), ['hog']);
  t.equal(h.evictions[0]?.grace, 10);
  t.same(h.usageAsked.at(-1), [['other', 'hog'], { memory: true }]);
  t.notOk(h.calls.includes('deleteUnusedImages'), 'nothing to reclaim at node level for memory');
  h.pods = [other];
  t.same(await h.pass(), ['other']);
  t.equal(h.evictions[1]?.grace, 30, 'no own grace period: evictionMaxPodGracePeriod');
  // The threshold is met throughout; after an unmet reading the grace period starts over.
  h.memory = 4n * Gi;
  await h.pass();
  h.memory = 400n * Mi;
  t.same(await h.pass(), [], 'first observed again: wait anew');
});

t.test('admit under memory pressure only', async (t) => {
  const h = new Harness({ evictionHard: { 'memory.available': '1Gi' } });
  h.memory = 100n * Mi;
  h.pods = [];
  t.same(await h.pass(), []);
  t.ok(h.logs.some((l) => l.msg === 'Eviction manager: eviction thresholds have been met, but no pods are active to evict'));
  t.same(h.conditions(), ['MemoryPressure']);
  const refused = { reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ' };
  t.same(h.manager.admit(pod('be')), refused, 'BestEffort refused');
  t.equal(h.manager.admit(pod('burst', { requests: { memory: '10Mi' } })), undefined, 'Burstable admitted');
  t.equal(h.manager.admit(pod('tol', { tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }] })), undefined);
  t.equal(h.manager.admit(pod('all', { tolerations: [{ operator: 'Exists' }] })), undefined, 'tolerates everything');
  t.equal(h.manager.admit(pod('eq', { tolerations: [{ key: 'node.kubernetes.io/memory-pressure' }] })), undefined, 'Equal with the empty value');
  t.same(h.manager.admit(pod('val', { tolerations: [{ key: 'node.kubernetes.io/memory-pressure', value: 'x' }] })), refused);
  t.same(h.manager.admit(pod('eff', { tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoExecute' }] })), refused);
  t.same(h.manager.admit(pod('key', { tolerations: [{ key: 'node.kubernetes.io/disk-pressure', operator: 'Exists' }] })), refused);
  t.same(h.manager.admit(pod('op', { tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Gt' }] })), refused);
  t.equal(h.manager.admit(pod('crit', { priority: 2_000_001_000 })), undefined);
});

t.test('admit under memory and disk pressure: all but critical refused', async (t) => {
  const h = new Harness({ evictionHard: { 'memory.available': '1Gi', 'nodefs.available': '10Gi' } });
  h.memory = 100n * Mi;
  h.nodefs = Gi;
  await h.pass();
  t.same(h.conditions(), ['MemoryPressure', 'DiskPressure']);
  t.same(h.manager.admit(pod('burst', { requests: { memory: '10Mi' } })), { reason: 'Evicted', message: 'The node had condition: [MemoryPressure DiskPressure]. ' });
  t.equal(h.nodeEvents[0], 'Warning EvictionThresholdMet Attempting to reclaim memory', 'memory is reclaimed first');
});

t.test('dedicated imagefs: nodefs pressure reclaims nothing at node level, imagefs pressure does', async (t) => {
  const h = new Harness({ evictionHard: { 'nodefs.available': '10Gi', 'imagefs.available': '10Gi' } });
  h.dedicatedImageFs = true;
  h.imagefs = 50n * Gi;
  const a = pod('a');
  h.pods = [a];
  h.usage = usageOf([[a, { containerBytes: new Map([['c', Gi]]) }]]);
  h.nodefs = Gi;
  t.same(await h.pass(), ['a']);
  t.notOk(h.calls.includes('deleteUnusedContainers'));
  h.nodefs = 50n * Gi;
  h.imagefs = Gi;
  h.calls.length = 0;
  t.same(await h.pass(), ['a']);
  t.same(h.calls, ['readNode', 'deleteUnusedContainers', 'deleteUnusedImages', 'readNode']);
});

t.test('local-storage limits are enforced before thresholds, pod by pod', async (t) => {
  const h = new Harness({ evictionHard: { 'memory.available': '1Gi' } });
  const ed = pod('ed', { volumes: [{ name: 'cache', emptyDir: { sizeLimit: '100Mi' } }] });
  const lim = pod('lim', { limits: { 'ephemeral-storage': '1Gi' } });
  const crit = pod('crit', { limits: { 'ephemeral-storage': '1Mi' }, annotations: { 'kubernetes.io/config.mirror': 'x' } });
  const fine = pod('fine', { limits: { 'ephemeral-storage': '1Gi' } });
  const plain = pod('plain');
  h.pods = [plain, ed, lim, crit, fine];
  h.usage = usageOf([
    [ed, { volumeBytes: new Map([['cache', 200n * Mi]]) }],
    [lim, { containerBytes: new Map([['c', 2n * Gi]]) }],
    [crit, { containerBytes: new Map([['c', 2n * Gi]]) }],
    [fine, { containerBytes: new Map([['c', Mi]]) }],
    [plain, { memoryWorkingSetBytes: 3n * Gi }],
  ]);
  h.memory = 100n * Mi; // memory pressure too: local storage goes first and ends the pass
  t.same(await h.pass(), ['ed', 'lim']);
  t.same(h.usageAsked, [[['ed', 'lim', 'crit', 'fine'], { disk: true }]], 'only pods with limits, only disk');
  t.same(
    h.evictions.map((e) => [e.pod, e.grace, e.eviction]),
    [
      ['ed', 1, { reason: 'Evicted', message: 'Usage of EmptyDir volume "cache" exceeds the limit "100Mi". ', annotations: {} }],
      ['lim', 1, { reason: 'Evicted', message: 'Pod ephemeral local storage usage exceeds the total limit of containers 1Gi. ', annotations: {} }],
    ],
  );
  t.same(h.podEvents.map((e) => e.annotations), [undefined, undefined], 'no annotations on local-storage events');
  t.same(h.nodeEvents, [], 'the threshold was not acted on in this pass');
  t.same(h.counted, ['emptydirfs.limit', 'ephemeralpodfs.limit'], 'kubelet_evictions by the limits\' pseudo-signals');
});

t.test('nothing configured: no reading at all', async (t) => {
  const h = new Harness({}, { localStorageCapacityIsolation: false });
  t.same(await h.pass(), []);
  t.same(h.calls, []);
});

t.test('failures are logged and end the pass', async (t) => {
  const h = new Harness({ evictionHard: { 'memory.available': '1Gi', 'nodefs.available': '10Gi' } });
  const a = pod('a');
  const b = pod('b');
  h.pods = [a, b];
  h.memory = 100n * Mi;
  h.usage = usageOf([[a, { memoryWorkingSetBytes: 2n * Gi }], [b, { memoryWorkingSetBytes: Gi }]]);

  h.failRead = true;
  t.same(await h.pass(), []);
  t.ok(h.logs.some((l) => l.msg === 'Eviction manager: failed to get summary stats'));
  h.failRead = false;

  // The kill path refuses the first pod: the next one in rank goes.
  h.evictResult = async (p) => p !== a;
  t.same(await h.pass(), ['b']);
  t.same(h.evictions.map((e) => e.pod), ['a', 'b']);

  // A kill that throws counts as done, as upstream.
  h.evictResult = async () => {
    throw new Error('engine gone');
  };
  t.same(await h.pass(), ['a']);
  t.ok(h.logs.some((l) => l.msg === 'Eviction manager: pod failed to evict'));

  // No pod can be evicted.
  h.pods = [staticPod('s')];
  h.usage = new Map();
  t.same(await h.pass(), []);
  t.ok(h.logs.some((l) => l.msg === 'Eviction manager: unable to evict any pods from the node'));
});

t.test('failures of usage, reclaim and the second reading', async (t) => {
  const h = new Harness({ evictionHard: { 'nodefs.available': '10Gi' } });
  const a = pod('a', { limits: { 'ephemeral-storage': '1Gi' } });
  h.pods = [a];
  h.nodefs = Gi;
  let reads = 0;
  let failUsage = true;
  const m = new EvictionManager({
    thresholds: parseThresholdConfig({ evictionHard: { 'nodefs.available': '10Gi' }, evictionSoft: {}, evictionSoftGracePeriod: {}, evictionMinimumReclaim: {} }),
    pressureTransitionPeriodMs: MINUTE,
    maxPodGracePeriodSeconds: 0,
    readNode: async () => {
      reads++;
      if (reads % 2 === 0) throw new Error('second reading fails');
      return { ...h.reading(), time: reads };
    },
    podUsage: async () => {
      if (failUsage) throw new Error('du failed');
      return new Map();
    },
    activePods: () => h.pods,
    deleteUnusedContainers: async () => {
      throw new Error('engine down');
    },
    deleteUnusedImages: async () => {},
    evict: async () => true,
    record: { pod: () => {}, node: () => {} },
    log: pino({ level: 'silent' }),
  });
  t.same(await m.synchronize(), [], 'usage fails for local storage, then for ranking');
  failUsage = false;
  t.same(names(await m.synchronize()), ['a'], 'reclaim and re-reading failed: pods are ranked (no stats) and evicted');
});

t.test('the loop: passes on the interval, waits for cleanup after an eviction, stops', async (t) => {
  const h = new Harness({ evictionHard: { 'memory.available': '1Gi' } }, { monitoringIntervalMs: 5 });
  let cleanedChecks = 0;
  const opts = { podCleanedUp: () => ++cleanedChecks >= 2 };
  const loop = new Harness({ evictionHard: { 'memory.available': '1Gi' } }, { monitoringIntervalMs: 5, ...opts });
  // No pressure: the loop passes every interval.
  h.manager.start();
  h.manager.start(); // idempotent
  await waitFor('three passes', () => (h.calls.filter((c) => c === 'readNode').length >= 3 ? true : undefined), 5000, 5);
  await h.manager.stop();
  const after = h.calls.length;
  await new Promise((r) => setTimeout(r, 20));
  t.equal(h.calls.length, after, 'no pass after stop');

  // With pressure: an eviction, then the cleanup wait (polled each second), then the next pass at once.
  const victim = pod('victim');
  loop.pods = [victim];
  loop.usage = usageOf([[victim, { memoryWorkingSetBytes: Gi }]]);
  loop.memory = 100n * Mi;
  loop.manager.start();
  await waitFor('the cleanup check', () => (cleanedChecks >= 2 ? true : undefined), 10_000, 10);
  await waitFor('the pass after cleanup', () => (loop.calls.filter((c) => c === 'readNode').length >= 2 ? true : undefined), 5000, 5);
  await loop.manager.stop();
  t.equal(loop.evictions[0]?.pod, 'victim');
  t.ok(loop.logs.some((l) => l.msg === 'Eviction manager: pods successfully cleaned up'));
});

t.test('stop interrupts the cleanup wait; a failing pass does not end the loop', async (t) => {
  const victim = pod('victim');
  let checks = 0;
  const h = new Harness({ evictionHard: { 'memory.available': '1Gi' } }, { monitoringIntervalMs: 5, podCleanedUp: () => (checks++, false) });
  h.pods = [victim];
  h.usage = usageOf([[victim, { memoryWorkingSetBytes: Gi }]]);
  h.memory = 100n * Mi;
  h.manager.start();
  await waitFor('the eviction', () => (h.evictions.length > 0 ? true : undefined), 5000, 5);
  await h.manager.stop();
  const checked = checks;
  await new Promise((r) => setTimeout(r, 1100));
  t.equal(checks, checked, 'no cleanup check after stop');
  t.equal(h.evictions.length, 1);
  t.notOk(h.logs.some((l) => l.msg === 'Eviction manager: timed out waiting for pods to be cleaned up'));

  // activePods throwing makes synchronize reject: logged by the loop, which goes on.
  let n = 0;
  let failuresLeft = Infinity;
  const bad = new Harness({ evictionHard: { 'memory.available': '1Gi' } }, {
    monitoringIntervalMs: 5,
    activePods: () => {
      n++;
      if (failuresLeft-- > 0) throw new Error('pod manager gone');
      return [];
    },
  });
  bad.manager.start();
  await waitFor('two failed passes', () => (n >= 2 ? true : undefined), 5000, 5);
  await bad.manager.stop();
  t.ok(bad.logs.some((l) => l.msg === 'Eviction manager: failed to synchronize'));
  failuresLeft = 1;
  const failing = bad.manager.synchronize();
  const next = bad.manager.synchronize();
  await t.rejects(failing, /pod manager gone/, 'synchronize itself rejects');
  t.same(names(await next), [], 'a pass queued after a rejected one still runs');
  t.equal(failuresLeft, -1, 'and it did run');
});
