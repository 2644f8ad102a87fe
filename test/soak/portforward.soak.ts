/**
 * One port-forward session, several ports, one stalled backend:
 * short HTTP requests on two healthy ports, first alone, then while connections to a third port
 * hang on a backend that accepts and never reads or answers. The healthy ports see no error and no
 * slowdown; the stalled connections stay open until the client lets go; nodelet's descriptors come
 * back and no child is left but the pod's port-forward helper. Through kubectl 1.33 (SPDY in WebSocket) and 1.27 (SPDY).
 */
import http from 'node:http';
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import t from 'tap';
import { kubectlFor } from '../helpers/kubectl.js';
import { ChildNode, podManifest } from '../helpers/soak-node.js';
import { KUBECTLS, kubectlPortForward } from '../helpers/soak-kubectl.js';
import { figures, mib, peakRss, percentile, poll, range, round, sized } from '../helpers/soak.js';

/** Requests per phase (half to each healthy port), this many in flight. */
const REQUESTS = sized({ ci: 400, full: 10_000 });
const PARALLEL = 8;
const STALLED = 8;
const REQUEST_TIMEOUT_MS = 10_000;

const node = await ChildNode.start(t);
const serve = (text: string, port: number) => ['sh', '-c', `mkdir -p /www && echo ${text} > /www/index.html && exec httpd -f -p 127.0.0.1:${port} -h /www`];
await node.writeManifest(
  'pf.yaml',
  podManifest('pf', {
    a: serve('a', 8080),
    b: serve('b', 8081),
    // Accepts, then runs `sleep` on the connection: never reads, never answers.
    stall: ['nc', '-ll', '-p', '8082', '-e', 'sleep', '2147483647'],
  }),
);
const pod = node.podName('pf');
await poll('pf running', async () => {
  const p = await node.pod('pf');
  return p?.status?.containerStatuses?.every((c) => c.state?.running) ? true : undefined;
}, 60_000, 200);

/** One GET /index.html on a new connection; its latency, or the reason it failed. */
function get(port: number, want: string): Promise<{ ms: number; error?: string }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/index.html', agent: false, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ ms: performance.now() - t0, ...(res.statusCode === 200 && body === want ? {} : { error: `HTTP ${res.statusCode} ${JSON.stringify(body.slice(0, 60))}` }) }));
      res.on('error', (err) => resolve({ ms: performance.now() - t0, error: err.message }));
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', (err) => resolve({ ms: performance.now() - t0, error: err.message }));
  });
}

async function phase(local: Map<number, number>): Promise<{ p50: number; p99: number; errors: string[]; seconds: number }> {
  const ms: number[] = [];
  const errors: string[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    range(PARALLEL).map(async () => {
      while (next < REQUESTS) {
        const i = next++;
        const r = await (i % 2 === 0 ? get(local.get(8080)!, 'a\n') : get(local.get(8081)!, 'b\n'));
        ms.push(r.ms);
        if (r.error) errors.push(r.error);
      }
    }),
  );
  return { p50: round(percentile(ms, 50)), p99: round(percentile(ms, 99)), errors, seconds: round((performance.now() - t0) / 1000) };
}

for (const k of KUBECTLS) {
  t.test(`kubectl ${k.version} (${k.transport}): one session, 3 ports, 1 stalled`, { timeout: sized({ ci: 240_000, full: 1_800_000 }) }, async (t) => {
    const kubectl = await kubectlFor(t, k.version, node.url);
    const fds0 = node.fds();
    const rss0 = node.rss();
    const peak = peakRss(node.pid);
    const { proc, local } = await kubectlPortForward(t, kubectl, pod, [8080, 8081, 8082]);
    const alone = await phase(local);
    t.same(alone.errors.slice(0, 3), [], `healthy ports alone: ${REQUESTS} requests, no error`);

    // Stall: connections to 8082 that send a request and never get an answer.
    const stalled: { socket: Socket; closed: boolean }[] = range(STALLED).map(() => {
      const socket = connect(local.get(8082)!, '127.0.0.1');
      const entry = { socket, closed: false };
      socket.on('error', () => undefined);
      socket.on('close', () => (entry.closed = true));
      socket.write('GET / HTTP/1.0\r\n\r\n');
      return entry;
    });
    // Each forwarded connection holds one descriptor in nodelet: the pod-side socket its helper handed over.
    await poll(`${STALLED} stalled connections forwarded`, (why) => {
      why(`${node.fds() - fds0} descriptors over the baseline`);
      // + 1: the session's own socket (the helper's IPC channel may add one more).
      return node.fds() - fds0 >= STALLED + 1 ? true : undefined;
    }, 20_000, 50);
    const during = await phase(local);
    t.same(during.errors.slice(0, 3), [], `healthy ports beside ${STALLED} stalled connections: ${REQUESTS} requests, no error (${during.errors.length} failed)`);
    const bound = round(alone.p50 * 3 + 20);
    t.ok(during.p50 <= bound, `healthy ports not slowed: p50 ${during.p50} ms beside the stall vs ${alone.p50} ms alone (≤ ${bound})`);
    t.equal(stalled.filter((s) => s.closed).length, 0, 'the stalled connections are still open: nodelet did not cut them');

    // The client lets go. (A forwarded connection whose client half-closed stays open as long as
    // the backend does — nodelet gives a half-closed client the whole answer — so the stalled
    // ones end with the session.)
    for (const s of stalled) s.socket.destroy();
    proc.child.kill('SIGINT');
    await proc.exited;
    await poll(`the session closed, no child left but the helper, descriptors back to ${fds0}`, async (why) => {
      why(`${await node.sessions()} sessions, ${node.children()} children, ${node.fds()} fds`);
      return (await node.sessions()) === 0 && node.children() === 0 && node.fds() <= fds0 + 1 ? true : undefined;
    }, 15_000, 50);
    figures(t, {
      requests: REQUESTS * 2,
      parallel: PARALLEL,
      stalled: STALLED,
      alone_p50_ms: alone.p50,
      alone_p99_ms: alone.p99,
      stalled_p50_ms: during.p50,
      stalled_p99_ms: during.p99,
      req_per_s: round(REQUESTS / during.seconds),
      errors: alone.errors.length + during.errors.length,
      rss_before_mib: mib(rss0),
      rss_peak_mib: mib(peak.stop()),
      fds_before: fds0,
      fds_after: node.fds(),
    });
  });
}
