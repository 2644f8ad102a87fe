import { Duplex, PassThrough } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { RemoteCommand, whenConnected, type CommandTransport } from '../../../../src/streaming/remotecommand/session.js';
import type { CommandResult, PendingStreamIO, StreamIO } from '../../../../src/streaming/types.js';

const log = pino({ level: 'silent' });
const spec = (run: (io: StreamIO) => Promise<CommandResult>) =>
  ({ version: 'v4', options: { stdin: false, stdout: true, stderr: false, tty: false }, kind: 'exec', command: ['true'], run: whenConnected(run), log }) as const;

/** A SPDY-like output: a Duplex whose readable side (the client's) never ends. */
function output(): { stream: Duplex; written: Buffer[] } {
  const written: Buffer[] = [];
  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, cb) {
      written.push(chunk);
      cb();
    },
  });
  return { stream, written };
}

t.test('the core ends and flushes the outputs, then hands the status to finish', async (t) => {
  const out = output();
  const order: string[] = [];
  const transport: CommandTransport = {
    stdin: undefined,
    stdout: out.stream,
    stderr: undefined,
    gone: new Promise(() => undefined),
    endInput: () => order.push('endInput'),
    finish: async (payload) => {
      order.push(`finish ${payload}`);
    },
  };
  out.stream.once('finish', () => order.push('stdout finished'));
  await new RemoteCommand(
    spec(async (io) => {
      io.stdout?.write('hello');
      return { kind: 'exited', exitCode: 0 };
    }),
  ).serve(transport);
  t.same(order, ['endInput', 'stdout finished', 'finish {"metadata":{},"status":"Success"}']);
  t.equal(Buffer.concat(out.written).toString(), 'hello');
});

t.test('a client gone mid-run aborts the runtime, ends input, and gets no status', async (t) => {
  let leave!: () => void;
  const gone = new Promise<void>((resolve) => (leave = resolve));
  let finished = false;
  let inputEnded = false;
  const stdin = new PassThrough();
  const serving = new RemoteCommand(
    spec(async (io) => {
      await new Promise((resolve) => io.signal.addEventListener('abort', resolve));
      return { kind: 'exited', exitCode: 0 };
    }),
  ).serve({
    stdin,
    stdout: output().stream,
    stderr: undefined,
    gone,
    endInput: () => (inputEnded = true),
    finish: async () => {
      finished = true;
    },
  });
  leave();
  await serving;
  t.ok(inputEnded);
  t.notOk(finished);
});

t.test('prepare hands the runtime the command before the streams; serve completes them', async (t) => {
  const seen: string[] = [];
  let pending: PendingStreamIO | undefined;
  const command = new RemoteCommand({
    ...spec(async () => ({ kind: 'exited', exitCode: 0 })),
    run: async (p) => {
      pending = p;
      seen.push('run');
      const io = await p.io;
      seen.push('streams');
      io.stdout?.write('ok');
      return { kind: 'exited', exitCode: 0 };
    },
  });
  command.prepare();
  command.prepare();
  t.same(seen, ['run'], 'called once, at once');
  t.same(pending?.options, { stdin: false, stdout: true, stderr: false, tty: false });
  await new Promise((resolve) => setImmediate(resolve));
  t.same(seen, ['run'], 'the streams wait for serve');
  const out = output();
  await command.serve({ stdin: undefined, stdout: out.stream, stderr: undefined, gone: new Promise(() => undefined), endInput: () => undefined, finish: async () => undefined });
  t.same(seen, ['run', 'streams']);
  t.equal(Buffer.concat(out.written).toString(), 'ok');
});

t.test('abandon: the streams never come, the signal aborts, the failure is not unhandled', async (t) => {
  let signal: AbortSignal | undefined;
  const command = new RemoteCommand({
    ...spec(async () => ({ kind: 'exited', exitCode: 0 })),
    // A runtime that never reads `io` (a create that failed first) must not leave a rejection unhandled.
    run: async () => {
      throw new Error('create failed');
    },
  });
  command.prepare();
  await command.abandon();
  const waiting = new RemoteCommand({
    ...spec(async () => ({ kind: 'exited', exitCode: 0 })),
    run: async (p) => {
      const io = await p.io;
      signal = io.signal;
      return { kind: 'exited', exitCode: 0 };
    },
  });
  waiting.prepare();
  await waiting.abandon();
  t.equal(signal, undefined, 'the runtime never got the streams');
  await new RemoteCommand(spec(async () => ({ kind: 'exited', exitCode: 0 }))).abandon();
  t.pass('abandon before prepare is a no-op');
});
