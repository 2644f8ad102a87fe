import t from 'tap';
import { inspect } from 'node:util';
import Docker from 'dockerode';
import { createContainerOptions, withCheapRequestInspection } from '../../../src/runtime/docker/client.js';

/**
 * A dockerode client whose transport records the request line and body docker-modem built and
 * answers like Docker's Go server: 431 when the request line exceeds its 1 MiB header limit
 * (net/http `DefaultMaxHeaderBytes`), else 201.
 */
function recordingDocker() {
  const docker = new Docker({ socketPath: '/nonexistent/docker.sock' });
  const requests: { path: string; body: string }[] = [];
  const modem = docker.modem as unknown as {
    buildRequest: (options: { path: string }, context: unknown, data: unknown, cb: (err: unknown, data?: unknown) => void) => void;
  };
  modem.buildRequest = (options, _context, data, cb) => {
    requests.push({ path: options.path, body: typeof data === 'string' ? data : '' });
    if (options.path.length > 1 << 20) return cb(Object.assign(new Error('(HTTP code 431) Request Header Fields Too Large'), { statusCode: 431 }));
    cb(null, { Id: 'abc123', Warnings: [] });
  };
  return { docker, requests };
}

// 2.7 MB of env entries.
const Env = Array.from({ length: 36_000 }, (_, i) => `VAR_${i}=${'x'.repeat(64)}`);

t.test('createContainer sends the config as the body only: the URL carries just the name', async (t) => {
  const { docker, requests } = recordingDocker();
  const created = await docker.createContainer(createContainerOptions('k8s_main_web_default_u_0', { Image: 'busybox', Env, Labels: { a: 'b' } }));
  t.equal(created.id, 'abc123');
  t.equal(requests.length, 1);
  const url = new URL(requests[0]!.path, 'http://docker');
  t.match(url.pathname, /\/containers\/create$/);
  t.same([...url.searchParams], [['name', 'k8s_main_web_default_u_0']]);
  const body = JSON.parse(requests[0]!.body) as Record<string, unknown>;
  t.same(Object.keys(body).sort(), ['Env', 'Image', 'Labels']);
  t.equal((body.Env as string[]).length, 36_000);
});

t.test('the plain dockerode form put the config into the URL too: Docker answered 431 on every retry', async (t) => {
  const { docker, requests } = recordingDocker();
  await t.rejects(docker.createContainer({ name: 'x', Image: 'busybox', Env }), { message: /431/ });
  const path = requests[0]?.path ?? '';
  t.ok(path.length > 1 << 20, `a request line of ${path.length} bytes`);
  t.equal(new URL(path, 'http://docker').searchParams.getAll('Env').length, 36_000);
});

t.test("docker-modem's debug formatting of each request's options is cheap: METHOD path, nothing walked", async (t) => {
  const docker = new Docker({ socketPath: '/nonexistent/docker.sock' });
  const seen: { options: Record<string, unknown>; formatted: string; keys: string[] }[] = [];
  const modem = docker.modem as unknown as { buildRequest: (options: Record<string, unknown>, context: unknown, data: unknown, cb: (err: unknown, data?: unknown) => void) => void };
  modem.buildRequest = (options, _context, _data, cb) => {
    // What docker-modem's own buildRequest does first, whether `DEBUG=modem` is set or not.
    seen.push({ options, formatted: inspect(options, { showHidden: true, depth: null }), keys: Object.keys(options) });
    cb(null, []);
  };
  const plain = inspect({ path: '/containers/json', method: 'GET', headers: {} }, { showHidden: true, depth: null });
  withCheapRequestInspection(docker);
  await docker.listContainers({ all: true });
  t.equal(seen.length, 1);
  t.match(seen[0]!.formatted, /^GET \/containers\/json\?/);
  t.notOk(seen[0]!.formatted.includes('headers'), `formatted as ${seen[0]!.formatted}, not as ${plain}`);
  // The options http.request reads are unchanged: the inspection hook is not enumerable.
  t.notOk(seen[0]!.keys.some((k) => k.includes('inspect')));
  t.equal(seen[0]!.options.method, 'GET');
});
