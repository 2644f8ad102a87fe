import { connect } from 'node:net';
import { pino } from 'pino';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { badRequest } from '../../../../src/api/errors.js';
import { buildServer } from '../../../../src/server/index.js';
import { StreamingSessions } from '../../../../src/server/upgrade.js';
import { rawRequest } from '../../../helpers/raw-http.js';
import { waitFor } from '../../../helpers/wait.js';
import { FakeHost, makePod } from '../../server/fixtures/fake-host.js';

/** The port-forward routes over a real loopback listener, with an in-memory Host. */
async function serve(t: Test, maxSessions = 10): Promise<{ host: FakeHost; url: string; sessions: StreamingSessions }> {
  const host = new FakeHost([makePod({ name: 'web' })]);
  const sessions = new StreamingSessions(maxSessions);
  const app = buildServer({ host, sessions, logger: pino({ level: 'silent' }), version: { gitVersion: 'v1.30.2-nodelet' } });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  return { host, url, sessions };
}

const spdy = ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: portforward.k8s.io'];
const ws = (extra: string[] = []) => ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', ...extra];
const until = (what: string, check: () => boolean, ms = 5000) => waitFor(what, () => (check() ? true : undefined), ms, 10);

t.test('the session cap answers 429 before upgrading, one slot per connection', async (t) => {
  const { url, sessions } = await serve(t, 1);
  const first = await rawRequest(url, ['POST /portForward/default/web HTTP/1.1', 'Host: x', ...spdy], 2000, { keepOpen: true });
  t.equal(first.status, 101);
  t.equal(sessions.size, 1);
  const second = await rawRequest(url, ['GET /portForward/default/web?port=80 HTTP/1.1', 'Host: x', ...ws()]);
  t.equal(second.status, 429);
  t.same(second.headers['retry-after'], ['60']);
  first.close();
  await until('slot released', () => sessions.size === 0);
});

t.test('a handshake `ws` refuses after the slot was reserved still frees it', async (t) => {
  const { url, sessions } = await serve(t);
  const bad = await rawRequest(url, ['GET /portForward/default/web?port=80 HTTP/1.1', 'Host: x', 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: nope']);
  t.equal(bad.status, 400);
  await until('slot released', () => sessions.size === 0);
  t.pass();
});

t.test('handshakes `ws` would refuse are Statuses, before any slot: POST 405, bad version or empty offer 400', async (t) => {
  const { url, sessions } = await serve(t);
  const cases: Array<[string[], number, RegExp]> = [
    [['POST /portForward/default/web?port=80 HTTP/1.1', 'Host: x', ...ws(['Sec-WebSocket-Protocol: portforward.k8s.io'])], 405, /a WebSocket handshake must be a GET request, not POST/],
    [['GET /portForward/default/web?port=80 HTTP/1.1', 'Host: x', 'Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 7', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='], 400, /unsupported Sec-WebSocket-Version \\"7\\"/],
    [['GET /portForward/default/web?port=80 HTTP/1.1', 'Host: x', ...ws(['Sec-WebSocket-Protocol: , ,'])], 400, /names no subprotocol/],
  ];
  for (const [lines, status, message] of cases) {
    const what = lines[0] ?? '';
    const r = await rawRequest(url, lines);
    t.equal(r.status, status, what);
    t.match(r.headers['content-type'], [/application\/json/], `${what}: JSON`);
    t.match(r.body, message, `${what}: says why`);
    t.match(r.body, /"kind":"Status"/, `${what}: a Status`);
    t.equal(sessions.size, 0, `${what}: no slot held`);
  }
});

t.test('no running sandbox is a 400 before the upgrade; the forward is never called', async (t) => {
  const { url, host } = await serve(t);
  host.resolveSandbox = () => {
    throw badRequest('pod web has no running sandbox: it is not running');
  };
  const r = await rawRequest(url, ['POST /portForward/default/web HTTP/1.1', 'Host: x', ...spdy]);
  t.equal(r.status, 400);
  t.match(r.body, /no running sandbox/);
  t.notOk(host.calls.some((c) => c.startsWith('portForward')));
});

t.test('channel mode: the forward gets each port once; the WebSocket closes when all are done', async (t) => {
  const { url, host, sessions } = await serve(t);
  host.portForwardImpl = async (ref, port, stream) => {
    if (port === 81) throw new Error(`error forwarding port 81 to pod ${ref.id}, uid : refused`);
    stream.end(`hi from ${ref.pod}:${port}`);
  };
  const client = new WebSocket(`${url.replace('http', 'ws')}/api/v1/namespaces/default/pods/web/portforward?ports=80,81`, ['v5.channel.k8s.io', 'v4.channel.k8s.io']);
  const frames: Buffer[] = [];
  client.on('message', (d: Buffer) => frames.push(Buffer.from(d)));
  const code = await new Promise<number>((resolve) => client.once('close', (c: number) => resolve(c)));
  t.equal(client.protocol, 'v4.channel.k8s.io', 'v5 is not a port-forward protocol: the next offer wins');
  t.equal(code, 1000);
  const on = (ch: number) => Buffer.concat(frames.filter((f) => f[0] === ch).map((f) => f.subarray(1)));
  t.equal(on(0).subarray(2).toString(), 'hi from web:80');
  t.equal(on(3).subarray(2).toString(), 'error forwarding port 81 to pod sandbox-id, uid : refused');
  t.same(host.calls.filter((c) => c.startsWith('portForward')).sort(), ['portForward web 80', 'portForward web 81']);
  await until('slot released', () => sessions.size === 0);
});

t.test('the SPDY tunnel subprotocol is accepted and echoed despite `ws`', async (t) => {
  const { url } = await serve(t);
  const r = await rawRequest(url, ['GET /api/v1/namespaces/default/pods/web/portforward HTTP/1.1', 'Host: x', ...ws(['Sec-WebSocket-Protocol: SPDY/3.1+portforward.k8s.io'])], 2000);
  t.equal(r.status, 101);
  t.same(r.headers['sec-websocket-protocol'], ['SPDY/3.1+portforward.k8s.io']);
  const mixed = await rawRequest(url, ['GET /portForward/default/web?port=80 HTTP/1.1', 'Host: x', ...ws(['Sec-WebSocket-Protocol: v4.channel.k8s.io, SPDY/3.1+portforward.k8s.io'])], 2000);
  t.equal(mixed.status, 101, 'a channel protocol offered first wins, and the tunnel offer does not upset `ws`');
  t.same(mixed.headers['sec-websocket-protocol'], ['v4.channel.k8s.io']);
});

t.test('a session ends when its pod goes away', async (t) => {
  const { url, host, sessions } = await serve(t);
  const socket = connect(Number(new URL(url).port), '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write(['POST /portForward/default/web HTTP/1.1', 'Host: x', ...spdy, '', ''].join('\r\n'));
  socket.resume();
  await until('session open', () => sessions.size === 1);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  host.pods = [makePod({ name: 'web', namespace: 'other' })];
  await closed;
  await until('slot released', () => sessions.size === 0);
  t.pass('closed within a few polls');
});
