import t from 'tap';
import { EventRecorder } from '../../../src/events/recorder.js';
import { KubeletHost } from '../../../src/kubelet/host.js';
import type { Kubelet } from '../../../src/kubelet/kubelet.js';
import { PodManager } from '../../../src/pod/manager.js';
import type { DiskSnapshot } from '../../../src/stats/disk-stats.js';
import type { StatsSnapshot, StatsSource } from '../../../src/stats/types.js';
import { StatusManager } from '../../../src/status/manager.js';

function host(stats?: StatsSource, diskStats?: { snapshot(): DiskSnapshot }): KubeletHost {
  return new KubeletHost({
    nodeName: 'n1',
    podManager: new PodManager(),
    statusManager: new StatusManager(),
    runtime: {} as never,
    recorder: new EventRecorder({ nodeName: 'n1' }),
    kubelet: {} as Kubelet,
    ...(stats ? { stats } : {}),
    ...(diskStats ? { diskStats } : {}),
  });
}

t.test('without a stats sampler the Host has no stats capability (the routes answer 501), not empty data', async (t) => {
  t.equal(host().stats, undefined);
});

t.test('with a sampler, the stats capability reads its snapshots', async (t) => {
  let snap: StatsSnapshot = { containers: [] };
  const h = host({ snapshot: () => snap });
  const stats = h.stats;
  if (!stats) return t.fail('stats capability missing');
  t.equal(stats.getStatsSummary().node.nodeName, 'n1');
  t.same(stats.getPodMetrics(undefined), []);
  snap = { containers: [], failure: 'docker down' };
  t.throws(() => stats.getStatsSummary(), /failed to get stats summary: docker down/);
});

t.test('the summary takes the disk cache\'s newest snapshot, and leaves it out in the short form', async (t) => {
  const boot = new Date('2026-12-01T00:00:00Z');
  const snap: StatsSnapshot = {
    containers: [{
      target: { id: 'c1', podUID: 'u1', podName: 'p', namespace: 'ns', podStartTime: boot, name: 'app', sandbox: false, startTime: boot },
      latest: { timestamp: boot, cpuUsageCoreNanoSeconds: 1, memoryUsageBytes: 1, memoryWorkingSetBytes: 1 },
    }],
  };
  let reads = 0;
  const disk: DiskSnapshot = { pods: new Map([['u1', { time: boot, containers: new Map([['c1', { rootfsBytes: 10, logsBytes: 20, logsInodes: 1 }]]), volumes: [] }]]) };
  const stats = host({ snapshot: () => snap }, { snapshot: () => (reads++, disk) }).stats;
  if (!stats) return t.fail('stats capability missing');
  t.equal(stats.getStatsSummary().pods[0]?.['ephemeral-storage']?.usedBytes, 30);
  t.equal(reads, 1, 'read per request, from memory');
  const short = stats.getStatsSummary({ onlyCpuAndMemory: true });
  t.notOk(short.pods[0]?.['ephemeral-storage'] ?? short.pods[0]?.containers[0]?.rootfs);
});
