import t from 'tap';
import type { Duplex } from 'node:stream';
import { runProbe } from '../../../src/kubelet/prober/handlers.js';
import { runtimeProbeIO } from '../../../src/kubelet/prober/runtime-io.js';
import type { Runtime } from '../../../src/runtime/types.js';

/**
 * runtimeProbeIO's connections go through `runtime.portForward`, which (as the Docker runtime's
 * forwardPort does) resolves quietly when the signal aborts before the in-namespace connection is
 * open. A probe whose timeout strikes there timed out: a failure, never a success.
 */
type Forward = (stream: Duplex, signal: AbortSignal) => Promise<void>;
const runtimeWith = (forward: Forward): Runtime => ({ portForward: (_sandbox: string, _port: number, stream: Duplex, signal: AbortSignal) => forward(stream, signal) }) as unknown as Runtime;

/** A dial that never completes: resolves on the abort without touching the stream. */
const neverConnects: Forward = (_stream, signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
/** A connection that opens (the relay reads the request) and stays silent until the abort. */
const silentPeer: Forward = (stream, signal) =>
  new Promise((resolve) => {
    stream.resume();
    signal.addEventListener('abort', () => resolve(), { once: true });
  });
/** A connection that opens and answers like an HTTP server, then ends. */
const httpPeer: Forward = async (stream) => {
  stream.resume();
  stream.write(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'));
};

const tcp = { tcpSocket: { port: 8080 }, timeoutSeconds: 1 };
const http = { httpGet: { path: '/', port: 8080 }, timeoutSeconds: 1 };

t.test('tcpSocket: a dial the timeout cut short fails; an opened connection passes, silent or not', async (t) => {
  const timedOut = await runProbe(tcp, [], runtimeProbeIO(runtimeWith(neverConnects), 'c', 's'));
  t.equal(timedOut.result, 'failure');
  t.match(timedOut.output, /no connection to port 8080 within 1s/);
  t.equal((await runProbe(tcp, [], runtimeProbeIO(runtimeWith(silentPeer), 'c', 's'))).result, 'success', 'connected, the peer says nothing');
  t.equal((await runProbe(tcp, [], runtimeProbeIO(runtimeWith(httpPeer), 'c', 's'))).result, 'success');
});

t.test('httpGet: a dial the timeout cut short fails; an answer passes', async (t) => {
  t.equal((await runProbe(http, [], runtimeProbeIO(runtimeWith(neverConnects), 'c', 's'))).result, 'failure');
  t.equal((await runProbe(http, [], runtimeProbeIO(runtimeWith(silentPeer), 'c', 's'))).result, 'failure', 'connected, no answer');
  t.equal((await runProbe(http, [], runtimeProbeIO(runtimeWith(httpPeer), 'c', 's'))).result, 'success');
});
