import t from 'tap';
import { ImageGC, type ImageGCPolicy, type StoredImage } from '../../../src/kubelet/image-gc.js';
import { createLogger } from '../../../src/logging/index.js';

const GB = 1e9;
function setup(images: StoredImage[], opts: { policy?: Partial<ImageGCPolicy>; inUse?: string[]; fs?: { capacityBytes: number; availableBytes: number }; refuse?: string[] } = {}) {
  const fs = { ...(opts.fs ?? { capacityBytes: 100 * GB, availableBytes: 10 * GB }) };
  let now = 1_000_000;
  const store = [...images];
  const removed: string[] = [];
  const events: [string, string][] = [];
  const collected: string[] = [];
  const inUse = new Set(opts.inUse ?? []);
  const gc = new ImageGC({
    store: {
      listImages: async () => [...store],
      removeImage: async (id) => {
        if (opts.refuse?.includes(id)) throw new Error('conflict: image is in use by container x');
        removed.push(id);
        store.splice(store.findIndex((i) => i.id === id), 1);
      },
      imageFsStats: async () => ({ ...fs }),
    },
    policy: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 0, maxAgeMs: 0, ...opts.policy },
    imagesInUse: async () => inUse,
    pinned: ['registry.k8s.io/pause:3.10'],
    warn: (reason, message) => events.push([reason, message]),
    collected: (reason) => collected.push(reason),
    log: createLogger({ verbosity: 0, format: 'json' }),
    now: () => now,
  });
  return { gc, removed, events, collected, inUse, fs, advance: (ms: number) => (now += ms) };
}
const img = (id: string, sizeGB: number, tags: string[] = [`${id}:1`]): StoredImage => ({ id, tags, sizeBytes: sizeGB * GB });

t.test('over the high threshold: least recently used first, until the low threshold is reached', async (t) => {
  const s = setup([img('a', 6), img('b', 7), img('c', 4), img('pause', 1, ['registry.k8s.io/pause:3.10']), img('used', 3)], { inUse: ['a', 'b', 'used'], fs: { capacityBytes: 100 * GB, availableBytes: 50 * GB } });
  await s.gc.run();
  s.advance(1000);
  s.inUse.delete('a');
  await s.gc.run();
  t.same(s.removed, [], 'below the high threshold: nothing');
  s.advance(1000);
  s.inUse.delete('b');
  s.fs.availableBytes = 10 * GB;
  await s.gc.run();
  // 90% used, low 80%: 10 GB to free. c was never used, a last used before b: c (4) + a (6) reach it.
  t.same(s.removed, ['c', 'a'], 'least recently used first, stopping once enough is freed');
  t.same(s.collected, ['space', 'space']);
  t.same(s.events, [], 'enough was freed: no event');
});

t.test('not enough to free: FreeDiskSpaceFailed each run, ImageGCFailed from the second in a row', async (t) => {
  const s = setup([img('a', 1)], { fs: { capacityBytes: 100 * GB, availableBytes: 1 * GB } });
  await s.gc.run();
  t.same(s.events.map((e) => e[0]), ['FreeDiskSpaceFailed']);
  t.match(s.events[0]?.[1], 'Failed to garbage collect required amount of images. Attempted to free 19000000000 bytes, but only found 1000000000 bytes eligible to free.');
  await s.gc.run();
  t.same(s.events.map((e) => e[0]), ['FreeDiskSpaceFailed', 'FreeDiskSpaceFailed', 'ImageGCFailed']);
});

t.test('below the high threshold nothing goes; 100 turns GC off', async (t) => {
  const s = setup([img('a', 1)], { fs: { capacityBytes: 100 * GB, availableBytes: 16 * GB } });
  await s.gc.run();
  t.same(s.removed, [], '84% < 85%');
  const off = setup([img('a', 1)], { policy: { highThresholdPercent: 100 }, fs: { capacityBytes: 100 * GB, availableBytes: 0 } });
  await off.gc.run();
  t.same([off.removed, off.events], [[], []]);
});

t.test('imageMinimumGCAge: an image first seen too recently is kept', async (t) => {
  const s = setup([img('a', 50)], { policy: { minAgeMs: 60_000 } });
  await s.gc.run();
  t.same(s.removed, []);
  s.advance(60_000);
  await s.gc.run();
  t.same(s.removed, ['a']);
});

t.test('imageMaximumGCAge: unused that long goes whatever the disk, once nodelet ran that long', async (t) => {
  const s = setup([img('a', 1), img('b', 1)], { policy: { maxAgeMs: 600_000, minAgeMs: 0 }, fs: { capacityBytes: 100 * GB, availableBytes: 90 * GB }, inUse: ['b'] });
  await s.gc.run();
  s.advance(300_000);
  await s.gc.run();
  t.same(s.removed, [], 'not before nodelet ran maxAge');
  s.advance(300_001);
  s.inUse.delete('b');
  await s.gc.run();
  t.same(s.removed, ['a'], 'a (never used) goes; b, in use 300 s ago, stays');
  t.same(s.collected, ['age']);
});

t.test('an image the engine refuses to remove is skipped; the others still go', async (t) => {
  const s = setup([img('a', 5), img('b', 6)], { refuse: ['a'] });
  await s.gc.run();
  t.same(s.removed, ['b']);
});
