import t from 'tap';
import { isSubpath, requestAttributes } from '../../../src/auth/attributes.js';

t.test('isSubpath, as the kubelet TestIsSubPath', async (t) => {
  t.ok(isSubpath('/healthz', '/healthz'));
  t.ok(isSubpath('/healthz/ping', '/healthz'));
  t.ok(isSubpath('/healthz/', '/healthz/'));
  t.notOk(isSubpath('/healthzjunk', '/healthz'));
  t.notOk(isSubpath('/', '/healthz'));
});

t.test('path → subresources, verb from the method', async (t) => {
  const cases: [string, string, string | undefined, string[]][] = [
    ['GET', '/stats/summary', 'get', ['stats']],
    ['POST', '/stats/summary', 'create', ['stats']],
    ['GET', '/metrics', 'get', ['metrics']],
    ['GET', '/metrics/cadvisor', 'get', ['metrics']],
    ['GET', '/logs/', 'get', ['log']],
    ['POST', '/checkpoint/:ns/:name/:container', 'create', ['checkpoint']],
    ['GET', '/pods', 'get', ['pods', 'proxy']],
    ['GET', '/runningpods/', 'get', ['pods', 'proxy']],
    ['HEAD', '/healthz', 'get', ['healthz', 'proxy']],
    ['GET', '/healthz/:check', 'get', ['healthz', 'proxy']],
    ['GET', '/configz', 'get', ['configz', 'proxy']],
    ['GET', '/containerLogs/:ns/:name/:container', 'get', ['proxy']],
    ['GET', '/api/v1/namespaces/:ns/pods/:name/log', 'get', ['proxy']],
    ['GET', '/api/v1/namespaces/:ns/pods/:name', 'get', ['pods', 'proxy']],
    ['GET', '/api/v1/namespaces/:ns/events', 'get', ['pods', 'proxy']],
    ['GET', '/version', 'get', ['pods', 'proxy']],
    ['PUT', '/debug/flags/v', 'update', ['proxy']],
    ['PATCH', '/healthzjunk', 'patch', ['proxy']],
    ['DELETE', '/nope', 'delete', ['proxy']],
    ['OPTIONS', '/pods', undefined, ['pods', 'proxy']],
    ['WEIRD', '/nope', undefined, ['proxy']],
  ];
  for (const [method, path, verb, subs] of cases) {
    const a = requestAttributes(method, path);
    t.same([a.verb, a.subresources, a.streaming], [verb, subs, false], `${method} ${path}`);
  }
});

t.test('streaming endpoints: create nodes/proxy whatever the method', async (t) => {
  for (const path of [
    '/exec/:ns/:name/:container',
    '/exec/:ns/:name/:uid/:container',
    '/attach/:ns/:name/:container',
    '/run/:ns/:name/:container',
    '/portForward/:ns/:name',
    '/api/v1/namespaces/:ns/pods/:name/exec',
    '/api/v1/namespaces/:ns/pods/:name/attach',
    '/api/v1/namespaces/:ns/pods/:name/portforward',
  ]) {
    for (const method of ['GET', 'POST', 'HEAD', 'OPTIONS', 'PUT']) {
      t.same(requestAttributes(method, path), { verb: 'create', subresources: ['proxy'], streaming: true }, `${method} ${path}`);
    }
  }
  t.equal(requestAttributes('GET', '/executor').streaming, false, '/executor is not /exec');
});
