import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import { build, FakeHost, makePod } from '../server/fixtures/fake-host.js';
import { fuzzSeed, prng } from '../../helpers/prng.js';

/**
 * Seeded URL fuzz over every route family, in-process (B3, B4, B13 without Docker): random
 * suffixes of traversal, encoding and separator pieces, random methods. Must hold: no 5xx, no
 * 3xx, and the Host is never asked about a name holding `/`, `\`, NUL or `..`. FUZZ_SEED replays.
 */

const SEED = fuzzSeed();

/** Every name argument the FakeHost recorded (`call ns/name`, `call pod/container …`). */
function badLookups(calls: readonly string[]): string[] {
  return calls.filter((c) => {
    const [what, arg = ''] = c.split(' ');
    if (!/^(getPodByName|resolveContainer|resolveLogContainer|exec|attach|logs|resolveSandbox|portForward)$/.test(what ?? '')) return false;
    const parts = what === 'resolveSandbox' || what === 'portForward' ? [arg] : arg.split('/');
    // eslint-disable-next-line no-control-regex -- a control character in a path segment is what this looks for
    return parts.length > 2 || parts.some((p) => p === '' || p === '.' || p === '..' || /[\\\0-\x1f]/.test(p));
  });
}

const families = [
  '/exec/default/web/app', '/exec/default/web/uid-default-web/app', '/attach/default/web/app', '/portForward/default/web', '/portForward/default/web/uid-default-web',
  '/containerLogs/default/web/app', '/run/default/web/app', '/run/default/web/uid-default-web/app', '/api/v1/namespaces/default/pods/web',
  '/api/v1/namespaces/default/pods/web/exec', '/api/v1/namespaces/default/pods/web/attach', '/api/v1/namespaces/default/pods/web/portforward',
  '/api/v1/namespaces/default/pods/web/log', '/api/v1/namespaces/default/pods/web/status', '/api/v1/namespaces/default/pods', '/api/v1/namespaces/default/events',
  '/api/v1/namespaces/default', '/pods', '/runningpods/', '/healthz', '/healthz/syncloop', '/stats/summary', '/metrics', '/metrics/resource', '/metrics/cadvisor',
  '/apis/metrics.k8s.io/v1beta1/namespaces/default/pods', '/version', '/api', '/apis', '/configz', '/debug/pprof/', '/logs/', '/checkpoint/default/web/app', '/',
];
const pieces = ['/', '..', '.', '%2e', '%2E%2e', '%2F', '%2f', '%5C', '\\', '%00', '%0a', '%', '%zz', '%c0%af', '%C3%A9', '?', '&', '=', '#', ';', '~', '*', '//', 'web', 'app', 'A', '_', '-', 'x'.repeat(70), 'y'.repeat(260), '?command=ls&output=1', '&tty=1', '&port=80', '?tailLines=-1', '&follow=true', '?watch=1', '?fieldSelector=spec.nodeName%3Dx'];
const methods = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;

t.test('route fuzz: no 5xx, no 3xx, no Host lookup of an unsafe name', async (t) => {
  t.comment(`seed ${SEED} (replay with FUZZ_SEED=${SEED})`);
  const rand = prng(SEED);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const host = new FakeHost([makePod({ name: 'web' })]);
  const app = build(host);
  // A real socket, not inject: inject normalizes `..` and refuses a raw `\` before the server sees it.
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const send = (method: string, path: string) =>
    new Promise<{ statusCode: number; body: string; headers: Record<string, unknown> }>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path, method, agent }, (res) => {
        // A watch that was accepted streams until its timeout: its headers are the answer.
        if (res.statusCode === 200 && /[?&]watch=(1|true)/.test(path)) {
          req.destroy();
          resolve({ statusCode: 200, body: '', headers: res.headers });
          return;
        }
        let body = '';
        res.setEncoding('latin1');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ statusCode: res.statusCode ?? 0, body, headers: res.headers }));
      });
      req.setTimeout(2000, () => req.destroy(new Error('timeout')));
      req.on('error', (err) => resolve({ statusCode: 0, body: String(err), headers: {} }));
      req.end();
    });
  const statuses: Record<number, number> = {};
  const failures: string[] = [];
  const deadline = Date.now() + 4000;
  let i = 0;
  for (; i < 5000 && Date.now() < deadline && failures.length < 5; i++) {
    let url = pick(families);
    for (let k = Math.floor(rand() * 5); k > 0; k--) {
      const p = pick(pieces);
      // Swap a path segment now and then, so names themselves are fuzzed, not only suffixes.
      if (rand() < 0.3) {
        const segs = url.split('/');
        segs[1 + Math.floor(rand() * (segs.length - 1))] = p;
        url = segs.join('/');
      } else url += p;
    }
    if (!url.startsWith('/')) url = `/${url}`;
    // `#` starts a fragment: clients never send it, so neither does the fuzzer.
    url = url.replace(/#/g, '%23');
    const method = pick(methods);
    const before = host.calls.length;
    const res = await send(method, url);
    statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
    const bad = badLookups(host.calls.slice(before));
    if (res.statusCode === 0 || res.statusCode >= 500 || (res.statusCode >= 300 && res.statusCode < 400) || res.headers.location || bad.length > 0) {
      failures.push(`${method} ${url} → ${res.statusCode} ${bad.join(', ')} ${res.body.slice(0, 160)}`);
    }
  }
  t.comment(`${i} requests; statuses ${JSON.stringify(statuses)}`);
  t.same(failures, [], `seed ${SEED}`);
  await app.close();
});

t.test('B3/B4 on the kubelet paths: traversal and invalid names are 400 (or 404) with no Host lookup', async (t) => {
  const host = new FakeHost([makePod({ name: 'web' })]);
  const app = build(host);
  const long = (n: number) => 'a'.repeat(n);
  const names = ['..', '%2e%2e', 'a%2Fb', 'a%00b', 'a%5Cb', '..%c0%af', 'Web', 'a_b', '-a', long(254)];
  const labels = [...names.filter((n) => n !== long(254)), long(64)];
  const paths: string[] = [];
  for (const kind of ['exec', 'attach', 'run', 'containerLogs']) {
    for (const n of names) paths.push(`/${kind}/default/${n}/app`);
    for (const l of labels) paths.push(`/${kind}/${l}/web/app`, `/${kind}/default/web/${l}`);
  }
  for (const n of names) paths.push(`/portForward/default/${n}`);
  paths.push('/portForward/default/web/..%2F..%2Fx', '/exec/default/web/..%2F..%2Fx/app', '/portForward/default/web/a%00b');
  for (const path of paths) {
    const res = await app.inject({ method: 'POST', url: `${path}?command=ls&output=1&cmd=ls` });
    t.ok([400, 404].includes(res.statusCode), `${path}: ${res.statusCode}`);
  }
  t.same(host.calls.filter((c) => !c.startsWith('healthChecks')), [], 'the Host saw no lookup at all');
  await app.close();
});
