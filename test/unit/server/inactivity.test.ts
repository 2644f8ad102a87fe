import t, { type Test } from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { once } from 'node:events';
import { InactivityLimit } from '../../../src/server/inactivity.js';
import { build, FakeHost } from './fixtures/fake-host.js';

const LIMIT = 1000;

/** A plain HTTP server whose answers start and never end, its inactivity limit swept by hand. */
async function serve(t: Test): Promise<{ limit: InactivityLimit; port: number; responses: ServerResponse[] }> {
  const responses: ServerResponse[] = [];
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('x');
    responses.push(res);
  });
  server.timeout = 0;
  // The interval never fires during the test: sweeps are run by hand with chosen times.
  const limit = new InactivityLimit(server, 'connection', LIMIT, 3_600_000);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => {
    server.closeAllConnections();
    server.close();
  });
  return { limit, port: (server.address() as AddressInfo).port, responses };
}

async function request(port: number): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  socket.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\n');
  await once(socket, 'data');
  return socket;
}

t.test('a connection that moves no byte for the limit gets the timeout: Node destroys it', async (t) => {
  const { limit, port } = await serve(t);
  const socket = await request(port);
  t.equal(limit.size, 1);
  const t0 = Date.now();
  limit.sweep(t0);
  limit.sweep(t0 + LIMIT - 1);
  t.equal(socket.destroyed, false, 'not before the limit');
  const closed = once(socket, 'close');
  limit.sweep(t0 + LIMIT);
  await closed;
  t.pass('closed by the server');
  await t.resolves(async () => {
    while (limit.size > 0) await new Promise((r) => setImmediate(r));
  }, 'forgotten once closed');
});

t.test('bytes moving either way restart the count', async (t) => {
  const { limit, port, responses } = await serve(t);
  const socket = await request(port);
  const t0 = Date.now();
  limit.sweep(t0);
  responses[0]!.write('more');
  await once(socket, 'data');
  limit.sweep(t0 + LIMIT);
  t.equal(socket.destroyed, false, 'the write was seen: counting restarts');
  limit.sweep(t0 + 2 * LIMIT - 1);
  t.equal(socket.destroyed, false);
  const closed = once(socket, 'close');
  limit.sweep(t0 + 2 * LIMIT);
  await closed;
  t.pass('closed a limit after the last byte');
});

t.test('nodelet\'s server arms no socket timer for a request (Node\'s `timeout` stays 0 while it is served)', async (t) => {
  const app = build(new FakeHost());
  const seen: unknown[] = [];
  app.addHook('onRequest', async (request) => {
    seen.push((request.raw.socket as Socket & { timeout?: number }).timeout);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  t.equal(app.server.timeout, 0);
  const port = (app.server.address() as AddressInfo).port;
  for (let i = 0; i < 2; i++) t.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
  // Node's `socket.timeout`: undefined when never set, 0 once cleared; was 4 h with `server.timeout`.
  t.same(seen.map((v) => v ?? 0), [0, 0], 'no timer armed while a request is served');
});
