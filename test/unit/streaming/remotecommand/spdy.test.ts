import { pino } from 'pino';
import t from 'tap';
import { serveSpdyRemoteCommand } from '../../../../src/streaming/remotecommand/spdy.js';
import { SpdyConnection } from '../../../../src/streaming/spdy/index.js';
import type { CommandResult, PendingStreamIO, StreamOptions } from '../../../../src/streaming/types.js';
import { waitFor } from '../../../helpers/wait.js';
import { TestClient, duplexPair, finOf, nextTurn, within, type Received } from '../spdy/fixtures/helpers.js';

/**
 * The order of a SPDY exec (src/streaming/remotecommand/spdy.ts): the runtime gets the command
 * when the session starts, and its streams only once the client has opened every one it asked
 * for and each has its SYN_REPLY (the kubelet's `waitForStreams`); a client that leaves or times
 * out first never gets them. In-memory socket pair, no network.
 */

const log = pino({ level: 'silent' });
const OUT: StreamOptions = { stdin: false, stdout: true, stderr: true, tty: false };

/** What the fake runtime saw, in order. */
interface Trace {
  readonly events: string[];
  pending: PendingStreamIO | undefined;
}

function setup(options: StreamOptions = OUT, creationTimeoutMs = 5000) {
  const [serverSock, clientSock] = duplexPair();
  const conn = new SpdyConnection(serverSock, {});
  const trace: Trace = { events: [], pending: undefined };
  const run = async (pending: PendingStreamIO): Promise<CommandResult> => {
    trace.pending = pending;
    trace.events.push('run');
    const io = await pending.io.catch((err: unknown) => {
      trace.events.push(`abandoned: ${(err as Error).message}`);
      throw err;
    });
    trace.events.push('started');
    io.stdout?.write('hi\n');
    return { kind: 'exited', exitCode: 0 };
  };
  const session = serveSpdyRemoteCommand(conn, { version: 'v4', options, kind: 'exec', command: ['echo', 'hi'], run, log, creationTimeoutMs, closeWaitMs: 200 });
  const client = new TestClient(clientSock);
  t.teardown(() => {
    conn.close();
    client.close();
  });
  return { session, client, trace };
}

const replyTo = (id: number) => (f: Received) => f.type === 'SYN_REPLY' && f.streamId === id;

t.test('the runtime gets the command at once and its streams once every stream has its reply', async (t) => {
  const { session, client, trace } = setup();
  t.same(trace.events, ['run'], 'handed to the runtime before any stream');
  t.same(trace.pending?.options, OUT, 'with the streams asked for');
  const opened: number[] = [];
  for (const type of ['error', 'stdout']) {
    const id = await client.open([['streamtype', type]]);
    opened.push(id);
    await client.waitFor(replyTo(id));
    await nextTurn();
    t.same(trace.events, ['run'], `not started after ${type}`);
  }
  const stderr = await client.open([['streamtype', 'stderr']]);
  await client.waitFor(replyTo(stderr));
  const [error, stdout] = opened as [number, number];
  await client.waitFor(finOf(stdout));
  t.same(trace.events, ['run', 'started']);
  t.equal(client.dataOf(stdout).bytes.toString(), 'hi\n');
  await client.waitFor(finOf(error));
  t.equal(client.dataOf(error).bytes.toString(), '{"metadata":{},"status":"Success"}', 'v4 status');
  const replied = client.received.filter((f) => f.type === 'SYN_REPLY').map((f) => ('streamId' in f ? f.streamId : 0));
  const firstData = client.received.findIndex((f) => f.type === 'DATA' && f.streamId === stdout);
  t.ok(client.received.slice(0, firstData).filter((f) => f.type === 'SYN_REPLY').length === 3, 'every SYN_REPLY before the first output');
  t.same(replied, [error, stdout, stderr]);
  client.socket.destroy();
  await within(session, 5000, 'the session to end');
});

t.test('a client that leaves before its streams are complete: the command never starts', async (t) => {
  const { session, client, trace } = setup();
  const id = await client.open([['streamtype', 'error']]);
  await client.waitFor(replyTo(id));
  // The connection drops (the creation timeout, 5 s here, would take longer).
  client.socket.destroy();
  await within(session, 1000, 'the session to end');
  await waitFor('the runtime to let go', () => (trace.events.length >= 2 ? true : undefined), 5000, 1);
  t.same(trace.events, ['run', 'abandoned: client disconnected before its streams were complete']);
});

t.test('streams not complete within the creation timeout: closed, never started', async (t) => {
  const { session, client, trace } = setup({ stdin: true, stdout: true, stderr: false, tty: false }, 50);
  const id = await client.open([['streamtype', 'error']]);
  await client.waitFor(replyTo(id));
  await within(session, 5000, 'the session to end');
  await waitFor('the runtime to let go', () => (trace.events.length >= 2 ? true : undefined), 5000, 1);
  t.same(trace.events, ['run', 'abandoned: client disconnected before its streams were complete']);
});

t.test('stdin is a stream asked for: the command waits for it too', async (t) => {
  const { client, trace } = setup({ stdin: true, stdout: true, stderr: false, tty: false });
  for (const type of ['error', 'stdin']) {
    const id = await client.open([['streamtype', type]]);
    await client.waitFor(replyTo(id));
  }
  await nextTurn();
  t.same(trace.events, ['run'], 'stdout still missing');
  const stdout = await client.open([['streamtype', 'stdout']]);
  await client.waitFor(finOf(stdout));
  t.same(trace.events, ['run', 'started']);
});
