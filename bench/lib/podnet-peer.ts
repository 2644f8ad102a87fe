/**
 * The two ends of the `podnet` figure, run INSIDE a pod's container by `docker exec` as
 * `node --input-type=module -e <this file's compiled source> MODE …` (the node-base image has the
 * machine's Node but not the bench's files, so the source travels as an argument; with `-e` the
 * arguments start at `process.argv[1]`). It imports Node's own modules only.
 *
 * - `recv HOST PORT`: listens on HOST:PORT, prints `LISTENING` once the socket is bound (the
 *   bench starts the sender only then: no sleep), accepts ONE connection, counts its bytes in place
 *   and, at the stream's end (the sender's FIN after its last byte), prints
 *   `{"bytes":…,"ms":…}`: ms from the accepted connection to the end, both taken here on the
 *   receiving side's monotonic clock, so no clock is compared across processes and nothing
 *   counts as delivered before the receiver has read it. Then it exits.
 * - `send HOST PORT BYTES`: connects and writes BYTES from one pre-built 1 MiB buffer, honouring
 *   backpressure (`drain`), then half-closes and exits once the receiver closed too.
 */
import { connect, createServer } from 'node:net';
import { performance } from 'node:perf_hooks';

const [mode, host, port, bytesArg] = process.argv.slice(1);
const fail = (what: string, err: Error): never => {
  process.stderr.write(`podnet-peer ${mode ?? '?'}: ${what}: ${err.message}\n`);
  process.exit(1);
};

if (mode === 'recv') {
  const server = createServer((sock) => {
    server.close();
    const t0 = performance.now();
    let bytes = 0;
    sock.on('data', (c: Buffer) => (bytes += c.length));
    sock.on('error', (err) => fail('connection', err));
    sock.on('end', () => {
      const ms = performance.now() - t0;
      process.stdout.write(JSON.stringify({ bytes, ms }) + '\n', () => process.exit(0));
      sock.end();
    });
  });
  server.on('error', (err) => fail('listen', err));
  server.listen(Number(port), host, () => process.stdout.write('LISTENING\n'));
} else if (mode === 'send') {
  const total = Number(bytesArg);
  const chunk = Buffer.alloc(1024 * 1024);
  let sent = 0;
  const sock = connect({ host: host!, port: Number(port) });
  const pump = (): void => {
    while (sent < total) {
      const n = Math.min(chunk.length, total - sent);
      sent += n;
      if (!sock.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
        sock.once('drain', pump);
        return;
      }
    }
    sock.end();
  };
  sock.on('connect', pump);
  sock.on('error', (err) => fail('connection', err));
  sock.resume();
  sock.on('close', () => process.exit(0));
} else {
  process.stderr.write('usage: podnet-peer recv HOST PORT | send HOST PORT BYTES\n');
  process.exit(2);
}
