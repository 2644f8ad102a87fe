import { pino } from 'pino';
import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import type { RuntimeContainer, RuntimePod } from '../../../src/runtime/types.js';
import { DiskStatsCache, type DiskStatsOptions } from '../../../src/stats/disk-stats.js';

const log = pino({ level: 'silent' });
const t0 = new Date('2026-12-06T01:00:00Z');

function container(id: string, name: string, state: RuntimeContainer['state'] = 'running'): RuntimeContainer {
  return { id, name, attempt: 0, restartCount: 0, hash: '', image: 'busybox', imageID: '', state, createdAt: t0 };
}
function runtimePod(uid: string, containers: RuntimeContainer[]): RuntimePod {
  return { uid, name: `pod-${uid}`, namespace: 'ns1', sandboxes: [{ id: `sb-${uid}`, attempt: 0, ready: true, createdAt: t0, ips: [] }], containers };
}
function spec(uid: string, volumes: string[]): Pod {
  return {
    metadata: { name: `pod-${uid}`, namespace: 'ns1', uid },
    spec: { containers: [{ name: 'app', image: 'busybox' }], volumes: [...volumes.map((name) => ({ name, emptyDir: {} })), { name: 'cfg', configMap: { name: 'c' } }] },
  };
}

/** Fakes whose walks can be held open, to count how many run at once. */
function fakes(pods: () => RuntimePod[], specs: Record<string, Pod>) {
  const state = { walks: [] as string[], inFlight: 0, maxInFlight: 0, failWalk: new Set<string>(), sizeCalls: [] as string[][], bytes: new Map<string, bigint>(), imagesFail: false };
  const opts: DiskStatsOptions = {
    pods,
    podSpec: (uid) => specs[uid],
    localVolumeDir: (pod, name) => ((pod.spec?.volumes ?? []).find((v) => v.name === name)?.emptyDir ? `/root/pods/${pod.metadata?.uid}/volumes/${name}` : undefined),
    containerDiskUsage: async (ids) => {
      state.sizeCalls.push([...ids]);
      return new Map(ids.map((id) => [id, { rootfsBytes: 4096n, logsBytes: 1024n * BigInt(id.length), logsInodes: 1n }]));
    },
    imagesBytes: async () => {
      if (state.imagesFail) throw new Error('engine down');
      return 7_000_000;
    },
    diskUsage: async (dir) => {
      state.walks.push(dir);
      state.inFlight++;
      state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
      try {
        await new Promise((r) => setImmediate(r));
        if (state.failWalk.has(dir)) throw new Error('EACCES');
        return { bytes: state.bytes.get(dir) ?? 8192n, inodes: 2n };
      } finally {
        state.inFlight--;
      }
    },
    statfs: async () => ({ capacityBytes: 1000, availableBytes: 400, usedBytes: 550, inodes: 100, inodesFree: 90 }),
    log,
  };
  return { state, opts };
}

t.test('a refresh: running containers\' sizes, local volumes walked with at most walkConcurrency at once, the images\' size', async (t) => {
  let pods = [runtimePod('a', [container('a1', 'app'), container('a0', 'app', 'exited')]), runtimePod('b', [container('b1', 'app')])];
  const specs: Record<string, Pod> = { a: spec('a', ['v1', 'v2', 'v3']), b: spec('b', ['w1', 'w2']) };
  const { state, opts } = fakes(() => pods, specs);
  const cache = new DiskStatsCache({ ...opts, walkConcurrency: 2 });
  t.same(cache.snapshot(), { pods: new Map() }, 'empty before the first refresh');
  await cache.refreshNow();
  t.equal(state.walks.length, 5, 'every emptyDir, no configMap');
  t.equal(state.maxInFlight, 2, 'the cap on concurrent walks holds across pods');
  t.same(state.sizeCalls, [['a1'], ['b1']], 'one engine call per pod, running containers only');
  const snap = cache.snapshot();
  t.equal(snap.imagesBytes, 7_000_000);
  const a = snap.pods.get('a');
  t.same([...(a?.containers.entries() ?? [])], [['a1', { rootfsBytes: 4096, logsBytes: 2048, logsInodes: 1 }]]);
  t.same(a?.volumes.map((v) => [v.name, v.usedBytes, v.inodesUsed, v.fs?.capacityBytes]), [['v1', 8192, 2, 1000], ['v2', 8192, 2, 1000], ['v3', 8192, 2, 1000]]);

  // A walk that fails keeps that volume's previous figures; a failing image listing keeps the last size.
  state.bytes.set('/root/pods/a/volumes/v1', 5n << 20n);
  state.failWalk.add('/root/pods/a/volumes/v2');
  state.imagesFail = true;
  await cache.refreshNow();
  const again = cache.snapshot();
  t.same(again.pods.get('a')?.volumes.map((v) => v.usedBytes), [5 << 20, 8192, 8192], 'v1 grew; v2 kept its last walk');
  // A volume whose first walk fails is left out rather than shown empty.
  pods = [...pods, runtimePod('c', [])];
  specs.c = spec('c', ['u1', 'u2']);
  state.failWalk.add('/root/pods/c/volumes/u1');
  await cache.refreshNow();
  t.same(cache.snapshot().pods.get('c')?.volumes.map((v) => v.name), ['u2']);
  t.equal(again.imagesBytes, 7_000_000);

  pods = [runtimePod('b', [container('b1', 'app')])];
  await cache.refreshNow();
  t.same([...cache.snapshot().pods.keys()], ['b'], 'a pod gone from the PLEG is dropped');
});

t.test('an engine that fails a pod\'s size call keeps that pod\'s last sizes', async (t) => {
  const { opts } = fakes(() => [runtimePod('a', [container('a1', 'app')])], { a: spec('a', []) });
  let fail = false;
  const cache = new DiskStatsCache({
    ...opts,
    containerDiskUsage: async (ids) => {
      if (fail) throw new Error('engine down');
      return opts.containerDiskUsage(ids);
    },
  });
  await cache.refreshNow();
  fail = true;
  await cache.refreshNow();
  t.same(cache.snapshot().pods.get('a')?.containers.get('a1'), { rootfsBytes: 4096, logsBytes: 2048, logsInodes: 1 });
});

t.test('a pod whose spec is unknown (a static pod being replaced) still gets its containers\' sizes', async (t) => {
  const { opts } = fakes(() => [runtimePod('x', [container('x1', 'app')])], {});
  const cache = new DiskStatsCache(opts);
  await cache.refreshNow();
  t.same(cache.snapshot().pods.get('x')?.volumes, []);
  t.equal(cache.snapshot().pods.get('x')?.containers.size, 1);
});

t.test('start refreshes at once and then every period; stop waits for the refresh in flight', async (t) => {
  let rounds = 0;
  let reached: (() => void) | undefined;
  const { opts } = fakes(() => {
    rounds++;
    if (rounds === 3) reached?.();
    return [];
  }, {});
  const cache = new DiskStatsCache({ ...opts, periodMs: 10 });
  // The cache's timer is unref'd: this deadline keeps the process alive meanwhile.
  const third = new Promise<void>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`3 refreshes did not happen within 5 s (${rounds})`)), 5000);
    reached = () => {
      clearTimeout(deadline);
      resolve();
    };
  });
  cache.start();
  t.equal(rounds, 1, 'the first refresh starts at once');
  await third;
  await cache.stop();
  const after = rounds;
  await cache.refreshNow();
  t.equal(rounds, after + 1, 'refreshNow still works after stop, and the timer is gone');
});
