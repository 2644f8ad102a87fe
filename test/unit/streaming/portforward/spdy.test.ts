import type { Duplex } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import { ForwardLimiter } from '../../../../src/streaming/portforward/limits.js';
import { serveSpdyPortForward, type ForwardFn } from '../../../../src/streaming/portforward/spdy.js';
import { RstStatus, SpdyConnection } from '../../../../src/streaming/spdy/index.js';
import { TestClient, duplexPair, within, type Received } from '../spdy/fixtures/helpers.js';

const log = pino({ level: 'silent' });

/** A forward that echoes what it reads, upper-cased, until the client's FIN; port 81 is "closed". */
const echo: ForwardFn = async (port, stream) => {
  if (port === 81) throw new Error('error forwarding port 81 to pod sb, uid : connection refused');
  // Not `for await`: its iterator destroys the stream at the end, which would reset it.
  await new Promise<void>((resolve) => {
    stream.on('data', (chunk: Buffer) => stream.write(Buffer.from(String(chunk).toUpperCase())));
    stream.on('end', () => stream.end(resolve));
  });
};

function setup(forward: ForwardFn = echo, creationTimeoutMs = 5000) {
  const [serverSock, clientSock] = duplexPair();
  const conn = new SpdyConnection(serverSock, {});
  const session = serveSpdyPortForward(conn, { forward, creationTimeoutMs, log, closeGraceMs: 200 });
  const client = new TestClient(clientSock);
  t.teardown(() => {
    conn.close();
    client.close();
  });
  return { conn, session, client, clientSock };
}

const is =
  (type: Received['type'], streamId?: number) =>
  (f: Received): boolean =>
    f.type === type && (streamId === undefined || ('streamId' in f && f.streamId === streamId));
const finOf = (streamId: number) => (f: Received) => f.type === 'DATA' && f.streamId === streamId && f.fin;

/** Opens a kubectl-style pair (error first, FINed right after its reply; then data). */
async function openPair(client: TestClient, port: string, requestId: string | undefined): Promise<{ error: number; data: number }> {
  const extra = (type: string): [string, string][] => [['streamtype', type], ['port', port], ...(requestId === undefined ? [] : [['requestid', requestId] as [string, string]])];
  const error = await client.open(extra('error'));
  await client.waitFor(is('SYN_REPLY', error));
  client.data(error, '', true);
  const data = await client.open(extra('data'));
  await client.waitFor(is('SYN_REPLY', data));
  return { error, data };
}

t.test('a pair is forwarded both ways with half-close; the error stream ends empty', async (t) => {
  const { client } = setup();
  const { error, data } = await openPair(client, '80', '0');
  client.data(data, 'hello ');
  client.data(data, 'world', true);
  await client.waitFor(finOf(data));
  t.equal(client.dataOf(data).bytes.toString(), 'HELLO WORLD');
  await client.waitFor(finOf(error));
  t.equal(client.dataOf(error).bytes.length, 0, 'no error text');
});

t.test('a failing pair reports on its own error stream; other pairs of the session carry on', async (t) => {
  const { client } = setup();
  const good = await openPair(client, '80', '0');
  const bad = await openPair(client, '81', '1');
  await client.waitFor(finOf(bad.error));
  t.equal(client.dataOf(bad.error).bytes.toString(), 'error forwarding port 81 to pod sb, uid : connection refused');
  await client.waitFor(finOf(bad.data));
  t.equal(client.dataOf(bad.data).bytes.length, 0);
  // The client may still send on the failed pair: drained, never stalling the session.
  client.data(bad.data, Buffer.alloc(2 * 1024 * 1024));
  client.data(good.data, 'still here', true);
  await client.waitFor(finOf(good.data));
  t.equal(client.dataOf(good.data).bytes.toString(), 'STILL HERE');
  const later = await openPair(client, '80', '2');
  client.data(later.data, 'again', true);
  await client.waitFor(finOf(later.data));
  t.equal(client.dataOf(later.data).bytes.toString(), 'AGAIN');
});

t.test('streams with a bad port or stream type are reset at creation; the session continues', async (t) => {
  const { client } = setup();
  const cases: [string, string][][] = [
    [['streamtype', 'data']],
    [['streamtype', 'data'], ['port', '0']],
    [['streamtype', 'data'], ['port', '65536']],
    [['streamtype', 'data'], ['port', 'abc']],
    [['streamtype', 'data'], ['port', '-1']],
    [['port', '80']],
    [['streamtype', 'stdin'], ['port', '80']],
  ];
  for (const headers of cases) {
    const id = await client.open(headers);
    const rst = await client.waitFor(is('RST_STREAM', id));
    t.match(rst, { status: RstStatus.CANCEL }, JSON.stringify(headers));
    t.notOk(client.received.some(is('SYN_REPLY', id)), 'and never answered');
  }
  const { data } = await openPair(client, '80', '0');
  client.data(data, 'ok', true);
  await client.waitFor(finOf(data));
  t.equal(client.dataOf(data).bytes.toString(), 'OK');
});

t.test('without requestID, error stream n pairs with data stream n+2 (pre-1.6 clients)', async (t) => {
  const { client } = setup();
  const { error, data } = await openPair(client, '80', undefined);
  t.equal(data, error + 2);
  client.data(data, 'legacy', true);
  await client.waitFor(finOf(data));
  t.equal(client.dataOf(data).bytes.toString(), 'LEGACY');
});

t.test('a duplicate stream is reset and reported on the pair\'s error stream', async (t) => {
  const { client } = setup();
  const error = await client.open([['streamtype', 'error'], ['port', '80'], ['requestid', '4']]);
  const dup = await client.open([['streamtype', 'error'], ['port', '80'], ['requestid', '4']]);
  await client.waitFor(is('RST_STREAM', dup));
  const data = await client.open([['streamtype', 'data'], ['port', '80'], ['requestid', '4']]);
  client.data(data, 'x', true);
  await client.waitFor(finOf(error));
  t.equal(client.dataOf(error).bytes.toString(), 'error processing stream for request 4: error stream already assigned');
  t.equal(client.dataOf(data).bytes.toString(), 'X', 'the pair itself still works');
});

t.test('a pair left incomplete times out: the message on its error stream, a lone data stream reset', async (t) => {
  const { client } = setup(echo, 50);
  const error = await client.open([['streamtype', 'error'], ['port', '80'], ['requestid', '5']]);
  const data = await client.open([['streamtype', 'data'], ['port', '80'], ['requestid', '6']]);
  await client.waitFor(finOf(error));
  t.equal(client.dataOf(error).bytes.toString(), '(request=5) timed out waiting for streams');
  await client.waitFor(is('RST_STREAM', data));
});

t.test('a chatty error stream never stalls the session', async (t) => {
  const { client } = setup();
  const { error, data } = await openPair(client, '80', '0');
  const other = await client.open([['streamtype', 'error'], ['port', '80'], ['requestid', '1']]);
  // More than the 1 MiB receive window, on an error stream nobody "reads".
  for (let i = 0; i < 40; i++) client.data(other, Buffer.alloc(64 * 1024));
  client.data(data, 'through', true);
  await client.waitFor(finOf(data), 5000);
  t.equal(client.dataOf(data).bytes.toString(), 'THROUGH');
  await client.waitFor(finOf(error));
});

t.test('close() aborts the forwards, sends GOAWAY and ends the session', async (t) => {
  let signal: AbortSignal | undefined;
  const hang: ForwardFn = (_port, stream: Duplex, s) =>
    new Promise<void>((resolve) => {
      signal = s;
      stream.resume();
      s.addEventListener('abort', () => resolve());
    });
  const { client, session } = setup(hang);
  const { data, error } = await openPair(client, '80', '0');
  const lone = await client.open([['streamtype', 'error'], ['port', '80'], ['requestid', '1']]);
  await client.waitFor(is('SYN_REPLY', lone));
  session.close('pod "web" is no longer running');
  session.close('twice is harmless');
  await client.waitFor(is('GOAWAY'));
  t.equal(signal?.aborted, true);
  await client.waitFor(finOf(data));
  await client.waitFor(finOf(error));
  t.equal(client.dataOf(error).bytes.length, 0, 'an aborted forward is no error');
  await client.waitFor(finOf(lone));
  t.equal(client.dataOf(lone).bytes.toString(), 'pod "web" is no longer running', 'a pending pair learns why');
  // kubectl answers each FIN with its own; the session then ends without waiting for the grace timer.
  client.data(data, '', true);
  client.data(lone, '', true);
  await session.done;
});

t.test('the client hanging up aborts the forwards and settles the session', async (t) => {
  let signal: AbortSignal | undefined;
  let started!: () => void;
  const forwarding = new Promise<void>((resolve) => (started = resolve));
  const hang: ForwardFn = (_p, stream, s) =>
    new Promise<void>((resolve) => {
      signal = s;
      started();
      stream.resume();
      s.addEventListener('abort', () => resolve());
    });
  const { client, clientSock, session } = setup(hang);
  await openPair(client, '80', '0');
  await within(forwarding, 5000, 'the forward to start');
  clientSock.destroy();
  await session.done;
  t.equal(signal?.aborted, true);
});

/** A forward that holds its connection until the client's FIN or the abort, like a silent TCP peer. */
function holding(): { forward: ForwardFn; open: () => number } {
  let open = 0;
  const forward: ForwardFn = (_port, stream, signal) =>
    new Promise<void>((resolve) => {
      open++;
      const done = () => {
        open--;
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      stream.on('end', done);
      stream.resume();
    });
  return { forward, open: () => open };
}

function setupWith(opts: Partial<Parameters<typeof serveSpdyPortForward>[1]> & { forward: ForwardFn }) {
  const [serverSock, clientSock] = duplexPair();
  const conn = new SpdyConnection(serverSock, {});
  const session = serveSpdyPortForward(conn, { creationTimeoutMs: 5000, log, closeGraceMs: 200, ...opts });
  const client = new TestClient(clientSock);
  t.teardown(() => {
    conn.close();
    client.close();
  });
  return { conn, session, client };
}

t.test('per-session cap: pairs beyond maxConnections are refused on their error stream; a freed slot is reused', async (t) => {
  const h = holding();
  const { client } = setupWith({ forward: h.forward, maxConnections: 3 });
  const held = [];
  for (let i = 0; i < 3; i++) held.push(await openPair(client, '80', String(i)));
  const extra = await openPair(client, '80', '3');
  await client.waitFor(finOf(extra.error));
  t.equal(client.dataOf(extra.error).bytes.toString(), 'too many forwarded connections in this port-forward session (limit 3); close some and retry');
  await client.waitFor(finOf(extra.data));
  t.equal(client.dataOf(extra.data).bytes.length, 0, 'its data stream FINed empty (a reset would hide the reason from kubectl)');
  t.notOk(client.received.some(is('RST_STREAM')), 'nothing reset');
  t.equal(h.open(), 3, 'nothing started for the refused pair');
  // One held connection ends: its slot is free again.
  client.data(held[0]!.data, '', true);
  await client.waitFor(finOf(held[0]!.data));
  const again = await openPair(client, '80', '4');
  client.data(again.data, '', true);
  await client.waitFor(finOf(again.data));
  t.equal(client.dataOf(again.error).bytes.length, 0, 'the next pair is forwarded');
});

t.test('node-wide cap: one limiter shared by sessions; refused pairs never reach the runtime', async (t) => {
  const h = holding();
  const limiter = new ForwardLimiter(4);
  const a = setupWith({ forward: h.forward, maxConnections: 10, limiter });
  const b = setupWith({ forward: h.forward, maxConnections: 10, limiter });
  for (let i = 0; i < 3; i++) await openPair(a.client, '80', String(i));
  await openPair(b.client, '80', '0');
  const refused = await openPair(b.client, '80', '1');
  await b.client.waitFor(finOf(refused.error));
  t.equal(b.client.dataOf(refused.error).bytes.toString(), 'too many forwarded connections on this node (limit 4); retry later');
  await b.client.waitFor(finOf(refused.data));
  t.equal(h.open(), 4);
  t.equal(limiter.active, 4);
  // A session going away gives its slots back.
  a.conn.close();
  await a.session.done;
  t.equal(limiter.active, 1, 'session a released its three');
  await openPair(b.client, '80', '2');
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(h.open(), 2, 'accepted again');
});

t.test('no listener piles up on a shared signal (MaxListenersExceededWarning), and a throwing forward fails only its pair', async (t) => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on('warning', onWarning);
  t.teardown(() => process.off('warning', onWarning));
  const h = holding();
  let calls = 0;
  const forward: ForwardFn = (port, stream, signal) => {
    if (++calls === 1) throw new Error('boom');
    return h.forward(port, stream, signal);
  };
  const { conn, session, client } = setupWith({ forward, maxConnections: 100 });
  const first = await openPair(client, '80', 'first');
  await client.waitFor(finOf(first.error));
  t.equal(client.dataOf(first.error).bytes.toString(), 'boom');
  for (let i = 0; i < 40; i++) await openPair(client, '80', String(i));
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(h.open(), 40);
  conn.close();
  await session.done;
  t.equal(h.open(), 0, 'closing the session aborts every forward');
  t.same(warnings, [], 'no process warning');
});
