import t from 'tap';
import { CachedReviews, type Reviewed } from '../../../src/auth/cached-reviews.js';

/** A review the test answers by hand, counting how often it was asked. */
function manual<V>() {
  const waiting: { resolve: (r: Reviewed<V>) => void; reject: (err: Error) => void }[] = [];
  let calls = 0;
  const review = () => {
    calls++;
    return new Promise<Reviewed<V>>((resolve, reject) => waiting.push({ resolve, reject }));
  };
  return { review, waiting, calls: () => calls };
}

t.test('a cached answer comes back synchronously, not as a promise', async (t) => {
  const reviews = new CachedReviews<boolean>();
  const first = reviews.get('k', async () => ({ value: false, ttlMs: 1000 }));
  t.ok(first instanceof Promise, 'a miss is a promise');
  t.equal(await first, false);
  const hit = reviews.get('k', () => t.fail('asked again') as never);
  t.equal(hit, false, 'a hit is the value itself (false included)');
  t.equal(reviews.size, 1);
});

t.test('concurrent gets of one key share one review; other keys get their own', async (t) => {
  const reviews = new CachedReviews<string>();
  const m = manual<string>();
  const a = [reviews.get('a', m.review), reviews.get('a', m.review), reviews.get('a', m.review)];
  const b = reviews.get('b', m.review);
  t.equal(m.calls(), 2);
  m.waiting[0]?.resolve({ value: 'A', ttlMs: 1000 });
  m.waiting[1]?.resolve({ value: 'B', ttlMs: 1000 });
  t.same(await Promise.all(a), ['A', 'A', 'A']);
  t.equal(await b, 'B');
  t.equal(reviews.get('a', m.review), 'A');
  t.equal(m.calls(), 2);
});

t.test('a failed review is shared by its waiters but never cached', async (t) => {
  const reviews = new CachedReviews<string>();
  const m = manual<string>();
  const both = [reviews.get('k', m.review), reviews.get('k', m.review)];
  m.waiting[0]?.reject(new Error('apiserver down'));
  for (const p of both) await t.rejects(Promise.resolve(p), /apiserver down/);
  t.equal(reviews.size, 0);
  const again = reviews.get('k', m.review);
  t.equal(m.calls(), 2, 'asked again after the error');
  m.waiting[1]?.resolve({ value: 'ok', ttlMs: 1000 });
  t.equal(await again, 'ok');
  // A review that throws synchronously is a rejection too, and not cached.
  await t.rejects(Promise.resolve(reviews.get('sync', () => { throw new Error('boom'); })), /boom/);
  t.equal(reviews.size, 1);
});

t.test('each answer is kept for the TTL it chose (injected clock); TTL 0 keeps nothing', async (t) => {
  let now = 1_000;
  const reviews = new CachedReviews<boolean>({ now: () => now });
  let calls = 0;
  const review = (value: boolean) => async () => {
    calls++;
    return { value, ttlMs: value ? 300 : 30 };
  };
  t.equal(await reviews.get('allow', review(true)), true);
  t.equal(await reviews.get('deny', review(false)), false);
  now += 29;
  t.equal(reviews.get('deny', review(false)), false, 'deny cached just before its TTL');
  now += 1;
  t.ok(reviews.get('deny', review(false)) instanceof Promise, 'deny expired at its TTL');
  t.equal(reviews.get('allow', review(true)), true, 'allow still cached');
  now += 270;
  t.ok(reviews.get('allow', review(true)) instanceof Promise, 'allow expired at its TTL');
  t.equal(calls, 4);

  const uncached = new CachedReviews<boolean>();
  t.equal(await uncached.get('k', async () => ({ value: true, ttlMs: 0 })), true);
  t.equal(uncached.size, 0);
});

t.test('maxEntries bounds the cache', async (t) => {
  const reviews = new CachedReviews<number>({ maxEntries: 2 });
  for (const k of ['a', 'b', 'c']) await reviews.get(k, async () => ({ value: 1, ttlMs: 1000 }));
  t.equal(reviews.size, 2);
  t.ok(reviews.get('a', async () => ({ value: 2, ttlMs: 1000 })) instanceof Promise, 'the oldest was dropped');
});
