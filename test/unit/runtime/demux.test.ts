import t from 'tap';
import { StdcopyParser, type StdStream } from '../../../src/runtime/docker/demux.js';

const frame = (stream: number, payload: string) => {
  const h = Buffer.alloc(8);
  h[0] = stream;
  h.writeUInt32BE(Buffer.byteLength(payload), 4);
  return Buffer.concat([h, Buffer.from(payload)]);
};

function parseAll(chunks: Buffer[]): { out: string; err: string; parser: StdcopyParser } {
  const parser = new StdcopyParser();
  let out = '';
  let err = '';
  for (const c of chunks) parser.push(c, (s: StdStream, p) => (s === 1 ? (out += p) : (err += p)));
  return { out, err, parser };
}

const input = Buffer.concat([frame(1, 'hello '), frame(2, 'oops\n'), frame(1, 'world\n'), frame(1, ''), frame(2, 'x'.repeat(300))]);

t.test('every split point gives the same streams', async (t) => {
  for (let i = 0; i <= input.length; i++) {
    const { out, err, parser } = parseAll([input.subarray(0, i), input.subarray(i)]);
    if (out !== 'hello world\n' || err !== 'oops\n' + 'x'.repeat(300)) t.fail(`split at ${i}`);
    if (!parser.atBoundary) t.fail(`boundary after split at ${i}`);
  }
  const bytes = [...input].map((b) => Buffer.from([b]));
  t.same(parseAll(bytes).out, 'hello world\n', 'one byte at a time');
});

t.test('payloads are zero-copy views of the input', async (t) => {
  const parser = new StdcopyParser();
  const seen: Buffer[] = [];
  parser.push(input, (_s, p) => seen.push(p));
  t.equal(seen[0]?.buffer, input.buffer);
});

t.test('a truncated frame is not at a boundary; a bad stream id throws', async (t) => {
  t.notOk(parseAll([input.subarray(0, 10)]).parser.atBoundary);
  t.throws(() => parseAll([frame(7, 'x')]), /invalid Docker stream id 7/);
});

t.test('push calls emit with the given self as this', async (t) => {
  const parser = new StdcopyParser();
  const sink = { out: '', err: '' };
  function collect(this: typeof sink, s: StdStream, p: Buffer): void {
    if (s === 1) this.out += p.toString();
    else this.err += p.toString();
  }
  parser.push(input.subarray(0, 11), collect, sink);
  parser.push(input.subarray(11), collect, sink);
  t.equal(sink.out, 'hello world\n');
  t.equal(sink.err, 'oops\n' + 'x'.repeat(300));
});
