import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { Cgroupfs, cgroupMountsOf } from '../../../src/cgroups/cgroupfs.js';

const V1 = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
22 1 8:1 / / rw - ext4 /dev/root rw`;
const V2 = `25 1 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
22 1 8:1 / / rw - ext4 /dev/root rw`;

t.test('mountinfo: v1 (co-mounted controllers, a hybrid unified mount) and v2', async (t) => {
  const v1 = cgroupMountsOf(V1);
  t.equal(v1.version, 1);
  t.same([v1.controllers.get('cpu'), v1.controllers.get('cpuacct'), v1.controllers.get('memory'), v1.controllers.get('pids')], ['/sys/fs/cgroup/cpu,cpuacct', '/sys/fs/cgroup/cpu,cpuacct', '/sys/fs/cgroup/memory', '/sys/fs/cgroup/pids']);
  t.equal(v1.mountPoints.length, 5, 'every cgroup mount, the named and unified ones included, for removal');
  const v2 = cgroupMountsOf(V2);
  t.same([v2.version, v2.controllers.get(''), v2.mountPoints], [2, '/sys/fs/cgroup', ['/sys/fs/cgroup']]);
});

t.test('mountinfo: where pods cannot be placed, the reason', async (t) => {
  t.throws(() => cgroupMountsOf(V1.replace(/^39 .*\n/m, '')), /cgroup v1 controllers pids are not mounted/);
  t.throws(() => cgroupMountsOf(V1.replace('35 31 0:32 / ', '35 31 0:32 /docker/abc ')), /shows \/docker\/abc of its hierarchy/);
  t.throws(() => cgroupMountsOf('22 1 8:1 / / rw - ext4 /dev/root rw'), /no cgroup filesystem is mounted/);
});

t.test('v1 writes: each controller\'s files, quota after period, "max" for unlimited pids', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'cgv1-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const fs = new Cgroupfs({ version: 1, controllers: new Map([['cpu', join(root, 'cpu')], ['memory', join(root, 'memory')], ['pids', join(root, 'pids')]]), mountPoints: ['cpu', 'memory', 'pids'].map((c) => join(root, c)) });
  await fs.apply(['kubepods', 'podx'], { cpuShares: 204, cpuQuota: 20000, cpuPeriod: 100000, memoryLimit: 64n << 20n, pidsLimit: -1 });
  const read = (c: string, f: string) => readFile(join(root, c, 'kubepods', 'podx', f), 'utf8');
  t.same(await Promise.all([read('cpu', 'cpu.shares'), read('cpu', 'cpu.cfs_period_us'), read('cpu', 'cpu.cfs_quota_us'), read('memory', 'memory.limit_in_bytes'), read('pids', 'pids.max')]), ['204', '100000', '20000', String(64 << 20), 'max']);
  await fs.apply(['kubepods', 'besteffort'], { cpuShares: 2 });
  await t.rejects(readFile(join(root, 'memory', 'kubepods', 'besteffort', 'memory.limit_in_bytes')), 'a field left out is not written');
  t.equal(Cgroupfs.nameOf(['a', 'kubepods', 'podx']), '/a/kubepods/podx', 'the engine\'s CgroupParent');
});

t.test('v2 writes: controllers enabled at each level, cpu.weight, cpu.max, memory.max, pids.max', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'cgv2-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  await writeFile(join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
  // A real kernel makes cgroup.controllers in each new directory; here the test does, before apply reads it.
  await mkdir(join(root, 'kubepods'));
  await writeFile(join(root, 'kubepods', 'cgroup.controllers'), 'cpu memory pids\n');
  const fs = new Cgroupfs({ version: 2, controllers: new Map([['', root]]), mountPoints: [root] });
  await fs.apply(['kubepods', 'pody'], { cpuShares: 1024, cpuQuota: 50000, cpuPeriod: 100000, memoryLimit: 1n << 30n, pidsLimit: 100 });
  const dir = join(root, 'kubepods', 'pody');
  t.same(await Promise.all(['cpu.weight', 'cpu.max', 'memory.max', 'pids.max'].map((f) => readFile(join(dir, f), 'utf8'))), ['39', '50000 100000', String(1 << 30), '100']);
  t.same(await Promise.all([readFile(join(root, 'cgroup.subtree_control'), 'utf8'), readFile(join(root, 'kubepods', 'cgroup.subtree_control'), 'utf8')]), ['+cpu +memory +pids', '+cpu +memory +pids']);
});

t.test('remove: children first in every hierarchy; a busy one is reported, a missing one is fine', async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'cgrm-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const fs = new Cgroupfs({ version: 1, controllers: new Map([['cpu', join(root, 'cpu')], ['memory', join(root, 'memory')], ['pids', join(root, 'pids')]]), mountPoints: ['cpu', 'memory', 'pids', 'freezer'].map((c) => join(root, c)) });
  await mkdir(join(root, 'cpu', 'kubepods', 'podz', 'container1'), { recursive: true });
  await mkdir(join(root, 'freezer', 'kubepods', 'podz', 'conmon'), { recursive: true });
  t.equal(await fs.remove(['kubepods', 'podz']), true);
  await t.rejects(stat(join(root, 'cpu', 'kubepods', 'podz')), 'gone from cpu');
  await t.rejects(stat(join(root, 'freezer', 'kubepods', 'podz')), 'and from a controller nodelet never wrote');
  t.ok(await stat(join(root, 'cpu', 'kubepods')), 'the parent stays');
  t.equal(await fs.remove(['kubepods', 'gone']), true, 'missing: removed');
  // A directory rmdir refuses (a file in it stands in for a cgroup's live process) is not removed.
  await mkdir(join(root, 'memory', 'kubepods', 'busy'), { recursive: true });
  await writeFile(join(root, 'memory', 'kubepods', 'busy', 'x'), '');
  await t.rejects(fs.remove(['kubepods', 'busy']), /ENOTEMPTY/, 'on a plain filesystem rmdir says ENOTEMPTY, which is not a cgroup\'s EBUSY and is raised');
});
