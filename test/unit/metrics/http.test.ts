import { randomBytes } from 'node:crypto';
import t from 'tap';
import { httpLabels, pathBucket } from '../../../src/metrics/http.js';
import { Metrics } from '../../../src/metrics/registry.js';
import { FakeHost } from '../server/fixtures/fake-host.js';
import { buildServer } from '../../../src/server/index.js';
import { pino } from 'pino';

t.test('paths fall into the kubelet buckets, everything else is other', async (t) => {
  const cases: [string, string][] = [
    ['/healthz', 'healthz'],
    ['/healthz/syncloop', 'healthz'],
    ['/pods', 'pods'],
    ['/stats/summary', 'stats'],
    ['/metrics', 'metrics'],
    ['/metrics/resource', 'metrics/resource'],
    ['/metrics/cadvisor?x=1', 'metrics/cadvisor'],
    ['/exec/ns/p/c?command=ls', 'exec'],
    ['/attach/ns/p/c', 'attach'],
    ['/portForward/ns/p', 'portForward'],
    ['/containerLogs/ns/p/c', 'containerLogs'],
    ['/runningpods/', 'runningpods'],
    ['/run/ns/p/c', 'run'],
    ['/api/v1/namespaces/ns/pods/p/exec', 'exec'],
    ['/api/v1/namespaces/ns/pods/p/portforward', 'portForward'],
    ['/api/v1/namespaces/ns/pods/p/log', 'containerLogs'],
    ['/api/v1/namespaces/ns/pods', 'api'],
    ['/version', 'api'],
    ['/podsX', 'other'],
    ['/execution', 'other'],
    ['/', 'other'],
  ];
  for (const [url, bucket] of cases) t.equal(pathBucket(url), bucket, url);
  t.same(httpLabels('BREW', '/exec/a/b/c', 'readwrite'), { method: 'other', path: 'exec', server_type: 'readwrite', long_running: 'true' });
  t.equal(httpLabels('GET', '/pods', 'readonly').long_running, 'false');
});

t.test('a burst of random paths and methods leaves the label set bounded', async (t) => {
  const metrics = new Metrics();
  const app = buildServer({ host: new FakeHost(), logger: pino({ level: 'silent' }), version: { gitVersion: 'v0' }, metrics });
  const methods = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const;
  for (let i = 0; i < 10_000; i++) {
    const path = '/' + randomBytes(1 + (i % 12)).toString('hex') + (i % 3 ? '/' + randomBytes(4).toString('base64url') : '');
    await app.inject({ method: methods[i % methods.length] ?? 'GET', url: path });
  }
  await app.inject('/pods');
  const counter = await metrics.httpRequests.get();
  const total = counter.values.reduce((n, v) => n + v.value, 0);
  t.equal(total, 10_001, 'every request counted');
  t.ok(counter.values.length <= methods.length * 2, `label combinations stay bounded (${counter.values.length})`);
  t.ok(counter.values.every((v) => ['other', 'pods'].includes(String(v.labels.path))));

  const scrape = await app.inject('/metrics');
  t.equal(scrape.statusCode, 200);
  t.match(scrape.headers['content-type'], /text\/plain/);
  t.match(scrape.body, /kubelet_http_requests_total\{method="GET",path="pods",server_type="readwrite",long_running="false"\} 1/);
  t.match(scrape.body, /kubelet_http_requests_duration_seconds_bucket\{le="0.005",method="GET",path="pods"/);
  t.match(scrape.body, /kubelet_http_inflight_requests\{method="GET",path="metrics",server_type="readwrite",long_running="false"\} 1/, 'the scrape itself is in flight');
  await app.close();
});
