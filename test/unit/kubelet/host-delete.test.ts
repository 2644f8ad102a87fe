import t from 'tap';
import type { Pod } from '../../../src/api/types.js';
import type { StatusError } from '../../../src/api/errors.js';
import { EventRecorder } from '../../../src/events/recorder.js';
import { KubeletHost } from '../../../src/kubelet/host.js';
import type { Kubelet } from '../../../src/kubelet/kubelet.js';
import { PodManager } from '../../../src/pod/manager.js';
import { StatusManager } from '../../../src/status/manager.js';
import type { WatchEvent } from '../../../src/watch/hub.js';

const staticPod = (name: string, source = 'file', grace?: number): Pod => ({
  metadata: { name, namespace: 'default', uid: `uid-${name}`, annotations: { 'kubernetes.io/config.source': source } },
  spec: { containers: [{ name: 'c', image: 'i' }], ...(grace !== undefined ? { terminationGracePeriodSeconds: grace } : {}) },
});

function setup() {
  const podManager = new PodManager();
  const statusManager = new StatusManager();
  const restarts: Array<{ uid: string; grace: number; onKilled: () => void; resolve: () => void; reject: (e: unknown) => void }> = [];
  const kubelet = {
    restartPod: (uid: string, grace: number, onKilled: () => void) =>
      new Promise<void>((resolve, reject) => restarts.push({ uid, grace, onKilled, resolve, reject })),
  } as unknown as Kubelet;
  const warnings: string[] = [];
  const host = new KubeletHost({
    nodeName: 'n1',
    podManager,
    statusManager,
    runtime: {} as never,
    recorder: new EventRecorder({ nodeName: 'n1' }),
    kubelet,
    log: { warn: (_o, msg) => warnings.push(msg) },
  });
  return { podManager, statusManager, host, restarts, warnings };
}

const drain = (w: { shift(): WatchEvent<Pod> | undefined }) => {
  const out: string[] = [];
  for (let e = w.shift(); e; e = w.shift()) out.push(`${e.type}${e.object.metadata?.deletionTimestamp ? ' terminating' : ''}`);
  return out;
};

t.test('deletePod: terminating at once, DELETED when the old incarnation is gone, then ADDED again', async (t) => {
  const { podManager, statusManager, host, restarts } = setup();
  const pod = staticPod('web', 'file', 7);
  podManager.setPods([pod]);
  statusManager.setPodStatus(pod, { phase: 'Running' });
  const w = host.watch.pods.hub.watch({ resourceVersion: host.watch.pods.list().resourceVersion });
  const answer = host.deletePod('default', 'web', undefined);
  t.equal(answer.metadata?.deletionGracePeriodSeconds, 7, "the pod's own grace period by default");
  t.ok(answer.metadata?.deletionTimestamp);
  t.equal(answer.metadata?.resourceVersion, host.watch.pods.hub.resourceVersion, 'the answer is the version watchers see');
  t.same(restarts.map((r) => [r.uid, r.grace]), [['uid-web', 7]]);
  t.ok(host.getPodByName('default', 'web')?.metadata?.deletionTimestamp, 'every read shows it terminating');
  t.same(drain(w), ['MODIFIED terminating']);
  host.deletePod('default', 'web', 1);
  t.equal(restarts.length, 1, 'a second delete while one runs joins it');

  statusManager.deletePodStatus('uid-web');
  restarts[0]?.onKilled();
  restarts[0]?.resolve();
  t.same(drain(w), ['DELETED terminating'], 'the old incarnation is gone');
  t.equal(host.getPodByName('default', 'web')?.metadata?.deletionTimestamp, undefined);
  statusManager.setPodStatus(pod, { phase: 'Pending' });
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  t.same(drain(w), ['ADDED'], 'the new incarnation');
});

t.test('deletePod: explicit grace, unknown pods, apiserver pods, a failed restart', async (t) => {
  const { podManager, host, restarts, warnings } = setup();
  podManager.setPods([staticPod('a'), staticPod('b', 'api')]);
  host.deletePod('default', 'a', 0);
  t.equal(restarts[0]?.grace, 0);
  const err = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      return e as StatusError;
    }
    throw new Error('no error');
  };
  t.match(err(() => host.deletePod('default', 'nope', undefined)), { code: 404, reason: 'NotFound', message: 'pods "nope" not found' });
  t.match(err(() => host.deletePod('default', 'b', undefined)), { code: 405, reason: 'MethodNotAllowed', message: /comes from the API server/ });
  t.equal(restarts.length, 1, 'nothing restarted for refused deletes');
  restarts[0]?.reject(new Error('docker down'));
  await new Promise((r) => setImmediate(r));
  t.same(warnings, ['Deleting the pod failed']);
  t.equal(host.getPodByName('default', 'a')?.metadata?.deletionTimestamp, undefined, 'no longer terminating');
  const c = staticPod('c');
  delete (c.spec as { terminationGracePeriodSeconds?: number }).terminationGracePeriodSeconds;
  podManager.updatePod(c);
  host.deletePod('default', 'c', undefined);
  t.equal(restarts[1]?.grace, 30, 'the default grace period');
  await t.rejects(host.getNode(), { code: 503 }, 'no node source: 503');
});
