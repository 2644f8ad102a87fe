import t from 'tap';
import { sampleFromDockerStats, type DockerStats } from '../../../src/runtime/docker/stats.js';

// Trimmed answers of `GET /containers/{id}/stats?stream=false&one-shot=true`.
const v1: DockerStats = {
  read: '2026-11-29T20:45:56.515837801Z',
  cpu_stats: { cpu_usage: { total_usage: 1_606_392_895 } },
  memory_stats: {
    usage: 606_208,
    stats: { inactive_file: 4096, total_inactive_file: 8192, rss: 100, total_rss: 118_784, pgfault: 1, total_pgfault: 129_610, pgmajfault: 0, total_pgmajfault: 1 },
  },
};

const v2: DockerStats = {
  read: '2026-11-29T20:45:56.5Z',
  cpu_stats: { cpu_usage: { total_usage: 42_000 } },
  memory_stats: { usage: 1_048_576, stats: { inactive_file: 24_576, anon: 512_000, pgfault: 77, pgmajfault: 2 } },
};

t.test('cgroup v1: the hierarchical total_* keys win', async (t) => {
  t.same(sampleFromDockerStats(v1), {
    timestamp: new Date('2026-11-29T20:45:56.515Z'),
    cpuUsageCoreNanoSeconds: 1_606_392_895,
    memoryUsageBytes: 606_208,
    memoryWorkingSetBytes: 606_208 - 8192,
    memoryRssBytes: 118_784,
    pageFaults: 129_610,
    majorPageFaults: 1,
  });
});

t.test('cgroup v2: inactive_file, anon, pgfault, pgmajfault', async (t) => {
  t.same(sampleFromDockerStats(v2), {
    timestamp: new Date('2026-11-29T20:45:56.500Z'),
    cpuUsageCoreNanoSeconds: 42_000,
    memoryUsageBytes: 1_048_576,
    memoryWorkingSetBytes: 1_048_576 - 24_576,
    memoryRssBytes: 512_000,
    pageFaults: 77,
    majorPageFaults: 2,
  });
});

t.test('working set never goes below zero; optional figures stay absent', async (t) => {
  const s = sampleFromDockerStats({ read: v2.read, cpu_stats: v2.cpu_stats, memory_stats: { usage: 100, stats: { inactive_file: 4096 } } });
  t.equal(s.memoryWorkingSetBytes, 0);
  t.notOk('memoryRssBytes' in s);
  t.notOk('pageFaults' in s);
  t.notOk('majorPageFaults' in s);
  const bare = sampleFromDockerStats({ cpu_stats: v2.cpu_stats, memory_stats: { usage: 100 } });
  t.equal(bare.memoryWorkingSetBytes, 100, 'no stats map: usage is the working set');
});

t.test('a missing or year-1 read time falls back to now', async (t) => {
  const before = Date.now();
  for (const read of [undefined, '0001-01-01T00:00:00Z', 'garbage']) {
    const s = sampleFromDockerStats({ ...(read ? { read } : {}), cpu_stats: v2.cpu_stats, memory_stats: { usage: 1 } });
    t.ok(s.timestamp.getTime() >= before, String(read));
  }
});

t.test('a stopped container (empty objects) is an error, not a zero sample', async (t) => {
  t.throws(() => sampleFromDockerStats({ read: '0001-01-01T00:00:00Z', cpu_stats: { cpu_usage: { total_usage: 0 } }, memory_stats: {} }, 'abc'), /no stats for container abc/);
  t.throws(() => sampleFromDockerStats({ memory_stats: { usage: 5 } }), /not running/);
});
