/**
 * Byte-exact bulk: stdin → stdout
 * through exec over WebSocket v5 and SPDY at client chunk sizes 1 KiB–128 KiB (sha256 in = out);
 * a large stdout to a slow reader with nodelet's RSS bounded and /healthz responsive meanwhile;
 * bulk both ways through kubectl port-forward (SPDY and SPDY-in-WebSocket), sha256 checked.
 */
import http from 'node:http';
import { connect } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import t from 'tap';
import { kubectlFor } from '../helpers/kubectl.js';
import { ChildNode, podManifest } from '../helpers/soak-node.js';
import { PROTOCOLS, describe, runExec } from '../helpers/soak-exec.js';
import { KUBECTLS, kubectlPortForward } from '../helpers/soak-kubectl.js';
import { KiB, MiB, figures, mib, peakRss, poll, probeHealthz, round, sized, stopwatch } from '../helpers/soak.js';

const BIG = sized({ ci: 64 * MiB, full: 1024 * MiB });
const CHUNKS = [1 * KiB, 4 * KiB, 64 * KiB, 128 * KiB];
/** Slow reader: 1 MB/s for this long, then the rest at full speed. */
const SLOW_MS = sized({ ci: 10_000, full: 120_000 });
const SLOW_BPS = 1_000_000;
/** Bounds: the slow reader may grow nodelet by at most this; /healthz p99 meanwhile. */
const RSS_GROWTH_MAX = 64 * MiB;
const HEALTHZ_P99_MAX_MS = 500;

const manifest = podManifest('bulk', {
  app: ['sh', '-c', `mkdir -p /www && dd if=/dev/urandom of=/www/blob bs=1048576 count=${BIG / MiB} 2>/dev/null && sha256sum /www/blob > /tmp/blob.sum && httpd -p 127.0.0.1:8080 -h /www && exec nc -ll -p 9000 -e sha256sum`],
});

const node = await ChildNode.start(t);
await node.writeManifest('bulk.yaml', manifest);
const pod = node.podName('bulk');
const run = (command: string[]) => runExec({ port: node.port, pod, container: 'app', command, protocol: 'websocket' });
// The blob is ready once its digest is written.
await poll('the blob written in the pod', async () => {
  const r = await run(['cat', '/tmp/blob.sum']);
  return r.outcome === 'exited' && r.exitCode === 0 && r.stdoutBytes > 64 ? true : undefined;
}, 180_000, 500);
const digest = async (file: string) => {
  let text = '';
  const r = await runExec({ port: node.port, pod, container: 'app', command: ['sha256sum', file], protocol: 'websocket', onStdout: (p) => (text += p.toString()) });
  if (r.outcome !== 'exited' || r.exitCode !== 0) throw new Error(`sha256sum ${file}: ${describe(r)}`);
  return text.split(' ')[0]!;
};
const blob = await digest('/www/blob');

t.test(`exec stdin → cat → stdout, 1 MiB + ${mib(BIG)} MiB at ${CHUNKS.map((c) => c / KiB).join('/')} KiB chunks, sha256`, { timeout: sized({ ci: 240_000, full: 3_600_000 }) }, async (t) => {
  for (const protocol of PROTOCOLS) {
    const rssBefore = node.rss();
    const fdsBefore = node.fds();
    const peak = peakRss(node.pid);
    const elapsed = stopwatch();
    let bytes = 0;
    let transfers = 0;
    for (const size of [MiB, BIG]) {
      for (const chunk of CHUNKS) {
        const r = await runExec({ port: node.port, pod, container: 'app', command: ['cat'], protocol, stdin: { bytes: size, chunk }, timeoutMs: sized({ ci: 120_000, full: 900_000 }) });
        const what = `${protocol} ${mib(size)} MiB in ${chunk / KiB} KiB messages`;
        t.equal(r.outcome, 'exited', `${what}: ${describe(r)}`);
        t.equal(r.exitCode, 0, `${what}: exit 0`);
        t.equal(r.stdoutBytes, size, `${what}: every byte back`);
        t.equal(r.stdoutSha, r.stdinSha, `${what}: sha256 out = in`);
        bytes += r.stdoutBytes;
        transfers++;
      }
    }
    const seconds = elapsed();
    await poll('sessions closed', async () => ((await node.sessions()) === 0 ? true : undefined), 10_000);
    figures(t, {
      protocol,
      transfers,
      mib_each_way: mib(bytes),
      seconds,
      mb_per_s: round(bytes / 1e6 / seconds),
      rss_before_mib: mib(rssBefore),
      rss_peak_mib: mib(peak.stop()),
      rss_after_mib: mib(node.rss()),
      fds_before: fdsBefore,
      fds_after: node.fds(),
    });
  }
});

t.test(`a slow reader of ${mib(BIG)} MiB: RSS bounded, /healthz p99`, { timeout: sized({ ci: 180_000, full: 1_800_000 }) }, async (t) => {
  for (const protocol of PROTOCOLS) {
    const rssBefore = node.rss();
    const fdsBefore = node.fds();
    const peak = peakRss(node.pid);
    const health = probeHealthz(node.url);
    const elapsed = stopwatch();
    const r = await runExec({ port: node.port, pod, container: 'app', command: ['cat', '/www/blob'], protocol, slowRead: { bps: SLOW_BPS, forMs: SLOW_MS }, timeoutMs: SLOW_MS + sized({ ci: 120_000, full: 900_000 }) });
    const h = await health.stop();
    const rssPeak = peak.stop();
    t.equal(r.outcome, 'exited', `${protocol}: ${describe(r)}`);
    t.equal(r.exitCode, 0);
    t.equal(r.stdoutBytes, BIG, `${protocol}: exact byte count`);
    t.equal(r.stdoutSha, blob, `${protocol}: sha256 of what arrived = the file's`);
    t.ok(rssPeak - rssBefore <= RSS_GROWTH_MAX, `${protocol}: RSS grew ${mib(rssPeak - rssBefore)} MiB (≤ ${mib(RSS_GROWTH_MAX)})`);
    t.equal(h.failures, 0, `${protocol}: /healthz answered 200 throughout`);
    t.ok(h.p99 <= HEALTHZ_P99_MAX_MS, `${protocol}: /healthz p99 ${h.p99} ms (≤ ${HEALTHZ_P99_MAX_MS})`);
    await poll('sessions closed', async () => ((await node.sessions()) === 0 ? true : undefined), 10_000);
    figures(t, {
      protocol,
      mib: mib(BIG),
      slow_seconds: SLOW_MS / 1000,
      seconds: elapsed(),
      rss_before_mib: mib(rssBefore),
      rss_peak_mib: mib(rssPeak),
      rss_growth_mib: mib(rssPeak - rssBefore),
      healthz_p50_ms: h.p50,
      healthz_p99_ms: h.p99,
      healthz_samples: h.samples,
      fds_before: fdsBefore,
      fds_after: node.fds(),
    });
  }
});

t.test(`port-forward ${mib(BIG)} MiB down and up through kubectl, sha256`, { timeout: sized({ ci: 180_000, full: 1_800_000 }) }, async (t) => {
  for (const k of KUBECTLS) {
    const kubectl = await kubectlFor(t, k.version, node.url);
    const fdsBefore = node.fds();
    const rssBefore = node.rss();
    const peak = peakRss(node.pid);
    const { proc, local } = await kubectlPortForward(t, kubectl, pod, [8080, 9000]);
    const down = stopwatch();
    const got = await new Promise<{ status: number; bytes: number; sha: string }>((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port: local.get(8080), path: '/blob', agent: false }, (res) => {
          const h = createHash('sha256');
          let bytes = 0;
          res.on('data', (c: Buffer) => {
            h.update(c);
            bytes += c.length;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes, sha: h.digest('hex') }));
          res.on('error', reject);
        })
        .on('error', reject);
    });
    const downSeconds = down();
    t.equal(got.status, 200, `${k.version}: GET /blob`);
    t.equal(got.bytes, BIG, `${k.version}: every byte down`);
    t.equal(got.sha, blob, `${k.version}: sha256 down`);

    // Upload: the backend (`nc -e sha256sum`) answers with the digest of what it read.
    const up = stopwatch();
    const sent = createHash('sha256');
    const answer = await new Promise<string>((resolve, reject) => {
      const sock = connect(local.get(9000)!, '127.0.0.1');
      let reply = '';
      sock.on('error', reject);
      sock.on('data', (d: Buffer) => (reply += d.toString()));
      sock.on('close', () => resolve(reply));
      sock.once('connect', async () => {
        for (let left = BIG; left > 0; left -= MiB) {
          const b = randomBytes(Math.min(MiB, left));
          sent.update(b);
          if (!sock.write(b)) await new Promise((r) => sock.once('drain', r));
        }
        sock.end(); // half-close: the backend sees EOF, then answers
      });
    });
    const upSeconds = up();
    t.equal(answer.split(' ')[0], sent.digest('hex'), `${k.version}: sha256 up (the backend's digest of what it received)`);
    proc.child.kill('SIGINT');
    await proc.exited;
    await poll('port-forward session closed', async () => ((await node.sessions()) === 0 && node.children() === 0 ? true : undefined), 15_000);
    figures(t, {
      kubectl: k.version,
      transport: k.transport,
      mib_down: mib(got.bytes),
      down_mb_per_s: round(got.bytes / 1e6 / downSeconds),
      mib_up: mib(BIG),
      up_mb_per_s: round(BIG / 1e6 / upSeconds),
      rss_before_mib: mib(rssBefore),
      rss_peak_mib: mib(peak.stop()),
      fds_before: fdsBefore,
      fds_after: node.fds(),
    });
  }
});
