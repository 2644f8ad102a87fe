import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { pino } from 'pino';
import type { Pod } from '../../../src/api/types.js';
import { buildServer } from '../../../src/server/index.js';
import { openWatch } from '../../helpers/watch-client.js';
import { openWsWatch } from '../../helpers/ws-watch.js';
import { FakeHost, makePod } from './fixtures/fake-host.js';

/**
 * `?watch=true` asked for as a WebSocket, as fabric8 (Java) opens every watch and informer: the
 * apiserver's `HandleWS` — 101, one text message per event (the HTTP line, newline included), a
 * close with 1000 at the end — under the same caps, errors and bookmarks as the HTTP watch.
 */

async function serve(t: { teardown(fn: () => unknown): void }, host: FakeHost, opts: { bookmarkIntervalMs?: number; maxWatches?: number; maxWatchesPerUser?: number } = {}) {
  const app = buildServer({ host, logger: pino({ level: 'silent' }), version: { gitVersion: 'v1.30.2-nodelet' }, ...opts });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  const port = (app.server.address() as AddressInfo).port;
  return { app, port, url: `http://127.0.0.1:${port}` };
}

function fixture(): FakeHost {
  return new FakeHost([makePod({ name: 'web', labels: { app: 'web' } }), makePod({ name: 'db', namespace: 'data', labels: { app: 'db' }, phase: 'Pending' })]);
}

function setPhase(host: FakeHost, name: string, phase: string): void {
  const pod = host.pods.find((p) => p.metadata?.name === name) as { -readonly [K in keyof Pod]: Pod[K] };
  pod.status = { ...pod.status, phase };
  host.notify(pod.metadata?.uid);
}

/** The first unmasked server frame of `buf` (after the 101's headers): opcode and payload. */
function firstFrame(buf: Buffer): { fin: boolean; opcode: number; payload: Buffer } | undefined {
  if (buf.length < 2) return undefined;
  const b1 = buf[1] as number;
  if (b1 & 0x80) throw new Error('a server frame must not be masked');
  let len = b1 & 0x7f;
  let off = 2;
  if (len === 126) {
    if (buf.length < 4) return undefined;
    len = buf.readUInt16BE(2);
    off = 4;
  } else if (len === 127) {
    if (buf.length < 10) return undefined;
    len = Number(buf.readBigUInt64BE(2));
    off = 10;
  }
  if (buf.length < off + len) return undefined;
  return { fin: ((buf[0] as number) & 0x80) !== 0, opcode: (buf[0] as number) & 0x0f, payload: buf.subarray(off, off + len) };
}

t.test("fabric8's exact upgrade request: 101, no subprotocol, then the events as text frames", async (t) => {
  const { port } = await serve(t, fixture());
  const socket = connect(port, '127.0.0.1');
  t.teardown(() => socket.destroy());
  // Byte for byte what fabric8 kubernetes-client 8.0.0 sends for `pods().inNamespace("default").watch(w)`.
  socket.write(
    'GET /api/v1/namespaces/default/pods?watch=true&allowWatchBookmarks=true HTTP/1.1\r\n' +
      `Host: 127.0.0.1:${port}\r\n` +
      'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
  );
  let buf = Buffer.alloc(0);
  const { head, frame } = await new Promise<{ head: string; frame: NonNullable<ReturnType<typeof firstFrame>> }>((resolve, reject) => {
    socket.on('data', (c: Buffer) => {
      buf = Buffer.concat([buf, c]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const f = firstFrame(buf.subarray(end + 4));
      if (f) resolve({ head: buf.subarray(0, end).toString('latin1'), frame: f });
    });
    socket.on('error', reject);
  });
  const [statusLine, ...lines] = head.split('\r\n');
  t.equal(statusLine, 'HTTP/1.1 101 Switching Protocols');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  t.equal(headers['sec-websocket-accept'], 's3pPLMBiTxaQ9kYGzzhZRbK+xOo=', "RFC 6455's sample key, answered");
  t.equal(headers.upgrade?.toLowerCase(), 'websocket');
  t.notOk('sec-websocket-protocol' in headers, 'none offered, none chosen');
  t.equal(frame.opcode, 1, 'a text frame');
  t.ok(frame.fin, 'one frame per message');
  const text = frame.payload.toString('utf8');
  t.ok(text.endsWith('}\n'), "the event's JSON and its newline, as the apiserver's websocketFramer sends them");
  t.match(JSON.parse(text), { type: 'ADDED', object: { kind: 'Pod', apiVersion: 'v1', metadata: { name: 'web', namespace: 'default' } } });
});

t.test('one message per event: initial state, changes, a selector, bookmarks', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host, { bookmarkIntervalMs: 50 });
  const all = await openWsWatch(`${url}/api/v1/pods?watch=true&allowWatchBookmarks=true`);
  t.equal(all.status, 101);
  const db = await openWsWatch(`${url}/api/v1/pods?watch=true&labelSelector=app%3Ddb`);
  await all.waitFor('both pods', () => all.events.filter((e) => e.type === 'ADDED').length === 2);
  setPhase(host, 'web', 'Failed');
  const modified = await all.waitFor('the change', (e) => e.type === 'MODIFIED');
  t.match(modified.object, { metadata: { name: 'web' }, status: { phase: 'Failed' } });
  const bookmark = await all.waitFor('a bookmark', (e) => e.type === 'BOOKMARK');
  t.same(Object.keys(bookmark.object.metadata ?? {}), ['resourceVersion']);
  setPhase(host, 'db', 'Running');
  await db.waitFor('db changed', (e) => e.type === 'MODIFIED');
  t.same(db.events.map((e) => `${e.type} ${e.object.metadata?.name}`), ['ADDED db', 'MODIFIED db'], 'the selector applies; no bookmarks unless asked');
  t.ok([...all.messages, ...db.messages].every((m) => !m.binary && m.text.endsWith('\n') && m.text.indexOf('\n') === m.text.length - 1), 'text messages, one event each');
  all.socket.close();
  db.socket.close();
  await Promise.all([all.closed, db.closed]);
});

t.test('resuming from a version, a streaming list, events and nodes, Tables', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host);
  const list = (await (await fetch(`${url}/api/v1/pods`)).json()) as { metadata: { resourceVersion: string } };
  const rv = list.metadata.resourceVersion;
  setPhase(host, 'web', 'Succeeded');
  const resumed = await openWsWatch(`${url}/api/v1/pods?watch=true&resourceVersion=${rv}`);
  await resumed.waitFor('the change after rv', (e) => e.type === 'MODIFIED');
  t.same(resumed.events.map((e) => e.type), ['MODIFIED'], 'only what came after the version');
  const streaming = await openWsWatch(`${url}/api/v1/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan`);
  await streaming.waitFor('initial-events-end', (e) => e.type === 'BOOKMARK');
  t.same(streaming.events.map((e) => e.type), ['ADDED', 'ADDED', 'BOOKMARK']);
  const nodes = await openWsWatch(`${url}/api/v1/nodes?watch=true`);
  t.match((await nodes.waitFor('the node', (e) => e.type === 'ADDED')).object, { kind: 'Node' });
  const events = await openWsWatch(`${url}/api/v1/namespaces/default/events?watch=true`);
  host.recorder.record({ kind: 'Pod', metadata: { name: 'web', namespace: 'default' } }, 'Normal', 'Started', 'Started container app');
  t.match((await events.waitFor('an event', (e) => e.type === 'ADDED')).object, { kind: 'Event', reason: 'Started' });
  const table = await openWsWatch(`${url}/api/v1/pods?watch=true`, [], { accept: 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json' });
  const first = await table.waitFor('a row', (e) => e.type === 'ADDED');
  t.match(first.object, { kind: 'Table', rows: [{ cells: ['web'] }] });
  for (const w of [resumed, streaming, nodes, events, table]) w.socket.close();
});

t.test('the chosen subprotocol: the one offered, or the first of several', async (t) => {
  const { url } = await serve(t, fixture());
  for (const [offered, chosen] of [
    [['base64.binary.k8s.io'], 'base64.binary.k8s.io'],
    [['binary.k8s.io'], 'binary.k8s.io'],
    [['binary.k8s.io', 'base64.binary.k8s.io'], 'binary.k8s.io'],
    [[], ''],
  ] as const) {
    const w = await openWsWatch(`${url}/api/v1/pods?watch=true`, [...offered]);
    t.equal(w.status, 101);
    t.equal(w.protocol, chosen, `offered [${offered.join(', ')}]`);
    await w.waitFor('the state', () => w.events.length === 2);
    t.ok(w.messages.every((m) => !m.binary), 'JSON is sent as text whatever the subprotocol (the apiserver does the same)');
    w.socket.close();
  }
});

t.test('timeoutSeconds ends the watch with a normal close; the client closing ends it too', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host);
  const w = await openWsWatch(`${url}/api/v1/pods?watch=true&timeoutSeconds=1`);
  t.same(await w.closed, { code: 1000, reason: '' }, 'a clean close after the timeout');
  t.equal(w.events.length, 2);
  const mine = await openWsWatch(`${url}/api/v1/pods?watch=true`);
  await mine.waitFor('the state', () => mine.events.length === 2);
  // What the client sends is read and dropped (the apiserver's IgnoreReceives).
  mine.socket.send('hello');
  setPhase(host, 'web', 'Failed');
  await mine.waitFor('a change after the client spoke', (e) => e.type === 'MODIFIED');
  t.equal(host.watch.pods.hub.watcherCount, 1);
  mine.socket.close();
  await mine.closed;
  await waitUntil(() => host.watch.pods.hub.watcherCount === 0);
  t.equal(host.watch.pods.hub.watcherCount, 0, 'the watcher went with the client');
});

t.test('refusals come before the 101, as Status answers: too old, too new, malformed, over the cap', async (t) => {
  const host = fixture();
  const { url } = await serve(t, host, { maxWatches: 10, maxWatchesPerUser: 2 });
  const old = await openWsWatch(`${url}/api/v1/pods?watch=true&resourceVersion=1`);
  t.equal(old.status, 410);
  t.match(JSON.parse(old.body), { kind: 'Status', reason: 'Expired' });
  const huge = await openWsWatch(`${url}/api/v1/pods?watch=true&resourceVersion=99999999999999999`);
  t.equal(huge.status, 504);
  t.match(JSON.parse(huge.body), { reason: 'Timeout', message: /^Timeout: Too large resource version: 99999999999999999, current: \d+$/ });
  const bad = await openWsWatch(`${url}/api/v1/pods?watch=true&timeoutSeconds=x`);
  t.equal(bad.status, 400);
  // The per-user cap counts HTTP and WebSocket watches together.
  const http = await openWatch(`${url}/api/v1/pods?watch=true`);
  t.equal(http.status, 200);
  const ws = await openWsWatch(`${url}/api/v1/pods?watch=true`);
  t.equal(ws.status, 101);
  const third = await openWsWatch(`${url}/api/v1/pods?watch=true`);
  t.equal(third.status, 429);
  t.match(JSON.parse(third.body), { reason: 'TooManyRequests', message: 'too many watches open for user "system:anonymous" (limit 2); retry later', details: { retryAfterSeconds: 10 } });
  ws.socket.close();
  await ws.closed;
  let again = await openWsWatch(`${url}/api/v1/pods?watch=true`);
  while (again.status === 429) again = await openWsWatch(`${url}/api/v1/pods?watch=true`);
  t.equal(again.status, 101, 'a closed WebSocket watch frees its place');
  again.socket.close();
  http.close();
});

t.test('a refused handshake (a malformed key) is a Status and holds no watch place', async (t) => {
  const host = fixture();
  const { port } = await serve(t, host, { maxWatches: 1, maxWatchesPerUser: 1 });
  for (let i = 0; i < 3; i++) {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let got = '';
      socket.on('data', (c: Buffer) => (got += c.toString('latin1')));
      socket.on('close', () => resolve(got));
      socket.on('error', reject);
      socket.write('GET /api/v1/pods?watch=true HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: not-a-key\r\nSec-WebSocket-Version: 13\r\n\r\n');
    });
    t.match(answer, /^HTTP\/1\.1 400 /, `attempt ${i + 1}: refused by the handshake`);
    t.match(answer, /"reason":"BadRequest"/, `attempt ${i + 1}: a Status body`);
    t.match(answer, /missing or invalid Sec-WebSocket-Key/, `attempt ${i + 1}: says why`);
    await waitUntil(() => host.watch.pods.hub.watcherCount === 0);
  }
  const { url } = { url: `http://127.0.0.1:${port}` };
  const w = await openWsWatch(`${url}/api/v1/pods?watch=true`);
  t.equal(w.status, 101, 'the one place is free');
  w.socket.close();
});

t.test('a HEAD watch answers its status and headers with no body and holds nothing', async (t) => {
  const host = fixture();
  const { app } = await serve(t, host, { maxWatches: 1, maxWatchesPerUser: 1 });
  for (let i = 0; i < 3; i++) {
    const head = await app.inject({ method: 'HEAD', url: '/api/v1/pods?watch=true' });
    t.equal(head.statusCode, 200, `attempt ${i + 1}`);
    t.equal(head.body, '', 'no body');
    t.match(head.headers['content-type'], /application\/json/);
    t.equal(host.watch.pods.hub.watcherCount, 0, 'no watcher left behind');
  }
  // Refusals still come first: a resourceVersion beyond uint64 is a 400.
  t.equal((await app.inject({ method: 'HEAD', url: '/api/v1/pods?watch=true&resourceVersion=99999999999999999999' })).statusCode, 400);
});

t.test('closing the server closes WebSocket watches normally', async (t) => {
  const host = fixture();
  const { app, url } = await serve(t, host);
  const w = await openWsWatch(`${url}/api/v1/pods?watch=true`);
  await w.waitFor('the state', () => w.events.length === 2);
  await app.close();
  t.same(await w.closed, { code: 1000, reason: '' });
  t.equal(host.watch.pods.hub.watcherCount, 0);
});

/** Resolves once `cond` holds (the server notices a close a moment after the client). */
async function waitUntil(cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not reached');
    await new Promise((r) => setImmediate(r));
  }
}
