import { isDeepStrictEqual } from 'node:util';
import t from 'tap';
import { SpdyProtocolError } from '../../../../src/streaming/spdy/errors.js';
import {
  encodeData,
  encodeFrame,
  encodeGoAway,
  encodeHeaders,
  encodePing,
  encodeRstStream,
  encodeSettings,
  encodeSynReply,
  encodeSynStream,
  encodeWindowUpdate,
  type Frame,
} from '../../../../src/streaming/spdy/frames.js';
import { FrameParser, type FrameParserOptions } from '../../../../src/streaming/spdy/parser.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

function parseAll(chunks: readonly Buffer[], opts?: FrameParserOptions): Frame[] {
  const frames: Frame[] = [];
  const p = new FrameParser((f) => frames.push(f), opts);
  for (const c of chunks) p.push(c);
  return frames;
}

function parseError(bytes: Buffer, opts?: FrameParserOptions): SpdyProtocolError {
  try {
    parseAll([bytes], opts);
  } catch (err) {
    if (err instanceof SpdyProtocolError) return err;
    throw err;
  }
  throw new Error('expected a SpdyProtocolError');
}

/** One frame of every type, as the parser reports them. */
const sample: Frame[] = [
  {
    type: 'SYN_STREAM',
    streamId: 1,
    associatedId: 0,
    priority: 2,
    slot: 0,
    fin: false,
    unidirectional: false,
    headerBlock: hex('78bbe3c6a7c2 0102'),
  },
  { type: 'SYN_STREAM', streamId: 3, associatedId: 1, priority: 7, slot: 9, fin: true, unidirectional: true, headerBlock: hex('00') },
  { type: 'SYN_REPLY', streamId: 1, fin: false, headerBlock: hex('aabbcc') },
  { type: 'SYN_REPLY', streamId: 0x7fffffff, fin: true, headerBlock: Buffer.alloc(0) },
  { type: 'RST_STREAM', streamId: 5, status: 5 },
  { type: 'SETTINGS', clearSettings: false, settings: [] },
  { type: 'SETTINGS', clearSettings: true, settings: [{ id: 7, value: 1048576, flags: 0 }, { id: 4, value: 100, flags: 1 }] },
  { type: 'PING', id: 1 },
  { type: 'PING', id: 0xfffffffe },
  { type: 'GOAWAY', lastGoodStreamId: 7, status: 1 },
  { type: 'HEADERS', streamId: 3, fin: true, headerBlock: hex('01') },
  { type: 'WINDOW_UPDATE', streamId: 0, delta: 983040 },
  { type: 'WINDOW_UPDATE', streamId: 3, delta: 0x7fffffff },
  { type: 'DATA', streamId: 3, fin: false, payload: Buffer.from('hello') },
  { type: 'DATA', streamId: 5, fin: true, payload: Buffer.alloc(0) },
  { type: 'DATA', streamId: 7, fin: false, payload: Buffer.alloc(70_000, 0xab) },
];
const fixture = Buffer.concat(sample.map(encodeFrame));

t.test('encoders produce the SPDY/3 wire format', async (t) => {
  t.same(encodeSynReply(1, hex('aabb')), hex('8003 0002 00000006 00000001 aabb'));
  t.same(encodeSynReply(3, hex('aa'), true), hex('8003 0002 01000005 00000003 aa'));
  t.same(encodeHeaders(3, hex('aa'), true), hex('8003 0008 01000005 00000003 aa'));
  t.same(encodeRstStream(1, 5), hex('8003 0003 00000008 00000001 00000005'));
  t.same(encodeSettings([{ id: 7, value: 0x100000, flags: 0 }]), hex('8003 0004 0000000c 00000001 00000007 00100000'));
  t.same(encodeSettings([{ id: 4, value: 1, flags: 1 }], true), hex('8003 0004 0100000c 00000001 01000004 00000001'));
  t.same(encodePing(1), hex('8003 0006 00000004 00000001'));
  t.same(encodeGoAway(7, 1), hex('8003 0007 00000008 00000007 00000001'));
  t.same(encodeWindowUpdate(0, 983040), hex('8003 0009 00000008 00000000 000f0000'));
  t.same(encodeData(3, Buffer.from('hi')), hex('00000003 00000002 6869'));
  t.same(encodeData(3, Buffer.alloc(0), true), hex('00000003 01000000'));
  t.same(
    encodeSynStream({ streamId: 1, associatedId: 0, priority: 3, slot: 0, fin: true, unidirectional: false, headerBlock: hex('ff') }),
    hex('8003 0001 0100000b 00000001 00000000 6000 ff'),
  );
  t.throws(() => encodeRstStream(0, 1), RangeError);
  t.throws(() => encodeData(0x80000000, Buffer.alloc(0)), RangeError);
  t.throws(() => encodeWindowUpdate(1, 0), RangeError);
  t.throws(() => encodeData(1, Buffer.alloc(0x1000000)), RangeError);
});

t.test('every frame type round-trips through the parser', async (t) => {
  for (const f of sample) t.same(parseAll([encodeFrame(f)]), [f], f.type);
  t.same(parseAll([fixture]), sample, 'all at once');
});

t.test('the same bytes split at any boundary give the same frames', async (t) => {
  const ones: Buffer[] = [];
  for (let i = 0; i < fixture.length; i++) ones.push(fixture.subarray(i, i + 1));
  t.same(parseAll(ones), sample, '1-byte chunks');

  // Every two-piece split of the small frames (the 70 KB DATA frame is at the end).
  const small = fixture.subarray(0, fixture.length - 70_008);
  for (let cut = 0; cut <= small.length; cut++) {
    const got = parseAll([small.subarray(0, cut), small.subarray(cut)]);
    if (!isDeepStrictEqual(got, sample.slice(0, -1))) {
      t.fail(`split at ${cut} differs`);
      return;
    }
  }
  t.pass('every 2-way split');

  let seed = 42;
  const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n);
  for (let round = 0; round < 200; round++) {
    const chunks: Buffer[] = [];
    for (let off = 0; off < fixture.length; ) {
      const n = 1 + rand(round % 2 ? 20 : 5000);
      chunks.push(fixture.subarray(off, off + n));
      off += n;
    }
    const got = parseAll(chunks);
    if (!isDeepStrictEqual(got, sample)) {
      t.fail(`random split round ${round} differs`);
      return;
    }
  }
  t.pass('200 random splits');
});

t.test('a DATA payload inside one chunk is a view, not a copy', async (t) => {
  const chunk = encodeData(3, Buffer.from('zero-copy'));
  const [f] = parseAll([chunk]);
  t.equal(f?.type, 'DATA');
  if (f?.type !== 'DATA') return;
  t.equal(f.payload.buffer, chunk.buffer, 'same ArrayBuffer');
  t.equal(f.payload.byteOffset, chunk.byteOffset + 8);
  // Spanning chunks it must be copied, and still be right.
  const [g] = parseAll([chunk.subarray(0, 10), chunk.subarray(10)]);
  t.same(g, f);
});

t.test('unknown control frame types are skipped, even split up', async (t) => {
  const unknown = hex('8003 00ff 00000005 0102030405');
  const noop = hex('8003 0005 00000000');
  const bytes = Buffer.concat([unknown, noop, encodePing(3), unknown]);
  t.same(parseAll([bytes]), [{ type: 'PING', id: 3 }]);
  t.same(parseAll([...bytes].map((b) => Buffer.from([b]))), [{ type: 'PING', id: 3 }]);
  // A huge unknown frame is dropped as it arrives: nothing accumulates.
  const frames: Frame[] = [];
  const p = new FrameParser((f) => frames.push(f));
  p.push(hex('8003 00ff 00ffffff'));
  for (let i = 0; i < 15; i++) p.push(Buffer.alloc(1 << 20));
  t.equal(p.bufferedBytes, 0);
  p.push(Buffer.concat([Buffer.alloc(0xffffff - 15 * (1 << 20)), encodePing(5)]));
  t.same(frames, [{ type: 'PING', id: 5 }]);
});

t.test('malformed frames are protocol errors', async (t) => {
  const cases: [string, Buffer, FrameParserOptions?][] = [
    ['SPDY/2 control frame', hex('8002 0006 00000004 00000001')],
    ['version 0', hex('8000 0001 0000000a 00000001 00000000 0000')],
    ['SETTINGS numSettings 2^31', hex('8003 0004 0000000c 80000000 00000007 00000001')],
    ['SETTINGS count 2 in a 1-entry frame', hex('8003 0004 0000000c 00000002 00000007 00000001')],
    ['SETTINGS length not 4+8n', hex('8003 0004 00000007 00000000 000000')],
    ['RST_STREAM of 9 bytes', hex('8003 0003 00000009 00000001 00000005 00')],
    ['RST_STREAM status 0', hex('8003 0003 00000008 00000001 00000000')],
    ['RST_STREAM stream 0', hex('8003 0003 00000008 00000000 00000005')],
    ['PING of 8 bytes', hex('8003 0006 00000008 00000001 00000000')],
    ['GOAWAY of 4 bytes', hex('8003 0007 00000004 00000000')],
    ['WINDOW_UPDATE of 4 bytes', hex('8003 0009 00000004 00000001')],
    ['SYN_STREAM shorter than 10', hex('8003 0001 00000004 00000001')],
    ['SYN_STREAM on stream 0', hex('8003 0001 0000000a 00000000 00000000 0000')],
    ['SYN_REPLY on stream 0', hex('8003 0002 00000004 00000000')],
    ['HEADERS shorter than 4', hex('8003 0008 00000002 0000')],
    ['control frame over the 64 KiB cap', hex('8003 0001 00010001')],
    ['DATA on stream 0', hex('00000000 00000001 ff')],
    ['DATA over a custom cap', hex('00000001 00000401'), { maxDataPayload: 1024 }],
    ['SYN_STREAM over a custom cap', hex('8003 0001 00000401'), { maxControlPayload: 1024 }],
  ];
  for (const [name, bytes, opts] of cases) {
    const err = parseError(bytes, opts);
    t.equal(err.status, 1, `${name}: PROTOCOL_ERROR (${err.message})`);
  }
});

t.test('lengths are checked from the header alone, before any payload is buffered', async (t) => {
  const p = new FrameParser(() => {});
  // A control frame announcing 16 MiB is refused on its first 8 bytes.
  t.throws(() => p.push(hex('8003 0001 00ffffff')), SpdyProtocolError);
  t.throws(() => p.push(encodePing(1)), SpdyProtocolError, 'dead after an error');
  t.equal(p.bufferedBytes, 0);
});

t.test('pause() from onFrame stops delivery until resume()', async (t) => {
  const frames: number[] = [];
  const p: FrameParser = new FrameParser((f) => {
    if (f.type !== 'PING') return;
    frames.push(f.id);
    if (f.id === 3) p.pause();
  });
  p.push(Buffer.concat([encodePing(1), encodePing(3), encodePing(5)]));
  t.same(frames, [1, 3]);
  t.ok(p.paused);
  p.push(encodePing(7));
  t.same(frames, [1, 3], 'bytes kept while paused');
  t.equal(p.bufferedBytes, 24);
  p.resume();
  t.same(frames, [1, 3, 5, 7]);
});

t.test('re-entrant push from onFrame keeps frame order', async (t) => {
  const ids: number[] = [];
  const p: FrameParser = new FrameParser((f) => {
    if (f.type !== 'PING') return;
    ids.push(f.id);
    if (f.id === 1) p.push(encodePing(9));
  });
  p.push(Buffer.concat([encodePing(1), encodePing(3)]));
  t.same(ids, [1, 3, 9]);
});

t.test('random garbage never throws anything but a SpdyProtocolError', async (t) => {
  let seed = 7;
  const rand = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) & 0xff;
  let errors = 0;
  let maxBuffered = 0;
  for (let round = 0; round < 2000; round++) {
    const bytes = Buffer.from(Array.from({ length: 8 + (round % 64) }, rand));
    // Half the rounds look like SPDY/3 control frames so later checks get exercised.
    if (round % 2) bytes.writeUInt16BE(0x8003, 0);
    const p = new FrameParser(() => {});
    try {
      p.push(bytes);
    } catch (err) {
      if (!(err instanceof SpdyProtocolError)) throw err;
      errors++;
    }
    maxBuffered = Math.max(maxBuffered, p.bufferedBytes);
  }
  t.ok(errors > 0, `${errors} rounds rejected`);
  t.ok(maxBuffered < 100, 'never buffers more than was pushed');
});
