import zlib from 'node:zlib';
import t from 'tap';
import { SPDY3_DICTIONARY } from '../../../../src/streaming/spdy/dictionary.js';
import { SpdyProtocolError } from '../../../../src/streaming/spdy/errors.js';
import {
  HeaderCompressor,
  HeaderDecompressor,
  encodeHeaderBlock,
  firstValues,
  parseHeaderBlock,
} from '../../../../src/streaming/spdy/headers.js';
import { GoLikeCompressor, adler32, rawHeaderBlock, u32, zlibBomb } from './fixtures/helpers.js';

const plain = (v: object): unknown => JSON.parse(JSON.stringify(v));

t.test('the dictionary is the SPDY/3 one', async (t) => {
  t.equal(SPDY3_DICTIONARY.length, 1423);
  // The DICTID every real SPDY/3 header stream carries after its 2-byte zlib header.
  t.equal(adler32(SPDY3_DICTIONARY).toString(16), 'e3c6a7c2');
  t.equal(SPDY3_DICTIONARY.subarray(0, 11).toString('latin1'), '\0\0\0\x07options');
  t.equal(SPDY3_DICTIONARY.subarray(-6).toString('latin1'), 'enq=0.');
  const block = new HeaderCompressor().compress({ streamtype: 'error' });
  t.equal(block.subarray(2, 6).toString('hex'), 'e3c6a7c2', 'our zlib stream names that dictionary');
  t.equal(block.subarray(-4).toString('hex'), '0000ffff', 'and ends each block with a sync flush');
});

t.test('encodeHeaderBlock writes counts and lengths, lower-cased names, NUL-joined values', async (t) => {
  t.same(encodeHeaderBlock({ streamType: 'error' }), rawHeaderBlock([['streamtype', 'error']]));
  t.same(encodeHeaderBlock({}), u32(0));
  t.same(encodeHeaderBlock({ a: ['1', '2'], ':status': '200 OK' }), rawHeaderBlock([['a', '1\u00002'], [':status', '200 OK']]));
  t.throws(() => encodeHeaderBlock({ '': 'x' }), TypeError);
  t.throws(() => encodeHeaderBlock({ Port: '1', port: '2' }), TypeError);
});

t.test('parseHeaderBlock', async (t) => {
  const v = parseHeaderBlock(rawHeaderBlock([['StreamType', 'data'], ['port', '80'], ['requestid', '0'], ['multi', 'a\u0000b\u0000']]));
  t.same(plain(v), { streamtype: ['data'], port: ['80'], requestid: ['0'], multi: ['a', 'b', ''] });
  t.equal(Object.getPrototypeOf(v), null);
  t.same(plain(firstValues(v)), { streamtype: 'data', port: '80', requestid: '0', multi: 'a' });
  t.same(plain(parseHeaderBlock(rawHeaderBlock([['__proto__', 'x']]))), { ['__proto__']: ['x'] });
  t.same(plain(parseHeaderBlock(rawHeaderBlock([['empty', '']]))), { empty: [''] });

  const bad: [string, Buffer][] = [
    ['empty input', Buffer.alloc(0)],
    ['count past the block', Buffer.concat([u32(0x7fffffff), u32(1), Buffer.from('a'), u32(0)])],
    ['count one too many', Buffer.concat([u32(2), rawHeaderBlock([['a', 'b']]).subarray(4)])],
    ['name length past the block', Buffer.concat([u32(1), u32(0xffffffff), Buffer.from('abcd')])],
    ['value length past the block', Buffer.concat([u32(1), u32(1), Buffer.from('a'), u32(100), Buffer.from('short')])],
    ['truncated before the value length', Buffer.concat([u32(1), u32(1), Buffer.from('a'), Buffer.alloc(7)]).subarray(0, 9)],
    ['empty name', rawHeaderBlock([['', 'x']])],
    ['duplicate name', rawHeaderBlock([['port', '1'], ['port', '2']])],
    ['duplicate after lower-casing', rawHeaderBlock([['Port', '1'], ['pOrt', '2']])],
    ['trailing bytes', Buffer.concat([rawHeaderBlock([['a', 'b']]), Buffer.from('junk')])],
  ];
  for (const [name, raw] of bad) t.throws(() => parseHeaderBlock(raw), SpdyProtocolError, name);
});

t.test('successive blocks share one zlib context across frames', async (t) => {
  const c = new HeaderCompressor();
  const sets: Record<string, string>[] = [
    { streamtype: 'error' },
    { streamtype: 'stdin' },
    { streamtype: 'stdout' },
    { streamtype: 'data', port: '8080', requestid: '12' },
    {},
  ];
  const blocks = sets.map((h) => c.compress(h));
  t.ok(blocks[2]!.length < blocks[0]!.length, 'later blocks reuse the history');

  const fresh = new HeaderDecompressor();
  for (let i = 0; i < sets.length; i++) t.same(plain(firstValues(fresh.decompress(blocks[i]!))), sets[i], `block ${i}`);

  // Skipping a block breaks a later one that refers back to it: the context really is shared.
  const repeated = { streamtype: 'data', 'x-nonce': 'qwertyuiopasdfghjkl' };
  const c2 = new HeaderCompressor();
  const [b0, , b2] = [c2.compress({}), c2.compress(repeated), c2.compress(repeated)];
  c2.close();
  t.ok(b2!.length < 12, `a repeated block is a back-reference (${b2!.length} bytes)`);
  const skipping = new HeaderDecompressor();
  skipping.decompress(b0!);
  let got: string | undefined;
  try {
    got = firstValues(skipping.decompress(b2!))['x-nonce'];
  } catch {
    got = 'threw';
  }
  t.not(got, repeated['x-nonce'], 'a context that missed a block cannot read the next');
  c.close();
  fresh.close();
  skipping.close();
});

t.test('interoperates with an independent zlib both ways', async (t) => {
  // Theirs → ours: a Go-like writer (level 9, Z_SYNC_FLUSH after each block).
  const go = new GoLikeCompressor();
  const ours = new HeaderDecompressor();
  const pairs: [string, string][][] = [[['streamtype', 'error']], [['streamtype', 'stdout']], [['streamtype', 'resize'], ['x-other', 'v']]];
  for (const p of pairs) t.same(plain(ours.decompress(await go.compress(p))), Object.fromEntries(p.map(([k, v]) => [k, [v]])));
  go.close();

  // Ours → theirs: node's inflate stream with the dictionary reads our blocks one by one.
  const c = new HeaderCompressor();
  const inflate = zlib.createInflate({ dictionary: SPDY3_DICTIONARY });
  const got: Buffer[] = [];
  inflate.on('data', (d: Buffer) => got.push(d));
  for (const h of [{ ':status': '200 OK', ':version': 'HTTP/1.1' }, {}] as Record<string, string>[]) {
    inflate.write(c.compress(h));
    await new Promise<void>((r) => inflate.flush(zlib.constants.Z_SYNC_FLUSH, () => r()));
    await new Promise((r) => setImmediate(r));
    t.same(Buffer.concat(got.splice(0)), encodeHeaderBlock(h));
  }
  inflate.destroy();
  c.close();
});

t.test('a zlib bomb is cut off at the cap, fast and without inflating it', async (t) => {
  const bomb = await zlibBomb(1 << 30); // ~1 MB inflating to 1 GiB
  t.ok(bomb.length < 2 * 1024 * 1024, `${bomb.length} compressed bytes`);
  const d = new HeaderDecompressor();
  const rss0 = process.memoryUsage().rss;
  const t0 = performance.now();
  t.throws(() => d.decompress(bomb), { name: 'SpdyProtocolError', message: /inflates past 65536 bytes/ });
  const ms = performance.now() - t0;
  t.ok(ms < 1000, `rejected in ${ms.toFixed(1)} ms`);
  t.ok(process.memoryUsage().rss - rss0 < 50 * 1024 * 1024, 'RSS grew < 50 MB');
  t.throws(() => d.decompress(Buffer.from('x')), SpdyProtocolError, 'the context is dead afterwards');
});

t.test('maxHeaderBytes bounds the decompressed block', async (t) => {
  const c = new HeaderCompressor();
  const small = new HeaderDecompressor({ maxHeaderBytes: 100 });
  t.ok(small.decompress(c.compress({ a: 'x'.repeat(50) })));
  t.throws(() => small.decompress(c.compress({ a: 'x'.repeat(200) })), { name: 'SpdyProtocolError', message: 'header block inflates past 100 bytes' });
  c.close();
});

t.test('corrupt compressed input is a protocol error', async (t) => {
  t.throws(() => new HeaderDecompressor().decompress(Buffer.from('not zlib at all')), { name: 'SpdyProtocolError', message: /^header block zlib: / });
  t.throws(() => new HeaderDecompressor().decompress(Buffer.alloc(0)), SpdyProtocolError);
  // A stream seeded with another dictionary.
  const other = zlib.deflateSync(encodeHeaderBlock({ a: 'b' }), { dictionary: Buffer.from('nope') });
  t.throws(() => new HeaderDecompressor().decompress(other), SpdyProtocolError);
  // A well-formed stream carrying a malformed block.
  const go = new GoLikeCompressor();
  const truncated = await go.compressRaw(Buffer.concat([u32(3), u32(1), Buffer.from('a')]));
  t.throws(() => new HeaderDecompressor().decompress(truncated), SpdyProtocolError);
  go.close();
});
