import t from 'tap';
import { GrowingReadBuffer } from '../../../src/streaming/read-buffer.js';

t.test('starts at min, doubles on every full read up to max, keeps the buffer otherwise', async (t) => {
  const b = new GrowingReadBuffer(16, 64);
  const first = b.current;
  t.equal(first.length, 16);
  t.equal(b.next(0), first, 'no read yet: the same buffer');
  t.equal(b.next(15), first, 'a partial read: the same buffer');
  const second = b.next(16);
  t.equal(second.length, 32, 'a full read doubles');
  t.not(second, first, 'a new buffer: the old one may still be in a write');
  t.equal(b.next(32).length, 64);
  const top = b.current;
  t.equal(b.next(64), top, 'at max: the same buffer');
  t.equal(b.next(1), top, 'it never shrinks');
});

t.test('max not a power-of-two multiple of min is still the cap', async (t) => {
  const b = new GrowingReadBuffer(10, 25);
  b.next(10);
  t.equal(b.next(20).length, 25);
});

t.test('rejects sizes that make no sense', async (t) => {
  t.throws(() => new GrowingReadBuffer(0, 1), RangeError);
  t.throws(() => new GrowingReadBuffer(8, 4), RangeError);
});
