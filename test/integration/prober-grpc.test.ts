import t, { type Test } from 'tap';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { createServer, type Http2Server } from 'node:http2';
import { runProbe, type ProbeIO } from '../../src/kubelet/prober/handlers.js';
import { createServer as createHttpsServer } from 'node:https';
import { makePki } from '../helpers/pki.js';

// The gRPC probe's wiring against a real HTTP/2 server on loopback that speaks the health
// protocol (grpc.health.v1.Health/Check), as grpc-go's health server does.
async function healthServer(t: Test, statusOf: (service: string) => number | 'unimplemented' | 'hang'): Promise<number> {
  const server: Http2Server = createServer();
  server.on('stream', (stream, headers) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      if (headers[':path'] !== '/grpc.health.v1.Health/Check') {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'unknown service' }, { endStream: true });
        return;
      }
      const body = Buffer.concat(chunks);
      const service = body.length > 7 ? body.subarray(7).toString() : '';
      const status = statusOf(service);
      if (status === 'hang') return;
      if (status === 'unimplemented') {
        stream.respond({ ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'unknown%20service%20grpc.health.v1.Health' }, { endStream: true });
        return;
      }
      stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(Buffer.from([0, 0, 0, 0, 2, 0x08, status]));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

// Probe I/O that dials loopback directly, where the runtime's relays dial inside the pod.
const loopbackIO: ProbeIO = {
  host: '127.0.0.1',
  exec: () => Promise.reject(new Error('unused')),
  connect: () => Promise.reject(new Error('unused')),
  dial: (port, signal) => {
    const socket = netConnect(port, '127.0.0.1');
    signal.addEventListener('abort', () => socket.destroy(), { once: true });
    return socket;
  },
};

t.test('SERVING passes; NOT_SERVING, a per-service status, an unimplemented server and a closed port fail', async (t) => {
  const port = await healthServer(t, (service) => (service === 'down' ? 2 : service === 'none' ? 'unimplemented' : service === 'slow' ? 'hang' : 1));
  t.same(await runProbe({ grpc: { port } }, [], loopbackIO), { result: 'success', output: 'service healthy' });
  t.same(await runProbe({ grpc: { port, service: 'down' } }, [], loopbackIO), { result: 'failure', output: 'service unhealthy (responded with "NOT_SERVING")' });
  t.match(await runProbe({ grpc: { port, service: 'none' } }, [], loopbackIO), { result: 'failure', output: /does not implement the grpc health protocol \(grpc\.health\.v1\.Health\): unknown service grpc\.health\.v1\.Health/ });
  t.same(await runProbe({ grpc: { port, service: 'slow' }, timeoutSeconds: 1 }, [], loopbackIO), { result: 'failure', output: 'timeout: health rpc did not complete within 1s' });
  t.match(await runProbe({ grpc: { port: 1 } }, [], loopbackIO), { result: 'failure', output: /^error: failed to connect service at "127\.0\.0\.1:1": / }, 'nothing listens on port 1');
  t.match(await runProbe({ grpc: { port: 70000 } }, [], loopbackIO), { result: 'failure', output: 'invalid port 70000' });
});

t.test('httpGet with scheme HTTPS: TLS without verifying the certificate (the kubelet\'s InsecureSkipVerify); the status decides', async (t) => {
  const pki = makePki(t);
  const ca = pki.ca('probe-ca');
  const served = pki.issue(ca, 'probe-server', '/CN=not-the-pod', { serverIP: '192.0.2.1' });
  const requests: string[] = [];
  const server = createHttpsServer({ cert: pki.read(served.cert), key: pki.read(served.key) }, (req, res) => {
    requests.push(`${req.method} ${req.url} ${req.headers.host}`);
    res.writeHead(req.url === '/healthz' ? 200 : 503).end('x');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  t.same(await runProbe({ httpGet: { port, path: '/healthz', scheme: 'HTTPS' } }, [], loopbackIO), { result: 'success', output: 'HTTP probe succeeded with statuscode: 200' }, 'a certificate for another name, from an unknown CA, is accepted');
  t.same(await runProbe({ httpGet: { port, path: '/down', scheme: 'HTTPS' } }, [], loopbackIO), { result: 'failure', output: 'HTTP probe failed with statuscode: 503' });
  t.same(requests, [`GET /healthz 127.0.0.1:${port}`, `GET /down 127.0.0.1:${port}`]);
  const plain = await runProbe({ httpGet: { port: await healthServer(t, () => 1), scheme: 'HTTPS' }, timeoutSeconds: 2 }, [], loopbackIO);
  t.equal(plain.result, 'failure', 'a server that speaks no TLS fails the probe');
});
