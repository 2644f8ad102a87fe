import t from 'tap';
import { StreamPairing, type PendingPair } from '../../../../src/streaming/portforward/pairing.js';

/**
 * Resolves once every `ms` timer created before this call has fired: Node runs the timers of one
 * duration in the order they were created, so a sentinel timer of the same duration fires after
 * them. (The pairing's timers are plain `setTimeout(…, timeoutMs)`.) Both the positive wait — the
 * expected timeouts happened — and the negative one — no other timer of the pairing fires — need
 * no guess at how long is long enough.
 */
const timersOf = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('streams pair by request ID, in either order; a complete pair leaves the table', async (t) => {
  const p = new StreamPairing<string>({ timeoutMs: 1000, onTimeout: () => t.fail('no timeout') });
  t.same(p.add('e0', 'error', '0'), { kind: 'pending' });
  t.same(p.add('d1', 'data', '1'), { kind: 'pending' });
  t.equal(p.size, 2);
  t.same(p.add('d0', 'data', '0'), { kind: 'complete', requestId: '0', error: 'e0', data: 'd0' });
  t.same(p.add('e1', 'error', '1'), { kind: 'complete', requestId: '1', error: 'e1', data: 'd1' });
  t.equal(p.size, 0);
  t.same(p.add('e0b', 'error', '0'), { kind: 'pending' }, 'a reused ID starts a new pair');
  p.close();
});

t.test('a duplicate stream type is reported with the kubelet text, the pair keeps its first stream', async (t) => {
  const p = new StreamPairing<string>({ timeoutMs: 1000, onTimeout: () => undefined });
  p.add('e', 'error', '9');
  const dup = p.add('e2', 'error', '9');
  t.same(dup, { kind: 'duplicate', message: 'error processing stream for request 9: error stream already assigned', pair: { requestId: '9', error: 'e' } });
  p.add('d', 'data', '8');
  t.match(p.add('d2', 'data', '8'), { kind: 'duplicate', message: /data stream already assigned/, pair: { data: 'd' } });
  t.same(p.add('d9', 'data', '9'), { kind: 'complete', requestId: '9', error: 'e', data: 'd9' });
  p.close();
});

t.test('an incomplete pair times out once, and is forgotten', async (t) => {
  const expired: [PendingPair<string>, string][] = [];
  const p = new StreamPairing<string>({ timeoutMs: 30, onTimeout: (pair, msg) => expired.push([pair, msg]) });
  p.add('e', 'error', '3');
  p.add('d', 'data', '4');
  p.add('x', 'error', '5');
  p.add('y', 'data', '5');
  await timersOf(30); // pair 5 completed: had its timer survived, it would fire before this one
  t.same(expired, [
    [{ requestId: '3', error: 'e' }, '(request=3) timed out waiting for streams'],
    [{ requestId: '4', data: 'd' }, '(request=4) timed out waiting for streams'],
  ]);
  t.equal(p.size, 0);
  t.same(p.add('late', 'data', '3'), { kind: 'pending' }, 'a late partner starts over');
  t.same(p.close(), [{ requestId: '3', data: 'late' }], 'close hands back what is left');
  await timersOf(30); // the late pair's timer, had close() left it, would fire before this one
  t.equal(expired.length, 2, 'and stops the timers');
});
