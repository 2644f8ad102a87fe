import t from 'tap';
import { StatusError } from '../../../src/api/errors.js';
import { INITIAL_EVENTS_END, ResourceVersionClock, WatchHub, type WatchEvent, type Watcher } from '../../../src/watch/hub.js';
import { WatchedStore, bookmarkObject, stampResourceVersion } from '../../../src/watch/store.js';

interface Obj {
  kind?: string;
  apiVersion?: string;
  metadata?: { name?: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  value?: number;
}

const obj = (name: string, value = 0, labels?: Record<string, string>): Obj => ({ kind: 'Thing', apiVersion: 'v1', metadata: { name, ...(labels ? { labels } : {}) }, value });

function store(opts: { start?: number; historySize?: number; maxQueue?: number } = {}) {
  const clock = new ResourceVersionClock(opts.start ?? 100);
  const s = new WatchedStore<Obj>({
    clock,
    kind: 'Thing',
    apiVersion: 'v1',
    equal: (a, b) => JSON.stringify(a) === JSON.stringify(b),
    ...(opts.historySize !== undefined ? { historySize: opts.historySize } : {}),
    ...(opts.maxQueue !== undefined ? { maxQueue: opts.maxQueue } : {}),
  });
  return { clock, store: s, hub: s.hub };
}

function drain<T>(w: Watcher<T>): WatchEvent<T>[] {
  const out: WatchEvent<T>[] = [];
  for (let ev = w.shift(); ev; ev = w.shift()) out.push(ev);
  return out;
}
const summary = (evs: WatchEvent<Obj>[]) => evs.map((e) => `${e.type} ${e.object.metadata?.name ?? ''}@${e.object.metadata?.resourceVersion}${e.object.value !== undefined ? `=${e.object.value}` : ''}`);

function statusOf(fn: () => unknown): { code: number; reason: string; message: string; causes?: unknown } {
  try {
    fn();
  } catch (err) {
    if (err instanceof StatusError) return { code: err.code, reason: err.reason, message: err.message, causes: err.details?.causes };
    throw err;
  }
  throw new Error('expected a StatusError');
}

t.test('clock: starts at the wall clock in microseconds, counts up by one', async (t) => {
  const before = Date.now() * 1000;
  const c = new ResourceVersionClock();
  t.ok(c.current >= before && c.current <= Date.now() * 1000, 'a restarted process starts above what an earlier one issued');
  const first = c.next();
  t.equal(first, c.current);
  t.equal(c.next(), first + 1);
  t.throws(() => new ResourceVersionClock(-1));
  t.throws(() => new ResourceVersionClock(2 ** 60));
});

t.test('every change takes the next global version; list and items carry them', async (t) => {
  const { clock, store: s, hub } = store();
  const other = new WatchHub<Obj>({ clock, snapshot: () => [], stamp: stampResourceVersion, bookmark: bookmarkObject('Other', 'v1') });
  s.upsert('a', obj('a'));
  other.publish('ADDED', obj('x'));
  s.upsert('b', obj('b'));
  t.equal(hub.resourceVersion, '103', 'one counter for every hub of the node');
  t.same(s.list().map((o) => o.metadata?.resourceVersion), ['101', '103']);
  t.equal(s.upsert('a', obj('a')), undefined, 'an equal object is no change');
  t.equal(hub.resourceVersion, '103');
  const change = s.upsert('a', obj('a', 1));
  t.match(change, { type: 'MODIFIED', rv: 104, object: { metadata: { name: 'a', resourceVersion: '104' }, value: 1 }, prev: { metadata: { resourceVersion: '101' }, value: 0 } });
  t.match(s.delete('b'), { type: 'DELETED', rv: 105, object: { metadata: { name: 'b', resourceVersion: '105' } } });
  t.equal(s.delete('b'), undefined);
  t.same(s.list().map((o) => o.metadata?.name), ['a']);
  t.equal(s.get('a')?.metadata?.resourceVersion, '104');
});

t.test('watch without a version: the current state as ADDED, then changes', async (t) => {
  const { store: s, hub } = store();
  s.upsert('a', obj('a'));
  s.upsert('b', obj('b'));
  for (const rv of [undefined, '', '0']) {
    const w = hub.watch({ resourceVersion: rv });
    t.same(summary(drain(w)), ['ADDED a@101=0', 'ADDED b@102=0'], `resourceVersion=${JSON.stringify(rv)}`);
    w.close('stopped');
  }
  const w = hub.watch();
  drain(w);
  s.upsert('a', obj('a', 1));
  s.delete('b');
  s.upsert('c', obj('c'));
  t.same(summary(drain(w)), ['MODIFIED a@103=1', 'DELETED b@104=0', 'ADDED c@105=0']);
  t.equal(w.lastResourceVersion, 105);
});

t.test('resume from a version: exactly the changes after it, none twice', async (t) => {
  const { store: s, hub } = store();
  s.upsert('a', obj('a'));
  const listRV = hub.resourceVersion;
  s.upsert('a', obj('a', 1));
  s.upsert('b', obj('b'));
  const w = hub.watch({ resourceVersion: listRV });
  t.same(summary(drain(w)), ['MODIFIED a@102=1', 'ADDED b@103=0']);
  s.delete('a');
  t.same(summary(drain(w)), ['DELETED a@104=1']);
  const fromNow = hub.watch({ resourceVersion: hub.resourceVersion });
  t.same(drain(fromNow), [], 'from the current version: nothing to replay');
  s.upsert('b', obj('b', 2));
  t.same(summary(drain(fromNow)), ['MODIFIED b@105=2']);
});

t.test('410 Expired once the version left the history; 504 for one never issued; 400 for garbage', async (t) => {
  const { store: s, hub } = store({ start: 1000, historySize: 3 });
  t.match(statusOf(() => hub.watch({ resourceVersion: '999' })), { code: 410, reason: 'Expired', message: 'too old resource version: 999 (1000)' }, 'from before the hub existed (an earlier process)');
  for (let i = 1; i <= 5; i++) s.upsert('a', obj('a', i));
  // Changes 1001..1005; the ring holds 1003..1005, so 1002 is the oldest complete starting point.
  t.equal(hub.oldestResumable, 1002);
  t.match(statusOf(() => hub.watch({ resourceVersion: '1001' })), { code: 410, reason: 'Expired', message: 'too old resource version: 1001 (1002)' });
  const ok = hub.watch({ resourceVersion: '1002' });
  t.same(summary(drain(ok)), ['MODIFIED a@1003=3', 'MODIFIED a@1004=4', 'MODIFIED a@1005=5']);
  t.match(statusOf(() => hub.watch({ resourceVersion: '1006' })), {
    code: 504,
    reason: 'Timeout',
    message: 'Timeout: Too large resource version: 1006, current: 1005',
    causes: [{ reason: 'ResourceVersionTooLarge' }],
  });
  t.match(statusOf(() => hub.watch({ resourceVersion: '99999999999999999' })), { code: 504, message: 'Timeout: Too large resource version: 99999999999999999, current: 1005' }, 'beyond 2^53: too large, echoed exactly');
  t.match(statusOf(() => hub.watch({ resourceVersion: '99999999999999999999' })), { code: 400, reason: 'BadRequest' }, 'beyond 2^64: malformed, not a crash');
  for (const bad of ['abc', '-1', '1.5', ' 1']) t.match(statusOf(() => hub.watch({ resourceVersion: bad })), { code: 400, reason: 'BadRequest' }, bad);
  const stateWatch = hub.watch({ resourceVersion: '0' });
  t.same(summary(drain(stateWatch)), ['ADDED a@1005=5'], 'a relist-style watch works whatever the history');
});

t.test('a watcher that falls maxQueue behind is closed and its queue dropped; the others carry on', async (t) => {
  const { store: s, hub } = store({ maxQueue: 3 });
  const slow = hub.watch({ resourceVersion: hub.resourceVersion });
  const fast = hub.watch({ resourceVersion: hub.resourceVersion });
  let notified = 0;
  slow.onChange(() => notified++);
  for (let i = 0; i < 3; i++) {
    s.upsert(`o${i}`, obj(`o${i}`));
    drain(fast);
  }
  t.equal(slow.pending, 3);
  t.equal(slow.closed, undefined);
  s.upsert('o3', obj('o3'));
  t.equal(slow.closed, 'overflow');
  t.equal(slow.pending, 0, 'nothing held for a closed watcher');
  t.equal(slow.shift(), undefined);
  t.equal(notified, 4, 'the consumer heard of every event and of the close');
  t.equal(slow.lastResourceVersion, 103, 'where its client resumes');
  t.same(summary(drain(fast)), ['ADDED o3@104=0']);
  t.equal(fast.closed, undefined);
  t.equal(hub.watcherCount, 1, 'the closed watcher left the hub');
  s.upsert('o4', obj('o4'));
  t.equal(slow.pending, 0, 'a closed watcher gets nothing more');
  const resumed = hub.watch({ resourceVersion: String(slow.lastResourceVersion) });
  t.same(summary(drain(resumed)), ['ADDED o3@104=0', 'ADDED o4@105=0'], 'resuming from its last version loses nothing');
});

t.test('the initial burst may exceed maxQueue; the bound applies again once drained', async (t) => {
  const { store: s, hub } = store({ maxQueue: 2 });
  for (let i = 0; i < 5; i++) s.upsert(`o${i}`, obj(`o${i}`));
  const w = hub.watch();
  t.equal(w.pending, 5);
  t.equal(w.closed, undefined);
  s.upsert('p', obj('p'));
  s.upsert('q', obj('q'));
  t.equal(w.closed, undefined, 'still within initial + maxQueue');
  t.equal(drain(w).length, 7);
  for (let i = 0; i < 3; i++) s.upsert(`r${i}`, obj(`r${i}`));
  t.equal(w.closed, 'overflow', 'after draining, 3 > maxQueue 2 closes it');
});

t.test('bookmarks: only to watchers that allowed them, at the current version', async (t) => {
  const { store: s, hub } = store();
  const withB = hub.watch({ resourceVersion: hub.resourceVersion, bookmarks: true });
  const without = hub.watch({ resourceVersion: hub.resourceVersion });
  s.upsert('a', obj('a'));
  hub.bookmark();
  const evs = drain(withB);
  t.same(summary(evs), ['ADDED a@101=0', 'BOOKMARK @101']);
  t.same(evs[1]?.object, { kind: 'Thing', apiVersion: 'v1', metadata: { resourceVersion: '101' } });
  t.same(summary(drain(without)), ['ADDED a@101=0']);
  const other = hub.watch({ resourceVersion: hub.resourceVersion, bookmarks: true });
  hub.bookmark();
  const [b1] = drain(withB);
  const [b2] = drain(other);
  t.equal(b1, b2, 'one bookmark event object for every watcher (encoded once)');
});

t.test('sendInitialEvents: the state, a bookmark marking its end, then changes; needs bookmarks', async (t) => {
  const { store: s, hub } = store();
  s.upsert('a', obj('a'));
  s.upsert('b', obj('b', 0, { app: 'x' }));
  const w = hub.watch({ sendInitialEvents: true, bookmarks: true, filter: (o) => o.metadata?.labels?.app === 'x' });
  const evs = drain(w);
  t.same(summary(evs), ['ADDED b@102=0', 'BOOKMARK @102']);
  t.same(evs[1]?.object.metadata, { resourceVersion: '102', annotations: { [INITIAL_EVENTS_END]: 'true' } });
  t.match(statusOf(() => hub.watch({ sendInitialEvents: true })), { code: 422, reason: 'Invalid' });
});

t.test('selectors as the watch cache applies them: starts matching → ADDED, stops → DELETED at the new version', async (t) => {
  const { store: s, hub } = store();
  const web = (o: Obj) => o.metadata?.labels?.app === 'web';
  s.upsert('a', obj('a', 0, { app: 'web' }));
  s.upsert('b', obj('b', 0, { app: 'db' }));
  const w = hub.watch({ filter: web });
  t.same(summary(drain(w)), ['ADDED a@101=0'], 'the initial state is filtered');
  s.upsert('a', obj('a', 1, { app: 'web' }));
  s.upsert('b', obj('b', 1, { app: 'db' }));
  s.upsert('b', obj('b', 2, { app: 'web' }));
  s.upsert('a', obj('a', 2, { app: 'db' }));
  s.delete('b');
  s.delete('a');
  const evs = drain(w);
  t.same(summary(evs), ['MODIFIED a@103=1', 'ADDED b@105=2', 'DELETED a@106=1', 'DELETED b@107=2']);
  t.same(evs[2]?.object.metadata?.labels, { app: 'web' }, 'a DELETED for "no longer matches" carries the previous state');
  const all = hub.watch({ resourceVersion: '102' });
  t.same(summary(drain(all)), ['MODIFIED a@103=1', 'MODIFIED b@104=1', 'MODIFIED b@105=2', 'MODIFIED a@106=2', 'DELETED b@107=2', 'DELETED a@108=2'], 'replay is filtered the same way');
});

t.test('closeAll ends every watcher but leaves queued events to drain', async (t) => {
  const { store: s, hub } = store();
  const w = hub.watch({ resourceVersion: hub.resourceVersion });
  s.upsert('a', obj('a'));
  hub.closeAll();
  t.equal(w.closed, 'shutdown');
  t.same(summary(drain(w)), ['ADDED a@101=0']);
  t.equal(hub.watcherCount, 0);
  w.close('stopped');
  t.equal(w.closed, 'shutdown', 'the first reason sticks');
});

t.test('a long-lived queue compacts as it is drained', async (t) => {
  const { store: s, hub } = store({ maxQueue: 5000 });
  const w = hub.watch({ resourceVersion: hub.resourceVersion });
  for (let i = 0; i < 3000; i++) s.upsert('a', obj('a', i));
  let n = 0;
  for (let i = 0; i < 2500; i++) if (w.shift()) n++;
  for (let i = 0; i < 10; i++) s.upsert('a', obj('a', 10_000 + i));
  n += drain(w).length;
  t.equal(n, 3010);
  t.equal(w.pending, 0);
});

t.test('hub options are checked', async (t) => {
  const clock = new ResourceVersionClock(1);
  const base = { clock, snapshot: () => [], stamp: stampResourceVersion, bookmark: bookmarkObject('X', 'v1') };
  t.throws(() => new WatchHub({ ...base, historySize: 0 }));
  t.throws(() => new WatchHub({ ...base, maxQueue: 0 }));
});
