import { link, mkdir, open, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import type { RuntimePod } from '../../../src/runtime/types.js';
import { diskUsage } from '../../../src/stats/disk-usage.js';
import { evictionReadings, parsePidReadings } from '../../../src/stats/eviction-readings.js';
import type { StatsSnapshot } from '../../../src/stats/types.js';

t.test('parsePidReadings: min(pid_max, threads-max) less the tasks of /proc/loadavg', async (t) => {
  t.same(parsePidReadings('32768\n', '192735\n', '4.15 5.56 5.52 12/179 23617\n'), { capacity: 32768n, available: 32589n });
  t.same(parsePidReadings('4194304', '1000', '0.00 0.00 0.00 1/1200 7'), { capacity: 1000n, available: 0n }, 'never below zero');
  t.throws(() => parsePidReadings('1', '1', 'garbage'), /unexpected \/proc\/loadavg format/);
});

t.test('diskUsage: allocated blocks, hard links once, symlinks not followed, the entry cap', async (t) => {
  const dir = t.testdir();
  const root = join(dir, 'vol');
  await mkdir(join(root, 'sub'), { recursive: true });
  await writeFile(join(root, 'a'), Buffer.alloc(64 * 1024, 1));
  await link(join(root, 'a'), join(root, 'sub', 'a-again'));
  await symlink('/etc', join(root, 'etc'));
  // A sparse file: 10 MiB long, one block written.
  const sparse = await open(join(root, 'sparse'), 'w');
  await sparse.write(Buffer.from('x'), 0, 1, 10 * 1024 * 1024);
  await sparse.close();
  const du = await diskUsage(root);
  t.ok(du.bytes >= 64n * 1024n, `the written file counts (${du.bytes} bytes)`);
  t.ok(du.bytes < 1024n * 1024n, 'the sparse file counts what it takes, the hard link once, /etc not at all');
  t.equal(du.inodes, 5n, 'root, sub, a, etc (the link itself), sparse');
  t.equal(du.truncated, false);
  const capped = await diskUsage(root, 2);
  t.equal(capped.truncated, true, 'stops at the cap');
  t.ok(capped.inodes <= 2n);
  t.same(await diskUsage(join(dir, 'missing')), { bytes: 0n, inodes: 0n, truncated: false }, 'a missing volume is empty');
});

t.test('evictionReadings: node readings from /proc and statfs; pod usage only as asked', async (t) => {
  const dir = t.testdir();
  const vol = join(dir, 'pods', 'u1', 'data');
  await mkdir(vol, { recursive: true });
  await writeFile(join(vol, 'f'), Buffer.alloc(128 * 1024, 1));
  const proc: Record<string, string> = {
    '/proc/meminfo': 'MemTotal: 1000 kB\nMemFree: 200 kB\nInactive(file): 100 kB\nAnonPages: 300 kB\n',
    '/proc/sys/kernel/pid_max': '32768',
    '/proc/sys/kernel/threads-max': '100000',
    '/proc/loadavg': '0.1 0.1 0.1 1/768 9',
  };
  let sampled = 0;
  const snapshot: StatsSnapshot = {
    containers: [
      { target: { id: 'c1', podUID: 'u1', podName: 'p', namespace: 'default', podStartTime: new Date(), name: 'app', sandbox: false, startTime: new Date() }, latest: { timestamp: new Date(), cpuUsageCoreNanoSeconds: 0, memoryUsageBytes: 0, memoryWorkingSetBytes: 3000 } },
      { target: { id: 's1', podUID: 'u1', podName: 'p', namespace: 'default', podStartTime: new Date(), name: '', sandbox: true, startTime: new Date() }, latest: { timestamp: new Date(), cpuUsageCoreNanoSeconds: 0, memoryUsageBytes: 0, memoryWorkingSetBytes: 500 } },
      { target: { id: 'x', podUID: 'other', podName: 'q', namespace: 'default', podStartTime: new Date(), name: 'app', sandbox: false, startTime: new Date() }, latest: { timestamp: new Date(), cpuUsageCoreNanoSeconds: 0, memoryUsageBytes: 0, memoryWorkingSetBytes: 99 } },
    ],
  };
  const runtimePod = { uid: 'u1', name: 'p', namespace: 'default', sandboxes: [], containers: [{ id: 'c1', name: 'app' }, { id: 'c0', name: 'app' }] } as unknown as RuntimePod;
  const asked: string[][] = [];
  const readings = evictionReadings({
    rootDir: dir,
    imageFsRoot: async () => dir,
    sampleNow: async () => {
      sampled++;
    },
    snapshot: () => snapshot,
    runtimePod: (uid) => (uid === 'u1' ? runtimePod : undefined),
    containerDiskUsage: async (ids) => {
      asked.push([...ids]);
      return new Map([['c1', { rootfsBytes: 10n, logsBytes: 5n, logsInodes: 2n }], ['c0', { rootfsBytes: 1n, logsBytes: 1n, logsInodes: 1n }]]);
    },
    localVolumeDir: (_pod, name) => (name === 'data' ? vol : undefined),
    podProcesses: async (uid) => (uid === 'u1' ? 7n : undefined),
    readText: async (path) => {
      const text = proc[path];
      if (text === undefined) throw new Error(`no ${path}`);
      return text;
    },
    now: () => 42,
  });
  const node = await readings.readNode();
  t.equal(node.time, 42);
  t.same(node.memory, { availableBytes: 300n * 1024n, capacityBytes: 1000n * 1024n }, 'capacity less the working set (usage less inactive file)');
  t.same(node.pid, { capacity: 32768n, available: 32000n });
  t.ok(node.nodefs && node.nodefs.capacityBytes > 0n && node.nodefs.inodes !== undefined, 'nodefs from statfs');
  t.equal(node.dedicatedImageFs, false, 'the same device: no dedicated imagefs');
  t.ok(node.imagefs, 'imagefs observed');

  const pod: Pod = { metadata: { uid: 'u1', name: 'p', namespace: 'default' }, spec: { containers: [{ name: 'app' }], volumes: [{ name: 'data', emptyDir: {} }, { name: 'cfg', configMap: { name: 'c' } }] } };
  const none = await readings.podUsage([pod], {});
  t.same(none.get('u1'), {}, 'nothing asked, nothing measured');
  t.equal(sampled, 0);
  t.same(asked, []);

  const all = (await readings.podUsage([pod], { memory: true, disk: true, pids: true })).get('u1');
  t.equal(sampled, 1, 'a fresh stats round for memory');
  t.equal(all?.memoryWorkingSetBytes, 3500n, 'the pod\'s containers and sandbox, no other pod');
  t.same([...(all?.containerMemoryBytes ?? [])], [['app', 3000n]]);
  t.same([...(all?.containerBytes ?? [])], [['app', 17n]], 'every instance of the container, dead ones too');
  t.same([...(all?.containerLogBytes ?? [])], [['app', 6n]]);
  t.ok((all?.volumeBytes?.get('data') ?? 0n) >= 128n * 1024n, 'the emptyDir walked');
  t.notOk(all?.volumeBytes?.has('cfg'), 'only local ephemeral volumes');
  t.equal(all?.processes, 7n);
  t.ok((all?.inodes ?? 0n) >= 3n + 2n, 'log files and the volume\'s inodes');
});

t.test('evictionReadings: an unreadable part leaves its signal unobserved', async (t) => {
  const readings = evictionReadings({
    rootDir: join(t.testdir(), 'missing'),
    imageFsRoot: async () => undefined,
    sampleNow: async () => undefined,
    snapshot: () => ({ containers: [] }),
    runtimePod: () => undefined,
    containerDiskUsage: async () => new Map(),
    localVolumeDir: () => undefined,
    readText: async () => {
      throw new Error('no /proc here');
    },
  });
  const node = await readings.readNode();
  t.same([node.memory, node.nodefs, node.imagefs, node.pid, node.dedicatedImageFs], [undefined, undefined, undefined, undefined, false]);
});
