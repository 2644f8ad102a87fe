import type Docker from 'dockerode';
import t from 'tap';
import { InspectCache, eventChangesStatus, eventInvalidatesInspect } from '../../../src/runtime/docker/inspect-cache.js';

/** The cache's rules alone: which cached inspection a listing may reuse. */

const info = { Id: 'c1' } as Docker.ContainerInspectInfo;

t.test('an inspection answers while the list shows the state it was asked at or the state it answered', async (t) => {
  const cache = new InspectCache();
  cache.remember('c1', { listedState: 'created', status: 'running', info, seq: cache.next() });
  t.ok(cache.fresh('c1', 'created'), 'the state it was asked at');
  t.ok(cache.fresh('c1', 'running'), 'the state it answered (asked while the engine was starting it)');
  t.notOk(cache.fresh('c1', 'exited'), 'any other state: inspected again');
  t.notOk(cache.fresh('c1', 'restarting'), 'never for a restarting container');
  t.notOk(cache.fresh('c2', 'running'), 'nothing for an unknown container');
});

t.test('an event newer than the question makes it stale; one older does not', async (t) => {
  const cache = new InspectCache();
  cache.changed('c1');
  cache.remember('c1', { listedState: 'running', status: 'running', info, seq: cache.next() });
  t.ok(cache.fresh('c1', 'running'), 'asked after the event');
  const asked = cache.next();
  cache.changed('c1');
  t.notOk(cache.current('c1', asked), 'an inspection asked before the event is not current');
  t.notOk(cache.fresh('c1', 'running'), 'the cached one neither');
  cache.remember('c1', { listedState: 'running', status: 'exited', info, seq: asked });
  t.notOk(cache.fresh('c1', 'exited'), 'an answer to the older question arriving late stays stale');
  cache.remember('c1', { listedState: 'running', status: 'exited', info, seq: cache.next() });
  t.ok(cache.fresh('c1', 'exited'), 'a new question answers');
});

t.test('remember keeps the answer to the newest question', async (t) => {
  const cache = new InspectCache();
  const older = cache.next();
  const newer = cache.next();
  cache.remember('c1', { listedState: 'running', status: 'running', info, seq: newer });
  cache.remember('c1', { listedState: 'running', status: 'exited', info, seq: older });
  t.equal(cache.last('c1')?.status, 'running');
  cache.forget('c1');
  t.equal(cache.last('c1'), undefined);
});

t.test('retain forgets containers a listing did not show, unless remembered or changed after it began', async (t) => {
  const cache = new InspectCache();
  cache.remember('gone', { listedState: 'running', status: 'running', info, seq: cache.next() });
  cache.changed('gone');
  cache.remember('kept', { listedState: 'running', status: 'running', info, seq: cache.next() });
  const listedAt = cache.next();
  // Created and inspected while the listing ran (nodelet's own sandbox inspection).
  cache.remember('new', { listedState: 'running', status: 'running', info, seq: cache.next() });
  cache.changed('new2');
  cache.retain(new Set(['kept']), listedAt);
  t.equal(cache.last('gone'), undefined);
  t.ok(cache.last('kept'));
  t.ok(cache.last('new'));
  t.notOk(cache.current('new2', listedAt), 'the change of a container listed later is kept');
  const later = cache.next();
  cache.retain(new Set(), later);
  t.equal(cache.last('new'), undefined);
  t.ok(cache.current('new2', later + 1));
});

t.test('starting: marked by name while nodelet creates and starts a container', async (t) => {
  const cache = new InspectCache();
  cache.startingNow('k8s_app_p_ns_uid_0');
  t.ok(cache.isStarting('k8s_app_p_ns_uid_0'));
  t.notOk(cache.isStarting('k8s_app_p_ns_uid_1'));
  cache.started('k8s_app_p_ns_uid_0');
  t.notOk(cache.isStarting('k8s_app_p_ns_uid_0'));
});

t.test('a relist: not for the create and start of a container nodelet is starting itself (its sync relists), for all else as eventChangesStatus says', async (t) => {
  const cache = new InspectCache();
  cache.startingNow('k8s_app_p_ns_uid_0');
  for (const a of ['create', 'start']) {
    t.notOk(cache.asksForRelist(a, 'k8s_app_p_ns_uid_0'), `${a} of the container being started: no relist`);
    t.ok(cache.asksForRelist(a, 'k8s_app_p_ns_uid_1'), `${a} of another container: relisted`);
  }
  t.ok(cache.asksForRelist('die', 'k8s_app_p_ns_uid_0'), 'its die: relisted');
  t.notOk(cache.asksForRelist('exec_start: sh', 'k8s_app_p_ns_uid_1'), 'no relist where eventChangesStatus says none');
  cache.started('k8s_app_p_ns_uid_0');
  t.ok(cache.asksForRelist('start', 'k8s_app_p_ns_uid_0'), 'once started, its events relist again');
});

t.test('which event actions need a new inspection, and which a relist', async (t) => {
  for (const a of ['die', 'oom', 'destroy', 'pause', 'unpause', 'update', 'rename', 'restart', '', 'something-new']) {
    t.ok(eventInvalidatesInspect(a), `${a || '(none)'}: inspected again`);
    t.ok(eventChangesStatus(a), `${a || '(none)'}: relisted`);
  }
  for (const a of ['create', 'start']) {
    t.notOk(eventInvalidatesInspect(a), `${a}: no new inspection`);
    t.ok(eventChangesStatus(a), `${a}: relisted`);
  }
  for (const a of ['kill', 'stop', 'exec_create: sh -c true', 'exec_start: sh -c true', 'exec_die', 'attach', 'resize', 'top', 'archive-path', 'extract-to-dir', 'export', 'health_status: healthy']) {
    t.notOk(eventInvalidatesInspect(a), `${a}: no new inspection`);
    t.notOk(eventChangesStatus(a), `${a}: no relist`);
  }
});
