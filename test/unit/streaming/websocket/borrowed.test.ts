import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { pino } from 'pino';
import t from 'tap';
import WebSocket, { WebSocketServer } from 'ws';
import { REMOTE_COMMAND_CHANNELS, type Framing } from '../../../../src/streaming/websocket/channels.js';
import { ChannelConnection } from '../../../../src/streaming/websocket/connection.js';

const CHUNK = 64 * 1024;
const binary: Framing = { base64: false, supportsClose: false, channels: REMOTE_COMMAND_CHANNELS };

/** A server-side ChannelConnection on a real loopback socket, and the client's WebSocket. */
async function connected(framing: Framing): Promise<{ conn: ChannelConnection; client: WebSocket; close: () => void }> {
  const http = createServer();
  const wss = new WebSocketServer({ noServer: true });
  const conns: ChannelConnection[] = [];
  const ready = new Promise<ChannelConnection>((resolve) => {
    http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      wss.handleUpgrade(req, socket, head, (ws) => {
        const conn = new ChannelConnection(ws, socket, { framing, idleTimeoutMs: 0, closeWaitMs: 100, log: pino({ level: 'silent' }), onData: () => undefined });
        conns.push(conn);
        resolve(conn);
      });
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const { port } = http.address() as { port: number };
  const client = new WebSocket(`ws://127.0.0.1:${port}/`);
  const conn = await ready;
  await once(client, 'open');
  return {
    conn,
    client,
    close: () => {
      client.terminate();
      for (const c of conns) void c.dispose();
      http.close();
    },
  };
}

t.test('writeBorrowed: frames from one reused buffer arrive intact and in order, also when the socket queues', async (t) => {
  const { conn, client, close } = await connected(binary);
  t.teardown(close);
  const got = createHash('sha256');
  let bytes = 0;
  let otherChannels = 0;
  let unready = 0;
  const count = 512;
  const all = new Promise<void>((resolve) =>
    client.on('message', (data: Buffer) => {
      if (data[0] !== 1) otherChannels++;
      got.update(data.subarray(1));
      bytes += data.length - 1;
      if (bytes === count * CHUNK) resolve();
    }),
  );
  const buf = Buffer.allocUnsafe(CHUNK);
  const sent = createHash('sha256');
  let queued = 0;
  for (let i = 0; i < count; i++) {
    for (let off = 0; off < CHUNK; off += 4) buf.writeUInt32BE((i * 65537 + off) >>> 0, off);
    sent.update(buf);
    let released!: () => void;
    const freed = new Promise<void>((resolve) => (released = resolve));
    const r = conn.writeBorrowed(1, buf, released);
    if (r === 'unready') unready++;
    if (r === 'queued') {
      queued++;
      await freed;
    }
  }
  await all;
  t.equal(otherChannels, 0, 'every frame on channel 1');
  t.equal(unready, 0, 'binary framing over TCP borrows');
  t.equal(got.digest('hex'), sent.digest('hex'), 'every byte, in order');
  t.ok(queued > 0, `some writes waited for the socket (${queued})`);
});

t.test('base64 framing cannot borrow: the caller copies', async (t) => {
  const { conn, close } = await connected({ ...binary, base64: true });
  t.teardown(close);
  t.equal(conn.writeBorrowed(1, Buffer.from('x'), () => t.fail('never queued')), 'unready');
});
