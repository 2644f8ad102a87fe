import { pino } from 'pino';
import t from 'tap';
import { parseStreamOptions } from '../../../../src/streaming/remotecommand/options.js';
import { serveRemoteCommand, type RemoteCommandServeSpec } from '../../../../src/streaming/remotecommand/serve.js';
import { SPDY, WEBSOCKET, fakeUpgrade, readUntil, refusalOf, sessionOf } from '../fixtures/upgrade.js';

const spec = (run: RemoteCommandServeSpec['run'] = async () => ({ kind: 'exited', exitCode: 0 })): RemoteCommandServeSpec => ({
  kind: 'exec',
  options: parseStreamOptions({ command: 'true', output: '1' }, 'kubelet', 'exec'),
  run,
  log: pino({ level: 'silent' }),
  idleTimeoutMs: 0,
  streamCreationTimeoutMs: 30_000,
  closeWaitMs: 100,
});

t.test('transport refusals, before anything is written', async (t) => {
  const cases: Array<[string, ReturnType<typeof fakeUpgrade>, number, RegExp]> = [
    ['no Upgrade header', fakeUpgrade([['Connection', 'Upgrade']]), 400, /Upgrade request required/],
    ['an upgrade to h2c', fakeUpgrade([['Upgrade', 'h2c']]), 400, /unsupported upgrade protocol "h2c"/],
    ['a WebSocket POST', fakeUpgrade(WEBSOCKET, 'POST'), 405, /must be a GET request, not POST/],
    ['WebSocket version 7', fakeUpgrade([...WEBSOCKET.filter(([n]) => n !== 'Sec-WebSocket-Version'), ['Sec-WebSocket-Version', '7']]), 400, /Sec-WebSocket-Version "7"/],
    ['a bad WebSocket key', fakeUpgrade([...WEBSOCKET.filter(([n]) => n !== 'Sec-WebSocket-Key'), ['Sec-WebSocket-Key', 'nope']]), 400, /Sec-WebSocket-Key/],
    ['an empty offer', fakeUpgrade([...WEBSOCKET, ['Sec-WebSocket-Protocol', ' , ']]), 400, /names no subprotocol/],
  ];
  for (const [what, upgrade, code, message] of cases) {
    const refusal = refusalOf(serveRemoteCommand(upgrade, spec()));
    t.equal(refusal.error.code, code, what);
    t.match(refusal.error.message, message, what);
    t.equal(upgrade.client.readableLength, 0, `${what}: nothing written`);
  }
});

t.test('WebSocket: the first offered subprotocol served wins; only unknown ones are a 403', async (t) => {
  const offer = (...lines: string[]) => fakeUpgrade([...WEBSOCKET, ...lines.map((l): [string, string] => ['Sec-WebSocket-Protocol', l])]);
  const v5 = sessionOf(serveRemoteCommand(offer('v5.channel.k8s.io, v4.channel.k8s.io'), spec()));
  t.same([v5.transport, v5.protocol], ['websocket', 'v5.channel.k8s.io']);
  const lines = sessionOf(serveRemoteCommand(offer('v3.channel.k8s.io', 'v4.base64.channel.k8s.io'), spec()));
  t.equal(lines.protocol, 'v4.base64.channel.k8s.io', 'every header line is read');
  t.equal(sessionOf(serveRemoteCommand(fakeUpgrade(WEBSOCKET), spec())).protocol, '', 'none offered: v1, none echoed');
  const unknown = refusalOf(serveRemoteCommand(offer('v3.channel.k8s.io,v2.channel.k8s.io'), spec()));
  t.equal(unknown.error.code, 403);
  t.equal(unknown.error.message, 'unable to upgrade: none of the offered subprotocols [v3.channel.k8s.io v2.channel.k8s.io] is supported');
});

t.test('SPDY: httpstream.Handshake, a v5 offer gets v4; 400 without a version, 403 listing ours', async (t) => {
  const offer = (...lines: string[]) => fakeUpgrade([...SPDY, ...lines.map((l): [string, string] => ['X-Stream-Protocol-Version', l])]);
  const v4 = sessionOf(serveRemoteCommand(offer('v5.channel.k8s.io', 'v4.channel.k8s.io'), spec()));
  t.same([v4.transport, v4.protocol], ['spdy', 'v4.channel.k8s.io']);
  const none = refusalOf(serveRemoteCommand(offer(), spec()));
  t.equal(none.error.code, 400);
  t.equal(none.error.message, 'unable to upgrade: X-Stream-Protocol-Version is required');
  const unknown = refusalOf(serveRemoteCommand(offer('v9.channel.k8s.io'), spec()));
  t.equal(unknown.error.code, 403);
  t.same(unknown.headers, { 'X-Accepted-Stream-Protocol-Versions': ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'] });
});

t.test('a SPDY session writes its 101 at start, counts it once, and is over when the client leaves', async (t) => {
  const upgrade = fakeUpgrade([...SPDY, ['X-Stream-Protocol-Version', 'v4.channel.k8s.io']]);
  const session = sessionOf(serveRemoteCommand(upgrade, spec()));
  t.equal(upgrade.client.readableLength, 0, 'nothing before start');
  let upgraded = 0;
  const answer = readUntil(upgrade.client, '\r\n\r\n');
  const done = session.start(() => upgraded++);
  t.equal(upgraded, 1);
  const head = await answer;
  t.match(head, /^HTTP\/1\.1 101 Switching Protocols\r\n/);
  t.match(head, /\r\nUpgrade: SPDY\/3\.1\r\n/);
  t.match(head, /\r\nX-Stream-Protocol-Version: v4\.channel\.k8s\.io\r\n/);
  upgrade.client.destroy();
  await done;
  t.equal(upgraded, 1);
});

t.test('a session whose client left before the start is over at once, never upgraded', async (t) => {
  for (const lines of [[...SPDY, ['X-Stream-Protocol-Version', 'v4.channel.k8s.io']] as const, [...WEBSOCKET, ['Sec-WebSocket-Protocol', 'v5.channel.k8s.io']] as const]) {
    const upgrade = fakeUpgrade(lines);
    const session = sessionOf(serveRemoteCommand(upgrade, spec()));
    upgrade.client.destroy();
    await new Promise((resolve) => upgrade.socket.once('close', resolve));
    let upgraded = 0;
    await session.start(() => upgraded++);
    t.equal(upgraded, 0, session.transport);
  }
});
