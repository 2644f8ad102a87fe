import t from 'tap';
import { NOTE_LENGTH_LIMIT, truncateMessage } from '../../../src/api/truncate.js';

t.test('a message within the limit is returned as it is', async (t) => {
  t.equal(truncateMessage('short'), 'short');
  const exact = 'x'.repeat(NOTE_LENGTH_LIMIT);
  t.equal(truncateMessage(exact), exact, 'exactly 1024 bytes fits');
  t.equal(truncateMessage('é'.repeat(512)), 'é'.repeat(512), '512 two-byte characters are 1024 bytes');
});

t.test('a longer one is cut to the limit in UTF-8 bytes, ending in " ..." (kube-scheduler)', async (t) => {
  const out = truncateMessage('x'.repeat(NOTE_LENGTH_LIMIT + 1));
  t.equal(Buffer.byteLength(out), NOTE_LENGTH_LIMIT);
  t.ok(out.endsWith('x ...'));
  t.equal(truncateMessage('abcdefghij', 8), 'abcd ...');
  const wide = truncateMessage('é'.repeat(513));
  t.ok(Buffer.byteLength(wide) <= NOTE_LENGTH_LIMIT, 'bytes, not UTF-16 units');
  t.notMatch(wide, /\uFFFD/, 'never splits a character');
  const emoji = truncateMessage('😀'.repeat(300), 11);
  t.equal(emoji, '😀 ...', 'a 4-byte character is kept whole or dropped');
  t.equal(truncateMessage('abcdef', 3), ' ..', 'a limit below the suffix still holds');
});

t.test('cheap on a huge message: only the head is encoded', async (t) => {
  const huge = 'y'.repeat(64 * 1024 * 1024);
  const started = performance.now();
  for (let i = 0; i < 1000; i++) truncateMessage(huge);
  t.ok(performance.now() - started < 1000, `1000 cuts of 64 MiB took ${Math.round(performance.now() - started)} ms`);
});
