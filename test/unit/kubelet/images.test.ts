import t from 'tap';
import { goDuration } from '../../../src/api/time.js';
import { ImageError, ensureImageExists, withDefaultTag } from '../../../src/kubelet/images.js';
import type { Pod } from '../../../src/api/types.js';
import type { ImageInfo, RegistryAuth } from '../../../src/runtime/types.js';
import { waitFor } from '../../helpers/wait.js';
import { startKubelet } from './fixtures/kubelet.js';
import { MemoryRuntime } from './fixtures/memory-runtime.js';

/** The image manager over a runtime of a few images: policy, default tag, events and errors. */

function engine(present: string[], opts: { fail?: string; pullMs?: number } = {}) {
  const images = new Set(present);
  const calls: string[] = [];
  let clock = 0;
  const runtime = {
    async imageStatus(image: string): Promise<ImageInfo | undefined> {
      calls.push(`status ${image}`);
      return images.has(image) ? { id: `sha256:${image}`, user: '', sizeBytes: 4096 } : undefined;
    },
    async pullImage(image: string, credentials: readonly RegistryAuth[]): Promise<ImageInfo> {
      calls.push(`pull ${image} ${credentials.length}`);
      clock += opts.pullMs ?? 1234;
      if (opts.fail !== undefined) throw new Error(opts.fail);
      images.add(image);
      return { id: `sha256:${image}`, user: '', sizeBytes: 4096 };
    },
  };
  const events: string[] = [];
  const event = (type: 'Normal' | 'Warning', reason: string, message: string) => void events.push(`${type} ${reason}: ${message}`);
  return { runtime, calls, events, event, now: () => clock };
}

t.test('present and IfNotPresent (or Never): no pull, the "already present" event with the name as written', async (t) => {
  for (const policy of ['IfNotPresent', 'Never'] as const) {
    const e = engine(['busybox:1.35']);
    const info = await ensureImageExists(e.runtime, 'busybox:1.35', policy, { event: e.event, now: e.now });
    t.equal(info.id, 'sha256:busybox:1.35');
    t.same(e.calls, ['status busybox:1.35'], policy);
    t.same(e.events, ['Normal Pulled: Container image "busybox:1.35" already present on machine']);
  }
});

t.test('an untagged name means :latest for the engine and the pull events', async (t) => {
  t.equal(withDefaultTag('busybox'), 'busybox:latest');
  t.equal(withDefaultTag('localhost:5000/app'), 'localhost:5000/app:latest', 'a registry port is not a tag');
  t.equal(withDefaultTag('app:1'), 'app:1');
  t.equal(withDefaultTag('app@sha256:abc'), 'app@sha256:abc', 'a digest needs no tag');
  const e = engine([]);
  let asked = 0;
  await ensureImageExists(e.runtime, 'busybox', 'IfNotPresent', { event: e.event, now: e.now, credentials: async () => (asked++, [{ username: 'u', password: 'p' }]) });
  t.same(e.calls, ['status busybox:latest', 'pull busybox:latest 1']);
  t.equal(asked, 1);
  t.same(e.events, [
    'Normal Pulling: Pulling image "busybox:latest"',
    'Normal Pulled: Successfully pulled image "busybox:latest" in 1.234s (1.234s including waiting). Image size: 4096 bytes.',
  ]);
});

t.test('Always pulls a present image too; credentials are read only for a pull', async (t) => {
  const e = engine(['app:1'], { pullMs: 80 });
  let asked = 0;
  const credentials = async () => (asked++, []);
  await ensureImageExists(e.runtime, 'app:1', 'Always', { event: e.event, now: e.now, credentials });
  t.same(e.calls, ['pull app:1 0'], 'Always does not even ask whether it is present (imagePullPrecheck)');
  t.match(e.events[1], /in 80ms \(80ms including waiting\)/);
  await ensureImageExists(e.runtime, 'app:1', 'IfNotPresent', { event: e.event, now: e.now, credentials });
  t.equal(asked, 1, 'not asked when no pull is needed');
});

t.test('absent with Never: ErrImageNeverPull, its Warning event, no pull', async (t) => {
  const e = engine([]);
  const err = await ensureImageExists(e.runtime, 'app:1', 'Never', { event: e.event, now: e.now }).catch((x: unknown) => x);
  t.ok(err instanceof ImageError);
  t.equal((err as ImageError).reason, 'ErrImageNeverPull');
  t.equal((err as ImageError).message, 'Container image "app:1" is not present with pull policy of Never');
  t.same(e.events, ['Warning ErrImageNeverPull: Container image "app:1" is not present with pull policy of Never']);
  t.notOk(e.calls.some((c) => c.startsWith('pull')));
});

t.test('a failed pull: Pulling, then Failed with the engine\'s words, and ErrImagePull', async (t) => {
  const e = engine([], { fail: 'manifest for app:1 not found' });
  const err = await ensureImageExists(e.runtime, 'app:1', 'IfNotPresent', { event: e.event, now: e.now }).catch((x: unknown) => x);
  t.equal((err as ImageError).reason, 'ErrImagePull');
  t.equal((err as ImageError).message, 'manifest for app:1 not found');
  t.same(e.events, ['Normal Pulling: Pulling image "app:1"', 'Warning Failed: Failed to pull image "app:1": manifest for app:1 not found']);
});

t.test('credentials that cannot be read fail the pull before it starts, without an event', async (t) => {
  const e = engine([]);
  const err = await ensureImageExists(e.runtime, 'app:1', 'IfNotPresent', { event: e.event, now: e.now, credentials: async () => Promise.reject(new Error('image pull secret "x": invalid .dockerconfigjson')) }).catch((x: unknown) => x);
  t.equal((err as ImageError).reason, 'ErrImagePull');
  t.match((err as ImageError).message, /invalid \.dockerconfigjson/);
  t.same(e.events, []);
  t.same(e.calls, ['status app:1']);
});

t.test('an empty image name: InvalidImageName with InspectFailed, nothing asked of the engine', async (t) => {
  const e = engine([]);
  const err = await ensureImageExists(e.runtime, ' ', 'IfNotPresent', { event: e.event, now: e.now }).catch((x: unknown) => x);
  t.equal((err as ImageError).reason, 'InvalidImageName');
  t.match(e.events[0], /^Warning InspectFailed: Failed to apply default image tag/);
  t.same(e.calls, []);
});

t.test('goDuration prints as Go\'s time.Duration', async (t) => {
  const cases: [number, string][] = [[0, '0s'], [0.4, '0s'], [7, '7ms'], [999, '999ms'], [1000, '1s'], [1234.9, '1.234s'], [61_500, '1m1.5s'], [3_600_000, '1h0m0s'], [3_723_004, '1h2m3.004s']];
  for (const [ms, want] of cases) t.equal(goDuration(ms), want, `${ms} ms`);
});

t.test('through the sync: a pulled image\'s events, then a failing pull waits in ImagePullBackOff with the kubelet\'s events', async (t) => {
  const runtime = new MemoryRuntime();
  runtime.images = new Set();
  const { statusManager, recorder, kubelet, add } = startKubelet({ runtime });
  t.teardown(() => kubelet.stop());
  const pod = (uid: string, image: string): Pod => ({
    metadata: { uid, name: uid, namespace: 'default' },
    spec: { restartPolicy: 'Always', dnsPolicy: 'Default', containers: [{ name: 'app', image, imagePullPolicy: 'IfNotPresent' }] },
  });
  const events = (name: string) => recorder.list('default').filter((e) => e.involvedObject?.name === name).map((e) => `${e.reason}: ${e.message}`);

  add(pod('ok', 'app'));
  await waitFor('Running', () => (statusManager.getPodStatus('ok')?.phase === 'Running' ? true : undefined), 5000, 5);
  t.ok(runtime.calls.includes('pull app:latest'));
  t.match(events('ok'), [/^Pulling: Pulling image "app:latest"$/, /^Pulled: Successfully pulled image "app:latest" in \S+ \(\S+ including waiting\)\. Image size: 1024 bytes\.$/, /^Created/, /^Started/]);

  runtime.failPulls.push('manifest unknown');
  add(pod('bad', 'gone:1'));
  const waiting = await waitFor('ImagePullBackOff', () => {
    const w = statusManager.getPodStatus('bad')?.containerStatuses?.[0]?.state?.waiting;
    return w?.reason === 'ImagePullBackOff' ? w : undefined;
  }, 5000, 5);
  t.equal(waiting.message, 'Back-off pulling image "gone:1": ErrImagePull: manifest unknown');
  t.same(events('bad').slice(0, 5), [
    'Pulling: Pulling image "gone:1"',
    'Failed: Failed to pull image "gone:1": manifest unknown',
    'Failed: Error: ErrImagePull',
    'BackOff: Back-off pulling image "gone:1"',
    'Failed: Error: ImagePullBackOff',
  ]);
});
