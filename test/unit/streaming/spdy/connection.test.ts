import type { Duplex } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import {
  RstStatus,
  SpdyConnection,
  SpdyIdleTimeoutError,
  SpdyProtocolError,
  type SpdyConnectionOptions,
  type SpdyStream,
} from '../../../../src/streaming/spdy/index.js';
import { encodeData, encodePing } from '../../../../src/streaming/spdy/frames.js';
import { waitFor } from '../../../helpers/wait.js';
import { TestClient, duplexPair, finOf, nextTurn, once, rawHeaderBlock, sleep, u32, zlibBomb, type Received } from './fixtures/helpers.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const plain = (v: object | undefined): unknown => JSON.parse(JSON.stringify(v ?? null));

function setup(opts: SpdyConnectionOptions = {}) {
  const [serverSock, clientSock] = duplexPair();
  const conn = new SpdyConnection(serverSock, opts);
  const client = new TestClient(clientSock);
  const streams: SpdyStream[] = [];
  const streamWaiters = new Set<() => void>();
  conn.on('stream', (s: SpdyStream) => {
    streams.push(s);
    for (const wake of streamWaiters) wake();
  });
  let closeCount = 0;
  const closed = new Promise<Error | undefined>((resolve) =>
    conn.on('close', (err?: Error) => {
      closeCount++;
      resolve(err);
    }),
  );
  /** The n-th accepted stream, once its 'stream' event fired (rejects after `timeoutMs`). */
  const stream = (n: number, timeoutMs = 5000): Promise<SpdyStream> => {
    const s = streams[n - 1];
    if (s) return Promise.resolve(s);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        streamWaiters.delete(wake);
        reject(new Error(`stream #${n} never arrived (${streams.length} did)`));
      }, timeoutMs);
      const wake = (): void => {
        const got = streams[n - 1];
        if (!got) return;
        clearTimeout(timer);
        streamWaiters.delete(wake);
        resolve(got);
      };
      streamWaiters.add(wake);
    });
  };
  return { conn, client, serverSock, clientSock, streams, stream, closed, closeCount: () => closeCount };
}

/**
 * Resolves once `sock` has closed and one more turn has passed: every 'end'/'close' listener of
 * the session has run, and so has anything they scheduled (the session emits 'close' on nextTick).
 */
async function afterClose(sock: Duplex): Promise<void> {
  if (!sock.closed) await once(sock, 'close');
  await nextTurn();
}

const isType =
  <T extends Received['type']>(type: T, streamId?: number) =>
  (f: Received): boolean =>
    f.type === type && (streamId === undefined || ('streamId' in f && f.streamId === streamId));

function readAll(s: SpdyStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  s.on('data', (c: Buffer) => parts.push(c));
  return new Promise((resolve, reject) => {
    s.once('end', () => resolve(Buffer.concat(parts)));
    s.once('close', () => reject(new Error('closed before end')));
  });
}

t.test('the server advertises a 1 MiB receive window up front', async (t) => {
  const { client, conn } = setup();
  const settings = await client.waitFor(isType('SETTINGS'));
  t.same(plain(settings), { type: 'SETTINGS', clearSettings: false, settings: [{ flags: 0, id: 7, value: 1048576 }] });
  t.same(plain(await client.waitFor(isType('WINDOW_UPDATE', 0))), { type: 'WINDOW_UPDATE', streamId: 0, delta: 983040 });
  conn.close();
});

t.test('kubectl exec: streams, replies, output, stdin, teardown', async (t) => {
  const { client, conn, stream, closed, closeCount, serverSock } = setup();
  await client.open([['streamtype', 'error']]);
  await client.open([['streamtype', 'stdin']]);
  await client.open([['streamtype', 'stdout']]);
  const [errS, stdin, stdout] = [await stream(1), await stream(2), await stream(3)];
  t.same([errS.id, stdin.id, stdout.id], [1, 3, 5]);
  t.same(plain(stdout.headers), { streamtype: 'stdout' });
  t.same(plain(stdout.headerValues), { streamtype: ['stdout'] });

  await Promise.all([errS.reply(), stdin.reply(), stdout.reply({ ':status': '200 OK', ':version': 'HTTP/1.1' })]);
  t.same(plain((await client.waitFor(isType('SYN_REPLY', 1))).headers), {}, 'the kubelet replies with no headers');
  t.same(plain((await client.waitFor(isType('SYN_REPLY', 5))).headers), { ':status': ['200 OK'], ':version': ['HTTP/1.1'] });
  t.equal(await stdout.reply(), undefined, 'reply() again returns the first promise');

  const input = readAll(stdin);
  client.data(3, 'hello-');
  client.data(3, 'stdin\n');
  client.data(3, '', true); // kubectl's stdin EOF: empty DATA with FIN
  t.equal((await input).toString(), 'hello-stdin\n');

  stdout.end('hi\n');
  await client.waitFor((f) => f.type === 'DATA' && f.streamId === 5 && f.fin);
  t.same(client.dataOf(5), { bytes: Buffer.from('hi\n'), fin: true });
  errS.end('{"metadata":{},"status":"Success"}');
  await client.waitFor((f) => f.type === 'DATA' && f.streamId === 1 && f.fin);
  t.equal(client.dataOf(1).bytes.toString(), '{"metadata":{},"status":"Success"}');

  // kubectl: RST CANCEL on every stream, GOAWAY, close.
  for (const id of [1, 3, 5]) client.rst(id, RstStatus.CANCEL);
  client.goAway();
  t.equal(await closed, undefined);
  t.equal(conn.openStreams, 0);
  // Then kubectl closes TCP: the socket's 'end' and 'close' reach the session after its 'close'.
  client.socket.end();
  await afterClose(serverSock);
  t.equal(closeCount(), 1, "'close' exactly once");
  t.notOk(client.error);
});

t.test('byte-exact kubectl frames, delivered in tiny pieces as through the WebSocket tunnel', async (t) => {
  const { client, stream, conn } = setup();
  // Hand-built frames (not src/ encoders); header blocks from a Go-like zlib writer.
  const syn = async (id: number, pairs: [string, string][]): Promise<Buffer> => {
    const block = await client.compressRaw(rawHeaderBlock(pairs));
    return Buffer.concat([hex('80030001'), u32(10 + block.length), u32(id), u32(0), hex('0000'), block]);
  };
  const bytes = Buffer.concat([
    await syn(1, [['streamtype', 'error'], ['port', '80'], ['requestid', '0']]),
    await syn(3, [['streamtype', 'data'], ['port', '80'], ['requestid', '0']]),
    hex('80030006 00000004 00000001'), // PING 1
    hex('00000003 00000005'),
    Buffer.from('GET /'),
    hex('00000001 01000000'), // FIN on the error stream, as kubectl does right away
    hex('80030006 00000004 00000003'), // PING 3
  ]);
  // The first messages kubectl's tunnel sent were 2, 2, 4, 4, 4 and 1 bytes; then 1 byte each.
  let off = 0;
  for (const n of [2, 2, 4, 4, 4, 1]) {
    client.socket.write(bytes.subarray(off, off + n));
    off += n;
    await nextTurn(); // each piece in its own turn, as separate tunnel messages arrive
  }
  for (; off < bytes.length; off++) client.socket.write(bytes.subarray(off, off + 1));

  const [errS, data] = [await stream(1), await stream(2)];
  t.same(plain(errS.headers), { streamtype: 'error', port: '80', requestid: '0' });
  t.same(plain(data.headers), { streamtype: 'data', port: '80', requestid: '0' });
  const body = readAll(data);
  t.equal((await readAll(errS)).length, 0, 'error stream ended by the client');
  await client.waitFor(isType('PING'));
  await client.waitFor((f) => f.type === 'PING' && f.id === 3);
  client.data(3, '', true);
  t.equal((await body).toString(), 'GET /');
  conn.close();
});

t.test('bytes that came with the upgrade request are parsed first', async (t) => {
  const [serverSock, clientSock] = duplexPair();
  const client = new TestClient(clientSock);
  const headerBlock = await client.compressRaw(rawHeaderBlock([['streamtype', 'error']]));
  const head = Buffer.concat([hex('80030001'), u32(10 + headerBlock.length), u32(1), u32(0), hex('0000'), headerBlock]);
  const conn = new SpdyConnection(serverSock, { head });
  const [s] = (await once<[SpdyStream]>(conn, 'stream')) as [SpdyStream];
  t.equal(s.headers.streamtype, 'error');
  conn.close();
});

t.test('PING: client ids are echoed at once, even ids are not', async (t) => {
  const { client, conn } = setup();
  client.ping(1);
  client.ping(2);
  client.ping(0xffffffff);
  await client.waitFor((f) => f.type === 'PING' && f.id === 0xffffffff);
  t.same(
    client.received.filter((f) => f.type === 'PING').map((f) => (f.type === 'PING' ? f.id : 0)),
    [1, 0xffffffff],
  );
  conn.close();
});

t.test('DATA never precedes its SYN_REPLY, even for 5 MB written right after reply()', async (t) => {
  const { client, stream, conn } = setup();
  await client.open([['streamtype', 'stdout']]);
  const s = await stream(1);
  const big = Buffer.alloc(5 * 1024 * 1024);
  for (let i = 0; i < big.length; i += 4) big.writeUInt32BE(i, i);
  void s.reply();
  s.write(big);
  s.end();
  await client.waitFor((f) => f.type === 'DATA' && f.fin, 10_000);
  const idx = (pred: (f: Received) => boolean): number => client.received.findIndex(pred);
  t.ok(idx(isType('SYN_REPLY', 1)) < idx(isType('DATA', 1)), 'SYN_REPLY first');
  const got = client.dataOf(1);
  t.equal(got.bytes.length, big.length);
  t.ok(got.bytes.equals(big), 'bytes intact');
  const sizes = client.received.filter((f) => f.type === 'DATA').map((f) => (f.type === 'DATA' ? f.payload.length : 0));
  t.ok(Math.max(...sizes) <= 64 * 1024, 'split into frames of at most 64 KiB');
  conn.close();
});

t.test('DATA waits for every SYN_REPLY requested before it (kubectl blocks until all are replied)', async (t) => {
  const { client, stream, conn } = setup();
  for (const type of ['error', 'stdout', 'stderr']) await client.open([['streamtype', type]]);
  const [e, out, err] = [await stream(1), await stream(2), await stream(3)];
  void e.reply();
  void out.reply();
  void err.reply();
  out.write(Buffer.alloc(256 * 1024, 1)); // same tick as the replies
  await client.waitFor((f) => f.type === 'DATA' && f.streamId === 3);
  const order = client.received.filter((f) => f.type === 'SYN_REPLY' || f.type === 'DATA').map((f) => f.type);
  t.same(order.slice(0, 4), ['SYN_REPLY', 'SYN_REPLY', 'SYN_REPLY', 'DATA']);
  conn.close();
});

t.test('writes before reply() are held until the SYN_REPLY is out', async (t) => {
  const { client, stream, conn } = setup();
  await client.open([['streamtype', 'stdout']]);
  const s = await stream(1);
  let written = false;
  s.write('early', () => (written = true));
  await client.roundTrip(); // anything the write sent would have arrived before the echo
  t.notOk(written, 'write not complete');
  t.notOk(client.received.some(isType('DATA', 1)), 'nothing sent');
  await s.reply();
  await client.waitFor(isType('DATA', 1));
  t.ok(client.received.findIndex(isType('SYN_REPLY', 1)) < client.received.findIndex(isType('DATA', 1)));
  t.equal(client.dataOf(1).bytes.toString(), 'early');
  conn.close();
});

t.test('FIN both ways closes and forgets the stream', async (t) => {
  const { client, stream, conn } = setup();
  await client.open([['streamtype', 'data']]);
  const s = await stream(1);
  await s.reply();
  t.equal(conn.openStreams, 1);
  const body = readAll(s);
  client.data(1, 'ping', true);
  t.equal((await body).toString(), 'ping');
  t.equal(conn.openStreams, 1, 'half-closed: still open');
  const sClosed = once(s, 'close');
  s.end('pong');
  await client.waitFor((f) => f.type === 'DATA' && f.fin);
  t.equal(client.dataOf(1).bytes.toString(), 'pong');
  await sClosed;
  t.equal(conn.openStreams, 0);
  t.notOk(client.received.some(isType('RST_STREAM')), 'no RST for a cleanly closed stream');
  conn.close();
});

t.test('a SYN_STREAM with FIN and no headers', async (t) => {
  const { client, stream, conn } = setup();
  await client.open([], { fin: true });
  const s = await stream(1);
  t.same(plain(s.headers), {}, 'missing streamType is the application’s business');
  t.equal((await readAll(s)).length, 0);
  await s.reply();
  const sClosed = once(s, 'close');
  s.end();
  await client.waitFor((f) => f.type === 'DATA' && f.fin);
  await sClosed;
  t.equal(conn.openStreams, 0);
  conn.close();
});

t.test('RST_STREAM from the client destroys the stream quietly', async (t) => {
  const { client, stream, conn } = setup();
  await client.open([['streamtype', 'stdout']]);
  const s = await stream(1);
  await s.reply();
  let errored = false;
  s.on('error', () => (errored = true));
  const reset = once<[number]>(s, 'reset');
  client.rst(1, RstStatus.CANCEL);
  t.same(await reset, [RstStatus.CANCEL]);
  await once(s, 'close');
  t.ok(s.destroyed);
  t.equal(conn.openStreams, 0);
  // Writing afterwards fails the callback, never throws or emits an unhandled error.
  const cbErr = await new Promise<Error | null | undefined>((r) => s.write('late', r));
  t.ok(cbErr, 'write callback gets an error');
  t.notOk(errored, "no 'error' event");
  t.notOk(client.received.some(isType('RST_STREAM')), 'no RST answered to a RST');
  conn.close();
});

t.test('reset() and destroy() send RST_STREAM', async (t) => {
  const { client, stream, conn } = setup();
  for (let i = 0; i < 3; i++) await client.open([['streamtype', 'data']]);
  const [a, b, c] = [await stream(1), await stream(2), await stream(3)];
  a.reset();
  b.reset(RstStatus.INTERNAL_ERROR);
  c.destroy();
  const statuses = await Promise.all([1, 3, 5].map((id) => client.waitFor(isType('RST_STREAM', id))));
  t.same(
    statuses.map((f) => (f.type === 'RST_STREAM' ? f.status : 0)),
    [RstStatus.CANCEL, RstStatus.INTERNAL_ERROR, RstStatus.CANCEL],
  );
  await a.reply(); // resolves without sending
  await client.roundTrip();
  t.notOk(client.received.some(isType('SYN_REPLY')), 'no SYN_REPLY for a reset stream');
  t.equal(conn.openStreams, 0);
  conn.close();
});

t.test('DATA on unknown, closed and half-closed streams', async (t) => {
  const { client, stream, conn, closed } = setup();
  client.data(999, 'who?');
  const rst = await client.waitFor(isType('RST_STREAM', 999));
  t.equal(rst.type === 'RST_STREAM' && rst.status, RstStatus.INVALID_STREAM);
  client.data(2, 'even');
  await client.waitFor(isType('RST_STREAM', 2));

  await client.open([['streamtype', 'a']]);
  await client.open([['streamtype', 'b']]);
  const [a, b] = [await stream(1), await stream(2)];
  a.reset();
  await client.waitFor(isType('RST_STREAM', 1));
  client.data(1, 'in flight after our reset'); // dropped: frames may still be on the way
  client.data(3, 'last', true);
  b.resume();
  client.data(3, 'after FIN');
  const closedRst = await client.waitFor(isType('RST_STREAM', 3));
  t.equal(closedRst.type === 'RST_STREAM' && closedRst.status, RstStatus.STREAM_ALREADY_CLOSED);
  client.ping(7);
  await client.waitFor((f) => f.type === 'PING' && f.id === 7);
  t.equal(client.received.filter(isType('RST_STREAM', 1)).length, 1, 'no RST for the in-flight frame');
  t.notOk(conn.closed, 'the session survives');
  conn.close();
  t.equal(await closed, undefined);
});

t.test('GOAWAY from the client closes the session once its streams are done', async (t) => {
  const { client, stream, conn, closed, streams } = setup();
  await client.open([['streamtype', 'stdout']]);
  const s = await stream(1);
  await s.reply();
  client.data(1, '', true);
  client.goAway(1);
  await client.roundTrip(); // the FIN and the GOAWAY were handled
  t.notOk(conn.closed, 'waits for the open stream');
  await client.open([['streamtype', 'late']]);
  await client.roundTrip(); // and so was the late SYN_STREAM
  t.equal(conn.openStreams, 1, 'no new streams after GOAWAY');
  t.equal(streams.length, 1);
  s.resume();
  s.end('bye');
  t.equal(await closed, undefined);
  t.equal(client.dataOf(1).bytes.toString(), 'bye', 'the last output still went out');
});

t.test('goAway() names the last accepted stream, refuses new ones, closes when done', async (t) => {
  const { client, stream, conn, closed, streams } = setup();
  await client.open([['streamtype', 'a']]);
  await client.open([['streamtype', 'b']]);
  const [a, b] = [await stream(1), await stream(2)];
  conn.goAway();
  const ga = await client.waitFor(isType('GOAWAY'));
  t.same(plain(ga), { type: 'GOAWAY', lastGoodStreamId: 3, status: 0 });
  await client.open([['streamtype', 'c']]);
  await client.roundTrip(); // the SYN_STREAM was handled
  t.equal(streams.length, 2);
  a.reset();
  b.reset();
  t.equal(await closed, undefined);
  t.equal(client.received.filter(isType('GOAWAY')).length, 1);
});

t.test('close() destroys the socket and every stream, and emits close once', async (t) => {
  const { client, stream, conn, closed, serverSock, closeCount } = setup();
  await client.open([['streamtype', 'x']]);
  const s = await stream(1);
  s.on('error', () => t.fail('no error event'));
  conn.close();
  conn.close();
  t.equal(await closed, undefined);
  t.ok(s.destroyed);
  t.ok(serverSock.destroyed);
  await afterClose(serverSock);
  t.equal(closeCount(), 1);
});

t.test('idle timeout: pings keep the session alive, silence ends it with GOAWAY', async (t) => {
  const { client, conn, closed } = setup({ idleTimeoutMs: 250 });
  for (let i = 0; i < 12; i++) {
    client.ping(2 * i + 1);
    await client.waitFor((f) => f.type === 'PING' && f.id === 2 * i + 1); // received: the idle timer restarted
    // Pacing, not synchronisation: the test's clock. Pings 50 ms apart against a 250 ms timeout
    // (a fifth of it) keep the session alive over 600 ms, more than twice the timeout.
    await sleep(50);
  }
  t.notOk(conn.closed, 'alive after 600 ms of pings');
  const err = await closed;
  t.type(err, SpdyIdleTimeoutError);
  t.ok(client.received.some(isType('GOAWAY')), 'GOAWAY sent');
});

t.test('socket end and socket errors end the session quietly', async (t) => {
  const a = setup();
  a.client.socket.end();
  t.equal(await a.closed, undefined);

  const b = setup();
  await b.client.open([['streamtype', 'stdout']]);
  const s = await b.stream(1);
  s.on('error', () => t.fail('no stream error'));
  const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  b.serverSock.destroy(reset);
  t.equal(await b.closed, reset);
  t.ok(s.destroyed);
  s.write('after the socket died');
});

t.test('backpressure: a client that stops reading stalls the writer', async (t) => {
  const { client, stream, conn, serverSock } = setup();
  await client.open([['streamtype', 'stdout']]);
  const s = await stream(1);
  await s.reply();
  client.socket.pause();
  const chunk = Buffer.alloc(64 * 1024, 7);
  let done = 0;
  for (let i = 0; i < 100; i++) s.write(chunk, () => done++);
  // The pipe fills: the server's socket needs a 'drain' that the paused client never gives, so
  // from here nothing completes until it resumes.
  await waitFor('the server socket to back up', () => (serverSock.writableNeedDrain ? true : undefined), 5000, 1);
  await nextTurn(); // callbacks of writes the socket did take run on nextTick
  t.ok(done <= 3, `only ${done} of 100 writes completed`);
  t.ok(serverSock.writableLength <= 256 * 1024, `${serverSock.writableLength} bytes queued on the socket`);
  client.socket.resume();
  s.end();
  await client.waitFor((f) => f.type === 'DATA' && f.fin, 10_000);
  t.equal(done, 100);
  t.equal(client.dataOf(1).bytes.length, 100 * chunk.length);
  conn.close();
});

t.test('backpressure: a stream nobody reads pauses the session (head-of-line)', async (t) => {
  const { client, stream, conn, serverSock } = setup();
  await client.open([['streamtype', 'stdin']]);
  const s = await stream(1);
  await s.reply();
  const frame = Buffer.alloc(32 * 1024);
  for (let i = 0; i < 64; i++) client.data(1, frame.fill(i));
  client.ping(9);
  // Once the session paused its socket for the unread stream, only reading the stream resumes it.
  await waitFor('the session to stop reading', () => (serverSock.isPaused() ? true : undefined), 5000, 1);
  t.ok(s.readableLength <= 128 * 1024, `${s.readableLength} bytes buffered in the stream`);
  t.ok(serverSock.readableLength <= 128 * 1024, `${serverSock.readableLength} bytes buffered in the socket`);
  t.notOk(client.received.some((f) => f.type === 'PING' && f.id === 9), 'later frames wait');
  const parts: Buffer[] = [];
  s.on('data', (c: Buffer) => parts.push(c));
  await client.waitFor((f) => f.type === 'PING' && f.id === 9);
  const all = Buffer.concat(parts);
  t.equal(all.length, 64 * frame.length);
  t.ok([...Array(64).keys()].every((i) => all[i * frame.length] === i), 'in order');
  conn.close();
});

t.test('WINDOW_UPDATE returns consumed receive window', async (t) => {
  const { client, stream, conn } = setup();
  await client.open([['streamtype', 'stdin']]);
  const s = await stream(1);
  s.resume();
  for (let i = 0; i < 20; i++) client.data(1, Buffer.alloc(32 * 1024));
  const perStream = await client.waitFor(isType('WINDOW_UPDATE', 1));
  t.ok(perStream.type === 'WINDOW_UPDATE' && perStream.delta >= 512 * 1024, 'stream window');
  const session = await client.waitFor((f) => f.type === 'WINDOW_UPDATE' && f.streamId === 0 && f.delta < 983040);
  t.ok(session.type === 'WINDOW_UPDATE' && session.delta >= 512 * 1024, 'session window');
  conn.close();
});

t.test('unknown control frames and SETTINGS/WINDOW_UPDATE from the client are ignored', async (t) => {
  const { client, conn } = setup();
  client.write(hex('8003 00ff 00000003 010203'));
  client.write(hex('8003 0004 0000000c 00000001 00000007 00000001'));
  client.write(hex('8003 0009 00000008 00000000 00000001'));
  client.ping(11);
  await client.waitFor((f) => f.type === 'PING' && f.id === 11);
  t.notOk(conn.closed);
  conn.close();
});

t.test('HEADERS and SYN_REPLY from the client', async (t) => {
  const { client, stream, conn } = setup();
  await client.open([['streamtype', 'data']]);
  await client.open([['streamtype', 'other']]);
  const [s, other] = [await stream(1), await stream(2)];
  const hdrs = once<[object]>(s, 'headers');
  const ended = readAll(s);
  const hb = async (id: number, type: number, fin: boolean): Promise<Buffer> => {
    const block = await client.compressRaw(rawHeaderBlock([['x-trailer', 'done']]));
    return Buffer.concat([hex('8003'), Buffer.from([0, type, fin ? 1 : 0]), u32(4 + block.length).subarray(1), u32(id), block]);
  };
  client.write(await hb(1, 8, true)); // HEADERS with FIN
  t.same(plain((await hdrs)[0]), { 'x-trailer': ['done'] });
  t.equal((await ended).length, 0, 'FIN on HEADERS ends the stream');
  client.write(await hb(99, 8, false)); // HEADERS for a stream never opened
  const inv = await client.waitFor(isType('RST_STREAM', 99));
  t.equal(inv.type === 'RST_STREAM' && inv.status, RstStatus.INVALID_STREAM);
  client.write(await hb(3, 2, false)); // SYN_REPLY: the server never opens streams
  const pe = await client.waitFor(isType('RST_STREAM', 3));
  t.equal(pe.type === 'RST_STREAM' && pe.status, RstStatus.PROTOCOL_ERROR);
  t.ok(other.destroyed);
  t.notOk(conn.closed, 'stream errors, not session errors');
  conn.close();
});

t.test("a throwing 'stream' listener fails the session, not the process", async (t) => {
  const [serverSock, clientSock] = duplexPair();
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (l: string) => lines.push(l) });
  const conn = new SpdyConnection(serverSock, { log });
  const client = new TestClient(clientSock);
  const boom = new Error('listener bug');
  conn.on('stream', () => {
    throw boom;
  });
  const closed = once<[Error]>(conn, 'close');
  await client.open([['streamtype', 'x']]);
  t.same(await closed, [boom]);
  const ga = await client.waitFor(isType('GOAWAY'));
  t.equal(ga.type === 'GOAWAY' && ga.status, 2, 'GOAWAY INTERNAL_ERROR');
  t.ok(lines.some((l) => l.includes('listener bug')), 'logged');
});

t.test('a session blocked on an unread stream resumes when that stream is reset', async (t) => {
  const { client, stream, conn, serverSock } = setup();
  await client.open([['streamtype', 'stdin']]);
  const s = await stream(1);
  for (let i = 0; i < 8; i++) client.data(1, Buffer.alloc(32 * 1024));
  client.ping(5);
  await waitFor('the session to stop reading', () => (serverSock.isPaused() ? true : undefined), 5000, 1);
  t.notOk(client.received.some((f) => f.type === 'PING' && f.id === 5), 'blocked');
  s.reset();
  await client.waitFor((f) => f.type === 'PING' && f.id === 5);
  t.pass('resumed');
  conn.close();
});

t.test('a full stream whose data ended with FIN does not hold the session', async (t) => {
  const { client, stream, conn } = setup();
  await client.open([['streamtype', 'stdin']]);
  const s = await stream(1);
  // More than the stream buffers, FIN on the same frame: a reader that drains an ended stream
  // never asks for more, so waiting for it would stall the session for good.
  client.data(1, Buffer.alloc(100 * 1024, 1), true);
  client.ping(13);
  await client.waitFor((f) => f.type === 'PING' && f.id === 13);
  t.equal((await readAll(s)).length, 100 * 1024);
  conn.close();
});

t.test("a 'data' listener that resets its stream mid-frame does not stall the session", async (t) => {
  const { client, stream, conn } = setup();
  await client.open([['streamtype', 'stdin']], { fin: false });
  const s = await stream(1);
  s.on('data', () => s.reset());
  client.data(1, Buffer.alloc(100 * 1024)); // one frame past the stream's buffer
  client.data(1, 'more');
  client.ping(15);
  await client.waitFor((f) => f.type === 'PING' && f.id === 15);
  t.ok(s.destroyed);
  t.equal(client.received.filter(isType('RST_STREAM', 1)).length, 1);
  conn.close();
});

t.test('reply() never rejects, whatever happens to the stream or session', async (t) => {
  let unhandled = 0;
  const onUnhandled = (): void => void unhandled++;
  process.on('unhandledRejection', onUnhandled);
  t.teardown(() => process.off('unhandledRejection', onUnhandled));
  const { client, stream, conn } = setup();
  await client.open([['streamtype', 'a']]);
  await client.open([['streamtype', 'b']]);
  const [a, b] = [await stream(1), await stream(2)];
  a.destroy();
  const gone = a.reply(); // already gone
  conn.close();
  const closedFirst = b.reply(); // the session closed first
  t.equal(await gone, undefined);
  t.equal(await closedFirst, undefined);
  // The pattern a caller may well use: Promise.all over the replies, not awaited.
  void Promise.all([a.reply(), b.reply()]).then(() => undefined);
  await nextTurn(); // Node reports an unhandled rejection once the microtask queue drains
  t.equal(unhandled, 0);
  t.notOk(client.received.some(isType('SYN_REPLY')));
});

t.test('a client that floods PINGs but never reads stops being read', async (t) => {
  const { client, conn, serverSock } = setup();
  client.socket.pause();
  client.write(Buffer.concat(Array.from({ length: 200_000 }, (_, i) => encodePing(2 * i + 1))));
  // Past 1 MiB of unread echoes the session stops reading; only the client reading resumes it.
  await waitFor('the session to stop reading the flood', () => (serverSock.isPaused() ? true : undefined), 10_000, 1);
  t.ok(serverSock.writableLength < 1.2 * 1024 * 1024, `${serverSock.writableLength} bytes of echoes queued`);
  client.socket.resume();
  await client.waitFor((f) => f.type === 'PING' && f.id === 2 * 199_999 + 1, 20_000);
  t.equal(client.received.filter(isType('PING')).length, 200_000, 'every PING answered in the end');
  conn.close();
});

// ---- hostile input -----------------------------------------------------------------------

type Attack = (c: TestClient) => Promise<Buffer[]>;

/** A SYN_STREAM built by hand around an already compressed header block. */
const synBlock = (id: number, block: Buffer): Buffer =>
  Buffer.concat([hex('80030001'), u32(10 + block.length), u32(id), u32(0), hex('0000'), block]);

async function synWithRawBlock(c: TestClient, id: number, raw: Buffer): Promise<Buffer> {
  return synBlock(id, await c.compressRaw(raw));
}

const syn = (c: TestClient, id: number, type: string): Promise<Buffer> => synWithRawBlock(c, id, rawHeaderBlock([['streamtype', type]]));

const attacks: Record<string, Attack> = {
  'SPDY/2 frame': async () => [hex('8002 0006 00000004 00000001')],
  'SETTINGS with numSettings 2^31': async () => [hex('8003 0004 0000000c 80000000 00000007 00000001')],
  'header count past the block': async (c) => [
    await synWithRawBlock(c, 1, Buffer.concat([u32(1_000_000), u32(1), Buffer.from('a'), u32(0)])),
  ],
  'header name length past the block': async (c) => [await synWithRawBlock(c, 1, Buffer.concat([u32(1), u32(0x7fffffff), Buffer.from('abc')]))],
  'header value length past the block': async (c) => [
    await synWithRawBlock(c, 1, Buffer.concat([u32(1), u32(1), Buffer.from('a'), u32(1 << 30)])),
  ],
  'duplicate header names': async (c) => [await synWithRawBlock(c, 1, rawHeaderBlock([['streamtype', 'a'], ['StreamType', 'b']]))],
  'empty header name': async (c) => [await synWithRawBlock(c, 1, rawHeaderBlock([['', 'a']]))],
  'zlib bomb inside the control-frame cap (60 KB → 60 MB)': async () => [synBlock(1, await zlibBomb(60 * 1024 * 1024))],
  'zlib bomb of 1 GiB (~1 MB compressed, over the control-frame cap)': async () => [synBlock(1, await zlibBomb(1 << 30))],
  'corrupt zlib data': async () => [synBlock(1, Buffer.from('\x78\xbb\xe3\xc6\xa7\xc2garbage-garbage', 'latin1'))],
  'oversized control frame': async () => [Buffer.concat([hex('8003 0001 00ffffff'), Buffer.alloc(1024)])],
  'garbage bytes': async () => [Buffer.from('\xff\xfe\xfd\xfc\x00\x00\x00\x10garbage, not SPDY at all', 'latin1')],
  'stream id reused': async (c) => [await syn(c, 1, 'a'), await syn(c, 1, 'b')],
  'stream id decreasing': async (c) => [await syn(c, 5, 'a'), await syn(c, 3, 'b')],
  'even stream id from the client': async (c) => [await syn(c, 2, 'a')],
  'SYN_STREAM on stream 0': async () => [hex('8003 0001 0000000a 00000000 00000000 0000')],
  'DATA on stream 0': async () => [hex('00000000 00000001 ff')],
};

for (const [name, build] of Object.entries(attacks)) {
  t.test(`hostile input closes the session with GOAWAY PROTOCOL_ERROR: ${name}`, async (t) => {
    const { client, conn, closed } = setup();
    const frames = await build(client);
    const rss0 = process.memoryUsage().rss;
    const t0 = performance.now();
    for (const f of frames) client.write(f);
    const err = await closed;
    const ms = performance.now() - t0;
    t.type(err, SpdyProtocolError, err ? err.message : 'no error');
    const ga = await client.waitFor(isType('GOAWAY'), 1000).catch(() => undefined);
    t.ok(ga?.type === 'GOAWAY' && ga.status === 1, 'GOAWAY PROTOCOL_ERROR');
    t.ok(conn.closed);
    t.ok(ms < 2000, `closed in ${ms.toFixed(0)} ms`);
    t.ok(process.memoryUsage().rss - rss0 < 50 * 1024 * 1024, 'RSS grew < 50 MB');
  });
}

t.test('10 000 SYN_STREAMs past maxStreams are refused with bounded memory', async (t) => {
  const { client, conn, streams, stream } = setup({ maxStreams: 100 });
  const blocks: Buffer[] = [];
  for (let i = 0; i < 10_000; i++) {
    const block = await client.compressRaw(rawHeaderBlock([['streamtype', 'data'], ['port', '80'], ['requestid', String(i)]]));
    blocks.push(synBlock(2 * i + 1, block));
  }
  const heap0 = process.memoryUsage().heapUsed;
  const rss0 = process.memoryUsage().rss;
  for (const b of blocks) client.write(b);
  await client.waitFor((f) => f.type === 'RST_STREAM' && f.streamId === 19_999, 30_000);
  const refused = client.received.filter((f) => f.type === 'RST_STREAM' && f.status === RstStatus.REFUSED_STREAM);
  t.equal(refused.length, 9_900);
  t.equal(streams.length, 100);
  t.equal(conn.openStreams, 100);
  t.ok(process.memoryUsage().heapUsed - heap0 < 50 * 1024 * 1024, 'heap grew < 50 MB');
  t.ok(process.memoryUsage().rss - rss0 < 100 * 1024 * 1024, 'RSS grew < 100 MB');
  // Closing a stream frees a slot.
  streams[0]!.reset();
  await client.open([['streamtype', 'data']], { id: 20_001 });
  t.equal((await stream(101)).id, 20_001);
  t.equal(streams.length, 101);
  conn.close();
});

// ---- synchronous headers: re-entrancy ---------------------------------------------------

/** A SYN_STREAM with FIN around an already compressed block. */
const synFinBlock = (id: number, block: Buffer): Buffer =>
  Buffer.concat([hex('80030001'), u32((0x01 << 24) | (10 + block.length)), u32(id), u32(0), hex('0000'), block]);

t.test('reply() puts the SYN_REPLY on the socket before it returns', async (t) => {
  const { client, conn, serverSock } = setup();
  const writes: Buffer[] = [];
  const write = serverSock.write.bind(serverSock);
  serverSock.write = ((chunk: Buffer, ...rest: never[]) => {
    writes.push(chunk);
    return write(chunk, ...rest);
  }) as typeof serverSock.write;
  let sent: Buffer[] = [];
  conn.on('stream', (s: SpdyStream) => {
    const n = writes.length;
    void s.reply();
    sent = writes.slice(n);
    s.end('out');
  });
  await client.open([['streamtype', 'stdout']]);
  await client.waitFor(finOf(1));
  t.same(sent.map((b) => b.subarray(0, 4).toString('hex')), ['80030002'], 'the SYN_REPLY, written synchronously');
  t.same(client.summary().split(' ').filter((f) => f.endsWith('(1)')), ['SYN_REPLY(1)', 'DATA(1)', 'DATA(1)']);
  conn.close();
});

t.test("a 'stream' listener that resets its stream: later frames of the same chunk still count", async (t) => {
  const { client, conn, streams, closeCount } = setup();
  conn.on('stream', (s: SpdyStream) => {
    if (s.id === 1) return s.reset();
    void s.reply();
    s.end('ok');
  });
  const b1 = await client.compressRaw(rawHeaderBlock([['streamtype', 'a']]));
  const b3 = await client.compressRaw(rawHeaderBlock([['streamtype', 'b']]));
  // One chunk: SYN_STREAM 1 with FIN (reset by the listener before FIN is applied), DATA on the
  // dead stream (dropped), SYN_STREAM 3 (inflated in the same context), PING.
  client.write(Buffer.concat([synFinBlock(1, b1), encodeData(1, Buffer.from('late'), false), synBlock(3, b3), encodePing(9)]));
  await client.waitFor((f) => f.type === 'PING' && f.id === 9);
  await client.waitFor((f) => f.type === 'DATA' && f.streamId === 3 && f.fin);
  t.same(plain(client.received.find(isType('RST_STREAM', 1))), { type: 'RST_STREAM', streamId: 1, status: RstStatus.CANCEL });
  t.equal(client.received.filter(isType('RST_STREAM')).length, 1, 'the dropped DATA draws no RST');
  t.same(streams.map((s) => s.id), [1, 3]);
  t.equal(client.dataOf(3).bytes.toString(), 'ok');
  t.equal(closeCount(), 0);
  t.notOk(conn.closed);
  conn.close();
});

t.test("a 'stream' listener that closes the session: no later frame of the chunk is processed", async (t) => {
  const { client, conn, streams, closed, closeCount, serverSock } = setup();
  let seen = 0;
  conn.on('stream', () => {
    seen++;
    conn.close();
  });
  const b1 = await client.compressRaw(rawHeaderBlock([['streamtype', 'a']]));
  const b3 = await client.compressRaw(rawHeaderBlock([['streamtype', 'b']]));
  client.write(Buffer.concat([synFinBlock(1, b1), synBlock(3, b3), encodePing(9)]));
  t.equal(await closed, undefined);
  // The socket is gone and every frame that reached the client is recorded: nothing more can come.
  await afterClose(serverSock);
  await client.recorded();
  t.equal(seen, 1);
  t.same(streams.map((s) => s.id), [1]);
  t.ok(streams[0]!.destroyed);
  t.equal(closeCount(), 1);
  t.notOk(client.received.some(isType('PING')));
});

t.test('a header bomb in one chunk with later frames fails with the cap in the message', async (t) => {
  const { client, conn, streams, closed } = setup({ maxHeaderBytes: 4096 });
  const ok = await client.compressRaw(rawHeaderBlock([['streamtype', 'a']]));
  // 8 MiB of headers, compressed in the session's context to a few KB.
  const bomb = await client.compressRaw(rawHeaderBlock([['streamtype', 'b'], ['x', 'x'.repeat(8 << 20)]]));
  t.ok(bomb.length < 64 * 1024, `${bomb.length} compressed bytes`);
  client.write(Buffer.concat([synBlock(1, ok), synBlock(3, bomb), encodePing(9)]));
  const err = await closed;
  t.type(err, SpdyProtocolError);
  t.equal(err?.message, 'header block inflates past 4096 bytes');
  t.same(streams.map((s) => s.id), [1], 'the stream before the bomb was accepted');
  t.ok(streams[0]!.destroyed);
  const ga = await client.waitFor(isType('GOAWAY'), 1000);
  t.ok(ga.type === 'GOAWAY' && ga.status === 1 && ga.lastGoodStreamId === 1, 'GOAWAY PROTOCOL_ERROR naming stream 1');
  t.notOk(client.received.some(isType('PING')), 'the PING after the bomb is not answered');
  t.ok(conn.closed);
});
