import { request as httpRequest } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import t from 'tap';
import { StatusError } from '../../../src/api/errors.js';
import type { Pod } from '../../../src/api/types.js';
import type { LogOptions } from '../../../src/streaming/types.js';
import { pino } from 'pino';
import { buildServer } from '../../../src/server/index.js';
import { FakeHost, build, json, makePod } from '../server/fixtures/fake-host.js';
import { waitFor } from '../../helpers/wait.js';

/** The log routes over a fake Host: status codes and their order, headers, streaming, disconnects. */

function twoContainers(): Pod {
  const pod = makePod({ name: 'duo' });
  pod.spec?.containers.push({ name: 'side', image: 'nginx' });
  return pod;
}

function setup() {
  const host = new FakeHost([makePod({ name: 'web' }), twoContainers()]);
  const seen: LogOptions[] = [];
  host.logsImpl = async (_ref, opts, out) => {
    seen.push(opts);
    out.end('log line\n');
  };
  return { host, seen, app: build(host) };
}

t.test('200 text/plain, chunked, with the body the runtime writes', async (t) => {
  const { app, host } = setup();
  for (const url of ['/containerLogs/default/web/app', '/api/v1/namespaces/default/pods/web/log', '/api/v1/namespaces/default/pods/web/log?container=app']) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, 200, url);
    t.equal(res.headers['content-type'], 'text/plain');
    t.equal(res.headers['transfer-encoding'], 'chunked');
    t.equal(res.headers['content-length'], undefined);
    t.equal(res.headers['x-content-type-options'], 'nosniff');
    t.equal(res.body, 'log line\n');
  }
  t.ok(host.calls.includes('resolveLogContainer web/app'));

  host.logsImpl = async (_r, _o, out) => void out.end();
  const empty = await app.inject({ method: 'GET', url: '/containerLogs/default/web/app' });
  t.same([empty.statusCode, empty.headers['transfer-encoding'], empty.body], [200, 'chunked', ''], 'an empty log is still chunked');
});

t.test('the query reaches the runtime as LogOptions; previous picks the instance', async (t) => {
  const { app, host, seen } = setup();
  await app.inject({ method: 'GET', url: '/containerLogs/default/web/app?follow=true&timestamps=1&tailLines=5&limitBytes=100&previous=true' });
  t.same(seen[0], { follow: true, timestamps: true, stream: 'All', tailLines: 5, limitBytes: 100 });
  t.ok(host.calls.includes('resolveLogContainer web/app previous'));
  await app.inject({ method: 'GET', url: '/api/v1/namespaces/default/pods/duo/log?container=side&stream=Stderr&sinceSeconds=60&pretty=false' });
  t.equal(seen[1]?.stream, 'Stderr');
  t.ok(seen[1]?.since instanceof Date);
  t.ok(host.calls.includes('resolveLogContainer duo/side'));
});

t.test('kubelet path: 400/422 with the literal texts before any lookup, then 404s', async (t) => {
  const { app, host } = setup();
  const cases: [string, number, string][] = [
    ['/containerLogs/default/web/app?tailLines=abc', 400, '{"message": "Unable to decode query."}'],
    ['/containerLogs/default/web/app?sinceTime=yesterday', 400, '{"message": "Unable to decode query."}'],
    ['/containerLogs/default/nopod/app?limitBytes=-', 400, '{"message": "Unable to decode query."}'],
    ['/containerLogs/default/web/app?tailLines=-1', 422, '{"message": "Invalid request."}'],
    ['/containerLogs/default/nopod/app?sinceSeconds=1&sinceTime=2026-01-01T00:00:00Z', 422, '{"message": "Invalid request."}'],
    ['/containerLogs/default/web/app?stream=Stdout&tailLines=1', 422, '{"message": "Invalid request."}'],
    ['/containerLogs/default/nopod/app', 404, 'pod "nopod" does not exist'],
    ['/containerLogs/default/web/nope', 404, 'container "nope" not found in pod "web"'],
    ['/containerLogs/default/BAD_NAME/app', 400, 'invalid name "BAD_NAME"'],
  ];
  for (const [url, code, message] of cases) {
    host.calls.length = 0;
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, code, url);
    t.equal(res.headers['content-type'], 'application/json');
    t.ok(String(json(res).message).startsWith(message), `${url}: ${String(json(res).message)}`);
    if (code !== 404) t.notOk(host.calls.some((c) => c.startsWith('getPodByName')), `${url}: refused before the pod lookup`);
    t.notOk(host.calls.some((c) => c.startsWith('logs')), `${url}: no runtime call`);
  }
});

t.test('apiserver path: its own messages, the only-container default', async (t) => {
  const { app } = setup();
  const cases: [string, number, string][] = [
    ['/api/v1/namespaces/default/pods/web/log?tailLines=abc', 400, 'tailLines: strconv.ParseInt: parsing "abc": invalid syntax'],
    ['/api/v1/namespaces/default/pods/web/log?limitBytes=0', 422, 'PodLogOptions "web" is invalid: limitBytes: Invalid value: 0: must be greater than 0'],
    ['/api/v1/namespaces/default/pods/nopod/log', 404, 'pods "nopod" not found'],
    ['/api/v1/namespaces/default/pods/duo/log', 400, 'a container name must be specified for pod duo, choose one of: [app side]'],
    ['/api/v1/namespaces/default/pods/web/log?container=nope', 404, 'container "nope" not found in pod "web"'],
  ];
  for (const [url, code, message] of cases) {
    const res = await app.inject({ method: 'GET', url });
    t.equal(res.statusCode, code, url);
    t.equal(json(res).message, message, url);
  }
});

t.test('GET only: other methods are 405 with Allow', async (t) => {
  const { app } = setup();
  for (const url of ['/containerLogs/default/web/app', '/api/v1/namespaces/default/pods/web/log']) {
    for (const method of ['POST', 'PUT', 'DELETE', 'PATCH'] as const) {
      const res = await app.inject({ method, url });
      t.equal(res.statusCode, 405, `${method} ${url}`);
      t.equal(res.headers.allow, 'GET, HEAD');
    }
  }
});

t.test('a runtime failure before any output is a Status; after output, a clean end', async (t) => {
  const { app, host } = setup();
  host.logsImpl = async () => {
    throw new StatusError('NotFound', 'container abc no longer exists');
  };
  const before = await app.inject({ method: 'GET', url: '/containerLogs/default/web/app' });
  t.equal(before.statusCode, 404);
  t.equal(json(before).message, 'container abc no longer exists');
  t.equal(before.headers['transfer-encoding'], undefined, 'no chunked header on a Status');

  host.logsImpl = async (_r, _o, out) => {
    // The route has the first byte (the answer started) before the failure.
    await new Promise((r) => out.write('partial ', r));
    throw new Error('Docker went away');
  };
  const after = await app.inject({ method: 'GET', url: '/containerLogs/default/web/app' });
  t.equal(after.statusCode, 200);
  t.equal(after.body, 'partial ', 'what was read is delivered and the body ends');
});

t.test('the chunked terminator is written apart from the last bytes (the apiserver\'s WebSocket relay drops bytes read with EOF)', async (t) => {
  const { app, host } = setup();
  host.logsImpl = async (_r, _o, out) => {
    out.end('container is alive\n'); // the last bytes and the end in one turn, as a short log's read
  };
  // The server's own writes to the accepted socket, each with the time it was made: what is
  // asserted is when nodelet hands the terminator to the socket. (Timed at the client, in this
  // same process, the reads also carry the loop's delays: on a loaded machine a late read of the
  // log's bytes made the gap look shorter than it was.)
  const writes: { text: string; at: number }[] = [];
  app.server.on('connection', (socket: Socket) => {
    const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
    socket.write = ((chunk: unknown, ...rest: unknown[]) => {
      writes.push({ text: Buffer.isBuffer(chunk) ? chunk.toString('latin1') : String(chunk), at: performance.now() });
      return write(chunk, ...rest);
    }) as Socket['write'];
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  const whole = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write('GET /containerLogs/default/web/app HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
    const seen: Buffer[] = [];
    socket.on('data', (d: Buffer) => seen.push(d));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(seen).toString('latin1')));
  });
  t.ok(whole.endsWith('13\r\ncontainer is alive\n\r\n0\r\n\r\n'), 'one chunk, then the terminator');
  const dataWrite = writes.findIndex((w) => w.text.includes('container is alive'));
  const endWrite = writes.findIndex((w) => w.text.includes('0\r\n\r\n'));
  t.ok(dataWrite >= 0 && endWrite > dataWrite, `the terminator went in a later write (writes ${JSON.stringify(writes.map((w) => w.text.length))})`);
  // END_GAP_MS is 10; a timer may fire up to a millisecond short of it by the clock read here.
  const gap = (writes[endWrite]?.at ?? 0) - (writes[dataWrite]?.at ?? 0);
  t.ok(gap >= 8, `and at least END_GAP_MS later (${gap.toFixed(1)} ms)`);
});

/** A real socket: the abort signal must fire when the client goes away mid-stream. */
t.test('a client that disconnects aborts the runtime read', async (t) => {
  const { app, host } = setup();
  let aborted: Promise<void> | undefined;
  host.logsImpl = async (_r, _o, out, signal) => {
    aborted = new Promise((resolve) => signal.addEventListener('abort', () => resolve()));
    out.write('first\n');
    await aborted;
    out.end();
  };
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  await new Promise<void>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: '/containerLogs/default/web/app?follow=true' }, (res) => {
      t.equal(res.statusCode, 200);
      res.once('data', (d: Buffer) => {
        t.equal(d.toString(), 'first\n', 'the first line arrives while the log is still open');
        req.destroy();
        resolve();
      });
    });
    req.on('error', () => undefined);
    req.on('close', () => resolve());
    setTimeout(() => reject(new Error('no data')), 5000).unref();
    req.end();
  });
  await Promise.race([aborted, new Promise((_r, reject) => setTimeout(() => reject(new Error('not aborted')), 5000).unref())]);
  t.pass('the signal aborted');
});

t.test('a follow on a silent container: no status line yet, and a disconnect still aborts', async (t) => {
  const { app, host } = setup();
  let aborted!: () => void;
  const wasAborted = new Promise<void>((r) => (aborted = r));
  let reading!: () => void;
  const isReading = new Promise<void>((r) => (reading = r));
  host.logsImpl = async (_r, _o, out, signal) => {
    reading();
    await new Promise<void>((r) => signal.addEventListener('abort', () => r()));
    aborted();
    out.end();
  };
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  let gotResponse = false;
  const req = httpRequest({ host: '127.0.0.1', port, path: '/containerLogs/default/web/app?follow=1' }, () => (gotResponse = true));
  req.on('error', () => undefined);
  req.end();
  await isReading;
  // A negative window: the route is waiting on the runtime; no status line may come meanwhile.
  await new Promise((r) => setTimeout(r, 100));
  t.notOk(gotResponse, 'the status line waits for the first byte, as the kubelet\'s');
  req.destroy();
  await wasAborted;
  host.logsImpl = async (_r, _o, out) => void out.end('still serving\n');
  const next = await fetch(`http://127.0.0.1:${port}/containerLogs/default/web/app`);
  t.equal(await next.text(), 'still serving\n');
});

t.test('backpressure: a reader that does not read stops the writes', async (t) => {
  const { app, host } = setup();
  let written = 0;
  let blocked!: () => void;
  const wasBlocked = new Promise<void>((r) => (blocked = r));
  host.logsImpl = async (_r, _o, out, signal) => {
    const chunk = Buffer.alloc(64 * 1024, 'x');
    while (!signal.aborted && written < 512 * 1024 * 1024) {
      written += chunk.length;
      if (!out.write(chunk)) {
        blocked();
        await new Promise<void>((r) => {
          out.once('drain', r);
          signal.addEventListener('abort', () => r());
        });
      }
    }
    out.end();
  };
  await app.listen({ port: 0, host: '127.0.0.1' });
  t.teardown(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  const req = httpRequest({ host: '127.0.0.1', port, path: '/containerLogs/default/web/app' }, (res) => res.pause());
  req.on('error', () => undefined);
  req.end();
  await wasBlocked;
  // A negative window once the runtime met backpressure: the writes must stay stopped, not resume.
  await new Promise((r) => setTimeout(r, 300));
  t.ok(written < 64 * 1024 * 1024, `only ${written} bytes left the runtime while the client read nothing`);
  req.destroy();
});

t.test('at most --max-container-log-streams at once: 429 with Retry-After and a Status beyond; a closed stream frees its slot', async (t) => {
  const host = new FakeHost([makePod({ name: 'web' })]);
  // Followers of a silent container: open until the client leaves.
  host.logsImpl = async (_ref, _opts, out, signal) => {
    out.write('first line\n');
    await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
  };
  const app = buildServer({ host, logger: pino({ level: 'silent' }), version: { gitVersion: 'v1.30.2-nodelet' }, maxContainerLogStreams: 3 });
  t.teardown(() => app.close());
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;
  const open = (path: string) =>
    new Promise<{ status: number; headers: Record<string, unknown>; body: Promise<string>; close: () => void }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path }, (res) => {
        const body = new Promise<string>((done) => {
          let text = '';
          res.on('data', (d: Buffer) => (text += d.toString()));
          res.on('end', () => done(text));
          res.on('close', () => done(text));
        });
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, close: () => req.destroy() });
      });
      req.on('error', reject);
      req.end();
    });
  const held = [];
  for (const path of ['/containerLogs/default/web/app?follow=true', '/api/v1/namespaces/default/pods/web/log?follow=true', '/containerLogs/default/web/app']) {
    const r = await open(path);
    t.equal(r.status, 200, path);
    held.push(r);
  }
  const refused = await open('/api/v1/namespaces/default/pods/web/log?follow=true');
  t.equal(refused.status, 429);
  t.equal(refused.headers['retry-after'], '10');
  t.match(JSON.parse(await refused.body), { kind: 'Status', status: 'Failure', reason: 'TooManyRequests', code: 429, message: 'too many container log streams in flight (limit 3); retry later' });
  // Bad requests are still told what is wrong, not that the node is busy.
  t.equal((await open('/containerLogs/default/nope/app')).status, 404);
  held[0]?.close();
  // The slot is freed when the server sees the close: retry until then.
  const again = await waitFor('a slot freed by a client that left', async () => {
    const r = await open('/containerLogs/default/web/app?follow=true');
    return r.status === 200 ? r : undefined;
  }, 5000, 20);
  t.equal(again.status, 200, 'a slot freed by a client that left');
  for (const r of [...held, again]) r.close();
});
