import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApiError, KubeClient, TransportError, isGone, query, type WatchEvent } from '../../../src/apiserver/client.js';

/** A loopback HTTP server standing in for the apiserver's wire behaviour (status codes, chunked watches). */
async function serve(t: { teardown(fn: () => void): void }, handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<KubeClient> {
  const server = createServer(handler);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const client = new KubeClient({ server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, insecureSkipTLSVerify: false, token: 'secret-token' });
  t.teardown(() => {
    client.close();
    server.closeAllConnections();
    server.close();
  });
  return client;
}

t.test('requests: JSON both ways, bearer token, content type, decoded Status errors', async (t) => {
  const seen: { method?: string; type?: string; auth?: string; body: string }[] = [];
  const client = await serve(t, (req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method, type: req.headers['content-type'], auth: req.headers.authorization, body });
      if (req.url === '/gone') {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', reason: 'NotFound', message: 'pods "x" not found', code: 404 }));
      } else if (req.url === '/busy') {
        res.writeHead(429, { 'retry-after': '3' });
        res.end('slow down');
      } else if (req.url === '/garbage') {
        res.end('not json');
      } else {
        res.end(JSON.stringify({ ok: true }));
      }
    });
  });
  t.same(await client.request('PATCH', '/x', { body: { a: 1 }, contentType: 'application/strategic-merge-patch+json' }), { ok: true });
  t.same(seen[0], { method: 'PATCH', type: 'application/strategic-merge-patch+json', auth: 'Bearer secret-token', body: '{"a":1}' });
  const notFound = await client.request('GET', '/gone').catch((e: unknown) => e);
  t.ok(notFound instanceof ApiError);
  t.same([(notFound as ApiError).code, (notFound as ApiError).reason], [404, 'NotFound']);
  t.match((notFound as Error).message, /^GET \/gone: 404 NotFound: pods "x" not found$/);
  const busy = await client.request('GET', '/busy').catch((e: unknown) => e);
  t.same([(busy as ApiError).code, (busy as ApiError).retryAfterSeconds], [429, 3]);
  t.notMatch((busy as Error).message, /secret-token/, 'errors never quote the token');
  t.ok((await client.request('GET', '/garbage').catch((e: unknown) => e)) instanceof TransportError);
  t.equal(query({ fieldSelector: 'spec.nodeName=n 1', watch: 1, skip: undefined }), '?fieldSelector=spec.nodeName%3Dn%201&watch=1');
});

t.test('timeouts and refused connections are transport errors', async (t) => {
  const client = await serve(t, () => undefined);
  const err = await client.request('GET', '/hang', { timeoutMs: 100 }).catch((e: unknown) => e);
  t.ok(err instanceof TransportError);
  t.match((err as Error).message, /no answer within 100 ms/);
  const refused = new KubeClient({ server: 'http://127.0.0.1:1', insecureSkipTLSVerify: false });
  t.teardown(() => refused.close());
  t.match(await refused.request('GET', '/').catch((e: Error) => e.message), /ECONNREFUSED/);
});

t.test('watch: events split across chunks, in order; a normal end resolves; ERROR 410 rejects as gone', async (t) => {
  const client = await serve(t, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const a = JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '1' } } });
    const b = JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '2' } } });
    if (req.url?.startsWith('/expire')) {
      res.end(`${a}\n${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`);
      return;
    }
    const all = `${a}\n${b}\n`;
    res.write(all.slice(0, 10));
    setImmediate(() => {
      res.write(all.slice(10, 60));
      setImmediate(() => res.end(all.slice(60)));
    });
  });
  const events: WatchEvent<{ metadata: { name?: string; resourceVersion: string } }>[] = [];
  await client.watch('/w?watch=1', (e) => events.push(e as (typeof events)[number]), { idleTimeoutMs: 5000 });
  t.same(events.map((e) => [e.type, e.object.metadata.resourceVersion]), [['ADDED', '1'], ['BOOKMARK', '2']]);
  const seen: string[] = [];
  const err = await client.watch('/expire?watch=1', (e) => seen.push(e.type), { idleTimeoutMs: 5000 }).catch((e: unknown) => e);
  t.ok(isGone(err), 'a 410 ERROR event is ApiError 410');
  t.same(seen, ['ADDED'], 'events before the error were delivered');
});

t.test('watch: a silent stream is abandoned after idleTimeoutMs; abort ends it; refusals are ApiErrors', async (t) => {
  const client = await serve(t, (req, res) => {
    if (req.url?.startsWith('/forbidden')) {
      res.writeHead(403);
      res.end(JSON.stringify({ kind: 'Status', reason: 'Forbidden', message: 'no', code: 403 }));
      return;
    }
    res.writeHead(200);
    res.flushHeaders();
  });
  const stalled = await client.watch('/w?watch=1', () => undefined, { idleTimeoutMs: 150 }).catch((e: unknown) => e);
  t.match((stalled as Error).message, /no event within 150 ms/);
  const ac = new AbortController();
  const watching = client.watch('/w?watch=1', () => undefined, { idleTimeoutMs: 10_000, signal: ac.signal }).catch((e: unknown) => e);
  setTimeout(() => ac.abort(), 50);
  t.match(((await watching) as Error).message, /aborted/);
  const refused = await client.watch('/forbidden?watch=1', () => undefined, { idleTimeoutMs: 1000 }).catch((e: unknown) => e);
  t.same([(refused as ApiError).code, (refused as ApiError).reason], [403, 'Forbidden']);
});
