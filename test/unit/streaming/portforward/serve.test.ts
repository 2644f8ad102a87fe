import { pino } from 'pino';
import t from 'tap';
import { ForwardLimiter } from '../../../../src/streaming/portforward/limits.js';
import { servePortForward, type PortForwardServeSpec } from '../../../../src/streaming/portforward/serve.js';
import { SPDY, WEBSOCKET, fakeUpgrade, readUntil, refusalOf, sessionOf } from '../fixtures/upgrade.js';

const spec = (query: PortForwardServeSpec['query'] = {}, watch?: PortForwardServeSpec['watch']): PortForwardServeSpec => ({
  query,
  forward: async () => undefined,
  log: pino({ level: 'silent' }),
  idleTimeoutMs: 0,
  streamCreationTimeoutMs: 30_000,
  closeWaitMs: 100,
  maxConnections: 4,
  limiter: new ForwardLimiter(8),
  ...(watch ? { watch } : {}),
});
const ws = (...offers: string[]) => fakeUpgrade([...WEBSOCKET, ...offers.map((o): [string, string] => ['Sec-WebSocket-Protocol', o])]);

t.test('SPDY: portforward.k8s.io or a 400/403', async (t) => {
  const offer = (...lines: string[]) => fakeUpgrade([...SPDY, ...lines.map((l): [string, string] => ['X-Stream-Protocol-Version', l])]);
  const ok = sessionOf(servePortForward(offer('portforward.k8s.io'), spec()));
  t.same([ok.transport, ok.protocol], ['spdy', 'portforward.k8s.io']);
  t.equal(refusalOf(servePortForward(offer(), spec())).error.code, 400);
  const other = refusalOf(servePortForward(offer('v4.channel.k8s.io'), spec()));
  t.equal(other.error.code, 403);
  t.same(other.headers, { 'X-Accepted-Stream-Protocol-Versions': ['portforward.k8s.io'] });
});

t.test('WebSocket: the tunnel needs no ports; channel mode checks its ports before the subprotocol', async (t) => {
  const tunnel = sessionOf(servePortForward(ws('SPDY/3.1+portforward.k8s.io'), spec()));
  t.same([tunnel.transport, tunnel.protocol], ['websocket', 'SPDY/3.1+portforward.k8s.io']);
  const channel = sessionOf(servePortForward(ws('v5.channel.k8s.io', 'v4.channel.k8s.io'), spec({ port: '80' })));
  t.equal(channel.protocol, 'v4.channel.k8s.io', 'the first offered protocol served');
  t.equal(sessionOf(servePortForward(ws(), spec({ ports: '80,81' }))).protocol, '', 'none offered: binary, none echoed');
  const noPorts = refusalOf(servePortForward(ws('v5.channel.k8s.io'), spec()));
  t.equal(noPorts.error.code, 400, 'ports first, even with an unknown subprotocol');
  t.equal(noPorts.error.message, 'query parameter "port" is required');
  t.match(refusalOf(servePortForward(ws(), spec({ port: '0' }))).error.message, /must be > 0/);
  const unknown = refusalOf(servePortForward(ws('v5.channel.k8s.io'), spec({ port: '80' })));
  t.equal(unknown.error.code, 403);
  t.match(unknown.error.message, /none of the offered subprotocols \[v5.channel.k8s.io\]/);
  t.equal(refusalOf(servePortForward(fakeUpgrade(WEBSOCKET, 'POST'), spec({ port: '80' }))).error.code, 405);
});

t.test('the target watch starts with the session, ends it, and stops when it is over', async (t) => {
  const upgrade = fakeUpgrade([...SPDY, ['X-Stream-Protocol-Version', 'portforward.k8s.io']]);
  let end: ((reason: string) => void) | undefined;
  let stopped = 0;
  const session = sessionOf(
    servePortForward(
      upgrade,
      spec({}, (e) => {
        end = e;
        return () => stopped++;
      }),
    ),
  );
  t.equal(end, undefined, 'not watched before the start');
  const answer = readUntil(upgrade.client, '\r\n\r\n');
  const done = session.start(() => undefined);
  t.match(await answer, /^HTTP\/1\.1 101 Switching Protocols\r\n[^]*X-Stream-Protocol-Version: portforward\.k8s\.io\r\n/);
  if (!end) throw new Error('the watch was not started');
  t.equal(stopped, 0);
  // The target is gone: the session closes from our side (GOAWAY, then the connection).
  end('pod "web" is no longer running');
  upgrade.client.resume();
  upgrade.client.once('end', () => upgrade.client.destroy());
  await done;
  t.equal(stopped, 1, 'the watch stopped once the session was over');
});
