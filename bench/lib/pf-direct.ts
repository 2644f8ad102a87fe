/**
 * The DIRECT baseline of the port-forward figure, run inside the pod's network namespace
 * (`nsenter -t <pid> -n node pf-direct.js PORT PATH`): one HTTP/1.0 GET to 127.0.0.1:PORT, bytes
 * counted in place until the server closes. Prints `{"bytes":…,"ms":…}` (connect → last byte).
 */
import { connect } from 'node:net';
import { performance } from 'node:perf_hooks';

const [port, path] = process.argv.slice(2);
const t0 = performance.now();
let bytes = 0;
const sock = connect({ host: '127.0.0.1', port: Number(port) }, () => sock.write(`GET ${path} HTTP/1.0\r\n\r\n`));
sock.on('data', (c: Buffer) => (bytes += c.length));
sock.on('error', (err) => {
  process.stderr.write(`pf-direct: ${err.message}\n`);
  process.exit(1);
});
sock.on('end', () => {
  process.stdout.write(JSON.stringify({ bytes, ms: performance.now() - t0 }) + '\n');
  process.exit(0);
});
