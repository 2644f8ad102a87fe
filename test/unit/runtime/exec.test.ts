import { Duplex, PassThrough, Readable, Writable } from 'node:stream';
import type Docker from 'dockerode';
import { pino } from 'pino';
import t from 'tap';
import { execInContainer } from '../../../src/runtime/docker/exec.js';
import type { CommandResult, PendingStreamIO, StreamIO, StreamOptions } from '../../../src/streaming/types.js';
import { waitFor } from '../../helpers/wait.js';

/**
 * The Docker side of nodelet's exec (src/runtime/docker/exec.ts) against a fake engine: when the
 * exec is created and started relative to the client's streams, and how client stdin reaches the
 * hijacked connection. No socket, no Docker.
 */

const log = pino({ level: 'silent' });
const OPTS = { disconnectGraceMs: 60_000, log };

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: Error): void;
}
function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Docker's end of the hijacked connection: records every write (a writev is one), holds writes while `stalled`. */
class EngineSocket extends Duplex {
  /** One entry per write reaching the engine: the number of client chunks it carried. */
  readonly writes: number[] = [];
  readonly bytes: Buffer[] = [];
  stalled = false;
  ended = false;
  #held: (() => void)[] = [];

  override _read(): void {}

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.#take([chunk], cb);
  }

  override _writev(chunks: { chunk: Buffer }[], cb: (err?: Error | null) => void): void {
    this.#take(
      chunks.map((c) => c.chunk),
      cb,
    );
  }

  override _final(cb: (err?: Error | null) => void): void {
    this.ended = true;
    cb();
  }

  #take(chunks: Buffer[], cb: () => void): void {
    this.writes.push(chunks.length);
    this.bytes.push(...chunks);
    if (this.stalled) this.#held.push(cb);
    else cb();
  }

  /** The engine takes what it held, and everything from now on. */
  flow(): void {
    this.stalled = false;
    for (const cb of this.#held.splice(0)) cb();
  }

  /** The process wrote `text` on stdout (one stdcopy frame), then exited. */
  exit(text: string): void {
    const header = Buffer.alloc(8);
    header[0] = 1;
    header.writeUInt32BE(Buffer.byteLength(text), 4);
    this.push(Buffer.concat([header, Buffer.from(text)]));
    this.push(null);
  }
}

/** A fake dockerode: `calls` in order; `create` settles when the test says so. */
function fakeDocker(create: Promise<void> = Promise.resolve()) {
  const calls: string[] = [];
  const socket = new EngineSocket();
  const exec = {
    id: 'exec-1',
    start: async (opts: { stdin: boolean }) => {
      calls.push(`start stdin=${String(opts.stdin)}`);
      return socket;
    },
    resize: async () => undefined,
    inspect: async () => ({ Running: false, ExitCode: 0, Pid: 0 }),
  };
  const docker = {
    getContainer: (id: string) => ({
      exec: async (config: { AttachStdin: boolean; AttachStdout: boolean; AttachStderr: boolean; Tty: boolean }) => {
        calls.push(`create ${id} in=${String(config.AttachStdin)} out=${String(config.AttachStdout)} err=${String(config.AttachStderr)} tty=${String(config.Tty)}`);
        await create;
        calls.push('created');
        return exec;
      },
    }),
  } as unknown as Docker;
  return { docker, calls, socket };
}

const OUT: StreamOptions = { stdin: false, stdout: true, stderr: true, tty: false };

function collector(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      chunks.push(chunk);
      cb();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString() };
}

function streamIO(parts: Partial<StreamIO> & { signal: AbortSignal }): StreamIO {
  return { stdin: undefined, stdout: undefined, stderr: undefined, tty: false, resizes: undefined, ...parts };
}

const settled = (p: Promise<unknown>) => p.then(
  () => 'resolved',
  (err: unknown) => `rejected: ${(err as Error).message}`,
);
/** Lets every queued callback and promise reaction run (the fake engine answers within a turn). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

t.test('the exec is created at once and started only when the client streams are all there', async (t) => {
  const { docker, calls, socket } = fakeDocker();
  const streams = deferred<StreamIO>();
  const pending: PendingStreamIO = { options: OUT, io: streams.promise };
  const run = execInContainer(docker, 'c1', ['echo', 'x'], pending, OPTS);
  await turn();
  await turn();
  t.same(calls, ['create c1 in=false out=true err=true tty=false', 'created'], 'created while the streams are opened, not started');

  const out = collector();
  streams.resolve(streamIO({ stdout: out.stream, stderr: collector().stream, signal: new AbortController().signal }));
  await waitFor('the start', () => (calls.length === 3 ? true : undefined), 5000, 1);
  t.same(calls.slice(2), ['start stdin=false']);
  socket.exit('x\n');
  const result: CommandResult = await run;
  t.same(result, { kind: 'exited', exitCode: 0 });
  t.equal(out.text(), 'x\n', 'output relayed');
});

t.test('a create slower than the streams: the start follows the create', async (t) => {
  const create = deferred<void>();
  const { docker, calls, socket } = fakeDocker(create.promise);
  const run = execInContainer(docker, 'c1', ['true'], { options: OUT, io: Promise.resolve(streamIO({ stdout: collector().stream, signal: new AbortController().signal })) }, OPTS);
  await turn();
  t.same(calls, ['create c1 in=false out=true err=true tty=false'], 'nothing started before the exec exists');
  create.resolve();
  await waitFor('the start', () => (calls.includes('start stdin=false') ? true : undefined), 5000, 1);
  socket.exit('');
  t.same(await run, { kind: 'exited', exitCode: 0 });
});

t.test('a client that leaves before its streams are complete never gets the exec started', async (t) => {
  const { docker, calls } = fakeDocker();
  const streams = deferred<StreamIO>();
  const run = execInContainer(docker, 'c1', ['sleep', '9'], { options: OUT, io: streams.promise }, OPTS);
  await turn();
  streams.reject(new Error('client disconnected before its streams were complete'));
  t.equal(await settled(run), 'rejected: client disconnected before its streams were complete');
  await turn();
  t.same(calls, ['create c1 in=false out=true err=true tty=false', 'created'], 'created, never started');
});

t.test('a client gone while the create was in flight: no start', async (t) => {
  const create = deferred<void>();
  const { docker, calls } = fakeDocker(create.promise);
  const abort = new AbortController();
  const run = execInContainer(docker, 'c1', ['true'], { options: OUT, io: Promise.resolve(streamIO({ stdout: collector().stream, signal: abort.signal })) }, OPTS);
  await turn();
  abort.abort();
  create.resolve();
  t.equal(await settled(run), 'rejected: client disconnected');
  t.notOk(calls.some((c) => c.startsWith('start')), 'never started');
});

t.test('a failed create is the run\'s failure, whenever the streams come', async (t) => {
  const { docker, calls } = fakeDocker(Promise.reject(new Error('(HTTP code 409) container is not running')));
  const run = execInContainer(docker, 'c1', ['true'], { options: OUT, io: new Promise<StreamIO>(() => undefined) }, OPTS);
  t.equal(await settled(run), 'rejected: (HTTP code 409) container is not running', 'rejects without waiting for the streams');
  t.same(calls, ['create c1 in=false out=true err=true tty=false']);
});

t.test('a complete bundle (probes, /run) is created and started at once; stdin and TTY map to the create', async (t) => {
  const { docker, calls, socket } = fakeDocker();
  const stdin = new PassThrough();
  stdin.end();
  const run = execInContainer(docker, 'c2', ['sh'], streamIO({ stdin, stdout: collector().stream, stderr: collector().stream, tty: true, signal: new AbortController().signal }), OPTS);
  await waitFor('the start', () => (calls.includes('start stdin=true') ? true : undefined), 5000, 1);
  t.same(calls, ['create c2 in=true out=true err=false tty=true', 'created', 'start stdin=true'], 'no stderr with a TTY');
  socket.push(null);
  t.same(await run, { kind: 'exited', exitCode: 0 });
});

/** Starts an exec with client stdin; resolves once nodelet reads it. */
async function withStdin() {
  const { docker, calls, socket } = fakeDocker();
  const stdin = new Readable({ read() {} });
  const run = execInContainer(docker, 'c1', ['cat'], streamIO({ stdin, signal: new AbortController().signal }), OPTS);
  await waitFor('the start', () => (calls.includes('start stdin=true') ? true : undefined), 5000, 1);
  await waitFor('stdin flowing', () => (stdin.readableFlowing ? true : undefined), 5000, 1);
  return { stdin, socket, run };
}

/** `n` messages of `size` bytes, each filled with its own index. */
const messages = (from: number, n: number, size: number): Buffer[] => Array.from({ length: n }, (_, i) => Buffer.alloc(size, (from + i) % 251));

t.test('stdin: the messages of one read reach Docker as one write, bytes and order exact', async (t) => {
  const { stdin, socket, run } = await withStdin();
  const first = messages(0, 3, 32 * 1024);
  // A transport parses one socket read at once: its messages are pushed back to back.
  for (const m of first) stdin.push(m);
  await turn();
  t.same(socket.writes, [3], 'three messages, one writev');
  const second = [Buffer.from('tail')];
  stdin.push(second[0]);
  await turn();
  t.same(socket.writes, [3, 1], 'a later read is a write of its own');
  stdin.push(null);
  await waitFor('stdin half-closed to Docker', () => (socket.ended ? true : undefined), 5000, 1);
  t.ok(Buffer.concat(socket.bytes).equals(Buffer.concat([...first, ...second])), 'every byte, in order');
  socket.exit('');
  t.same(await run, { kind: 'exited', exitCode: 0 });
});

t.test('stdin: EOF in the same tick as data flushes the data, then half-closes', async (t) => {
  const { stdin, socket, run } = await withStdin();
  const data = messages(7, 2, 1000);
  for (const m of data) stdin.push(m);
  stdin.push(null);
  await waitFor('stdin half-closed to Docker', () => (socket.ended ? true : undefined), 5000, 1);
  t.ok(Buffer.concat(socket.bytes).equals(Buffer.concat(data)), 'every byte before the half-close');
  socket.exit('');
  t.same(await run, { kind: 'exited', exitCode: 0 });
});

t.test('stdin: a Docker that stops taking input pauses the client past 256 KiB; it resumes on drain', async (t) => {
  const { stdin, socket, run } = await withStdin();
  socket.stalled = true;
  const sent: Buffer[] = [];
  // One 64 KiB read (two messages) per turn until the relay pauses the client.
  for (let i = 0; i < 40 && !stdin.isPaused(); i++) {
    const read = messages(2 * i, 2, 32 * 1024);
    sent.push(...read);
    for (const m of read) stdin.push(m);
    await turn();
  }
  t.ok(stdin.isPaused(), 'client paused');
  const backlog = sent.reduce((n, b) => n + b.length, 0);
  t.ok(backlog > 256 * 1024 && backlog <= 256 * 1024 + 64 * 1024, `paused just past the bound (${backlog} B handed over)`);
  t.ok(socket.writes.every((n) => n === 2), 'each read one write, stalled or not');
  socket.flow();
  await waitFor('client resumed', () => (stdin.isPaused() ? undefined : true), 5000, 1);
  const more = messages(99, 2, 32 * 1024);
  for (const m of more) stdin.push(m);
  stdin.push(null);
  await waitFor('stdin half-closed to Docker', () => (socket.ended ? true : undefined), 5000, 1);
  t.ok(Buffer.concat(socket.bytes).equals(Buffer.concat([...sent, ...more])), 'every byte, in order');
  socket.exit('');
  t.same(await run, { kind: 'exited', exitCode: 0 });
});
