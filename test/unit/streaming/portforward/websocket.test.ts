import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import WebSocket, { WebSocketServer, createWebSocketStream } from 'ws';
import { ForwardLimiter } from '../../../../src/streaming/portforward/limits.js';
import type { ForwardFn } from '../../../../src/streaming/portforward/spdy.js';
import { serveSpdyPortForward } from '../../../../src/streaming/portforward/spdy.js';
import { tunnelStream } from '../../../../src/streaming/websocket/tunnel.js';
import { serveWebSocketPortForward, type WebSocketPortForwardOptions } from '../../../../src/streaming/portforward/websocket.js';
import { SpdyConnection } from '../../../../src/streaming/spdy/index.js';
import { TestClient, type Received } from '../spdy/fixtures/helpers.js';

const log = pino({ level: 'silent' });

/** Resolves once `cond` holds, checked after each turn of the event loop (no fixed sleep). */
async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((resolve) => setImmediate(resolve));
}

/** A loopback WebSocket pair: `server` is what a plugin gets from handleUpgrade. */
async function wsPair(t: Test, protocols: string[] = []): Promise<{ server: WebSocket; socket: Duplex; client: WebSocket }> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
  await new Promise((resolve) => wss.once('listening', resolve));
  const { port } = wss.address() as AddressInfo;
  const server = new Promise<[WebSocket, Duplex]>((resolve) => wss.once('connection', (ws, req) => resolve([ws, req.socket])));
  const client = new WebSocket(`ws://127.0.0.1:${port}`, protocols, { perMessageDeflate: false });
  await new Promise((resolve, reject) => {
    client.once('open', resolve);
    client.once('error', reject);
  });
  t.teardown(() => {
    client.terminate();
    wss.close();
  });
  const [ws, socket] = await server;
  return { server: ws, socket, client };
}

interface Msg {
  data: Buffer;
  binary: boolean;
}

function record(ws: WebSocket): { msgs: Msg[]; closed: Promise<number>; waitFor(pred: (m: Msg) => boolean, ms?: number): Promise<Msg> } {
  const msgs: Msg[] = [];
  const waiters: { pred: (m: Msg) => boolean; resolve: (m: Msg) => void }[] = [];
  ws.on('message', (data: Buffer, binary: boolean) => {
    const m = { data: Buffer.from(data), binary };
    msgs.push(m);
    for (const w of [...waiters]) {
      if (w.pred(m)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(m);
      }
    }
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code: number) => resolve(code)));
  return {
    msgs,
    closed,
    waitFor(pred, ms = 5000) {
      const found = msgs.find(pred);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('timed out waiting for a message')), ms);
        waiters.push({
          pred,
          resolve: (m) => {
            clearTimeout(timer);
            resolve(m);
          },
        });
      });
    },
  };
}

const base = { base64: false, idleTimeoutMs: 0, closeWaitMs: 500, log } satisfies Partial<WebSocketPortForwardOptions>;

/** Answers the first chunk upper-cased, then the "pod" closes (like an HTTP/1.0 server); port 81 is closed. */
const oneShot: ForwardFn = async (port, stream) => {
  if (port === 81) throw new Error('error forwarding port 81 to pod sb, uid : connection refused');
  await new Promise<void>((resolve) => stream.once('data', (c: Buffer) => stream.end(Buffer.from(String(c).toUpperCase()), resolve)));
};

const onChannel = (ch: number) => (m: Msg) => m.data[0] === ch && m.data.length > 3;

t.test('channel mode: port prefixes, data on 2i, errors on 2i+1, close 1000 when every port is done', async (t) => {
  const { server, socket, client } = await wsPair(t, ['v4.channel.k8s.io']);
  const rec = record(client);
  const session = serveWebSocketPortForward(server, socket, { ...base, ports: [80, 81], forward: oneShot });
  await rec.waitFor((m) => m.data[0] === 3 && m.data.length > 3);
  t.same(
    rec.msgs.slice(0, 4).map((m) => [...m.data]),
    [
      [0, 80, 0],
      [1, 80, 0],
      [2, 81, 0],
      [3, 81, 0],
    ],
    'each channel opens with its port, uint16 LE',
  );
  t.equal(rec.msgs.find((m) => m.data[0] === 3 && m.data.length > 3)?.data.subarray(1).toString(), 'error forwarding port 81 to pod sb, uid : connection refused');
  client.send(Buffer.from([1, ...Buffer.from('ignored: error channels are write-only')]));
  client.send(Buffer.from([9, ...Buffer.from('ignored: no such channel')]));
  client.send(Buffer.alloc(0));
  client.send(Buffer.from([0, ...Buffer.from('get /')]));
  t.equal((await rec.waitFor(onChannel(0))).data.subarray(1).toString(), 'GET /');
  t.equal(await rec.closed, 1000);
  await session.done;
  t.notOk(rec.msgs.some((m) => m.data[0] === 1 && m.data.length > 3), 'nothing on a healthy port\'s error channel');
});

t.test('channel mode, base64: text frames, "0"+channel then base64', async (t) => {
  const { server, socket, client } = await wsPair(t, ['v4.base64.channel.k8s.io']);
  const rec = record(client);
  const session = serveWebSocketPortForward(server, socket, { ...base, base64: true, ports: [8080], forward: oneShot });
  await rec.waitFor((m) => m.data.toString().startsWith('1'));
  t.same(rec.msgs.slice(0, 2).map((m) => [m.binary, m.data.toString()]), [
    [false, '0' + Buffer.from([0x90, 0x1f]).toString('base64')],
    [false, '1' + Buffer.from([0x90, 0x1f]).toString('base64')],
  ]);
  client.send('0' + Buffer.from('ping').toString('base64'));
  const reply = await rec.waitFor((m) => m.data.toString().startsWith('0') && m.data.length > 5);
  t.equal(Buffer.from(reply.data.toString().slice(1), 'base64').toString(), 'PING');
  t.equal(await rec.closed, 1000);
  await session.done;
});

t.test('channel mode: a slow pod side pauses the socket instead of buffering; big answers arrive whole', async (t) => {
  const { server, socket, client } = await wsPair(t);
  const rec = record(client);
  let stream: Duplex | undefined;
  const big = Buffer.alloc(3 * 1024 * 1024, 7);
  const received: Buffer[] = [];
  let release!: () => void;
  const go = new Promise<void>((r) => (release = r));
  const forward: ForwardFn = async (_port, s) => {
    stream = s;
    await go;
    let n = 0;
    await new Promise<void>((resolve) => {
      s.on('data', (c: Buffer) => {
        received.push(c);
        n += c.length;
        if (n === 4 * 1024 * 1024) resolve();
      });
    });
    await new Promise<void>((resolve) => s.end(big, resolve));
  };
  const session = serveWebSocketPortForward(server, socket, { ...base, ports: [80], forward });
  for (let i = 0; i < 64; i++) client.send(Buffer.concat([Buffer.from([0]), Buffer.alloc(64 * 1024, i)]));
  // The pod side reads nothing yet: the connection must pause its socket rather than buffer it all.
  await until(() => server.isPaused);
  t.ok((stream?.readableLength ?? 0) <= 192 * 1024, `inbound buffering is bounded (${stream?.readableLength})`);
  release();
  await rec.closed;
  await session.done;
  t.equal(Buffer.concat(received).length, 4 * 1024 * 1024, 'every inbound byte, in order');
  t.equal(Buffer.concat(received)[64 * 1024 * 63], 63);
  const out = Buffer.concat(rec.msgs.filter((m) => m.data[0] === 0).map((m) => m.data.subarray(1))).subarray(2);
  t.equal(out.length, big.length, '3 MiB out');
});

t.test('channel mode: the client leaving aborts the forwards; close() and idle close with 1001', async (t) => {
  await t.test('client leaves', async (t) => {
    const { server, socket, client } = await wsPair(t);
    let signal: AbortSignal | undefined;
    let forwarding!: () => void;
    const started = new Promise<void>((resolve) => (forwarding = resolve));
    const forward: ForwardFn = (_p, s, sig) =>
      new Promise((resolve) => {
        signal = sig;
        forwarding();
        s.resume();
        s.on('end', () => resolve());
      });
    const session = serveWebSocketPortForward(server, socket, { ...base, ports: [80], forward });
    await started;
    client.terminate();
    await session.done;
    t.equal(signal?.aborted, true);
  });
  await t.test('close()', async (t) => {
    const { server, socket, client } = await wsPair(t);
    const rec = record(client);
    let forwarding!: () => void;
    const started = new Promise<void>((resolve) => (forwarding = resolve));
    const forward: ForwardFn = (_p, _s, sig) =>
      new Promise((resolve) => {
        forwarding();
        sig.addEventListener('abort', () => resolve());
      });
    const session = serveWebSocketPortForward(server, socket, { ...base, ports: [80], forward });
    await started;
    session.close('pod gone');
    t.equal(await rec.closed, 1001);
    await session.done;
  });
  await t.test('idle', async (t) => {
    const { server, socket, client } = await wsPair(t);
    const rec = record(client);
    const forward: ForwardFn = (_p, _s, sig) => new Promise((resolve) => sig.addEventListener('abort', () => resolve()));
    const session = serveWebSocketPortForward(server, socket, { ...base, idleTimeoutMs: 100, ports: [80], forward });
    t.equal(await rec.closed, 1001);
    await session.done;
  });
});

const is =
  (type: Received['type'], streamId?: number) =>
  (f: Received): boolean =>
    f.type === type && (streamId === undefined || ('streamId' in f && f.streamId === streamId));

/** A SPDY session inside a WebSocket, the client writing every few bytes as its own message (as kubectl does). */
async function tunnel(t: Test, forward: ForwardFn) {
  // No subprotocol here: `ws` clients refuse to offer one with a '/'; the plugin tests negotiate it.
  const { server, client } = await wsPair(t);
  const conn = new SpdyConnection(tunnelStream(server, log), {});
  const session = serveSpdyPortForward(conn, { forward, creationTimeoutMs: 5000, log });
  const clientStream = createWebSocketStream(client);
  clientStream.on('error', () => undefined);
  const spdy = new TestClient(clientStream);
  spdy.splitWrites = 3;
  t.teardown(() => spdy.close());
  return { client, spdy, session };
}

t.test('tunnel: SPDY bytes in binary messages, boundaries meaningless', async (t) => {
  const echo: ForwardFn = async (_port, s) => {
    await new Promise<void>((resolve) => {
      s.on('data', (c: Buffer) => s.write(c));
      s.on('end', () => s.end(resolve));
    });
  };
  const { client, spdy, session } = await tunnel(t, echo);
  const closed = new Promise<number>((resolve) => client.once('close', (code: number) => resolve(code)));
  const error = await spdy.open([['streamtype', 'error'], ['port', '80'], ['requestid', '0']]);
  const data = await spdy.open([['streamtype', 'data'], ['port', '80'], ['requestid', '0']]);
  await spdy.waitFor(is('SYN_REPLY', data));
  const payload = Buffer.alloc(40 * 1024, 0x61);
  spdy.data(error, '', true);
  spdy.data(data, payload, true);
  await spdy.waitFor((f) => f.type === 'DATA' && f.streamId === data && f.fin);
  t.equal(spdy.dataOf(data).bytes.length, payload.length);
  await spdy.waitFor((f) => f.type === 'DATA' && f.streamId === error && f.fin);
  spdy.goAway();
  await session.done;
  t.equal(await closed, 1000, 'the tunnel ends with a normal close');
});

t.test('tunnel: a text message drops the connection', async (t) => {
  const { client, session } = await tunnel(t, async () => undefined);
  const closed = new Promise<number>((resolve) => client.once('close', (code: number) => resolve(code)));
  client.send('not SPDY');
  t.equal(await closed, 1006, 'terminated without a close frame');
  await session.done;
});

t.test('channel mode: ports beyond the session or node cap get the reason on their error channel, nothing forwarded', async (t) => {
  const { server, socket, client } = await wsPair(t, ['v4.channel.k8s.io']);
  const rec = record(client);
  const forwarded: number[] = [];
  const forward: ForwardFn = async (port, stream) => {
    forwarded.push(port);
    await new Promise<void>((resolve) => stream.once('data', (c: Buffer) => stream.end(Buffer.from(String(c).toUpperCase()), resolve)));
  };
  // The node has one slot left (one other connection holds the first).
  const limiter = new ForwardLimiter(2);
  const other = limiter.tryAcquire();
  const session = serveWebSocketPortForward(server, socket, { ...base, ports: [80, 81, 82], forward, maxConnections: 2, limiter });
  const text = (ch: number) => rec.waitFor(onChannel(ch)).then((m) => m.data.subarray(1).toString());
  t.equal(await text(5), 'too many forwarded connections in this port-forward session (limit 2); close some and retry', 'port 82: over the session cap');
  t.equal(await text(3), 'too many forwarded connections on this node (limit 2); retry later', 'port 81: over the node cap');
  client.send(Buffer.from([0, ...Buffer.from('hello')]));
  t.equal(await text(0), 'HELLO', 'port 80 is forwarded');
  t.equal(await rec.closed, 1000);
  await session.done;
  t.same(forwarded, [80]);
  t.equal(limiter.active, 1, 'the forwarded port gave its slot back');
  other?.();
});
