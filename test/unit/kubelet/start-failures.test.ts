import t from 'tap';
import type { Container, Pod } from '../../../src/api/types.js';
import { STATUS_MESSAGE_LIMIT } from '../../../src/api/truncate.js';
import { Backoff } from '../../../src/kubelet/backoff.js';
import { StartFailures } from '../../../src/kubelet/start-failures.js';

const app: Container = { name: 'app', image: 'busybox' };
const pod = (uid = 'u1', containers: Container[] = [app]): Pod => ({ metadata: { uid, name: 'p', namespace: 'default' }, spec: { containers } });
const pull = { reason: 'ErrImagePull', message: 'manifest unknown' };

t.test('a failed start is held for its back-off, which doubles with each failure up to its cap', async (t) => {
  const memory = new StartFailures({ containerBackoff: new Backoff({ initialMs: 100, maxMs: 300 }) });
  t.equal(memory.containerHeld(pod(), app, 0), undefined, 'nothing held before a failure');
  t.equal(memory.containerFailed(pod(), app, pull, 1000), 100);
  t.same(memory.containerHeld(pod(), app, 1040), { waiting: pull, leftMs: 60 });
  t.equal(memory.containerHeld(pod(), app, 1100), undefined, 'released once the back-off ran out');
  t.same(memory.lastFailure(pod(), app), pull, 'the reason stays shown after the hold');
  t.equal(memory.containerFailed(pod(), app, pull, 1100), 200);
  t.equal(memory.containerFailed(pod(), app, pull, 1300), 300);
  t.equal(memory.containerFailed(pod(), app, pull, 1600), 300, 'capped');
});

t.test('a successful start clears the reason; the back-off stays, as the kubelet\'s', async (t) => {
  const memory = new StartFailures({ containerBackoff: new Backoff({ initialMs: 100, maxMs: 1000 }) });
  memory.containerFailed(pod(), app, pull, 0);
  memory.containerStarted(pod(), app);
  t.equal(memory.lastFailure(pod(), app), undefined);
  t.equal(memory.containerHeld(pod(), app, 10), undefined);
  t.equal(memory.containerFailed(pod(), app, pull, 200), 200, 'the next failure doubles the delay');
});

t.test('keyed by pod, name and spec hash: a changed spec or another container is not held', async (t) => {
  const memory = new StartFailures();
  memory.containerFailed(pod(), app, pull, 0);
  t.equal(memory.lastFailure(pod(), { ...app, image: 'busybox:2' }), undefined, 'a new image starts afresh');
  t.equal(memory.lastFailure(pod(), { name: 'other', image: 'busybox' }), undefined);
  t.equal(memory.lastFailure(pod('u2'), app), undefined);
  t.ok(memory.containerHeld(pod(), app, 1));
});

t.test('held messages are cut to the status message limit', async (t) => {
  const memory = new StartFailures();
  memory.containerFailed(pod(), app, { reason: 'CreateContainerError', message: 'x'.repeat(STATUS_MESSAGE_LIMIT * 3) }, 0);
  memory.sandboxFailed('u1', { reason: 'ContainerCreating', message: 'y'.repeat(STATUS_MESSAGE_LIMIT * 3) }, 0);
  t.ok((memory.lastFailure(pod(), app)?.message.length ?? Infinity) <= STATUS_MESSAGE_LIMIT);
  t.ok((memory.sandboxHeld('u1', 1)?.waiting.message.length ?? Infinity) <= STATUS_MESSAGE_LIMIT);
  t.equal(memory.lastFailure(pod(), app)?.reason, 'CreateContainerError');
});

t.test('a failed sandbox holds the pod for its own back-off until a creation succeeds', async (t) => {
  const memory = new StartFailures({ sandboxBackoff: new Backoff({ initialMs: 50, maxMs: 80 }) });
  const failed = { reason: 'ContainerCreating', message: 'Failed to create pod sandbox: boom' };
  t.equal(memory.sandboxFailed('u1', failed, 0), 50);
  t.same(memory.sandboxHeld('u1', 10), { waiting: failed, leftMs: 40 });
  t.equal(memory.sandboxHeld('u2', 10), undefined, 'another pod is not held');
  t.equal(memory.sandboxHeld('u1', 50), undefined);
  t.equal(memory.sandboxFailed('u1', failed, 60), 80, 'doubled, capped');
  memory.sandboxCreated('u1');
  t.equal(memory.sandboxHeld('u1', 61), undefined, 'a created sandbox releases the pod');
});

t.test('forgetting a pod drops its failures and back-offs, and only its own', async (t) => {
  const memory = new StartFailures({ containerBackoff: new Backoff({ initialMs: 100, maxMs: 1000 }), sandboxBackoff: new Backoff({ initialMs: 100, maxMs: 1000 }) });
  memory.containerFailed(pod('u1'), app, pull, 0);
  memory.containerFailed(pod('u1'), app, pull, 0);
  memory.containerFailed(pod('u10'), app, pull, 0);
  memory.sandboxFailed('u1', pull, 0);
  memory.forgetPod('u1');
  t.equal(memory.lastFailure(pod('u1'), app), undefined);
  t.equal(memory.sandboxHeld('u1', 1), undefined);
  t.equal(memory.containerFailed(pod('u1'), app, pull, 10), 100, 'the back-off starts over');
  t.ok(memory.containerHeld(pod('u10'), app, 1), 'a pod whose UID shares the prefix keeps its own');
});

t.test('the status\'s waiting reasons: the sync\'s own first, then the last failure of each regular container not running', async (t) => {
  const memory = new StartFailures();
  const web: Container = { name: 'web', image: 'nginx' };
  const side: Container = { name: 'side', image: 'busybox' };
  const p = pod('u1', [app, web, side]);
  memory.containerFailed(p, app, pull, 0);
  memory.containerFailed(p, web, { reason: 'CreateContainerError', message: 'boom' }, 0);
  memory.containerFailed(p, side, { reason: 'CreateContainerConfigError', message: 'no secret' }, 0);
  const running = { containers: [{ name: 'side', state: 'running' as const }] } as unknown as Parameters<StartFailures['waiting']>[1];
  const sync = new Map([['web', { reason: 'ImagePullBackOff', message: 'held' }]]);
  const all = memory.waiting(p, running, sync);
  t.same(Object.fromEntries(all), { web: { reason: 'ImagePullBackOff', message: 'held' }, app: pull }, 'a running container shows no old failure');
  t.equal(sync.size, 1, 'the sync\'s map is not changed');
  t.same(Object.fromEntries(memory.waiting(p, undefined, new Map())), { app: pull, web: { reason: 'CreateContainerError', message: 'boom' }, side: { reason: 'CreateContainerConfigError', message: 'no secret' } });
});
