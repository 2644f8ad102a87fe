import { pino } from 'pino';
import t from 'tap';
import type { Pod, PodList, PodStatus } from '../../../src/api/types.js';
import { EventRecorder } from '../../../src/events/recorder.js';
import { KubeletHost } from '../../../src/kubelet/host.js';
import type { Kubelet } from '../../../src/kubelet/kubelet.js';
import { PodManager } from '../../../src/pod/manager.js';
import { buildServer } from '../../../src/server/index.js';
import { StatusManager } from '../../../src/status/manager.js';

/**
 * `/pods` and `/podInfo` answer from bytes serialised once per revision of the pod set and the
 * status cache. Against the real Host, pod manager and status manager (no Docker): a status
 * change or a pod added must show in the very next answer, and nothing else may change the bytes.
 */
function pod(name: string): Pod {
  return {
    metadata: { name, namespace: 'default', uid: `uid-${name}` },
    spec: { containers: [{ name: 'app', image: 'busybox' }] },
    status: { phase: 'Pending' },
  };
}

t.test('a status change and a new pod show in the next /pods and /podInfo answers', async (t) => {
  const podManager = new PodManager();
  const statusManager = new StatusManager({ now: () => new Date('2026-12-01T10:00:00Z') });
  const host = new KubeletHost({
    nodeName: 'n1',
    podManager,
    statusManager,
    // Never reached: these routes read memory only.
    runtime: {} as never,
    recorder: new EventRecorder({ nodeName: 'n1' }),
    kubelet: {} as Kubelet,
  });
  const app = buildServer({ host, logger: pino({ level: 'silent' }), version: { gitVersion: 'v1.30.2-nodelet' } });
  t.teardown(() => app.close());
  const web = pod('web');
  podManager.addPod(web);

  const read = async () => {
    const [pods, info, v1beta1] = await Promise.all([
      app.inject('/pods'),
      app.inject('/podInfo?podID=web&podNamespace=default'),
      app.inject('/api/v1beta1/podInfo?podID=web&podNamespace=default'),
    ]);
    for (const r of [pods, info, v1beta1]) if (r.statusCode !== 200) t.fail(`${r.statusCode}: ${r.body}`);
    return { pods: pods.body, info: info.body, v1beta1: v1beta1.body };
  };
  const phases = (body: string) => (JSON.parse(body) as PodList).items.map((p) => `${p.metadata?.name}:${p.status?.phase}`);

  const first = await read();
  t.same(phases(first.pods), ['web:Pending']);
  t.equal((JSON.parse(first.info) as PodStatus).phase, 'Pending');
  t.same(await read(), first, 'no change: the same bytes');

  const running: PodStatus = { phase: 'Running', podIP: '10.0.0.7', conditions: [{ type: 'Ready', status: 'True' }] };
  statusManager.setPodStatus(web, running);
  const second = await read();
  t.not(second.pods, first.pods, '/pods bytes changed');
  t.same(phases(second.pods), ['web:Running']);
  const info = JSON.parse(second.info) as PodStatus;
  t.equal(info.phase, 'Running', '/podInfo sees the new status');
  t.equal(info.podIP, '10.0.0.7');
  const v1beta1 = JSON.parse(second.v1beta1) as { kind: string; status: PodStatus };
  t.equal(v1beta1.kind, 'PodStatusResult');
  t.equal(v1beta1.status.phase, 'Running', '/api/v1beta1/podInfo sees the new status');

  // The same status again is deduplicated by the status manager: the bytes stay.
  statusManager.setPodStatus(web, running);
  t.same(await read(), second, 'an equal status leaves the cached bytes');

  statusManager.setPodStatus(web, { ...running, phase: 'Succeeded', conditions: [{ type: 'Ready', status: 'False' }] });
  const third = await read();
  t.same(phases(third.pods), ['web:Succeeded']);
  t.equal((JSON.parse(third.info) as PodStatus).phase, 'Succeeded', 'a second change shows too');

  podManager.addPod(pod('db'));
  const fourth = await read();
  t.same(phases(fourth.pods).sort(), ['db:Pending', 'web:Succeeded'], 'a new pod shows in /pods');
  t.equal(fourth.info, third.info, "web's /podInfo is unchanged in content");
  const db = await app.inject('/podInfo?podID=db&podNamespace=default');
  t.equal((JSON.parse(db.body) as PodStatus).phase, 'Pending', 'and in /podInfo');

  podManager.deletePod(web);
  const gone = await app.inject('/podInfo?podID=web&podNamespace=default');
  t.equal(gone.statusCode, 404, 'a deleted pod is not served from the cache');
  t.match(gone.body, /^Pod does not exist/);
  t.same(phases((await app.inject('/pods')).body), ['db:Pending']);
});
