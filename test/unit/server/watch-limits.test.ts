import t from 'tap';
import { StatusError } from '../../../src/api/errors.js';
import { WATCHES_RETRY_AFTER_SECONDS, WatchStreams } from '../../../src/server/watch.js';

const refusal = (fn: () => unknown): StatusError | undefined => {
  try {
    fn();
  } catch (err) {
    if (err instanceof StatusError) return err;
    throw err;
  }
  return undefined;
};

t.test('watches are capped per user and on the node; a release frees exactly one place', async (t) => {
  const streams = new WatchStreams({ max: 5, maxPerUser: 3 });
  const alice = [0, 1, 2].map(() => streams.admit('alice'));
  const overAlice = refusal(() => streams.admit('alice'));
  t.equal(overAlice?.reason, 'TooManyRequests', 'a 4th watch of one user: 429');
  t.match(overAlice?.message, /too many watches open for user "alice" \(limit 3\); retry later/);
  t.equal(overAlice?.details?.retryAfterSeconds, WATCHES_RETRY_AFTER_SECONDS);
  const bob = [streams.admit('bob'), streams.admit('bob')];
  const overNode = refusal(() => streams.admit('carol'));
  t.match(overNode?.message, /too many watches open \(limit 5\); retry later/, 'the node cap holds for a user with none');
  alice[0]?.();
  alice[0]?.();
  t.ok(streams.admit('carol'), 'one release, one place (a second call of the same release frees nothing)');
  t.ok(refusal(() => streams.admit('dave')), 'and no more');
  for (const r of [...alice, ...bob]) r?.();
  t.ok(streams.admit('alice') && streams.admit('alice') && streams.admit('alice'), 'alice has her 3 again');
});
