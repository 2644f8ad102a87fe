import t from 'tap';
import { MAX_RESIZE_OBJECT_BYTES, ResizeDecoder, ResizeQueue, parseTerminalSize } from '../../../../src/streaming/remotecommand/resize.js';
import type { TerminalSize } from '../../../../src/streaming/types.js';

const b = (s: string) => Buffer.from(s, 'utf8');

t.test('Go json.Encoder lines and concatenated objects', async (t) => {
  const d = new ResizeDecoder();
  t.same(d.push(b('{"Width":100,"Height":30}\n')), [{ width: 100, height: 30 }]);
  t.same(d.push(b('{"Width":1,"Height":2}{"width":3,"height":4}{"WIDTH":5,"hEiGhT":6}')), [
    { width: 1, height: 2 },
    { width: 3, height: 4 },
    { width: 5, height: 6 },
  ]);
  t.same(d.push(b('  \r\n\t{ "Height" : 7 , "Width" : 8 }  ')), [{ width: 8, height: 7 }], 'whitespace tolerated');
});

t.test('objects split across chunks, byte by byte', async (t) => {
  const d = new ResizeDecoder();
  const got: TerminalSize[] = [];
  for (const byte of b('{"Width":120,"Height":40}\n{"Width":80,"Height":24}\n')) got.push(...d.push(Uint8Array.of(byte)));
  t.same(got, [
    { width: 120, height: 40 },
    { width: 80, height: 24 },
  ]);
  // Multi-byte UTF-8 split inside a string key.
  const bytes = b('{"ü}":1,"Width":9,"Height":9}');
  t.same([...d.push(bytes.subarray(0, 3)), ...d.push(bytes.subarray(3))], [{ width: 9, height: 9 }], 'braces inside strings are not structure');
});

t.test('garbage is skipped and decoding continues', async (t) => {
  const d = new ResizeDecoder();
  t.same(d.push(b('hello world\n')), []);
  t.same(d.push(b('{not json}\n{"Width":10,"Height":11}\n')), [{ width: 10, height: 11 }]);
  t.same(d.push(b('{"Width":\n{"Width":12,"Height":13}\n')), [{ width: 12, height: 13 }], 'a newline ends an unfinished object');
  t.same(d.push(b('{{{{\n{"Width":14,"Height":15}')), [{ width: 14, height: 15 }]);
  t.same(d.push(b('[1,2]{"Width":"100","Height":30}{"Width":null,"Height":1}{"Width":16,"Height":17}')), [{ width: 16, height: 17 }]);
  t.same(d.push(b('}}}]]{"Width":18,"Height":19}')), [{ width: 18, height: 19 }]);
  t.same(d.push(b('{"a":"\\"}{\\\\","Width":20,"Height":21}')), [{ width: 20, height: 21 }], 'escapes inside strings');
});

t.test('bad sizes: negative, 0x0, missing, huge numbers, fractions', async (t) => {
  const d = new ResizeDecoder();
  t.same(d.push(b('{"Width":-1,"Height":30}\n{"Width":0,"Height":0}\n{"Height":30}\n{"Width":100}\n')), []);
  t.same(d.push(b('{"Width":1e12,"Height":1e12}\n')), [{ width: 65535, height: 65535 }], 'clamped');
  t.same(d.push(b('{"Width":65536,"Height":2}\n')), [{ width: 65535, height: 2 }]);
  t.same(d.push(b('{"Width":100.9,"Height":30.2}\n')), [{ width: 100, height: 30 }], 'integers');
  t.same(d.push(b('{"Width":0.5,"Height":30}\n')), [], 'truncates below 1');
  t.same(d.push(b('{"Width":100,"Height":30}\n')), [{ width: 100, height: 30 }], 'valid after all that');
  t.same(parseTerminalSize('{"Width":3,"width":4,"Height":5}'), { width: 4, height: 5 }, 'later key wins');
  t.equal(parseTerminalSize('null'), undefined);
  t.equal(parseTerminalSize('{"Width":true,"Height":1}'), undefined);
});

t.test('a 1 MB object is discarded, not buffered', async (t) => {
  const d = new ResizeDecoder();
  const huge = '{"pad":"' + 'x'.repeat(1024 * 1024) + '","Width":50,"Height":60}';
  const got: TerminalSize[] = [];
  for (let i = 0; i < huge.length; i += 8192) got.push(...d.push(b(huge.slice(i, i + 8192))));
  t.same(got, [], 'dropped whole');
  // The internal buffer never exceeded the bound.
  const internal = d as unknown as { buf: number[] };
  t.ok(internal.buf.length <= MAX_RESIZE_OBJECT_BYTES);
  t.same(d.push(b('{"Width":70,"Height":80}')), [{ width: 70, height: 80 }]);
  // Just under the bound still decodes.
  const padded = '{"pad":"' + 'y'.repeat(MAX_RESIZE_OBJECT_BYTES - 40) + '","Width":7,"Height":8}';
  t.ok(padded.length <= MAX_RESIZE_OBJECT_BYTES);
  t.same(d.push(b(padded)), [{ width: 7, height: 8 }]);
});

t.test('ResizeQueue keeps only the newest pending size', async (t) => {
  const q = new ResizeQueue();
  q.push({ width: 1, height: 1 });
  q.push({ width: 2, height: 2 });
  q.push({ width: 3, height: 3 });
  const it = q[Symbol.asyncIterator]();
  t.same(await it.next(), { value: { width: 3, height: 3 }, done: false });

  // A waiting consumer gets the next push directly.
  const waiting = it.next();
  q.push({ width: 4, height: 4 });
  t.same(await waiting, { value: { width: 4, height: 4 }, done: false });

  for (let i = 0; i < 100_000; i++) q.push({ width: i + 1, height: 1 });
  t.same(await it.next(), { value: { width: 100_000, height: 1 }, done: false }, 'never grows');

  // close(): a pending size is still delivered, then the iteration ends; later pushes are ignored.
  q.push({ width: 5, height: 5 });
  q.close();
  q.push({ width: 6, height: 6 });
  t.same(await it.next(), { value: { width: 5, height: 5 }, done: false });
  t.same(await it.next(), { value: undefined, done: true });
  t.ok(q.isClosed);
});

t.test('ResizeQueue: close wakes a waiting consumer; for-await ends', async (t) => {
  const q = new ResizeQueue();
  const seen: TerminalSize[] = [];
  const consumer = (async () => {
    for await (const s of q) seen.push(s);
  })();
  q.push({ width: 10, height: 20 });
  await new Promise((r) => setImmediate(r));
  q.push({ width: 30, height: 40 });
  await new Promise((r) => setImmediate(r));
  q.close();
  await consumer;
  t.same(seen, [
    { width: 10, height: 20 },
    { width: 30, height: 40 },
  ]);
});

t.test('ResizeQueue: breaking out of for-await closes it', async (t) => {
  const q = new ResizeQueue();
  q.push({ width: 1, height: 2 });
  for await (const s of q) {
    t.same(s, { width: 1, height: 2 });
    break;
  }
  t.ok(q.isClosed);
});
