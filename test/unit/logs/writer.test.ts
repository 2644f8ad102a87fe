import t from 'tap';
import { StdcopyParser } from '../../../src/runtime/docker/demux.js';
import { DOCKER_LINE_PIECE, LogWriter, type LogWriterOptions } from '../../../src/streaming/logs/writer.js';

const TS = ['2026-11-29T20:45:37.329060525Z', '2026-11-29T20:45:37.33Z', '2026-11-29T20:45:38Z', '2026-11-29T20:45:39.000000001Z'] as const;

/** One Docker stdcopy frame. */
function frame(stream: number, payload: string | Buffer): Buffer {
  const body = Buffer.from(payload);
  const h = Buffer.alloc(8);
  h[0] = stream;
  h.writeUInt32BE(body.length, 4);
  return Buffer.concat([h, body]);
}

/** Feeds framed Docker output in the given chunks, as runtime/docker/logs.ts does. */
function framed(opts: LogWriterOptions, chunks: Buffer[]): { text: string; writer: LogWriter; writes: Buffer[] } {
  const writes: Buffer[] = [];
  const writer = new LogWriter(opts, (b) => (writes.push(b), true));
  const parser = new StdcopyParser();
  for (const c of chunks) parser.push(c, (id, payload) => writer.push(id, payload, parser.atBoundary));
  return { text: Buffer.concat(writes).toString(), writer, writes };
}

/** Feeds raw (TTY) Docker output in the given chunks. */
function raw(opts: LogWriterOptions, chunks: Buffer[]): { text: string; writer: LogWriter; writes: Buffer[] } {
  const writes: Buffer[] = [];
  const writer = new LogWriter(opts, (b) => (writes.push(b), true));
  for (const c of chunks) writer.push(1, c);
  return { text: Buffer.concat(writes).toString(), writer, writes };
}

/** Every way of cutting `input` in two, plus byte by byte. */
function splits(input: Buffer): Buffer[][] {
  const out: Buffer[][] = [[input], [...input].map((b) => Buffer.from([b]))];
  for (let i = 1; i < input.length; i++) out.push([input.subarray(0, i), input.subarray(i)]);
  return out;
}

const framedInput = Buffer.concat([frame(1, `${TS[0]} out1\n`), frame(2, `${TS[1]} err1\n`), frame(1, `${TS[2]} out2\n`), frame(2, `${TS[3]} err2 no newline`)]);

t.test('framed: timestamps stripped, or rewritten with nine digits, at every split point', async (t) => {
  const plain = 'out1\nerr1\nout2\nerr2 no newline';
  const stamped = `2026-11-29T20:45:37.329060525Z out1\n2026-11-29T20:45:37.330000000Z err1\n2026-11-29T20:45:38.000000000Z out2\n2026-11-29T20:45:39.000000001Z err2 no newline`;
  for (const chunks of splits(framedInput)) {
    const a = framed({ timestamps: false }, chunks).text;
    const b = framed({ timestamps: true }, chunks).text;
    if (a !== plain || b !== stamped) t.fail(`split into ${chunks.map((c) => c.length).join('+')}: ${JSON.stringify(a)} / ${JSON.stringify(b)}`);
  }
  t.pass('all splits agree');
});

const rawInput = Buffer.from(`${TS[0]} out1\r\n${TS[1]} err1\r\n${TS[2]} \r\n${TS[3]} last`);

t.test('raw (TTY): records end at their newline, at every split point', async (t) => {
  const plain = 'out1\r\nerr1\r\n\r\nlast';
  const stamped = `2026-11-29T20:45:37.329060525Z out1\r\n2026-11-29T20:45:37.330000000Z err1\r\n2026-11-29T20:45:38.000000000Z \r\n2026-11-29T20:45:39.000000001Z last`;
  for (const chunks of splits(rawInput)) {
    const a = raw({ timestamps: false }, chunks).text;
    const b = raw({ timestamps: true }, chunks).text;
    if (a !== plain || b !== stamped) t.fail(`split into ${chunks.map((c) => c.length).join('+')}: ${JSON.stringify(a)} / ${JSON.stringify(b)}`);
  }
  t.pass('all splits agree');
});

t.test('since keeps records at or after the instant, to the nanosecond Docker gives', async (t) => {
  const since = new Date('2026-11-29T20:45:37.330Z');
  t.equal(framed({ timestamps: false, since }, [framedInput]).text, 'err1\nout2\nerr2 no newline', 'a record 0.94 ms early is dropped, one exactly at it kept');
  t.equal(raw({ timestamps: false, since }, [rawInput]).text, 'err1\r\n\r\nlast');
  t.equal(framed({ timestamps: false, since: new Date('2026-11-29T20:45:37.329Z') }, [framedInput]).text.slice(0, 5), 'out1\n', '.329060525 is not before .329');
  t.equal(framed({ timestamps: false, since: new Date('2030-01-01T00:00:00Z') }, [framedInput]).text, '');
  for (const chunks of splits(framedInput)) {
    if (framed({ timestamps: true, since }, chunks).text !== '2026-11-29T20:45:37.330000000Z err1\n2026-11-29T20:45:38.000000000Z out2\n2026-11-29T20:45:39.000000001Z err2 no newline') t.fail('split');
  }
});

t.test('limitBytes cuts mid-line, prefix included, then stops', async (t) => {
  for (const limit of [1, 3, 5, 7, 12, 31, 40, 1000]) {
    for (const timestamps of [false, true]) {
      const whole = framed({ timestamps }, [framedInput]).text;
      for (const chunks of splits(framedInput)) {
        const r = framed({ timestamps, limitBytes: limit }, chunks);
        if (r.text !== whole.slice(0, limit)) t.fail(`limit ${limit} timestamps ${timestamps}: ${JSON.stringify(r.text)}`);
        if (r.writer.done !== limit <= whole.length) t.fail(`done flag at limit ${limit}`);
      }
    }
  }
  t.pass('limits hold at every split');
});

/** A line Docker split into 16 KiB pieces: every piece has a timestamp, only the last a newline. */
function longLine(n: number): { text: string; pieces: string[] } {
  const text = 'x'.repeat(n - 1) + 'y';
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += DOCKER_LINE_PIECE) pieces.push(text.slice(i, i + DOCKER_LINE_PIECE));
  pieces[pieces.length - 1] += '\n';
  return { text: text + '\n', pieces };
}

t.test('a line Docker split at 16 KiB comes out as one line with one prefix', async (t) => {
  const { text, pieces } = longLine(DOCKER_LINE_PIECE * 2 + 100);
  const frames = Buffer.concat([frame(1, `${TS[0]} before\n`), ...pieces.map((p) => frame(1, `${TS[1]} ${p}`)), frame(1, `${TS[2]} after\n`)]);
  t.equal(framed({ timestamps: false }, [frames]).text, `before\n${text}after\n`);
  t.equal(framed({ timestamps: true }, [frames]).text, `2026-11-29T20:45:37.329060525Z before\n2026-11-29T20:45:37.330000000Z ${text}2026-11-29T20:45:38.000000000Z after\n`);

  const tty = Buffer.from(`${TS[0]} before\n${pieces.map((p) => `${TS[1]} ${p}`).join('')}${TS[2]} after\n`);
  for (const size of [1000, 4096, 16 * 1024, 65536]) {
    const chunks: Buffer[] = [];
    for (let i = 0; i < tty.length; i += size) chunks.push(tty.subarray(i, i + size));
    t.equal(raw({ timestamps: true }, chunks).text, `2026-11-29T20:45:37.329060525Z before\n2026-11-29T20:45:37.330000000Z ${text}2026-11-29T20:45:38.000000000Z after\n`, `TTY in ${size}-byte chunks`);
  }
  const exact = `${'z'.repeat(DOCKER_LINE_PIECE)}`;
  t.equal(raw({ timestamps: true }, [Buffer.from(`${TS[0]} ${exact}${TS[1]} \n`)]).text, `2026-11-29T20:45:37.329060525Z ${exact}\n`, 'a 16 KiB line: Docker logs its newline as a piece of its own');
});

t.test('a continuation is tracked per stream', async (t) => {
  const input = Buffer.concat([frame(1, `${TS[0]} part-`), frame(2, `${TS[1]} err\n`), frame(1, `${TS[2]} rest\n`)]);
  t.equal(framed({ timestamps: true }, [input]).text, '2026-11-29T20:45:37.329060525Z part-2026-11-29T20:45:37.330000000Z err\nrest\n');
});

t.test('bodies are passed on as views, never collected: a huge line costs no memory', async (t) => {
  const line = Buffer.alloc(4 * 1024 * 1024, 'a');
  const input = Buffer.concat([frame(1, Buffer.concat([Buffer.from(`${TS[0]} `), line]))]);
  const writes: Buffer[] = [];
  let written = 0;
  const writer = new LogWriter({ timestamps: false }, (b) => {
    writes.push(b);
    written += b.length;
    return true;
  });
  const parser = new StdcopyParser();
  let fed = 0;
  for (let i = 0; i < input.length; i += 65536) {
    const chunk = input.subarray(i, i + 65536);
    parser.push(chunk, (id, payload) => writer.push(id, payload, parser.atBoundary));
    fed += chunk.length;
    // Everything fed (minus headers and the timestamp) is already out: nothing waits for a newline.
    if (fed > 100 && written < fed - 8 - TS[0].length - 1) t.fail(`held back ${fed - written} bytes`);
  }
  t.equal(written, line.length);
  t.ok(writes.slice(1).every((w) => w.buffer === input.buffer), 'zero copy: views of the input');

  const rawWrites: Buffer[] = [];
  const rawWriter = new LogWriter({ timestamps: false }, (b) => (rawWrites.push(b), true));
  const rawInput = Buffer.concat([Buffer.from(`${TS[0]} `), line]);
  rawWriter.push(1, rawInput);
  t.equal(rawWrites.reduce((n, b) => n + b.length, 0), line.length, 'raw: a line without newline is passed on as it comes');
});

t.test('bytes that are not a Docker timestamp are passed on, not lost', async (t) => {
  t.equal(framed({ timestamps: true }, [Buffer.concat([frame(1, 'no timestamp here\n'), frame(1, `${TS[0]} ok\n`)])]).text, `no timestamp here\n2026-11-29T20:45:37.329060525Z ok\n`);
  t.equal(framed({ timestamps: false }, [frame(1, 'short')]).text, 'short', 'a record that ends inside its "timestamp"');
  t.equal(raw({ timestamps: false }, [Buffer.from(`oops\n${TS[0]} ok\n`)]).text, 'oops\nok\n');
  const long = 'y'.repeat(100);
  t.equal(raw({ timestamps: false }, [Buffer.from(`${long}\n${TS[0]} ok\n`)]).text, `${long}\nok\n`);
});

t.test('a full destination is reported once per check', async (t) => {
  let room = 2;
  const writer = new LogWriter({ timestamps: false }, () => --room > 0);
  writer.push(1, Buffer.from(`${TS[0]} a\n${TS[0]} b\n`));
  t.equal(writer.takeBlocked(), true);
  t.equal(writer.takeBlocked(), false);
});

t.test('records read without timestamps pass through as they are, limitBytes still applied', async (t) => {
  // What a plain read gets from the engine: no timestamps, text that merely looks like one kept.
  const text = `tty1\r\ntty2${TS[0]} \r\n`;
  t.equal(raw({ timestamps: false, stamped: false }, [Buffer.from(text)]).text, text, 'raw (TTY)');
  t.equal(framed({ timestamps: false, stamped: false }, [Buffer.concat([frame(1, 'out1\n'), frame(2, 'err1\n')])]).text, 'out1\nerr1\n', 'framed');
  t.equal(raw({ timestamps: false, stamped: false, limitBytes: 7 }, [Buffer.from('abc\n'), Buffer.from('defgh\n')]).text, 'abc\ndef');
});
