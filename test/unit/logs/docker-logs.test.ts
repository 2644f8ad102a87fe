import { PassThrough, Writable } from 'node:stream';
import type Docker from 'dockerode';
import t from 'tap';
import { StatusError } from '../../../src/api/errors.js';
import { LOG_TURN_BUDGET_MS, containerLogs } from '../../../src/runtime/docker/logs.js';
import type { LogOptions } from '../../../src/streaming/types.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * runtime/docker/logs.ts against a scripted Docker: what it asks for, and how it treats the
 * stream — backpressure, abort, limitBytes, early close. Real Docker is in test/integration.
 */

interface Dialled {
  path: string;
  options: Record<string, unknown>;
}

function fakeDocker(o: { tty?: boolean; inspectError?: Error; dialError?: Error; source?: PassThrough }): { docker: Docker; dialled: Dialled[]; source: PassThrough } {
  const source = o.source ?? new PassThrough();
  const dialled: Dialled[] = [];
  const docker = {
    getContainer: () => ({
      inspect: async () => {
        if (o.inspectError) throw o.inspectError;
        return { Config: { Tty: o.tty === true } };
      },
    }),
    modem: {
      dial: (opts: { path: string; options: Record<string, unknown> }, cb: (err: Error | null, result: unknown) => void) => {
        dialled.push({ path: opts.path, options: { ...opts.options } });
        setImmediate(() => (o.dialError ? cb(o.dialError, null) : cb(null, source)));
      },
    },
  };
  return { docker: docker as unknown as Docker, dialled, source };
}

/** Resolves once the relay reads the scripted Docker stream (it was dialled and handed over). */
const relaying = (source: PassThrough): Promise<true> =>
  waitFor('the relay reading Docker', () => (source.listenerCount('data') + source.listenerCount('readable') > 0 ? true : undefined), 5000, 2);

function frame(stream: number, payload: string): Buffer {
  const h = Buffer.alloc(8);
  h[0] = stream;
  h.writeUInt32BE(Buffer.byteLength(payload), 4);
  return Buffer.concat([h, Buffer.from(payload)]);
}

function collector(): { out: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const out = new Writable({
    write(chunk: Buffer, _e, done) {
      chunks.push(chunk);
      done();
    },
  });
  return { out, text: () => Buffer.concat(chunks).toString() };
}

/** A read that needs Docker's timestamps (`since` the epoch keeps every line): the scripted records carry them. */
const base: LogOptions = { follow: false, timestamps: false, stream: 'All', since: new Date(0) };
/** A plain read: no timestamps asked for, the text passed through. */
const plain: LogOptions = { follow: false, timestamps: false, stream: 'All' };
const TS = '2026-11-29T20:45:37.329060525Z';

t.test('asks Docker for timestamps when the answer needs them, whole-second since, tail and the wanted streams', async (t) => {
  const cases: [LogOptions, Record<string, unknown>][] = [
    [base, { follow: false, stdout: true, stderr: true, timestamps: true }],
    [plain, { follow: false, stdout: true, stderr: true, timestamps: false }],
    [{ ...plain, timestamps: true }, { follow: false, stdout: true, stderr: true, timestamps: true }],
    [{ ...base, follow: true, tailLines: 0 }, { follow: true, stdout: true, stderr: true, timestamps: true, tail: 0 }],
    [{ ...base, stream: 'Stdout', since: new Date('2026-11-29T20:45:37.999Z') }, { follow: false, stdout: true, stderr: false, timestamps: true, since: Date.parse('2026-11-29T20:45:37Z') / 1000 }],
    [{ ...base, stream: 'Stderr' }, { follow: false, stdout: false, stderr: true, timestamps: true }],
  ];
  for (const [opts, query] of cases) {
    const { docker, dialled, source } = fakeDocker({});
    const { out } = collector();
    source.end();
    await containerLogs(docker, 'abc123', opts, out, new AbortController().signal);
    t.same(dialled, [{ path: '/containers/abc123/logs?', options: query }]);
    t.ok(out.writableEnded, 'out ended');
  }
});

t.test('demultiplexes without a TTY, reads raw with one', async (t) => {
  const framed = fakeDocker({});
  const a = collector();
  framed.source.end(Buffer.concat([frame(1, `${TS} out\n`), frame(2, `${TS} err\n`)]));
  await containerLogs(framed.docker, 'c', { ...base, timestamps: true }, a.out, new AbortController().signal);
  t.equal(a.text(), `${TS} out\n${TS} err\n`);

  const tty = fakeDocker({ tty: true });
  const b = collector();
  tty.source.end(`${TS} out\r\n${TS} more\r\n`);
  await containerLogs(tty.docker, 'c', base, b.out, new AbortController().signal);
  t.equal(b.text(), 'out\r\nmore\r\n');
});

t.test('a slow reader pauses the Docker stream; memory stays bounded', async (t) => {
  const { docker, source } = fakeDocker({ source: new PassThrough({ highWaterMark: 1024 }) });
  let stalled = true;
  let pending: (() => void) | undefined;
  let received = 0;
  const out = new Writable({
    highWaterMark: 1024,
    write(chunk: Buffer, _e, done) {
      received += chunk.length;
      // While stalled, a write completes only when the reader catches up.
      if (stalled) pending = done;
      else done();
    },
  });
  const body = `${'z'.repeat(200)}\n`;
  const line = frame(1, `${TS} ${body}`);
  const total = 2000;
  let produced = 0;
  const produce = () => {
    while (produced < total) {
      produced++;
      if (!source.write(line)) return;
    }
    source.end();
  };
  source.on('drain', produce);
  produce();
  const done = containerLogs(docker, 'c', base, out, new AbortController().signal);
  await waitFor('the Docker stream paused', () => (source.isPaused() ? true : undefined), 5000, 5);
  t.ok(produced * line.length < 16 * 1024, `Docker could only hand over ${produced * line.length} bytes while nobody read`);
  stalled = false;
  pending?.();
  await done;
  t.equal(received, total * body.length, 'then every line arrived');
});

t.test('limitBytes stops reading Docker once reached', async (t) => {
  const { docker, source } = fakeDocker({});
  const { out, text } = collector();
  source.write(Buffer.concat([frame(1, `${TS} 0123456789\n`), frame(1, `${TS} abcdefghij\n`)]));
  await containerLogs(docker, 'c', { ...base, follow: true, limitBytes: 15 }, out, new AbortController().signal);
  t.equal(text(), '0123456789\nabcd');
  t.ok(source.destroyed, 'the Docker stream was closed');
  t.ok(out.writableEnded);
});

t.test('an abort (the client left) closes the Docker stream and resolves', async (t) => {
  const { docker, source } = fakeDocker({});
  const { out, text } = collector();
  const abort = new AbortController();
  source.write(frame(1, `${TS} first\n`));
  const done = containerLogs(docker, 'c', { ...base, follow: true }, out, abort.signal);
  await waitFor('the first line relayed', () => (text() === 'first\n' ? true : undefined), 5000, 5);
  abort.abort();
  await done;
  t.equal(text(), 'first\n');
  t.ok(source.destroyed);

  const early = fakeDocker({});
  const aborted = new AbortController();
  aborted.abort();
  const c = collector();
  await containerLogs(early.docker, 'c', base, c.out, aborted.signal);
  t.ok(c.out.writableEnded, 'aborted before starting: nothing read, out ended');
});

t.test('a destroyed destination stops the read too', async (t) => {
  const { docker, source } = fakeDocker({});
  const { out } = collector();
  const done = containerLogs(docker, 'c', { ...base, follow: true }, out, new AbortController().signal);
  await relaying(source);
  out.destroy();
  await done;
  t.ok(source.destroyed);
});

t.test('Docker errors become statuses; an early close is an error', async (t) => {
  const gone = Object.assign(new Error('(HTTP code 404) no such container'), { statusCode: 404 });
  const a = fakeDocker({ inspectError: gone });
  const err404 = await containerLogs(a.docker, 'c', base, collector().out, new AbortController().signal).catch((e: unknown) => e);
  t.type(err404, StatusError);
  t.equal((err404 as StatusError).code, 404);

  const b = fakeDocker({ dialError: new Error('connect ECONNREFUSED') });
  const err500 = await containerLogs(b.docker, 'c', base, collector().out, new AbortController().signal).catch((e: unknown) => e);
  t.equal((err500 as StatusError).code, 500);
  t.match((err500 as StatusError).message, /ECONNREFUSED/);

  const c = fakeDocker({});
  const out = collector().out;
  const done = containerLogs(c.docker, 'c', { ...base, follow: true }, out, new AbortController().signal).catch((e: unknown) => e);
  await relaying(c.source);
  c.source.destroy();
  t.match(await done, /closed the log stream early/);
  t.notOk(out.writableEnded, 'out is left to the caller on an error');

  const d = fakeDocker({});
  d.source.end(frame(9, 'bad'));
  t.match(await containerLogs(d.docker, 'c', base, collector().out, new AbortController().signal).catch((e: unknown) => e), /invalid Docker stream id 9/);
});

t.test('many streams with data ready share the event loop: a timer still runs every few milliseconds', async (t) => {
  // 40 streams, each with 4 MB of records already buffered (a follower's catch-up read of a big
  // log), into destinations that take everything: only the turn budget makes the work yield.
  const record = frame(1, `${TS} ${'y'.repeat(99)}\n`);
  const chunk = Buffer.concat(Array.from({ length: Math.floor(65536 / record.length) }, () => record));
  const runs: Promise<void>[] = [];
  let bytes = 0;
  for (let i = 0; i < 40; i++) {
    const { docker, source } = fakeDocker({ source: new PassThrough({ highWaterMark: 8 * 1024 * 1024 }) });
    for (let n = 0; n < 64; n++) source.write(chunk);
    source.end();
    const out = new Writable({
      write(c: Buffer, _e, done) {
        bytes += c.length;
        done();
      },
    });
    runs.push(containerLogs(docker, `c${i}`, base, out, new AbortController().signal));
  }
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 1);
  await Promise.all(runs);
  clearInterval(timer);
  worst = Math.max(worst, performance.now() - last);
  t.equal(bytes, 40 * 64 * Math.floor(65536 / record.length) * 100, 'every line arrived');
  // A generous bound (a loaded CI machine stalls any process for a few hundred ms); without the
  // per-turn budget the timer waited 2.1–2.3 s here.
  t.ok(worst < 1000, `the longest the timer waited: ${worst.toFixed(1)} ms (the budget is ${LOG_TURN_BUDGET_MS} ms a turn)`);
});
