import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import t from 'tap';
import { startTestNode } from '../helpers/nodelet.js';
import { makePki } from '../helpers/pki.js';
import { TOKENS } from '../unit/auth/fixtures/security.js';

/** startNodelet's wiring: HTTPS with a generated certificate on the main port, plus the read-only port. */

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
    });
  });

t.test('read-only port next to an authenticating main port', async (t) => {
  const pki = makePki(t);
  const tokenFile = join(pki.dir, 'tokens.csv');
  await writeFile(tokenFile, TOKENS);
  const node = await startTestNode(t, { tokenAuthFile: tokenFile, anonymousAuth: false, readOnlyPort: await freePort() });
  t.match(node.url, /^https:/);
  const ro = node.nodelet.readOnlyUrl;
  t.match(ro, /^http:\/\/127\.0\.0\.1:\d+$/);
  if (ro === undefined) return;
  const pods = await fetch(`${ro}/pods`);
  t.equal(pods.status, 200, 'GET /pods without credentials on the read-only port');
  t.equal((await fetch(`${ro}/healthz`)).status, 200);
  for (const [method, path] of [
    ['GET', '/exec/default/x/c?command=id&output=1'],
    ['POST', '/run/default/x/c?cmd=id'],
    ['GET', '/runningpods/'],
    ['GET', '/api/v1/namespaces/default/pods'],
    ['POST', '/pods'],
  ] as const) {
    const res = await fetch(`${ro}${path}`, { method });
    t.equal(res.status, 405, `${method} ${path}`);
    t.equal(await res.text(), 'Debug endpoints are disabled.\n');
  }
});

t.test('TLS renegotiation is refused (Go\'s TLS server never renegotiates)', async (t) => {
  const pki = makePki(t);
  const tokenFile = join(pki.dir, 'tokens.csv');
  await writeFile(tokenFile, TOKENS);
  const node = await startTestNode(t, { tokenAuthFile: tokenFile, anonymousAuth: false });
  const { hostname, port } = new URL(node.url);
  // TLS 1.3 has no renegotiation at all: the question is TLS 1.2's client-initiated one.
  const socket = tlsConnect({ host: hostname, port: Number(port), rejectUnauthorized: false, maxVersion: 'TLSv1.2', ALPNProtocols: ['http/1.1'] });
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  t.equal(socket.getProtocol(), 'TLSv1.2');
  const outcome = await new Promise<string>((resolve) => {
    socket.once('close', () => resolve('closed'));
    const started = socket.renegotiate({ rejectUnauthorized: false }, (err) => resolve(err ? `refused: ${err.message}` : 'renegotiated'));
    if (!started) resolve('not started');
  });
  t.not(outcome, 'renegotiated', `a renegotiation attempt is not honoured (${outcome})`);
  socket.destroy();
});
