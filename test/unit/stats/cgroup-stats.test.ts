import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import { Cgroupfs } from '../../../src/cgroups/cgroupfs.js';
import { PodCgroups } from '../../../src/cgroups/manager.js';
import { readCgroupStats } from '../../../src/stats/cgroup-stats.js';
import { readText } from '../../../src/stats/node.js';
import { parsePressure, readPressure } from '../../../src/stats/psi.js';

const log = pino({ level: 'silent' });
const now = () => new Date('2026-12-06T01:00:00Z');

const pod: Pod = {
  metadata: { name: 'web', namespace: 'ns1', uid: 'uid-1' },
  spec: { containers: [{ name: 'app', image: 'busybox', resources: { limits: { memory: '64Mi' }, requests: { cpu: '100m', memory: '32Mi' } } }] },
};

const PRESSURE = (s: number) => `some avg10=${s}.50 avg60=0.25 avg300=0.10 total=${s * 1000}\nfull avg10=0.00 avg60=0.01 avg300=0.02 total=${s * 10}\n`;

async function files(dir: string, content: Record<string, string>): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, text] of Object.entries(content)) await writeFile(join(dir, name), text);
}

t.test('pressure files: some and full, a missing line is zero, a bad one throws', async (t) => {
  t.same(parsePressure(PRESSURE(3)), { some: { avg10: 3.5, avg60: 0.25, avg300: 0.1, total: 3000 }, full: { avg10: 0, avg60: 0.01, avg300: 0.02, total: 30 } });
  t.same(parsePressure('some avg10=1.00 avg60=2.00 avg300=3.00 total=4\n').full, { total: 0, avg10: 0, avg60: 0, avg300: 0 }, 'an old kernel\'s cpu file has no full line');
  t.throws(() => parsePressure('some avg10=x\n'), /unexpected pressure line "some avg10=x"/);
  t.throws(() => parsePressure(''), /empty pressure file/);
  const fake = async (path: string) => {
    if (path === '/p/cpu') return PRESSURE(1);
    if (path === '/p/io') return 'garbage';
    throw Object.assign(new Error('ENOENT'), { code: 'ENOENT' });
  };
  const psi = await readPressure(fake, (r) => `/p/${r}`);
  t.same(Object.keys(psi), ['cpu'], 'missing (memory) and malformed (io) files are left out');
});

t.test('v1 pod cgroup on a fake tree: the pod\'s path under kubepods, cpuacct, memory, pids; no PSI', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'cgstats-v1-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const mount = (c: string) => join(root, c);
  const fs = new Cgroupfs({ version: 1, controllers: new Map(['cpu', 'cpuacct', 'memory', 'pids'].map((c) => [c, mount(c === 'cpuacct' ? 'cpu' : c)])), mountPoints: ['cpu', 'memory', 'pids'].map(mount) });
  const cgroups = new PodCgroups(fs, { root: ['nodelet'], podPidsLimit: -1, allocatableMilliCPU: 2000n, podsMemoryLimit: 1n << 32n, log });
  t.equal(cgroups.statsLocation('uid-1'), undefined, 'no location before the pod has a cgroup');
  // A pod found running at start-up, not synced yet: placed by the class it is given.
  t.equal(cgroups.statsLocation('uid-2', undefined, 'BestEffort')?.dir('memory'), join(mount('memory'), 'nodelet', 'kubepods', 'besteffort', 'poduid-2'));
  t.equal(cgroups.statsLocation('uid-2', 'c9', 'Guaranteed')?.dir('pids'), join(mount('pids'), 'nodelet', 'kubepods', 'poduid-2', 'c9'));
  await cgroups.ensurePod(pod);
  const loc = cgroups.statsLocation('uid-1', undefined, 'BestEffort');
  t.ok(loc, 'the class nodelet recorded wins over the one given');
  if (!loc) return;
  const podDir = (c: string) => join(mount(c), 'nodelet', 'kubepods', 'burstable', 'poduid-1');
  t.equal(loc.dir('memory'), podDir('memory'));
  t.equal(loc.dir('cpuacct'), podDir('cpu'), 'cpuacct co-mounted with cpu');
  await files(podDir('cpu'), { 'cpuacct.usage': '123456789\n' });
  await files(podDir('memory'), {
    'memory.usage_in_bytes': '10485760\n',
    'memory.stat': 'cache 1\nrss 2\ntotal_cache 4194304\ntotal_rss 5242880\ntotal_inactive_file 3145728\ntotal_pgfault 900\ntotal_pgmajfault 7\n',
  });
  await files(podDir('pids'), { 'pids.current': '3\n' });
  const r = await readCgroupStats(loc, readText, now);
  t.same(r, {
    timestamp: now(),
    cpuUsageCoreNanoSeconds: 123456789,
    memoryUsageBytes: 10485760,
    memoryWorkingSetBytes: 10485760 - 3145728,
    memoryLimitBytes: 64 << 20,
    memoryRssBytes: 5242880,
    pageFaults: 900,
    majorPageFaults: 7,
    processes: 3,
  }, 'the limit nodelet wrote (64Mi) is the pod\'s');
  await writeFile(join(podDir('memory'), 'memory.limit_in_bytes'), '9223372036854771712\n');
  t.notOk('memoryLimitBytes' in (await readCgroupStats(loc, readText, now)), 'v1\'s "unlimited" is no limit');
  t.notOk('psi' in r, 'no PSI on v1 (cadvisor reads none there)');
  await rm(join(podDir('cpu'), 'cpuacct.usage'));
  await t.rejects(readCgroupStats(loc, readText, now), /ENOENT/, 'no CPU file: rejected, so the caller sums the containers');
});

t.test('v2 pod and container cgroups on a fake tree: cpu.stat, memory.current, PSI', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'cgstats-v2-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await files(root, { 'cgroup.controllers': 'cpu memory pids io\n', 'cgroup.subtree_control': '' });
  const fs = new Cgroupfs({ version: 2, controllers: new Map([['', root]]), mountPoints: [root] });
  // Each level's controllers, as the kernel would show them once enabled above.
  for (const dir of ['kubepods', 'kubepods/burstable']) await files(join(root, dir), { 'cgroup.controllers': 'cpu memory pids\n', 'cgroup.subtree_control': '' });
  const cgroups = new PodCgroups(fs, { root: [], podPidsLimit: -1, allocatableMilliCPU: 2000n, podsMemoryLimit: 1n << 32n, log });
  await cgroups.ensurePod(pod);
  const loc = cgroups.statsLocation('uid-1');
  const podDir = join(root, 'kubepods', 'burstable', 'poduid-1');
  t.equal(loc?.dir('cpuacct'), podDir, 'one directory for every controller');
  await files(podDir, {
    'cpu.stat': 'usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n',
    'memory.current': '8388608\n',
    'memory.stat': 'anon 4194304\nfile 2097152\ninactive_file 1048576\npgfault 55\npgmajfault 2\n',
    'pids.current': '4\n',
    'cpu.pressure': PRESSURE(1),
    'memory.pressure': PRESSURE(2),
    'io.pressure': PRESSURE(3),
  });
  if (!loc) return;
  const r = await readCgroupStats(loc, readText, now);
  t.equal(r.cpuUsageCoreNanoSeconds, 2_500_000, 'usage_usec in nanoseconds');
  t.same([r.memoryUsageBytes, r.memoryWorkingSetBytes, r.memoryRssBytes, r.pageFaults, r.majorPageFaults, r.processes, r.memoryLimitBytes], [8388608, 8388608 - 1048576, 4194304, 55, 2, 4, 64 << 20]);
  t.same([r.psi?.cpu?.some.avg10, r.psi?.memory?.some.total, r.psi?.io?.full.total], [1.5, 2000, 30]);
  await writeFile(join(podDir, 'memory.max'), 'max\n');
  t.notOk('memoryLimitBytes' in (await readCgroupStats(loc, readText, now)), '"max" is no limit');
  const cLoc = cgroups.statsLocation('uid-1', 'abc123');
  t.equal(cLoc?.dir('memory'), join(podDir, 'abc123'), 'the engine\'s container cgroup below the pod\'s');
  if (!cLoc) return;
  await files(join(podDir, 'abc123'), { 'cpu.stat': 'usage_usec 10\n', 'memory.current': '4096\n', 'memory.stat': 'anon 4096\ninactive_file 0\n' });
  t.notOk('psi' in (await readCgroupStats(cLoc, readText, now)), 'no pressure files, no PSI');
  await files(join(podDir, 'abc123'), { 'io.pressure': PRESSURE(4) });
  t.same(Object.keys((await readCgroupStats(cLoc, readText, now)).psi ?? {}), ['io'], 'the container\'s pressure comes with its reading');
  await files(podDir, { 'memory.current': 'lots\n' });
  await t.rejects(readCgroupStats(loc, readText, now), /unexpected content in .*memory.current/);
});
