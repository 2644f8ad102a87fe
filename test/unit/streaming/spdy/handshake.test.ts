import t from 'tap';
import { ACCEPTED_PROTOCOLS_HEADER, handshake, negotiated } from '../../../../src/streaming/spdy/handshake.js';

t.test('httpstream.Handshake: the first client protocol the server supports wins', async (t) => {
  t.same(handshake(['b', 'a'], ['a', 'b']), { protocol: 'b' });
  t.same(handshake('x, a', ['a', 'b']), { protocol: 'a' });
  t.same(handshake(undefined, ['a']), { error: 400, message: 'unable to upgrade: X-Stream-Protocol-Version is required' });
  t.same(handshake(['x', 'y'], ['a', 'b']), {
    error: 403,
    message: 'unable to upgrade: unable to negotiate protocol: client supports [x y], server accepts [a b]',
    accepted: ['a', 'b'],
  });
});

t.test('a handshake result as a protocol or a refusal', async (t) => {
  t.equal(negotiated({ protocol: 'a' }), 'a');
  const bad = negotiated({ error: 400, message: 'nope' });
  if (typeof bad === 'string') throw new Error('a 400 is a refusal');
  t.equal(bad.error.code, 400);
  t.equal(bad.error.message, 'nope');
  t.same(bad.headers, {});
  const forbidden = negotiated({ error: 403, message: 'no overlap', accepted: ['a', 'b'] });
  if (typeof forbidden === 'string') throw new Error('a 403 is a refusal');
  t.equal(forbidden.error.code, 403);
  t.equal(forbidden.error.reason, 'Forbidden');
  t.same(forbidden.headers, { [ACCEPTED_PROTOCOLS_HEADER]: ['a', 'b'] }, 'one header line per accepted protocol');
});
