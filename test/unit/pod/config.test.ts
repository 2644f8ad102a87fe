import t from 'tap';
import { pino } from 'pino';
import type { Pod } from '../../../src/api/types.js';
import { EventRecorder } from '../../../src/events/recorder.js';
import { PodConfig, podsDifferSemantically, type PodDiff } from '../../../src/pod/config.js';
import { PodManager } from '../../../src/pod/manager.js';

const pod = (name: string, uid: string, image = 'nginx', annotations: Record<string, string> = {}): Pod => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default', uid, annotations },
  spec: { containers: [{ name: 'app', image }] },
});

function setup() {
  const manager = new PodManager();
  const recorder = new EventRecorder({ nodeName: 'n1' });
  const log = pino({ level: 'silent' });
  const diffs: PodDiff[] = [];
  const config = new PodConfig({ manager, recorder, log, onChange: (d) => diffs.push(d) });
  const uids = (list: Pod[]) => list.map((p) => p.metadata?.uid);
  return { manager, recorder, config, diffs, uids };
}

t.test('added, updated, removed by UID; nothing → no callback', async (t) => {
  const { manager, config, diffs, uids } = setup();
  config.update('file', [pod('a', 'ua'), pod('b', 'ub')]);
  t.equal(diffs.length, 1);
  t.same(uids(diffs[0]!.added), ['ua', 'ub']);
  t.same(manager.getPods().map((p) => p.metadata?.uid), ['ua', 'ub']);

  config.update('file', [pod('a', 'ua'), pod('b', 'ub')]);
  t.equal(diffs.length, 1, 'same set → no onChange');

  config.update('file', [pod('a', 'ua', 'nginx:2'), pod('c', 'uc')]);
  t.equal(diffs.length, 2);
  t.same(uids(diffs[1]!.added), ['uc']);
  t.same(uids(diffs[1]!.updated), ['ua']);
  t.same(uids(diffs[1]!.removed), ['ub']);
  t.equal(manager.getPodByUID('ua')?.spec?.containers[0]?.image, 'nginx:2');
  t.equal(manager.getPodByUID('ub'), undefined);

  config.update('file', []);
  t.same(uids(diffs[2]!.removed).sort(), ['ua', 'uc']);
  t.same(manager.getPods(), []);
  t.same([...config.seenSources()], ['file']);
});

t.test('local annotations and status are not an update; the stored object is kept', async (t) => {
  const { manager, config, diffs } = setup();
  const first = pod('a', 'ua', 'nginx', { 'kubernetes.io/config.seen': '1' });
  config.update('file', [first]);
  config.update('file', [pod('a', 'ua', 'nginx', { 'kubernetes.io/config.seen': '2' })]);
  t.equal(diffs.length, 1);
  t.equal(manager.getPodByUID('ua'), first);
  config.update('file', [pod('a', 'ua', 'nginx', { team: 'x' })]);
  t.equal(diffs.length, 2, 'other annotations count');
  t.ok(podsDifferSemantically(pod('a', 'u'), { ...pod('a', 'u'), metadata: { ...pod('a', 'u').metadata, labels: { x: 'y' } } }));
  t.notOk(podsDifferSemantically(pod('a', 'u'), { ...pod('a', 'u'), status: { phase: 'Running' } }));
});

t.test('invalid pods are filtered with an event; duplicates checked against other sources', async (t) => {
  const { manager, recorder, config, diffs, uids } = setup();
  config.update('api', [pod('web', 'u-api')]);
  const bad = pod('Bad', 'u-bad');
  config.update('file', [pod('web', 'u-file'), bad, pod('ok', 'u-ok'), pod('other', 'u-api')]);
  t.same(uids(diffs[1]!.added), ['u-ok']);
  t.same(manager.getPods().map((p) => p.metadata?.uid).sort(), ['u-api', 'u-ok']);
  const messages = recorder.list(undefined).map((e) => `${e.reason}: ${e.message}`);
  t.equal(messages.length, 3);
  t.equal(messages[0], 'FailedValidation: Error validating pod web.default from file, ignoring: metadata.name: Duplicate value: "web"');
  t.match(messages[1], /^FailedValidation: Error validating pod Bad\.default from file, ignoring: metadata\.name: Invalid value: "Bad"/);
  t.equal(messages[2], 'FailedValidation: Error validating pod other.default from file, ignoring: metadata.uid: Duplicate value: "u-api"');

  // The api pod goes away: the file's web pod is accepted on its next snapshot.
  config.update('api', []);
  config.update('file', [pod('web', 'u-file'), pod('ok', 'u-ok')]);
  t.same(uids(diffs.at(-1)!.added), ['u-file']);
  t.equal(manager.getPodByName('default', 'web')?.metadata?.uid, 'u-file');
});

t.test('mirror pods from a source land in the mirror maps', async (t) => {
  const { manager, config } = setup();
  config.update('file', [pod('etcd', 'static')]);
  const mirror = pod('etcd', 'mirror', 'nginx', { 'kubernetes.io/config.mirror': 'static' });
  config.update('api', [mirror, pod('etcd', 'mirror2', 'nginx', { 'kubernetes.io/config.mirror': 'static' })]);
  t.same(manager.getMirrorPods(), [mirror], 'a mirror may share its static pod\'s name, not another mirror\'s');
  t.equal(manager.getPods().length, 1);
  t.equal(manager.translatePodUID('mirror'), 'static');
});

t.test('two pods with one UID: the running one keeps it wherever the newcomer sorts; the newcomer gets the event', async (t) => {
  const { manager, recorder, config, diffs } = setup();
  config.update('file', [pod('b-first', 'shared')]);
  // A new manifest sorting before the running one copies its metadata.uid.
  config.update('file', [pod('a-copy', 'shared'), pod('b-first', 'shared')]);
  t.equal(diffs.length, 1, 'no change for the running pod');
  t.equal(manager.getPodByUID('shared')?.metadata?.name, 'b-first');
  t.equal(manager.getPodByName('default', 'a-copy'), undefined);
  const events = recorder.list(undefined);
  t.equal(events.length, 1);
  t.equal(events[0]?.involvedObject.name, 'a-copy');
  t.equal(events[0]?.message, 'Error validating pod a-copy.default from file, ignoring: metadata.uid: Duplicate value: "shared"');
  // The same on every rescan: still the first, and the event is counted, not replaced.
  config.update('file', [pod('a-copy', 'shared'), pod('b-first', 'shared')]);
  t.equal(manager.getPodByUID('shared')?.metadata?.name, 'b-first');
  t.equal(recorder.list(undefined)[0]?.count, 2);
  // Two newcomers in one batch: the first in order wins, as the kubelet's filterInvalidPods.
  const fresh = setup();
  fresh.config.update('file', [pod('x', 'u'), pod('y', 'u')]);
  t.same(fresh.manager.getPods().map((p) => p.metadata?.name), ['x']);
});

t.test('two pods with one name: the running one keeps it against a new manifest sorting earlier', async (t) => {
  const { manager, recorder, config, diffs } = setup();
  config.update('file', [pod('web', 'u-running')]);
  config.update('file', [pod('web', 'u-new'), pod('web', 'u-running')]);
  t.equal(diffs.length, 1);
  t.equal(manager.getPodByName('default', 'web')?.metadata?.uid, 'u-running');
  t.match(recorder.list(undefined)[0]?.message, /^Error validating pod web\.default from file, ignoring: metadata\.name: Duplicate value: "web"$/);
  t.equal(recorder.list(undefined)[0]?.involvedObject.uid, 'u-new');
});

t.test('onRejected says why: validation, then the UID rule, then a duplicate', async (t) => {
  const manager = new PodManager();
  const rejected: string[] = [];
  const config = new PodConfig({ manager, recorder: new EventRecorder({ nodeName: 'n1' }), log: pino({ level: 'silent' }), onChange: () => undefined, onRejected: (_s, _p, m) => void rejected.push(m) });
  config.update('api', [pod('Bad', 'u1'), pod('slash', 'a/b'), pod('one', 'u2'), pod('one', 'u3')]);
  t.match(rejected[0], /^metadata\.name: Invalid value: "Bad"/);
  t.equal(rejected[1], 'metadata.uid: Invalid value: "a/b": must be a UID (1-64 characters of [0-9a-zA-Z-])');
  t.equal(rejected[2], 'Duplicate value: the name or UID is taken by another pod on this node');
});

t.test('listeners: onPodsChanged hears each change after onChange; onSnapshot hears every snapshot, changed or not; both can stop', async (t) => {
  const { config, diffs } = setup();
  const heard: string[] = [];
  const offChanges = config.onPodsChanged((d) => heard.push(`change ${d.added.length}/${d.updated.length}/${d.removed.length} after ${diffs.length}`));
  const offSnapshots = config.onSnapshot((source) => heard.push(`snapshot ${source}`));
  config.update('file', [pod('a', 'ua')]);
  config.update('file', [pod('a', 'ua')]);
  config.update('api', []);
  t.same(heard, ['change 1/0/0 after 1', 'snapshot file', 'snapshot file', 'snapshot api']);
  offChanges();
  offSnapshots();
  config.update('file', []);
  t.equal(heard.length, 4, 'nothing once stopped');
});

t.test('a pod delivered again as the same object is neither validated nor compared again', async (t) => {
  const { manager, config, diffs } = setup();
  // Counts reads of `spec`: validation and the semantic comparison both read it.
  let reads = 0;
  const spied = (name: string, uid: string): Pod => {
    const p = pod(name, uid);
    const spec = p.spec;
    Object.defineProperty(p, 'spec', { enumerable: true, get: () => (reads++, spec) });
    return p;
  };
  const a = spied('a', 'ua');
  const b = spied('b', 'ub');
  config.update('api', [a, b]);
  t.ok(reads > 0, 'the first delivery reads the specs');
  reads = 0;
  config.update('api', [a, b]);
  t.equal(reads, 0, 'the same objects again: no spec read');
  t.equal(diffs.length, 1, 'and no change');
  t.equal(manager.getPodByUID('ua'), a);
  // A new object for one pod: that one (only) is validated and compared.
  const a2 = spied('a', 'ua');
  config.update('api', [a2, b]);
  t.ok(reads > 0, 'a new object is read');
  t.equal(diffs.length, 1, 'equal spec: still no change');
  reads = 0;
  config.update('api', [{ ...a2, spec: { containers: [{ name: 'app', image: 'nginx:2' }] } }, b]);
  t.equal(diffs.length, 2);
  t.same(diffs[1]!.updated.map((p) => p.metadata?.uid), ['ua'], 'a changed spec is an update');
});

t.test('a pod whose status changed once is still recognised when delivered again unchanged', async (t) => {
  const { manager, config, diffs } = setup();
  let reads = 0;
  const p = pod('a', 'ua');
  const spec = p.spec;
  Object.defineProperty(p, 'spec', { enumerable: true, get: () => (reads++, spec) });
  config.update('api', [p]);
  const withStatus: Pod = { ...p, status: { phase: 'Running' } };
  Object.defineProperty(withStatus, 'spec', { enumerable: true, get: () => (reads++, spec) });
  config.update('api', [withStatus]);
  t.equal(manager.getPodByUID('ua')?.status?.phase, 'Running', 'the new status is taken');
  reads = 0;
  config.update('api', [withStatus]);
  config.update('api', [withStatus]);
  t.equal(reads, 0, 'the same object again: no spec read');
  t.equal(diffs.length, 1);
});

t.test('a snapshot touches only the pods it changed in the manager: unchanged ones are not re-added', async (t) => {
  const { manager, config } = setup();
  const many = Array.from({ length: 30 }, (_, i) => pod(`p${i}`, `u${i}`));
  config.update('api', many);
  let notifications = 0;
  manager.onChange(() => notifications++);
  const revision = manager.revision;
  config.update('api', many);
  t.equal(notifications, 0, 'the same objects again: no manager change');
  t.equal(manager.revision, revision, 'and its revision (what readers cache by) stays');
  // One pod's status changes (the echo of a status patch): one update, the others stay as they are.
  const next = many.map((p, i) => (i === 7 ? { ...p, status: { phase: 'Running' as const } } : p));
  config.update('api', next);
  t.equal(notifications, 1, 'one change notification for the one changed pod');
  t.equal(manager.getPodByUID('u7')?.status?.phase, 'Running');
  t.equal(manager.getPodByUID('u8'), many[8], 'the others are the same objects');
  // Equal statuses in another key order are not a change: the stored object stays.
  const reordered = next.map((p, i) => (i === 7 ? { ...p, status: { phase: 'Running' as const } } : p));
  config.update('api', reordered);
  t.equal(notifications, 1);
});

t.test('podsDifferSemantically compares values, not key order', async (t) => {
  const a: Pod = { metadata: { name: 'a', namespace: 'ns', uid: 'u', labels: { x: '1', y: '2' } }, spec: { containers: [{ name: 'c', image: 'i', args: ['1', '2'] }], restartPolicy: 'Always' } };
  const b: Pod = { spec: { restartPolicy: 'Always', containers: [{ image: 'i', name: 'c', args: ['1', '2'] }] }, metadata: { uid: 'u', labels: { y: '2', x: '1' }, namespace: 'ns', name: 'a' } };
  t.notOk(podsDifferSemantically(a, b));
  t.ok(podsDifferSemantically(a, { ...b, spec: { ...b.spec!, containers: [{ image: 'i', name: 'c', args: ['2', '1'] }] } }), 'array order counts');
  t.ok(podsDifferSemantically(a, { ...b, metadata: { ...b.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' } }));
});
