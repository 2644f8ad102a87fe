import { pino } from 'pino';
import t from 'tap';
import type { ContainerStatsSample, RuntimeContainer, RuntimePod } from '../../../src/runtime/types.js';
import type { NodeReading } from '../../../src/stats/node.js';
import { StatsSampler, targetsOf } from '../../../src/stats/sampler.js';

const log = pino({ level: 'silent' });
const t0 = new Date('2026-11-29T10:00:00Z');

function container(id: string, name: string, state: RuntimeContainer['state'] = 'running'): RuntimeContainer {
  return { id, name, attempt: 0, restartCount: 0, hash: '', image: 'busybox', imageID: '', state, createdAt: new Date(t0.getTime() + 1000) };
}

function pod(uid: string, containers: RuntimeContainer[], sandboxReady = true): RuntimePod {
  return {
    uid,
    name: `pod-${uid}`,
    namespace: 'ns1',
    sandboxes: [{ id: `sb-${uid}`, attempt: 0, ready: sandboxReady, createdAt: t0, ips: [] }],
    containers,
  };
}

/**
 * A runtime whose counters advance by `cpuPerRead[id]` per read and whose clock advances 1 s per
 * round. Each call first waits for `hold` (a gate a test opens), then yields one turn of the event
 * loop, so concurrent calls really overlap.
 */
class FakeStatsRuntime {
  reads: string[] = [];
  inFlight = 0;
  maxInFlight = 0;
  round = 0;
  cpuPerRead: Record<string, number> = {};
  fail = new Set<string>();
  hold: Promise<void> | undefined;
  async containerStats(id: string): Promise<ContainerStatsSample> {
    this.reads.push(id);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await this.hold;
      await new Promise((r) => setImmediate(r));
      if (this.fail.has(id)) throw new Error(`no such container: ${id}`);
      const n = this.reads.filter((r) => r === id).length;
      return {
        timestamp: new Date(t0.getTime() + this.round * 1000),
        cpuUsageCoreNanoSeconds: n * (this.cpuPerRead[id] ?? 1000),
        memoryUsageBytes: 2048 * 1024,
        memoryWorkingSetBytes: 1024 * 1024,
      };
    } finally {
      this.inFlight--;
    }
  }
}

t.test('targets: the ready sandbox and running containers, newest instance per name', async (t) => {
  const p = pod('a', [container('c2', 'app'), container('c1', 'app'), container('c3', 'side', 'exited'), container('c4', 'web')]);
  const targets = targetsOf([p, pod('b', [container('x', 'app', 'exited')], false)]);
  t.same(
    targets.map((x) => [x.id, x.name, x.sandbox]),
    [
      ['sb-a', '', true],
      ['c2', 'app', false],
      ['c4', 'web', false],
    ],
  );
  t.same(targets[1]?.podStartTime, t0, 'pod start is the sandbox creation');
  const noSandbox = targetsOf([pod('c', [container('y', 'app')], false)]);
  t.same(noSandbox.map((x) => x.id), ['y'], 'running containers without a ready sandbox are still sampled');
  t.same(noSandbox[0]?.podStartTime, new Date(t0.getTime() + 1000));
});

t.test('two rounds give a rate; containers that are gone are forgotten', async (t) => {
  const runtime = new FakeStatsRuntime();
  runtime.cpuPerRead = { c1: 500_000_000, 'sb-a': 1_000 };
  let pods = [pod('a', [container('c1', 'app')])];
  const sampler = new StatsSampler({ runtime, pods: () => pods, log });
  t.same(sampler.snapshot(), { containers: [] }, 'empty before the first round');

  await sampler.sampleNow();
  let snap = sampler.snapshot();
  t.equal(snap.containers.length, 2);
  t.ok(snap.containers.every((c) => c.usageNanoCores === undefined), 'one sample: no rate yet');
  t.notOk(snap.failure);

  runtime.round = 1;
  await sampler.sampleNow();
  snap = sampler.snapshot();
  const app = snap.containers.find((c) => c.target.name === 'app');
  // 0.5 s of CPU in 1 s.
  t.equal(app?.usageNanoCores, 500_000_000);
  t.equal(app?.previous?.cpuUsageCoreNanoSeconds, 500_000_000);
  t.equal(app?.latest.cpuUsageCoreNanoSeconds, 1_000_000_000);

  pods = [pod('a', [])];
  runtime.round = 2;
  await sampler.sampleNow();
  t.same(sampler.snapshot().containers.map((c) => c.target.id), ['sb-a'], 'the stopped container is forgotten');
  t.same(sampler.counts(), { rounds: 3, errors: 0 });
});

t.test('a reading no newer than the last keeps the previous one', async (t) => {
  const runtime = new FakeStatsRuntime();
  const sampler = new StatsSampler({ runtime, pods: () => [pod('a', [])], log });
  await sampler.sampleNow();
  await sampler.sampleNow(); // same fake clock
  const [sb] = sampler.snapshot().containers;
  t.notOk(sb?.previous, 'no second point');
  t.equal(sb?.latest.cpuUsageCoreNanoSeconds, 1000, 'the first reading stays');
});

t.test('at most `concurrency` stats calls at once, and rounds never overlap', async (t) => {
  const runtime = new FakeStatsRuntime();
  const pods = Array.from({ length: 5 }, (_, i) => pod(`p${i}`, [container(`c${i}`, 'app'), container(`d${i}`, 'side')]));
  const sampler = new StatsSampler({ runtime, pods: () => pods, log, concurrency: 3 });
  const a = sampler.sampleNow();
  const b = sampler.sampleNow();
  const c = sampler.sampleNow();
  t.equal(b, c, 'calls during a round share one follow-up');
  await Promise.all([a, b, c]);
  t.equal(runtime.maxInFlight, 3);
  t.equal(runtime.reads.length, 30, 'two rounds of 15 targets');
  t.equal(sampler.counts().rounds, 2);
});

t.test('errors are counted and logged; a round reading nothing is a failure', async (t) => {
  const runtime = new FakeStatsRuntime();
  const lines: string[] = [];
  const debugLog = pino({ level: 'debug' }, { write: (l: string) => lines.push(l) });
  const sampler = new StatsSampler({ runtime, pods: () => [pod('a', [container('c1', 'app')])], log: debugLog });
  runtime.fail.add('c1');
  await sampler.sampleNow();
  t.notOk(sampler.snapshot().failure, 'one of two read: not a failure');
  t.same(sampler.snapshot().containers.map((c) => c.target.id), ['sb-a']);
  t.equal(sampler.counts().errors, 1);
  const line = JSON.parse(lines.find((l) => l.includes('Reading container stats failed')) ?? '{}') as Record<string, unknown>;
  t.match(line, { level: 20, pod: 'ns1/pod-a', container: 'app', containerID: 'c1', podUID: 'a' });

  runtime.fail.add('sb-a');
  await sampler.sampleNow();
  t.match(sampler.snapshot().failure, /no container stats could be read: no such container/);
  t.same(sampler.snapshot().containers.map((c) => c.target.id), ['sb-a'], 'the last good sample is kept');

  runtime.fail.clear();
  await sampler.sampleNow();
  t.notOk(sampler.snapshot().failure, 'recovers');
  const idle = new StatsSampler({ runtime, pods: () => [], log });
  await idle.sampleNow();
  t.notOk(idle.snapshot().failure, 'nothing to read is not a failure');
});

t.test('node readings give the node a rate; a failing reader is counted', async (t) => {
  const runtime = new FakeStatsRuntime();
  let n = 0;
  const reading = (): NodeReading => ({
    timestamp: new Date(t0.getTime() + n * 2000),
    bootTime: t0,
    cpuUsageCoreNanoSeconds: ++n * 1e9,
    memoryUsageBytes: 100,
    memoryWorkingSetBytes: 80,
    memoryAvailableBytes: 20,
  });
  let broken = false;
  const sampler = new StatsSampler({ runtime, pods: () => [], log, readNode: async () => (broken ? Promise.reject(new Error('no /proc')) : reading()) });
  await sampler.sampleNow();
  t.equal(sampler.snapshot().node?.usageNanoCores, undefined);
  await sampler.sampleNow();
  t.equal(sampler.snapshot().node?.usageNanoCores, 500_000_000, '1 s of CPU in 2 s');
  t.equal(sampler.snapshot().node?.windowMs, 2000);
  broken = true;
  await sampler.sampleNow();
  t.equal(sampler.counts().errors, 1);
  t.equal(sampler.snapshot().node?.cpuUsageCoreNanoSeconds, 2e9, 'the last reading stays');
});

/** Counts rounds as they start (each round asks for the pods first, synchronously) and lets a test await the n-th. */
class Rounds {
  started = 0;
  readonly #waiters: { n: number; resolve: () => void }[] = [];
  readonly #pods: RuntimePod[];
  constructor(pods: RuntimePod[]) {
    this.#pods = pods;
  }
  readonly pods = (): RuntimePod[] => {
    this.started++;
    for (const w of this.#waiters.filter((w) => w.n <= this.started)) {
      this.#waiters.splice(this.#waiters.indexOf(w), 1);
      w.resolve();
    }
    return this.#pods;
  };
  /**
   * Resolves when round `n` has started; rounds never overlap, so round `n - 1` is then done.
   * The deadline is a failure bound only; its (ref'd) timer also keeps the process alive, as the
   * sampler's own timers are unref'd.
   */
  reached(n: number, deadlineMs = 10_000): Promise<void> {
    if (this.started >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`round ${n} did not start within ${deadlineMs} ms (${this.started} so far)`)), deadlineMs);
      this.#waiters.push({
        n,
        resolve: () => {
          clearTimeout(deadline);
          resolve();
        },
      });
    });
  }
}

/**
 * Timer behaviour without sleeping: every wait is on a round starting, and "nothing happened
 * meanwhile" is measured against a reference sampler on the same period, whose rounds are the
 * clock (a timer left behind would have fired before the reference's later rounds).
 */
t.test('start samples at once and then every period; stop ends the timer', async (t) => {
  const runtime = new FakeStatsRuntime();
  const rounds = new Rounds([pod('a', [])]);
  const sampler = new StatsSampler({ runtime, pods: rounds.pods, log, periodMs: 20 });
  const began = Date.now();
  sampler.start();
  sampler.start(); // idempotent
  t.equal(rounds.started, 1, 'first round right at start, before any timer');
  await rounds.reached(4);
  // Timers never fire early: three periods passed at least (no upper bound: CI can be slow).
  t.ok(Date.now() - began >= 3 * 20 - 2, `rounds follow the period, not a tight loop (${Date.now() - began} ms for 3 periods)`);
  await sampler.stop();
  const after = rounds.started;
  t.equal(sampler.counts().rounds, after, 'stop waited for the round in flight');

  const reference = new Rounds([pod('r', [])]);
  const clock = new StatsSampler({ runtime, pods: reference.pods, log, periodMs: 20 });
  clock.start();
  await reference.reached(4);
  await clock.stop();
  t.equal(rounds.started, after, 'no rounds after stop while the reference ran three periods');
});

t.test('a restart while the old round still runs leaves one timer chain, not two', async (t) => {
  const runtime = new FakeStatsRuntime();
  let open = () => {};
  runtime.hold = new Promise<void>((resolve) => (open = resolve));
  const rounds = new Rounds([pod('a', [])]);
  const quick = new StatsSampler({ runtime, pods: rounds.pods, log, periodMs: 20 });
  quick.start();
  const stopped = quick.stop();
  quick.start();
  t.equal(rounds.started, 1, 'the round of the first start is still running; the restart waits for it');
  open();
  await stopped;
  runtime.hold = undefined;

  const reference = new Rounds([pod('r', [])]);
  const clock = new StatsSampler({ runtime, pods: reference.pods, log, periodMs: 20 });
  const base = rounds.started;
  clock.start();
  await reference.reached(6);
  await clock.stop();
  await quick.stop();
  const count = rounds.started - base;
  // One chain keeps pace with the reference (±1 for where each stood at the start); two would run about twice as often.
  t.ok(count >= 3 && count <= 7, `one timer chain after a quick restart (${count} rounds while the reference ran 5)`);
});

t.test('pod cgroups: two readings give the pod its rate; pods without one, gone pods and failures are left out', async (t) => {
  const runtime = new FakeStatsRuntime();
  let pods = [pod('a', [container('c1', 'app')]), pod('b', [container('c2', 'app')])];
  let round = 0;
  const podReads: string[] = [];
  let failA = false;
  const sampler = new StatsSampler({
    runtime,
    pods: () => pods,
    log,
    readPodCgroup: async (uid) => {
      podReads.push(uid);
      if (uid === 'b') return undefined; // a pod without a cgroup of its own
      if (failA) throw new Error('cgroup gone');
      return { timestamp: new Date(t0.getTime() + round * 2000), cpuUsageCoreNanoSeconds: 1e9 * (round + 1), memoryUsageBytes: 10, memoryWorkingSetBytes: 8, processes: 2 + round };
    },
    readHost: async () => ({ timestamp: new Date(t0.getTime() + round * 2000), rlimit: { maxpid: 100, curproc: 10 + round } }),
  });
  await sampler.sampleNow();
  let snap = sampler.snapshot();
  t.same([...(snap.podCgroups?.keys() ?? [])], ['a'], 'the pod without a cgroup is not in the map');
  t.equal(snap.podCgroups?.get('a')?.usageNanoCores, undefined, 'one reading: no rate');
  t.equal(snap.host?.rlimit?.curproc, 10);

  round = 1;
  runtime.round = 1;
  await sampler.sampleNow();
  snap = sampler.snapshot();
  t.same(snap.podCgroups?.get('a'), {
    latest: { timestamp: new Date(t0.getTime() + 2000), cpuUsageCoreNanoSeconds: 2e9, memoryUsageBytes: 10, memoryWorkingSetBytes: 8, processes: 3 },
    usageNanoCores: 500_000_000,
    windowMs: 2000,
  }, '1 s of CPU in 2 s');
  t.equal(snap.host?.rlimit?.curproc, 11);

  failA = true;
  await sampler.sampleNow();
  t.equal(sampler.snapshot().podCgroups?.has('a'), false, 'a failed read drops the pod (its containers are summed instead)');

  failA = false;
  pods = [pod('b', [container('c2', 'app')])];
  await sampler.sampleNow();
  snap = sampler.snapshot();
  t.same([...(snap.podCgroups?.keys() ?? [])], [], 'pod a is gone');
  t.same(podReads.filter((u) => u === 'a').length, 3, 'a gone pod is not read');
});

t.test('a failing host reader is counted and keeps the last reading', async (t) => {
  let fail = false;
  const sampler = new StatsSampler({
    runtime: new FakeStatsRuntime(),
    pods: () => [pod('a', [])],
    log,
    readHost: async () => {
      if (fail) throw new Error('statfs failed');
      return { timestamp: t0, rlimit: { maxpid: 1, curproc: 1 } };
    },
  });
  await sampler.sampleNow();
  fail = true;
  await sampler.sampleNow();
  t.same(sampler.snapshot().host?.rlimit, { maxpid: 1, curproc: 1 });
  t.equal(sampler.counts().errors, 1);
});

t.test('without cgroup readers the snapshot has no pod cgroups or pressure maps', async (t) => {
  const sampler = new StatsSampler({ runtime: new FakeStatsRuntime(), pods: () => [pod('a', [])], log });
  await sampler.sampleNow();
  const snap = sampler.snapshot();
  t.notOk('podCgroups' in snap || 'containerPressure' in snap || 'host' in snap);
});

t.test('containers with a cgroup are read from it, not the engine; those without fall back to the engine for good', async (t) => {
  const runtime = new FakeStatsRuntime();
  const pods = [pod('a', [container('c1', 'app'), container('c2', 'other')])];
  const cgroupReads: string[] = [];
  let usec = 0;
  const psi = { cpu: { some: { avg10: 1, avg60: 0, avg300: 0, total: 5 }, full: { avg10: 0, avg60: 0, avg300: 0, total: 0 } } };
  const sampler = new StatsSampler({
    runtime,
    pods: () => pods,
    log,
    // c2 is laid out as another engine does it: no cgroup where nodelet looks.
    readContainerCgroup: async (uid, id) => {
      cgroupReads.push(`${uid}/${id}`);
      if (id === 'c2') throw new Error('ENOENT');
      // The sandbox's pod class is not known in the first round: the engine's figures then.
      if (id === 'sb-a' && runtime.reads.length === 0) return undefined;
      usec += 1_000_000;
      // The sandbox's cgroup has pressure files too; the kubelet reports none for a sandbox.
      return { timestamp: new Date(t0.getTime() + usec / 1000), cpuUsageCoreNanoSeconds: usec * 1000, memoryUsageBytes: 3 << 20, memoryWorkingSetBytes: 2 << 20, memoryLimitBytes: 1 << 30, memoryRssBytes: 1 << 20, processes: 2, ...(id !== 'c2' ? { psi } : {}) };
    },
  });
  await sampler.sampleNow();
  await sampler.sampleNow();
  t.same([...runtime.reads].sort(), ['c2', 'c2', 'sb-a'], 'the engine is asked for the container without a cgroup, and once for the sandbox whose cgroup was not known yet');
  t.equal(cgroupReads.filter((r) => r === 'a/sb-a').length, 2, 'a cgroup not known yet is tried again');
  t.same(cgroupReads.filter((r) => r.endsWith('/c2')), ['a/c2'], 'its cgroup is not tried again');
  t.equal(cgroupReads.filter((r) => r === 'a/c1').length, 2, 'c1 read from its cgroup each round');
  const c1 = sampler.snapshot().containers.find((c) => c.target.id === 'c1');
  t.same(c1?.latest, { timestamp: c1?.latest.timestamp, cpuUsageCoreNanoSeconds: c1?.latest.cpuUsageCoreNanoSeconds, memoryUsageBytes: 3 << 20, memoryWorkingSetBytes: 2 << 20, memoryRssBytes: 1 << 20 }, 'the figures a stats sample has, no more');
  t.ok(c1?.usageNanoCores !== undefined && c1.usageNanoCores > 0, 'two readings give a rate');
  t.same(sampler.snapshot().containerPressure?.get('c1'), psi, 'the pressure came with the cgroup reading');
  t.same([...(sampler.snapshot().containerPressure?.keys() ?? [])], ['c1'], 'no pressure for the sandbox, none for a container read from the engine');
  t.ok(sampler.snapshot().containers.some((c) => c.target.id === 'c2'), 'the other container is sampled from the engine');
  pods[0] = pod('a', [container('c2', 'other')]);
  await sampler.sampleNow();
  t.same([...(sampler.snapshot().containerPressure?.keys() ?? [])], [], 'a container gone takes its pressure with it');
});
