import t from 'tap';
import { EventRecorder } from '../../../src/events/recorder.js';
import { KubeletHost } from '../../../src/kubelet/host.js';
import type { Kubelet } from '../../../src/kubelet/kubelet.js';
import { PodManager } from '../../../src/pod/manager.js';
import type { StatsSnapshot, StatsSource } from '../../../src/stats/types.js';
import { StatusManager } from '../../../src/status/manager.js';

function host(stats?: StatsSource): KubeletHost {
  return new KubeletHost({
    nodeName: 'n1',
    podManager: new PodManager(),
    statusManager: new StatusManager(),
    runtime: {} as never,
    recorder: new EventRecorder({ nodeName: 'n1' }),
    kubelet: {} as Kubelet,
    ...(stats ? { stats } : {}),
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
