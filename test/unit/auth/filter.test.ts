import t from 'tap';
import { UnionAuthenticator } from '../../../src/auth/authenticator.js';
import { alwaysAllow } from '../../../src/auth/policy.js';
import { app, everyRoute, secured } from './fixtures/security.js';

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

t.test('A1: with auth on and no credentials every route × method answers 401 and no handler or Host method runs', async (t) => {
  const routes = await everyRoute();
  t.ok(routes.length >= 80, `collected ${routes.length} route × method cases`);
  const { app: server, host } = app(secured());
  let handlers = 0;
  server.addHook('preHandler', async () => {
    handlers++;
  });
  const unknown = ['/nope', '/healthzjunk', '/exec', '/api/v1/nodes', '/debug/pprof/profile', '/logs/', '/configz', '/stats/summary', '/metrics/cadvisor'];
  const cases = [...routes, ...unknown.flatMap((url) => (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const).map((method) => ({ method, url, pattern: url })))];
  for (const c of cases) {
    for (const headers of [{}, bearer('wrong-token'), { authorization: 'Basic YWRtaW46YWRtaW4=' }]) {
      const res = await server.inject({ method: c.method, url: c.url, headers, payload: c.method === 'POST' ? 'x' : undefined });
      if (res.statusCode !== 401 || (c.method !== 'HEAD' && res.body !== 'Unauthorized\n')) {
        t.fail(`${c.method} ${c.url} ${JSON.stringify(headers)}: ${res.statusCode} ${res.body.slice(0, 80)}`);
      }
    }
  }
  t.same(host.calls, [], 'no Host call');
  t.equal(handlers, 0, 'no handler reached');
  await server.close();
});

t.test('A2: every route has an authorization decision; a deny is 403 with the kubelet body', async (t) => {
  const routes = await everyRoute();
  const seen: { method: string; pattern: string; verb: string; subresource: string }[] = [];
  const { app: server, host } = app(
    secured({
      authorizer: {
        alwaysAllow: false,
        authorize: (a) => {
          seen.push({ method: '', pattern: a.path, verb: a.verb, subresource: a.subresource });
          return false;
        },
      },
    }),
  );
  for (const c of routes) {
    const before = seen.length;
    const res = await server.inject({ method: c.method, url: c.url, headers: bearer('admin-token') });
    const streaming = /^\/(exec|attach|run|portForward)\//.test(c.pattern) || /\/(exec|attach|portforward)$/.test(c.pattern);
    const known = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'].includes(c.method);
    if (!known && !streaming) {
      t.equal(res.statusCode, 405, `${c.method} ${c.url}: no verb → 405`);
      t.equal(seen.length, before, `${c.method} ${c.url}: the authorizer never sees an empty verb`);
      continue;
    }
    t.equal(res.statusCode, 403, `${c.method} ${c.url}`);
    const asked = seen.slice(before);
    t.ok(asked.length >= 1, `${c.method} ${c.url}: authorizer consulted`);
    for (const a of asked) t.equal(a.pattern, c.pattern, 'the route pattern is the authorized path');
    const first = asked[0];
    if (streaming) t.same(asked.map((a) => `${a.verb} ${a.subresource}`), ['create proxy'], `${c.method} ${c.url}: create nodes/proxy`);
    if (first && c.method !== 'HEAD') t.equal(res.body, `Forbidden (user=admin, verb=${first.verb}, resource=nodes, subresource=${first.subresource})\n`);
  }
  t.same(host.calls, []);
  await server.close();
});

t.test('A4: exec, attach, run and port-forward need create whatever the method', async (t) => {
  const { app: server, host } = app(secured());
  const streaming = [
    '/exec/default/web/app?command=ls&output=1',
    '/exec/default/web/uid-default-web/app?command=ls&output=1',
    '/attach/default/web/app?output=1',
    '/portForward/default/web',
    '/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true',
    '/api/v1/namespaces/default/pods/web/attach?stdout=true',
    '/api/v1/namespaces/default/pods/web/portforward',
  ];
  for (const url of streaming) {
    for (const headers of [
      { ...bearer('proxy-get-token'), connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==', 'sec-websocket-protocol': 'v5.channel.k8s.io' },
      bearer('proxy-get-token'),
    ]) {
      const res = await server.inject({ method: 'GET', url, headers });
      t.equal(res.statusCode, 403, `GET ${url} with get nodes/proxy`);
      t.equal(res.body, 'Forbidden (user=prober, verb=create, resource=nodes, subresource=proxy)\n');
    }
  }
  const run = await server.inject({ method: 'POST', url: '/run/default/web/app?cmd=ls', headers: bearer('proxy-get-token') });
  t.equal(run.statusCode, 403);
  t.same(host.calls, []);
  // The same principal may read what nodes/proxy get covers.
  t.equal((await server.inject({ url: '/pods', headers: bearer('proxy-get-token') })).statusCode, 200);
  t.equal((await server.inject({ url: '/healthz', headers: bearer('proxy-get-token') })).statusCode, 200);
  await server.close();
});

t.test('percent-encoded paths cannot dodge the streaming rule', async (t) => {
  const { app: server, host } = app(secured());
  for (const url of ['/%65xec/default/web/app?command=ls&output=1', '/api/v1/namespaces/default/pods/web/%65xec?command=ls&stdout=true']) {
    const res = await server.inject({ method: 'GET', url, headers: bearer('proxy-get-token') });
    t.not(res.statusCode, 101);
    t.ok(res.statusCode === 403 || res.statusCode === 404, `${url}: ${res.statusCode}`);
  }
  t.same(host.calls, []);
  await server.close();
});

t.test('fine-grained subresources: viewer reads /pods and /stats but not /healthz or proxy paths', async (t) => {
  const { app: server } = app(secured());
  t.equal((await server.inject({ url: '/pods', headers: bearer('viewer-token') })).statusCode, 200);
  t.equal((await server.inject({ url: '/api/v1/namespaces/default/pods', headers: bearer('viewer-token') })).statusCode, 200);
  const h = await server.inject({ url: '/healthz', headers: bearer('viewer-token') });
  t.equal(h.statusCode, 403);
  t.equal(h.body, 'Forbidden (user=viewer, verb=get, resource=nodes, subresource=healthz)\n');
  t.equal((await server.inject({ url: '/nope', headers: bearer('viewer-token') })).statusCode, 403, 'unknown path: proxy');
  t.equal((await server.inject({ url: '/nope', headers: bearer('admin-token') })).statusCode, 404, 'authorized: then the 404');
  t.equal((await server.inject({ method: 'HEAD', url: '/pods', headers: bearer('viewer-token') })).statusCode, 200, 'HEAD → get');
  await server.close();
});

t.test('A14: odd methods get an explicit 405, never an empty verb', async (t) => {
  const { app: server } = app(secured());
  for (const method of ['OPTIONS', 'TRACE'] as const) {
    for (const url of ['/pods', '/nope']) {
      const res = await server.inject({ method, url, headers: bearer('admin-token') });
      t.equal(res.statusCode, 405, `${method} ${url}`);
      t.equal(res.headers.location, undefined);
    }
    // Streaming paths are `create` whatever the method; the route table has no such method: 404.
    const exec = await server.inject({ method, url: '/exec/default/web/app', headers: bearer('admin-token') });
    t.equal(exec.statusCode, 404, `${method} /exec: authorized as create, then no route`);
    t.equal((await server.inject({ method, url: '/exec/default/web/app', headers: bearer('viewer-token') })).statusCode, 403);
    t.equal((await server.inject({ method, url: '/pods' })).statusCode, 401, 'authentication still first');
  }
  await server.close();
});

t.test('anonymous: system:anonymous is authorized like anyone else; a bad token is never anonymous', async (t) => {
  const { app: server } = app(secured({ authenticator: new UnionAuthenticator([], true) }));
  const res = await server.inject({ url: '/pods' });
  t.equal(res.statusCode, 403);
  t.equal(res.body, 'Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource=pods)\n');
  await server.close();
  const { app: withTokens } = app(secured({ authenticator: new UnionAuthenticator([(await import('../../../src/auth/token-file.js')).TokenFileAuthenticator.fromText('t1,u,1\n')], true) }));
  t.equal((await withTokens.inject({ url: '/pods', headers: bearer('nope') })).statusCode, 401, 'bad token: 401 even with anonymous on');
  await withTokens.close();
});

t.test('development posture: no credentials needed, any method reaches its route', async (t) => {
  const { app: server } = app(secured({ authenticator: new UnionAuthenticator([], true), authorizer: alwaysAllow }));
  t.equal((await server.inject({ url: '/pods' })).statusCode, 200);
  const opt = await server.inject({ method: 'OPTIONS', url: '/pods' });
  t.equal(opt.statusCode, 405);
  t.equal(opt.headers.allow, 'GET, HEAD', 'the route answers, as before');
  await server.close();
});

t.test('--enable-debugging-handlers=false: streaming, logs and runningpods answer 405 after authentication', async (t) => {
  const { app: server, host } = app(secured({ enableDebuggingHandlers: false }));
  for (const [method, url] of [
    ['GET', '/exec/default/web/app?command=ls&output=1'],
    ['POST', '/attach/default/web/app?output=1'],
    ['POST', '/run/default/web/app?cmd=ls'],
    ['GET', '/portForward/default/web'],
    ['GET', '/containerLogs/default/web/app'],
    ['GET', '/runningpods/'],
    ['GET', '/api/v1/namespaces/default/pods/web/log'],
    ['POST', '/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=true'],
  ] as const) {
    const res = await server.inject({ method, url, headers: bearer('admin-token') });
    t.equal(res.statusCode, 405, `${method} ${url}`);
    t.equal(res.body, 'Debug endpoints are disabled.\n');
    t.equal((await server.inject({ method, url })).statusCode, 401, 'unauthenticated: still 401 first');
  }
  t.equal((await server.inject({ url: '/pods', headers: bearer('admin-token') })).statusCode, 200);
  t.same(host.calls.filter((c) => !c.startsWith('getPods')), []);
  await server.close();
});

t.test('A8: the read-only listener serves only its allow-list of GETs', async (t) => {
  const { app: server, host } = app({ kind: 'readOnly' });
  t.equal((await server.inject({ url: '/pods' })).statusCode, 200);
  t.equal((await server.inject({ url: '/healthz' })).statusCode, 200);
  t.equal((await server.inject({ url: '/healthz/ping' })).statusCode, 200);
  const routes = await everyRoute();
  for (const c of routes) {
    const allowed = (c.method === 'GET' || c.method === 'HEAD') && /^\/(pods|healthz|stats|metrics)(\/|$)/.test(c.pattern);
    if (allowed) continue;
    const res = await server.inject({ method: c.method, url: c.url, headers: { authorization: 'Bearer admin-token' } });
    t.equal(res.statusCode, 405, `${c.method} ${c.url}`);
    if (c.method !== 'HEAD') t.equal(res.body, 'Debug endpoints are disabled.\n');
  }
  for (const url of ['/checkpoint/default/web/app', '/debug/pprof/profile', '/logs/', '/configz', '/healthzjunk']) {
    t.equal((await server.inject({ method: 'POST', url })).statusCode, 405, `POST ${url}`);
    t.equal((await server.inject({ url })).statusCode, 405, `GET ${url}`);
  }
  t.same(host.calls.filter((c) => c !== 'getPods' && c !== 'healthChecks'), []);
  await server.close();
});
