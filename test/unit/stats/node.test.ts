import t from 'tap';
import { parseMeminfo, parseProcStat, readNodeStats } from '../../../src/stats/node.js';

const stat = `cpu  193379 7 38048 460212 1119 3 275 88 5 0
cpu0 94663 0 18345 233233 121 0 83 42 0 0
intr 1 2 3
ctxt 123
btime 1795981767
processes 42
`;

const meminfo = `MemTotal:       24683652 kB
MemFree:        23685480 kB
MemAvailable:   24138224 kB
Inactive(file):   136496 kB
AnonPages:        126928 kB
HugePages_Total:       0
`;

t.test('/proc/stat: busy ticks (no idle, no iowait, guest not twice) and boot time', async (t) => {
  const s = parseProcStat(stat);
  t.equal(s.cpuUsageCoreNanoSeconds, (193379 + 7 + 38048 + 3 + 275 + 88) * 10_000_000);
  t.same(s.bootTime, new Date(1795981767 * 1000));
  t.throws(() => parseProcStat('intr 1\n'), /unexpected \/proc\/stat/);
  t.throws(() => parseProcStat('cpu  1 2 3 4\n'), /unexpected/, 'no btime');
});

t.test('/proc/meminfo: usage, working set, available as the kubelet computes them', async (t) => {
  const m = parseMeminfo(meminfo);
  const usage = (24683652 - 23685480) * 1024;
  const workingSet = usage - 136496 * 1024;
  t.same(m, { memoryUsageBytes: usage, memoryWorkingSetBytes: workingSet, memoryAvailableBytes: 24683652 * 1024 - workingSet, memoryRssBytes: 126928 * 1024 });
  t.notOk('memoryRssBytes' in parseMeminfo('MemTotal: 10 kB\nMemFree: 5 kB\n'));
  t.throws(() => parseMeminfo('MemFree: 1 kB\n'), /unexpected \/proc\/meminfo/);
});

t.test('readNodeStats reads both files through the reader it is given', async (t) => {
  const read = async (path: string) => (path === '/proc/stat' ? stat : meminfo);
  const now = new Date('2026-11-29T00:00:00Z');
  const r = await readNodeStats(read, () => now);
  t.same(r.timestamp, now);
  t.ok(r.cpuUsageCoreNanoSeconds > 0 && r.memoryWorkingSetBytes > 0);
  await t.rejects(readNodeStats(async () => Promise.reject(new Error('ENOENT'))), /ENOENT/);
  // The real files, where they exist (every Linux CI machine).
  const real = await readNodeStats();
  t.ok(real.cpuUsageCoreNanoSeconds > 0 && real.memoryUsageBytes > 0 && real.bootTime.getTime() < Date.now());
});
