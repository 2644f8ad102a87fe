import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import type { Status } from '../../../src/api/types.js';
import { build, FakeHost, makePod } from './fixtures/fake-host.js';

/** Host methods that read node state; none may run for a rejected request. */
const lookups = (host: FakeHost) => host.calls.filter((c) => !c.startsWith('healthChecks'));

function assertStatus(t: Test, res: { statusCode: number; headers: Record<string, unknown>; body: string }, codes: number[], label: string) {
  t.ok(codes.includes(res.statusCode), `${label}: status ${res.statusCode} in ${codes.join('/')}`);
  t.equal(res.headers['content-type'], 'application/json', `${label}: content-type`);
  const body = JSON.parse(res.body) as Status;
  t.match(body, { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: res.statusCode }, `${label}: Status body`);
  return body;
}

const long = (n: number) => 'a'.repeat(n);

t.test('invalid path parameters: 400 naming the parameter, no host lookup', async (t) => {
  const host = new FakeHost([makePod({ name: 'web' })]);
  const app = build(host);
  const cases: Array<[string, string]> = [
    ['/api/v1/namespaces/default/pods/a%2Fb', 'name'],
    ['/api/v1/namespaces/default/pods/..%2F..%2Fetc%2Fpasswd', 'name'],
    ['/api/v1/namespaces/default/pods/a%00b', 'name'],
    ['/api/v1/namespaces/default/pods/a%5Cb', 'name'],
    ['/api/v1/namespaces/default/pods/Web', 'name'],
    [`/api/v1/namespaces/default/pods/${long(254)}`, 'name'],
    ['/api/v1/namespaces/default/pods/web%2F..%2Fstatus/status', 'name'],
    ['/api/v1/namespaces/Default/pods', 'ns'],
    ['/api/v1/namespaces/a..b/pods/web', 'ns'],
    ['/api/v1/namespaces/a.b/pods', 'ns'],
    [`/api/v1/namespaces/${long(64)}/pods`, 'ns'],
    [`/api/v1/namespaces/${long(64)}`, 'ns'],
    ['/api/v1/namespaces/UPPER/events', 'ns'],
    ['/api/v1/namespaces/ns%2F..%2Fx/events', 'ns'],
    ['/api/v1/namespaces/a%00/pods/web/status', 'ns'],
  ];
  for (const [url, param] of cases) {
    const res = await app.inject(url);
    const body = assertStatus(t, res, [400], url);
    t.equal(body.reason, 'BadRequest', `${url}: reason`);
    t.match(body.message, new RegExp(`path parameter "${param}"`), `${url}: names the parameter`);
  }
  t.same(lookups(host), [], 'the host saw no lookup');
  // A 253-character name and a 63-character namespace are still valid.
  const ok = await app.inject(`/api/v1/namespaces/${long(63)}/pods/${long(253)}`);
  t.equal(ok.statusCode, 404);
  // A health check name is only a map key: the kubelet's mux 404s any unknown one, `a/b` too.
  for (const url of ['/healthz/a%2Fb', '/healthz/a%5Cb', '/healthz/a%00b', '/healthz/..%2F..']) {
    t.equal(assertStatus(t, await app.inject(url), [404], url).reason, 'NotFound', `${url}: NotFound`);
  }
});

t.test('percent-encoded traversal over a real socket (inject would normalize `..`)', async (t) => {
  const host = new FakeHost([makePod({ name: 'web' })]);
  const app = build(host);
  await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  const get = (path: string) =>
    new Promise<{ statusCode: number; headers: Record<string, unknown>; body: string }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path, method: 'GET' }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, headers: res.headers, body }));
      });
      req.on('error', reject);
      req.end();
    });
  for (const path of [
    '/api/v1/namespaces/default/pods/..',
    '/api/v1/namespaces/default/pods/%2e%2e',
    '/api/v1/namespaces/default/pods/%2E%2E/status',
    '/api/v1/namespaces/../pods',
    '/api/v1/namespaces/%2e%2e/pods/web',
    '/api/v1/namespaces/default/pods/.',
    '/api/v1/namespaces/../../../etc/passwd',
    '/api/v1/namespaces/default/pods/%2e%2e%2f%2e%2e%2fetc',
  ]) {
    const res = await get(path);
    assertStatus(t, res, [400, 404], path);
    t.notOk(res.headers.location, `${path}: no Location`);
  }
  t.same(lookups(host), []);
});

t.test('unknown routes: 404 Status like the apiserver', async (t) => {
  const host = new FakeHost();
  const app = build(host);
  for (const url of ['/nope', '/api/v2', '/api/v1/services', '/api/v1/namespaces/default/secrets', '/exec/default', '/portForward-not', '/', '//pods']) {
    const res = await app.inject(url);
    const body = assertStatus(t, res, [404], url);
    t.same(body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'the server could not find the requested resource',
      reason: 'NotFound',
      details: {},
      code: 404,
    });
  }
  const post = await app.inject({ method: 'POST', url: '/nope', headers: { 'content-type': 'application/json' }, payload: '{broken' });
  t.equal(post.statusCode, 404, 'an unknown route is a 404 whatever its body');
  t.same(lookups(host), []);
});

t.test('wrong method on a known route: 405 Status with Allow', async (t) => {
  const host = new FakeHost([makePod({ name: 'web' })]);
  const app = build(host);
  const cases: Array<['POST' | 'PUT' | 'DELETE' | 'PATCH', string]> = [
    ['POST', '/pods'],
    ['DELETE', '/api/v1/namespaces/default/pods/web/status'],
    ['PUT', '/api/v1/namespaces/default/pods/web/status'],
    ['DELETE', '/api/v1/nodes/node1'],
    ['POST', '/api/v1/namespaces/default/pods'],
    ['PATCH', '/api/v1/namespaces/default'],
    ['DELETE', '/healthz'],
    ['POST', '/api'],
  ];
  for (const [method, url] of cases) {
    const res = await app.inject({ method, url });
    const body = assertStatus(t, res, [405], `${method} ${url}`);
    t.equal(body.reason, 'MethodNotAllowed');
    t.equal(res.headers.allow, 'GET, HEAD', `${method} ${url}: Allow`);
  }
  for (const method of ['PUT', 'PATCH', 'POST'] as const) {
    const res = await app.inject({ method, url: '/api/v1/namespaces/default/pods/web' });
    assertStatus(t, res, [405], `${method} on a pod`);
    t.equal(res.headers.allow, 'GET, HEAD, DELETE', `${method} on a pod: Allow names DELETE`);
  }
  t.same(lookups(host), []);
});

t.test('malformed percent-encoding: 400 Status', async (t) => {
  const res = await build().inject('/api/v1/namespaces/default/pods/%zz');
  const body = assertStatus(t, res, [400], '%zz');
  t.equal(body.reason, 'BadRequest');
});

t.test('unexpected errors: 500 InternalError Status', async (t) => {
  const host = new FakeHost();
  host.getPods = () => {
    throw new Error('status cache corrupted');
  };
  const res = await build(host).inject('/api/v1/pods');
  const body = assertStatus(t, res, [500], 'throwing host');
  t.equal(body.reason, 'InternalError');
  t.match(body.message, /status cache corrupted/);
});

t.test('no response is ever a redirect', async (t) => {
  const host = new FakeHost([makePod({ name: 'web' })]);
  host.checks = { syncloop: () => 'down' };
  const app = build(host);
  const urls = [
    '/pods', '/pods/', '/runningpods', '/runningpods/', '/healthz', '/healthz/', '/healthz/ping/', '/healthz/syncloop',
    '/podInfo', '/podInfo/?podID=web&podNamespace=default', '/api/v1beta1/podInfo?podID=web&podNamespace=default',
    '/version', '/version/', '/api', '/api/', '/apis/', '/api/v1/', '/api/v1/pods/', '/api/v1/namespaces/default/',
    '/api/v1/namespaces/default/pods/', '/api/v1/namespaces/default/pods/web/', '/api/v1/namespaces/default/pods/web/status/',
    '/api/v1/namespaces/default/events/', '/api/v1/events/', '//api//v1', '/API/V1/PODS', '/api/v1/namespaces/default/pods/nope',
    '/api/v1/namespaces', '/api/v1/namespaces/', '/exec/default/web/app', '/containerLogs/default/web/app', '/%2e%2e/pods',
  ];
  for (const url of urls) {
    for (const method of ['GET', 'HEAD', 'POST'] as const) {
      const res = await app.inject({ method, url });
      t.ok(res.statusCode < 300 || res.statusCode >= 400, `${method} ${url}: ${res.statusCode} is not 3xx`);
      t.notOk(res.headers.location, `${method} ${url}: no Location`);
    }
  }
});

t.test('a redirect from any route is turned into a 500 without Location', async (t) => {
  const app = build();
  // Stands in for a future plugin that gets it wrong.
  app.get('/redirect-probe', async (_req, reply) => reply.redirect('http://169.254.169.254/', 302));
  const res = await app.inject('/redirect-probe');
  t.equal(res.statusCode, 500);
  t.notOk(res.headers.location);
});
