import t from 'tap';
import { build, FakeHost } from './fixtures/fake-host.js';

const textPlain = 'text/plain; charset=utf-8';

t.test('all checks pass: ok', async (t) => {
  const app = build(new FakeHost());
  const res = await app.inject('/healthz');
  t.equal(res.statusCode, 200);
  t.equal(res.body, 'ok');
  t.equal(res.headers['content-type'], textPlain);
  t.equal(res.headers['x-content-type-options'], 'nosniff');
});

t.test('?verbose lists every check', async (t) => {
  const app = build(new FakeHost());
  const res = await app.inject('/healthz?verbose');
  t.equal(res.statusCode, 200);
  t.equal(res.body, '[+]ping ok\n[+]log ok\n[+]syncloop ok\nhealthz check passed\n');
});

t.test('a failing check: 500, apiserver format, reason withheld', async (t) => {
  const host = new FakeHost();
  host.checks = { syncloop: () => 'sync loop stalled for 5m' };
  const app = build(host);
  const res = await app.inject('/healthz');
  t.equal(res.statusCode, 500);
  t.equal(res.body, '[+]ping ok\n[+]log ok\n[-]syncloop failed: reason withheld\nhealthz check failed\n');
  t.equal(res.headers['content-type'], textPlain);
  t.equal(res.headers['x-content-type-options'], 'nosniff');
  t.notMatch(res.body, /stalled/);
});

t.test('a throwing check counts as failed', async (t) => {
  const host = new FakeHost();
  host.checks = {
    syncloop: () => {
      throw new Error('boom');
    },
  };
  const res = await build(host).inject('/healthz');
  t.equal(res.statusCode, 500);
  t.match(res.body, /\[-\]syncloop failed: reason withheld\n/);
});

t.test('?exclude skips a check; unknown excludes are warned about', async (t) => {
  const host = new FakeHost();
  host.checks = { syncloop: () => 'down' };
  const app = build(host);
  const res = await app.inject('/healthz?exclude=syncloop');
  t.equal(res.statusCode, 200);
  t.equal(res.body, 'ok');
  const verbose = await app.inject('/healthz?verbose&exclude=syncloop&exclude=nope');
  t.equal(verbose.body, '[+]ping ok\n[+]log ok\n[+]syncloop excluded: ok\nwarn: some health checks cannot be excluded: no matches for "nope"\nhealthz check passed\n');
});

t.test('/healthz/<check> runs one check', async (t) => {
  const host = new FakeHost();
  host.checks = { syncloop: () => 'sync loop stalled' };
  const app = build(host);
  const ping = await app.inject('/healthz/ping');
  t.equal(ping.statusCode, 200, 'ping is always ok');
  t.equal(ping.body, 'ok');
  const log = await app.inject('/healthz/log');
  t.equal(log.statusCode, 200);
  const sync = await app.inject('/healthz/syncloop');
  t.equal(sync.statusCode, 500);
  t.equal(sync.body, 'internal server error: sync loop stalled\n');
  t.equal(sync.headers['content-type'], textPlain);
  host.checks = { syncloop: () => undefined };
  t.equal((await app.inject('/healthz/syncloop')).body, 'ok');
});

t.test('unknown check and non-GET methods', async (t) => {
  const app = build(new FakeHost());
  const res = await app.inject('/healthz/nope');
  t.equal(res.statusCode, 404);
  t.match(res.json(), { kind: 'Status', reason: 'NotFound', code: 404 });
  const post = await app.inject({ method: 'POST', url: '/healthz' });
  t.equal(post.statusCode, 405);
  t.match(post.headers.allow, /GET/);
});
