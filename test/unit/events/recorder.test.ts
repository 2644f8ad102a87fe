import t from 'tap';
import { EventRecorder } from '../../../src/events/recorder.js';

const pod = (name: string, ns = 'default') => ({ kind: 'Pod', apiVersion: 'v1', metadata: { name, namespace: ns, uid: `uid-${name}` } });

t.test('repeats bump count instead of growing', async (t) => {
  const r = new EventRecorder({ nodeName: 'n1' });
  r.record(pod('a'), 'Warning', 'BackOff', 'Back-off restarting');
  const again = r.record(pod('a'), 'Warning', 'BackOff', 'Back-off restarting');
  t.equal(again.count, 2);
  t.equal(r.list(undefined).length, 1);
});

t.test('bounded by capacity, oldest dropped', async (t) => {
  const r = new EventRecorder({ nodeName: 'n1', capacity: 3 });
  for (const n of ['a', 'b', 'c', 'd']) r.record(pod(n), 'Normal', 'Started', 'x');
  t.same(r.list(undefined).map((e) => e.involvedObject.name), ['b', 'c', 'd']);
});

t.test('filters by namespace and involvedObject fields', async (t) => {
  const r = new EventRecorder({ nodeName: 'n1' });
  r.record(pod('a', 'ns1'), 'Normal', 'Started', 'x');
  r.record(pod('b', 'ns1'), 'Normal', 'Started', 'x');
  r.record(pod('a', 'ns2'), 'Normal', 'Started', 'x');
  t.equal(r.list('ns1').length, 2);
  const sel = new Map([['involvedObject.name', 'a'], ['involvedObject.uid', 'uid-a']]);
  t.equal(r.list('ns1', sel).length, 1);
  t.equal(r.list(undefined, sel).length, 2);
  t.equal(r.list('ns1', new Map([['involvedObject.name', 'zzz']])).length, 0);
});

t.test('a message is cut to the 1 KiB note limit before it is stored, listed or handed on', async (t) => {
  const r = new EventRecorder({ nodeName: 'n1' });
  const seen: string[] = [];
  r.onRecord((e) => seen.push(e.message ?? ''));
  const huge = 'z'.repeat(8 * 1024 * 1024);
  const e = r.record(pod('a'), 'Warning', 'Failed', `Error: ${huge}`);
  t.equal(Buffer.byteLength(e.message ?? ''), 1024);
  t.ok(e.message?.startsWith('Error: zzz') && e.message.endsWith(' ...'));
  t.equal(r.list(undefined)[0]?.message, e.message);
  t.equal(seen[0], e.message, 'the sink gets the cut message');
  t.equal(r.record(pod('a'), 'Warning', 'Failed', `Error: ${huge}`).count, 2, 'a repeat still bumps the same event');
});
