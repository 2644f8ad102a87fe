import { request as httpsRequest } from 'node:https';
import { connect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { Writable } from 'node:stream';
import t, { type Test } from 'tap';
import { pino } from 'pino';
import { UnionAuthenticator } from '../../src/auth/authenticator.js';
import type { SecurityOptions } from '../../src/auth/index.js';
import { PolicyAuthorizer, parsePolicy } from '../../src/auth/policy.js';
import { TokenFileAuthenticator } from '../../src/auth/token-file.js';
import { X509Authenticator } from '../../src/auth/x509.js';
import { buildServer } from '../../src/server/index.js';
import { MAX_HEADER_BYTES } from '../../src/server/tls.js';
import { FakeHost, makePod } from '../unit/server/fixtures/fake-host.js';
import { POLICY, TOKENS } from '../unit/auth/fixtures/security.js';
import { makePki } from '../helpers/pki.js';
import { waitFor } from '../helpers/wait.js';

/**
 * The main port over real TLS, in-process with a fake Host (no Docker): x509 and token
 * authentication (A6), upgrades refused before any 101 (A5), create for streaming (A4), the TLS
 * profile (A10), no redirects (A13), no secrets in the logs at trace level (A11), header caps.
 */

const pki = makePki(t);
const ca = pki.ca('ca');
const otherCa = pki.ca('other-ca');
const serving = pki.issue(ca, 'server', '/CN=node1', { serverIP: '127.0.0.1' });
const alice = pki.issue(ca, 'alice', '/CN=alice/O=system:masters/O=dev');
const bob = pki.issue(ca, 'bob', '/CN=bob');
const mallory = pki.issue(otherCa, 'mallory', '/CN=alice/O=system:masters');
const expired = pki.issue(ca, 'expired', '/CN=alice/O=system:masters', { days: -1 });

const logLines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, done) {
    logLines.push(chunk.toString());
    done();
  },
});

const host = new FakeHost([makePod({ name: 'web' })]);
const security: SecurityOptions = {
  kind: 'authenticated',
  authenticator: new UnionAuthenticator([new X509Authenticator(), TokenFileAuthenticator.fromText(TOKENS)], false),
  authorizer: new PolicyAuthorizer(parsePolicy(POLICY)),
  nodeName: 'node1',
  enableDebuggingHandlers: true,
};
const app = buildServer({
  host,
  logger: pino({ level: 'trace' }, sink),
  version: { gitVersion: 'v1.30.2-nodelet' },
  security,
  tls: { cert: pki.read(serving.cert), key: pki.read(serving.key), clientCA: pki.read(ca.cert) },
});
const url = await app.listen({ host: '127.0.0.1', port: 0 });
const port = Number(new URL(url).port);
t.teardown(() => app.close());

type Client = { cert: string; key: string } | undefined;
const tlsOpts = (client: Client): ConnectionOptions => ({
  host: '127.0.0.1',
  port,
  ca: pki.read(ca.cert),
  servername: undefined,
  ...(client ? { cert: pki.read(client.cert), key: pki.read(client.key) } : {}),
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function get(path: string, opts: { client?: Client; token?: string; method?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        ...tlsOpts(opts.client),
        path,
        method: opts.method ?? 'GET',
        agent: false,
        headers: opts.token ? { authorization: `Bearer ${opts.token}` } : {},
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Writes a raw request over TLS; resolves with the whole answer once the server closes (or after `ms`). */
function rawTls(lines: string[], client?: Client, ms = 3000): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const socket: TLSSocket = connect(tlsOpts(client), () => socket.write(lines.join('\r\n') + '\r\n\r\n'));
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve({ text, closedByServer: false });
    }, ms);
    socket.on('data', (d: Buffer) => {
      text += d.toString('latin1');
      if (text.startsWith('HTTP/1.1 101') && text.includes('\r\n\r\n')) {
        clearTimeout(timer);
        socket.destroy();
        resolve({ text, closedByServer: false });
      }
    });
    socket.on('end', () => {
      clearTimeout(timer);
      resolve({ text, closedByServer: true });
    });
    socket.on('error', reject);
  });
}

const noRedirect = (t: Test, a: Answer) => {
  t.ok(a.status < 300 || a.status >= 400, `no 3xx (${a.status})`);
  t.equal(a.headers.location, undefined, 'no Location');
};

t.test('A6: client certificates and bearer tokens on the same port', async (t) => {
  const ok = await get('/pods', { client: alice });
  t.equal(ok.status, 200, 'cert from the CA: user alice, group system:masters');
  noRedirect(t, ok);
  const bobRes = await get('/pods', { client: bob });
  t.equal(bobRes.status, 403, 'cert from the CA without a grant: authenticated, then forbidden');
  t.equal(bobRes.body, 'Forbidden (user=bob, verb=get, resource=nodes, subresource=pods)\n');
  for (const [what, client] of [['another CA', mallory], ['expired', expired]] as const) {
    const res = await get('/pods', { client });
    t.equal(res.status, 401, `cert from ${what}: 401`);
    t.equal(res.body, 'Unauthorized\n');
    noRedirect(t, res);
  }
  t.equal((await get('/pods', { token: 'admin-token' })).status, 200, 'no cert + a valid token');
  t.equal((await get('/pods', { token: 'wrong' })).status, 401, 'no cert + a bad token');
  t.equal((await get('/pods')).status, 401, 'nothing: 401 (anonymous off)');
  t.equal((await get('/nope')).status, 401, 'unknown paths too');
  t.equal((await get('/api/v1/namespaces/default/pods/web', { token: 'viewer-token' })).status, 200);
});

const UPGRADES: Record<string, string[]> = {
  websocket: ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Protocol: v5.channel.k8s.io'],
  spdy: ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v4.channel.k8s.io', 'Content-Length: 0'],
};

t.test('A5: upgrades with no or bad credentials get 401, never 101, and the socket is closed', async (t) => {
  const calls = host.calls.length;
  for (const [kind, headers] of Object.entries(UPGRADES)) {
    for (const path of ['/exec/default/web/app?command=id&output=1', '/api/v1/namespaces/default/pods/web/exec?command=id&stdout=true', '/portForward/default/web']) {
      for (const [what, creds, client] of [
        ['none', [], undefined],
        ['bad token', ['Authorization: Bearer nope'], undefined],
        ['cert from another CA', [], mallory],
      ] as const) {
        const method = kind === 'spdy' ? 'POST' : 'GET';
        const { text, closedByServer } = await rawTls([`${method} ${path} HTTP/1.1`, 'Host: node1', ...headers, ...creds], client);
        t.match(text, /^HTTP\/1\.1 401 /, `${kind} ${path} (${what}): 401`);
        t.notMatch(text, /101 Switching/, 'no 101');
        t.ok(closedByServer, 'the server closed the connection');
      }
    }
  }
  t.equal(host.calls.length, calls, 'no Host call');
});

t.test('A4 over the wire; an authorized upgrade still switches protocols over TLS', async (t) => {
  const path = '/exec/default/web/app?command=id&output=1';
  const denied = await rawTls([`GET ${path} HTTP/1.1`, 'Host: node1', ...(UPGRADES.websocket ?? []), 'Authorization: Bearer proxy-get-token']);
  t.match(denied.text, /^HTTP\/1\.1 403 /, 'get nodes/proxy cannot open a WebSocket exec');
  t.match(denied.text, /Forbidden \(user=prober, verb=create, resource=nodes, subresource=proxy\)/);
  t.ok(denied.closedByServer);
  const allowed = await rawTls([`GET ${path} HTTP/1.1`, 'Host: node1', ...(UPGRADES.websocket ?? [])], alice);
  t.match(allowed.text, /^HTTP\/1\.1 101 /, 'the upgrade event reaches routeUpgrades on the TLS server');
});

/**
 * A client that sends one request, reads the answer and then neither sends nor closes: it does not
 * answer the server's FIN (half-open), so only the server can free the connection.
 */
function silentClient(lines: string[], client?: Client): Promise<{ text: string; socket: TLSSocket }> {
  return new Promise((resolve, reject) => {
    // `allowHalfOpen` reaches the TLSSocket (tls.connect passes it on), though @types/node omits it.
    const options: ConnectionOptions & { allowHalfOpen: boolean } = { ...tlsOpts(client), allowHalfOpen: true };
    const socket: TLSSocket = connect(options, () => socket.write(lines.join('\r\n') + '\r\n\r\n'));
    let text = '';
    socket.on('data', (d: Buffer) => (text += d.toString('latin1')));
    // The server's FIN: the whole answer is in. The client keeps its side open.
    socket.once('end', () => resolve({ text, socket }));
    socket.on('error', reject);
  });
}

const serverConnections = () => new Promise<number>((resolve, reject) => app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));

t.test('refused upgrades from silent clients: every socket is closed by nodelet after its answer (401, 403, 404, 400)', async (t) => {
  const baseline = await serverConnections();
  const ws = UPGRADES.websocket ?? [];
  const kinds: [string, string[], Client, RegExp][] = [
    ['401 no credentials', ['GET /exec/default/web/app?command=id&output=1 HTTP/1.1', 'Host: node1', ...ws], undefined, /^HTTP\/1\.1 401 /],
    ['403 get nodes/proxy', ['GET /exec/default/web/app?command=id&output=1 HTTP/1.1', 'Host: node1', ...ws, 'Authorization: Bearer proxy-get-token'], undefined, /^HTTP\/1\.1 403 /],
    ['404 unknown pod', ['GET /portForward/default/nopod HTTP/1.1', 'Host: node1', ...ws], alice, /^HTTP\/1\.1 404 /],
    ['400 bad options', ['GET /exec/default/web/app HTTP/1.1', 'Host: node1', ...ws], alice, /^HTTP\/1\.1 400 /],
  ];
  const held: TLSSocket[] = [];
  t.teardown(() => held.forEach((s) => s.destroy()));
  for (let i = 0; i < 100; i++) {
    const [what, lines, client, status] = kinds[i % kinds.length]!;
    const { text, socket } = await silentClient(lines, client);
    held.push(socket);
    if (!status.test(text)) t.fail(`${what}: ${text.slice(0, 80)}`);
  }
  t.equal(held.length, 100, '100 refused upgrades answered, their clients silent and never closing');
  const peak = await serverConnections();
  const open = await waitFor(
    `server-side connections back to ${baseline}`,
    async () => {
      const n = await serverConnections();
      return n <= baseline ? n : undefined;
    },
    5000,
  ).catch(() => serverConnections());
  t.ok(open <= baseline, `server-side connections back to ${baseline} (${peak} right after the 100th answer, ${open} now) though no client closed`);
  t.ok(held.every((s) => !s.destroyed), 'the clients still hold their sockets');
});

t.test('A10: TLS 1.2+, AEAD suites, ALPN http/1.1 only', async (t) => {
  const handshake = (extra: ConnectionOptions) =>
    new Promise<{ ok: boolean; alpn?: string | false | null; version?: string | null; error?: string }>((resolve) => {
      const s = connect({ ...tlsOpts(undefined), ...extra }, () => {
        resolve({ ok: true, alpn: s.alpnProtocol, version: s.getProtocol() });
        s.destroy();
      });
      s.on('error', (err) => resolve({ ok: false, error: err.message }));
    });
  for (const v of ['TLSv1', 'TLSv1.1'] as const) {
    const r = await handshake({ minVersion: v, maxVersion: v });
    t.notOk(r.ok, `${v} refused: ${r.error}`);
  }
  const weak = await handshake({ maxVersion: 'TLSv1.2', ciphers: 'AES128-SHA:AES256-SHA:DES-CBC3-SHA' });
  t.notOk(weak.ok, `non-ECDHE CBC suites refused: ${weak.error}`);
  const both = await handshake({ ALPNProtocols: ['h2', 'http/1.1'] });
  t.equal(both.alpn, 'http/1.1', 'offered h2 and http/1.1: http/1.1');
  const h2 = await handshake({ ALPNProtocols: ['h2'] });
  t.ok(!h2.ok || h2.alpn !== 'h2', `h2 only: never selected (${h2.error ?? String(h2.alpn)})`);
  const modern = await handshake({});
  t.ok(modern.ok && (modern.version === 'TLSv1.3' || modern.version === 'TLSv1.2'), String(modern.version));
});

t.test('header size cap: a 2 MiB header is refused with 431, nothing reaches a handler', async (t) => {
  const calls = host.calls.length;
  // Node answers 431 and closes while the client may still be sending the rest of the 2 MiB, so
  // the kernel can reset the connection before the client reads the answer: either is a refusal.
  const { text } = await rawTls(['GET /pods HTTP/1.1', 'Host: node1', `X-Big: ${'a'.repeat(2 * MAX_HEADER_BYTES)}`]).catch(() => ({ text: '' }));
  t.ok(text === '' || text.startsWith('HTTP/1.1 431 '), `refused with 431 (or reset while still sending): ${JSON.stringify(text.slice(0, 40))}`);
  t.equal(host.calls.length, calls, 'no Host call');
  t.equal(app.server.headersTimeout, 30_000, 'headersTimeout set (slowloris)');
  t.equal(app.server.requestTimeout, 60_000, 'requestTimeout set');
});

t.test('A11: no token, Authorization header or key material in the logs at trace level', async (t) => {
  t.ok(logLines.length > 10, `${logLines.length} log lines captured`);
  const all = logLines.join('');
  for (const secret of ['admin-token', 'viewer-token', 'proxy-get-token', 'Bearer nope', 'PRIVATE KEY', 'BEGIN CERTIFICATE']) {
    t.notOk(all.includes(secret), `no ${JSON.stringify(secret)} in the logs`);
  }
  t.notMatch(all, /"authorization":"(?!\[REDACTED\])/i, 'authorization headers redacted');
});
