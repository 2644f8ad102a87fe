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

/** A runtime whose counters advance by `cpuPerRead[id]` per read and whose clock advances 1 s per round. */
class FakeStatsRuntime {
  reads: string[] = [];
  inFlight = 0;
  maxInFlight = 0;
  round = 0;
  cpuPerRead: Record<string, number> = {};
  fail = new Set<string>();
  delayMs = 0;
  async containerStats(id: string): Promise<ContainerStatsSample> {
    this.reads.push(id);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await new Promise((r) => setTimeout(r, this.delayMs));
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
  runtime.delayMs = 5;
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

t.test('start samples at once and then every period; stop waits and ends the timer', async (t) => {
  const runtime = new FakeStatsRuntime();
  const sampler = new StatsSampler({ runtime, pods: () => [pod('a', [])], log, periodMs: 20 });
  sampler.start();
  sampler.start(); // idempotent
  await new Promise((r) => setTimeout(r, 5));
  t.equal(sampler.counts().rounds, 1, 'first round right at start');
  await new Promise((r) => setTimeout(r, 110));
  const rounds = sampler.counts().rounds;
  t.ok(rounds >= 3 && rounds <= 7, `about one round per period (${rounds})`);
  await sampler.stop();
  const after = sampler.counts().rounds;
  await new Promise((r) => setTimeout(r, 60));
  t.equal(sampler.counts().rounds, after, 'no rounds after stop');

  // A restart while the old round still runs must leave one timer chain, not two.
  const quick = new StatsSampler({ runtime, pods: () => [pod('a', [])], log, periodMs: 50 });
  runtime.delayMs = 20;
  quick.start();
  void quick.stop();
  quick.start();
  await new Promise((r) => setTimeout(r, 30));
  runtime.delayMs = 0;
  const base = quick.counts().rounds;
  await new Promise((r) => setTimeout(r, 250));
  await quick.stop();
  const count = quick.counts().rounds - base;
  t.ok(count >= 3 && count <= 8, `one timer chain after a quick restart (${count} rounds in 250 ms)`);
});
