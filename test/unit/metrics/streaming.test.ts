import { pino } from 'pino';
import t, { type Test } from 'tap';
import { Metrics } from '../../../src/metrics/registry.js';
import { buildServer } from '../../../src/server/index.js';
import { rawRequest } from '../../helpers/raw-http.js';
import { streamingUpgrades } from '../../helpers/streaming-metrics.js';
import { FakeHost, makePod } from '../server/fixtures/fake-host.js';

/** The stream routes over a real loopback listener, with an in-memory Host. */
async function serve(t: Test): Promise<{ url: string; metrics: Metrics }> {
  const metrics = new Metrics();
  const app = buildServer({ host: new FakeHost([makePod({ name: 'web' })]), metrics, logger: pino({ level: 'silent' }), version: { gitVersion: 'v1.30.2-nodelet' } });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  t.teardown(() => app.close());
  return { url, metrics };
}

const ws = (protocols: string) => ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', `Sec-WebSocket-Protocol: ${protocols}`];
const spdy = (protocol: string) => ['Connection: Upgrade', 'Upgrade: SPDY/3.1', `X-Stream-Protocol-Version: ${protocol}`];

t.test('each 101 counts once under its path, transport and negotiated subprotocol; refusals do not count', async (t) => {
  const { url } = await serve(t);
  const open: (() => void)[] = [];
  t.teardown(() => open.forEach((close) => close()));
  const upgrade = async (lines: string[]) => {
    const r = await rawRequest(url, [...lines.slice(0, 1), 'Host: x', ...lines.slice(1)], 2000, { keepOpen: true });
    open.push(r.close);
    return r.status;
  };
  const before = await streamingUpgrades(url);
  t.same(before, {}, 'nothing before the first session');

  t.equal(await upgrade(['GET /exec/default/web/app?command=true&output=1 HTTP/1.1', ...ws('v5.channel.k8s.io, v4.channel.k8s.io')]), 101);
  t.equal(await upgrade(['POST /api/v1/namespaces/default/pods/web/attach?stdout=true HTTP/1.1', ...spdy('v4.channel.k8s.io')]), 101);
  t.equal(await upgrade(['POST /portForward/default/web HTTP/1.1', ...spdy('portforward.k8s.io')]), 101);
  t.equal(await upgrade(['GET /api/v1/namespaces/default/pods/web/portforward HTTP/1.1', ...ws('SPDY/3.1+portforward.k8s.io')]), 101);
  t.equal(await upgrade(['GET /portForward/default/web?ports=80 HTTP/1.1', ...ws('v4.channel.k8s.io')]), 101);
  // kubectl falls back to SPDY after these: they must not look like WebSocket sessions.
  t.equal(await upgrade(['GET /exec/default/web/app?command=true&output=1 HTTP/1.1', ...ws('v9.channel.k8s.io')]), 403);
  t.equal(await upgrade(['GET /exec/default/nope/app?command=true&output=1 HTTP/1.1', ...ws('v5.channel.k8s.io')]), 404);

  // Counted when the 101 is written, so the client's read of it is enough to see the count.
  t.same(await streamingUpgrades(url), {
    'exec websocket v5.channel.k8s.io': 1,
    'attach spdy v4.channel.k8s.io': 1,
    'portForward spdy portforward.k8s.io': 1,
    'portForward websocket SPDY/3.1+portforward.k8s.io': 1,
    'portForward websocket v4.channel.k8s.io': 1,
  });
});
