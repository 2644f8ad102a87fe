import { mkdtemp, rm, statfs } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { hostReader, statfsFigures, type FsFigures } from '../../../src/stats/host.js';

const now = () => new Date('2026-12-06T01:00:00Z');
const figures = (n: number): FsFigures => ({ capacityBytes: n * 100, availableBytes: n * 40, usedBytes: n * 55, inodes: n * 10, inodesFree: n * 9 });

const proc: Record<string, string> = {
  '/proc/sys/kernel/pid_max': '4194304\n',
  '/proc/sys/kernel/threads-max': '63356\n',
  '/proc/loadavg': '0.52 0.58 0.59 3/467 12345\n',
  '/proc/pressure/cpu': 'some avg10=1.00 avg60=2.00 avg300=3.00 total=400\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n',
  '/proc/pressure/memory': 'some avg10=0.00 avg60=0.00 avg300=0.00 total=7\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=6\n',
  '/proc/pressure/io': 'some avg10=0.10 avg60=0.20 avg300=0.30 total=99\nfull avg10=0.05 avg60=0.06 avg300=0.07 total=88\n',
};
const fakeRead = (files: Record<string, string>) => async (path: string) => {
  const text = files[path];
  if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
  return text;
};

t.test('host reading: nodefs and imagefs by statfs, rlimit from pid_max/threads-max/loadavg, PSI from /proc/pressure', async (t) => {
  const statted: string[] = [];
  const read = hostReader({
    rootDir: '/var/lib/nodelet',
    imageFsRoot: async () => '/var/lib/docker',
    readText: fakeRead(proc),
    statfs: async (path) => {
      statted.push(path);
      return figures(path === '/var/lib/docker' ? 2 : 1);
    },
    now,
  });
  const h = await read();
  t.same(statted.sort(), ['/var/lib/docker', '/var/lib/nodelet']);
  t.same(h.fs, figures(1));
  t.same(h.imageFs, figures(2));
  t.same(h.rlimit, { maxpid: 63356, curproc: 467 }, 'min(pid_max, threads-max), and loadavg\'s task count');
  t.same(h.psi?.cpu?.some, { avg10: 1, avg60: 2, avg300: 3, total: 400 });
  t.same(h.psi?.io?.full.total, 88);
  t.same(h.timestamp, now());
});

t.test('host reading: each unreadable part is left out, never failing the whole', async (t) => {
  const read = hostReader({
    rootDir: '/nowhere',
    imageFsRoot: async () => undefined,
    readText: fakeRead({ '/proc/loadavg': 'garbage' }),
    statfs: async () => {
      throw new Error('ENOENT');
    },
    now,
  });
  t.same(await read(), { timestamp: now() }, 'no fs, no imagefs (remote engine), no rlimit (bad loadavg), no PSI (kernel without it)');
  const failingEngine = hostReader({ rootDir: '/', imageFsRoot: async () => Promise.reject(new Error('engine down')), readText: fakeRead(proc), statfs: async () => figures(1), now });
  const h = await failingEngine();
  t.ok(h.fs && !h.imageFs && h.rlimit && h.psi);
});

t.test('statfsFigures: capacity and free from statfs(2), used as blocks not free', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'hostfs-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const [f, st] = await Promise.all([statfsFigures(dir), statfs(dir)]);
  t.equal(f.capacityBytes, st.blocks * st.bsize);
  t.equal(f.inodes, st.files);
  t.ok(f.usedBytes > 0 && f.usedBytes + f.availableBytes <= f.capacityBytes, 'available (bavail) is within what is not used (bfree)');
});
