import t from 'tap';
import type { Node } from 'kubernetes-types/core/v1.js';
import type { Pod } from '../../../src/api/types.js';
import { EventRecorder } from '../../../src/events/recorder.js';
import { PodManager } from '../../../src/pod/manager.js';
import { StatusManager } from '../../../src/status/manager.js';
import { EventFeed, NodeFeed, PodFeed, samePod } from '../../../src/watch/feeds.js';
import { ResourceVersionClock, type WatchEvent, type Watcher } from '../../../src/watch/hub.js';

function drain<T>(w: Watcher<T>): WatchEvent<T>[] {
  const out: WatchEvent<T>[] = [];
  for (let ev = w.shift(); ev; ev = w.shift()) out.push(ev);
  return out;
}
const pod = (name: string, uid: string): Pod => ({ metadata: { name, namespace: 'default', uid }, spec: { containers: [{ name: 'c', image: 'i' }] } });
const types = (evs: WatchEvent<Pod>[]) => evs.map((e) => `${e.type} ${e.object.metadata?.name}${e.object.status?.phase ? ` ${e.object.status.phase}` : ''}`);

/** A pod manager and a status manager wired to a feed the way KubeletHost wires them. */
function wired() {
  const pods = new PodManager();
  const statuses = new StatusManager();
  const withStatus = (p: Pod): Pod => {
    const status = statuses.getPodStatus(p.metadata?.uid ?? '');
    return status ? { ...p, status } : p;
  };
  const feed = new PodFeed(new ResourceVersionClock(1), {
    pods: () => pods.getPods().map(withStatus),
    pod: (uid) => {
      const p = pods.getPodByUID(uid);
      return p && withStatus(p);
    },
  });
  pods.onChange(() => feed.changed());
  statuses.subscribe((u) => feed.changed(u.uid));
  return { pods, statuses, feed };
}

/** Resolves once `w` has `n` events queued (statuses arrive through the status manager's drain loop). */
function queued<T>(w: Watcher<T>, n: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`only ${w.pending} of ${n} events arrived`)), 5000);
    const check = () => {
      if (w.pending >= n) {
        clearTimeout(deadline);
        resolve();
      }
    };
    w.onChange(check);
    check();
  });
}

t.test('pods: the pod manager and status manager hooks feed watchers, coalesced', async (t) => {
  const { pods, statuses, feed } = wired();
  const w = feed.hub.watch({ resourceVersion: feed.hub.resourceVersion });
  const a = pod('a', 'ua');
  pods.setPods([a, pod('b', 'ub')]);
  t.equal(w.pending, 0, 'pod set changes are reconciled on the next microtask, once');
  await queued(w, 2);
  t.same(types(drain(w)), ['ADDED a', 'ADDED b']);
  statuses.setPodStatus(a, { phase: 'Pending' });
  statuses.setPodStatus(a, { phase: 'Running' });
  await queued(w, 1);
  const evs = drain(w);
  t.same(types(evs), ['MODIFIED a Running'], 'newest-wins: two status changes before delivery are one event');
  t.equal(evs[0]?.object.kind, 'Pod');
  t.equal(evs[0]?.object.apiVersion, 'v1');
  pods.deletePod(a);
  await queued(w, 1);
  t.same(types(drain(w)), ['DELETED a Running']);
});

t.test('pods: list reconciles at once and answers the version the items are current at', async (t) => {
  const { pods, statuses, feed } = wired();
  pods.setPods([pod('a', 'ua')]);
  statuses.setPodStatus(pod('a', 'ua'), { phase: 'Running' });
  const { items, resourceVersion } = feed.list();
  t.equal(items[0]?.status?.phase, 'Running', 'no waiting for the status manager to deliver');
  t.equal(items[0]?.metadata?.resourceVersion, resourceVersion);
  const w = feed.hub.watch({ resourceVersion });
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  t.same(drain(w), [], 'the deliveries that follow find nothing new: no duplicate after the list');
});

t.test('pods: replaced() ends the old incarnation (DELETED); the next reconcile adds the new one', async (t) => {
  const { pods, statuses, feed } = wired();
  const a = pod('a', 'ua');
  pods.setPods([a]);
  statuses.setPodStatus(a, { phase: 'Running' });
  feed.sync();
  const w = feed.hub.watch({ resourceVersion: feed.hub.resourceVersion });
  statuses.deletePodStatus('ua');
  feed.replaced('ua');
  t.same(types(drain(w)), ['DELETED a Running']);
  t.equal(feed.store.get('ua'), undefined);
  statuses.setPodStatus(a, { phase: 'Pending' });
  await queued(w, 1);
  t.same(types(drain(w)), ['ADDED a Pending']);
});

t.test('samePod: shared parts short-circuit, otherwise JSON', async (t) => {
  const a = pod('a', 'ua');
  t.ok(samePod(a, { ...a }));
  t.ok(samePod(a, structuredClone(a)));
  t.notOk(samePod(a, { ...a, status: { phase: 'Running' } }));
});

t.test('events: new ones ADDED, repeats MODIFIED; lists stamped; earlier events get the first version', async (t) => {
  const recorder = new EventRecorder({ nodeName: 'n1' });
  const subject = { kind: 'Pod', metadata: { name: 'p', namespace: 'default', uid: 'u' } };
  recorder.record(subject, 'Normal', 'Early', 'before the feed');
  const clock = new ResourceVersionClock(50);
  const feed = new EventFeed(clock, { list: (ns, fields) => recorder.list(ns, fields) });
  recorder.onRecord((e) => feed.recorded(e));
  const w = feed.hub.watch({ resourceVersion: feed.hub.resourceVersion });
  recorder.record(subject, 'Warning', 'BackOff', 'Back-off restarting failed container');
  recorder.record(subject, 'Warning', 'BackOff', 'Back-off restarting failed container');
  const evs = drain(w);
  t.same(evs.map((e) => `${e.type} ${e.object.reason} x${e.object.count} @${e.object.metadata.resourceVersion}`), ['ADDED BackOff x1 @51', 'MODIFIED BackOff x2 @52']);
  const { items, resourceVersion } = feed.list(undefined, new Map());
  t.equal(resourceVersion, '52');
  t.same(items.map((e) => `${e.reason}@${e.metadata.resourceVersion}`), ['Early@50', 'BackOff@52']);
  const initial = feed.hub.watch();
  t.same(drain(initial).map((e) => e.object.reason), ['Early', 'BackOff']);
});

t.test('node: MODIFIED only when more than heartbeat times changed', async (t) => {
  const feed = new NodeFeed(new ResourceVersionClock(10));
  const node = (ready: string, beat: string): Node => ({
    metadata: { name: 'n1' },
    status: { conditions: [{ type: 'Ready', status: ready, lastHeartbeatTime: beat, lastTransitionTime: '2026-01-01T00:00:00Z' }] },
  });
  const w = feed.hub.watch({ resourceVersion: feed.hub.resourceVersion });
  t.equal(feed.updated(node('True', 't1')).metadata?.resourceVersion, '11');
  t.equal(feed.updated(node('True', 't2')).metadata?.resourceVersion, '11', 'a heartbeat alone is no change');
  feed.updated(node('False', 't3'));
  t.same(drain(w).map((e) => `${e.type}@${e.rv}`), ['ADDED@11', 'MODIFIED@12']);
});
