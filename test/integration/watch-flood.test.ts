import { readdirSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect, type TLSSocket } from 'node:tls';
import t from 'tap';
import { startTestNode } from '../helpers/nodelet.js';
import { makePki } from '../helpers/pki.js';
import { TOKENS } from '../unit/auth/fixtures/security.js';

/**
 * An identity with only `get nodes/pods` once opened ~20,000 never-reading watches
 * and took every descriptor. Now the node holds at most --max-watches, one user at most
 * --max-watches-per-user; a refused watch is a 429 whose connection is closed, and an admin's
 * requests are served meanwhile.
 */

interface Flooder {
  readonly status: number;
  /** The server closed the connection. */
  readonly closed: Promise<void>;
  destroy(): void;
}

/** A TLS client that sends one watch, reads the answer's status line, and never reads again. */
function neverReadingWatch(url: string, token: string, path: string): Promise<Flooder> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket: TLSSocket = connect({ host: hostname, port: Number(port), rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
    let head = '';
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.on('error', () => undefined);
    socket.once('secureConnect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n\r\n`));
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3}) /.exec(head);
      if (!m) return;
      socket.off('data', onData);
      socket.pause(); // never reads again
      resolve({ status: Number(m[1]), closed, destroy: () => socket.destroy() });
    };
    socket.on('data', onData);
    void closed.then(() => reject(new Error(`closed before an answer: ${JSON.stringify(head)}`)));
  });
}

const openDescriptors = () => readdirSync('/proc/self/fd').length;

t.test('a watch flood by one user: 429 beyond the caps, connections closed, the admin served meanwhile', async (t) => {
  const pki = makePki(t);
  const tokenFile = join(pki.dir, 'tokens.csv');
  await writeFile(tokenFile, TOKENS);
  const node = await startTestNode(t, { tokenAuthFile: tokenFile, anonymousAuth: false, maxWatches: 150, maxWatchesPerUser: 100 });
  const admin = (path: string) =>
    new Promise<{ status: number; ms: number }>((resolve, reject) => {
      const started = performance.now();
      const { hostname, port } = new URL(node.url);
      const s = connect({ host: hostname, port: Number(port), rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] });
      let text = '';
      s.on('error', reject);
      s.once('secureConnect', () => s.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer admin-token\r\nConnection: close\r\n\r\n`));
      s.on('data', (d: Buffer) => (text += d.toString('latin1')));
      s.on('close', () => resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0), ms: performance.now() - started }));
    });
  t.equal((await admin('/pods')).status, 200, 'the admin before the flood');
  const baseline = openDescriptors();

  // The viewer may `get nodes/pods` only (the review's identity). 400 watches, in waves of 50.
  const flood: Flooder[] = [];
  for (let wave = 0; wave < 8; wave++) {
    flood.push(...(await Promise.all(Array.from({ length: 50 }, () => neverReadingWatch(node.url, 'viewer-token', '/api/v1/pods?watch=true')))));
    const during = await admin('/api/v1/namespaces/default/pods');
    t.equal(during.status, 200, `wave ${wave}: the admin's list is served (${during.ms.toFixed(0)} ms)`);
  }
  const statuses = flood.map((f) => f.status);
  t.equal(statuses.filter((s) => s === 200).length, 100, 'the viewer got --max-watches-per-user watches');
  t.equal(statuses.filter((s) => s === 429).length, 300, 'and 429 for the 300 more');
  await Promise.all(flood.filter((f) => f.status === 429).map((f) => f.closed));
  t.pass('every refused connection was closed by the server');

  // The node cap: the admin's watches fill what is left of it, then 429 for anyone.
  const mine = await Promise.all(Array.from({ length: 50 }, () => neverReadingWatch(node.url, 'admin-token', '/api/v1/events?watch=true')));
  t.same(new Set(mine.map((f) => f.status)), new Set([200]), 'the admin\'s 50 fill the node\'s 150');
  const over = await neverReadingWatch(node.url, 'admin-token', '/api/v1/nodes?watch=true');
  t.equal(over.status, 429, 'the 151st watch on the node: 429');
  t.equal((await admin('/healthz')).status, 200, 'the admin is still served at the node cap');
  // What the flood holds: the admitted watches' connections, not the refused ones. This process
  // is both ends (nodelet runs in it): two descriptors per open connection.
  const held = openDescriptors() - baseline;
  t.ok(held <= 2 * 151 + 40, `descriptors held by the flood: ${held} (151 connections open, 250 refused and closed)`);

  for (const f of [...flood, ...mine, over]) f.destroy();
});
