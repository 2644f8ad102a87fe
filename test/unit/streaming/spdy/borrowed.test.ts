import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, connect, type Socket } from 'node:net';
import { Writable } from 'node:stream';
import { connect as tlsConnect, createServer as tlsCreateServer, type TLSSocket } from 'node:tls';
import t, { type Test } from 'tap';
import { selfSignedCertificate } from '../../../../src/server/tls.js';
import { writeBorrowed } from '../../../../src/streaming/borrowed.js';
import { SpdyConnection, type SpdyStream } from '../../../../src/streaming/spdy/index.js';
import { TestClient, duplexPair, finOf } from './fixtures/helpers.js';

const CHUNK = 64 * 1024;

/** A connected loopback TCP pair: the server's end and the client's. */
async function tcpPair(): Promise<[Socket, Socket]> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const client = connect(port, '127.0.0.1');
  const [serverSide] = await accepted;
  server.close();
  return [serverSide, client];
}

/** The same over TLS (nodelet's serving socket when the apiserver connects). */
async function tlsPair(): Promise<[TLSSocket, TLSSocket]> {
  const { cert, key } = await selfSignedCertificate({ nodeName: 'n', nodeIP: '127.0.0.1', address: '127.0.0.1' });
  const server = tlsCreateServer({ cert, key });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const accepted = once(server, 'secureConnection') as Promise<[TLSSocket]>;
  const client = tlsConnect({ port, host: '127.0.0.1', rejectUnauthorized: false });
  const [[serverSide]] = await Promise.all([accepted, once(client, 'secureConnect')]);
  server.close();
  return [serverSide, client];
}

/** Chunk `i` of a transfer: every byte depends on the chunk and its offset, so a reuse shows. */
function fill(buf: Buffer, i: number): void {
  for (let off = 0; off < buf.length; off += 4) buf.writeUInt32BE((i * 65537 + off) >>> 0, off);
}

/** Writes `count` chunks from one reused buffer; returns the digest of what was written and how many writes were queued. */
async function writeFromOneBuffer(stream: SpdyStream, count: number): Promise<{ digest: string; queued: number }> {
  const buf = Buffer.allocUnsafe(CHUNK);
  const hash = createHash('sha256');
  let queued = 0;
  for (let i = 0; i < count; i++) {
    fill(buf, i);
    hash.update(buf);
    let released!: () => void;
    const freed = new Promise<void>((resolve) => (released = resolve));
    if (!stream.writeBorrowed(buf, released)) {
      queued++;
      await freed;
    }
  }
  return { digest: hash.digest('hex'), queued };
}

async function openStream(conn: SpdyConnection, client: TestClient): Promise<{ id: number; stream: SpdyStream }> {
  const arrived = once(conn, 'stream') as Promise<[SpdyStream]>;
  const id = await client.open([['streamtype', 'data']]);
  const [stream] = await arrived;
  return { id, stream };
}

t.test('over TCP, DATA from one reused buffer arrives intact and in order, also when the socket queues', async (t) => {
  const [serverSock, clientSock] = await tcpPair();
  await sendAndCheck(t, serverSock, clientSock);
});

t.test('over TLS, the same', async (t) => {
  const [serverSock, clientSock] = await tlsPair();
  await sendAndCheck(t, serverSock, clientSock);
});

/** A server connection and a test client on a socket pair, both closed at the test's end. */
function connected(t: Test, serverSock: Socket, clientSock: Socket): { conn: SpdyConnection; client: TestClient } {
  const conn = new SpdyConnection(serverSock);
  const client = new TestClient(clientSock);
  t.teardown(() => {
    conn.close();
    clientSock.destroy();
    client.close();
  });
  return { conn, client };
}

async function sendAndCheck(t: Test, serverSock: Socket, clientSock: Socket): Promise<void> {
  const { conn, client } = connected(t, serverSock, clientSock);
  const { id, stream } = await openStream(conn, client);
  await stream.reply();
  // 32 MiB written without yielding while the kernel takes it: the loopback buffers fill, so some
  // writes are queued and their buffer must not be reused before `released`.
  const { digest, queued } = await writeFromOneBuffer(stream, 512);
  stream.end();
  await client.waitFor(finOf(id), 20_000, 'the FIN');
  await client.recorded();
  const got = client.dataOf(id);
  t.equal(got.bytes.length, 512 * CHUNK);
  t.equal(createHash('sha256').update(got.bytes).digest('hex'), digest, 'every byte, in order');
  t.ok(queued > 0, `some writes waited for the socket (${queued})`);
}

t.test('before the SYN_REPLY, and over a JavaScript duplex, the bytes are copied: the buffer is free at once', async (t) => {
  for (const transport of ['tcp', 'duplex'] as const) {
    const [serverSock, clientSock] = transport === 'tcp' ? await tcpPair() : duplexPair();
    const conn = new SpdyConnection(serverSock);
    const client = new TestClient(clientSock);
    const { id, stream } = await openStream(conn, client);
    const buf = Buffer.from('first');
    // TCP: not replied yet, so a copy waits in the stream; the duplex: copied on every write.
    stream.writeBorrowed(buf, () => undefined);
    buf.write('XXXXX');
    await stream.reply();
    const second = Buffer.from('second');
    stream.writeBorrowed(second, () => undefined);
    second.fill(0);
    stream.end();
    await client.waitFor(finOf(id), 5000, 'the FIN');
    await client.recorded();
    t.equal(client.dataOf(id).bytes.toString(), 'firstsecond', transport);
    conn.close();
    clientSock.destroy();
    client.close();
  }
});

t.test('a written stream, or one that is gone, releases at once', async (t) => {
  const [serverSock, clientSock] = await tcpPair();
  const { conn, client } = connected(t, serverSock, clientSock);
  const { stream } = await openStream(conn, client);
  await stream.reply();
  stream.end();
  t.equal(stream.writeBorrowed(Buffer.from('late'), () => t.fail('never queued')), true, 'after end()');
  const { stream: other } = await openStream(conn, client);
  other.reset();
  t.equal(other.writeBorrowed(Buffer.from('late'), () => t.fail('never queued')), true, 'after a reset');
});

t.test('writeBorrowed on a plain Writable copies, and waits for drain (or close) under backpressure', async (t) => {
  const written: Buffer[] = [];
  let finishWrite: (() => void) | undefined;
  const slow = new Writable({
    highWaterMark: 4,
    write(chunk: Buffer, _enc, cb) {
      written.push(chunk);
      finishWrite = () => cb();
    },
  });
  const buf = Buffer.from('abcdef');
  let released = 0;
  t.equal(writeBorrowed(slow, buf, () => released++), false, 'over the high-water mark');
  buf.fill(0);
  t.equal(released, 0);
  const drained = once(slow, 'drain');
  finishWrite?.();
  await drained;
  t.equal(released, 1, 'released with drain');
  t.equal(written[0]?.toString(), 'abcdef', 'the copy was written');

  const stuck = new Writable({ highWaterMark: 1, write: () => undefined });
  let freed = 0;
  t.equal(writeBorrowed(stuck, Buffer.from('xy'), () => freed++), false);
  stuck.destroy();
  await once(stuck, 'close');
  t.equal(freed, 1, 'released when destroyed');
  t.equal(writeBorrowed(stuck, Buffer.from('z'), () => t.fail('never queued')), true, 'a destroyed writable drops');
});
