import t from 'tap';
import { once } from 'node:events';
import { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { stopSocketTimer } from '../../../src/streaming/socket-timer.js';

/** The socket's own timer field (lib/net.js kTimeout), by its description. */
const timerOf = (socket: Socket): unknown => {
  const symbol = Object.getOwnPropertySymbols(socket).find((s) => s.description === 'timeout');
  return symbol === undefined ? undefined : (socket as unknown as Record<symbol, unknown>)[symbol];
};

t.test('stopSocketTimer drops the cleared Timeout a socket keeps after setTimeout(0)', async (t) => {
  const socket = new Socket();
  t.teardown(() => socket.destroy());
  socket.setTimeout(60_000);
  t.ok(timerOf(socket), 'a timer is armed');
  socket.setTimeout(0);
  t.ok(timerOf(socket), 'Node keeps the cleared Timeout after setTimeout(0)');
  stopSocketTimer(socket);
  t.equal(timerOf(socket), null, 'the field is back to its constructor value');
  t.equal(socket.timeout, 0);
  // The socket's timeouts still work afterwards (their timers are unref'd: the interval keeps the
  // test's event loop alive until the event).
  const alive = setInterval(() => undefined, 60_000);
  t.teardown(() => clearInterval(alive));
  socket.setTimeout(5);
  await once(socket, 'timeout');
});

t.test('stopSocketTimer accepts a stream that is not a net.Socket', async (t) => {
  const stream = new PassThrough();
  t.doesNotThrow(() => stopSocketTimer(stream));
});
