/**
 * Part `slowreader`: nodelet's RSS growth while a client reads a large exec stdout slowly, over
 * WebSocket v5 then SPDY v4 (backpressure must hold the bytes in Docker, not in nodelet).
 */
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { SpdyExecClient } from '../../test/clients/spdy-client.js';
import { WsChannelClient } from '../../test/clients/ws-client.js';
import { rssOf } from '../../test/helpers/proc.js';
import type { BenchNodelet } from './env.js';
import { TARGETS, fmt as f, table, target, verdict, type Metric, type PartResult } from './report.js';
import { median, round } from './stats.js';

const MiB = 1024 ** 2;
const MB = 1e6;

type Log = (msg: string) => void;

/** nodelet's RSS once it settled: a pause, then the median of 5 readings 100 ms apart. */
async function settledRss(pid: number | undefined, settleMs = 1500): Promise<number> {
  await sleep(settleMs);
  const xs: number[] = [];
  for (let i = 0; i < 5; i++) {
    xs.push(rssOf(pid));
    await sleep(100);
  }
  return median(xs);
}

export async function slowReader(nodelet: BenchNodelet, o: { bytes: number; seconds: number; rateBps: number; log: Log }): Promise<PartResult> {
  const metrics: Metric[] = [];
  const rows: string[][] = [[`slow reader: ${o.bytes / MiB} MiB of exec stdout, read at ${o.rateBps / MB} MB/s for ${o.seconds} s — nodelet RSS`, 'before MiB', 'max MiB', 'growth MiB', 'read MB', 'complete', 'target']];
  const cmd = ['sh', '-c', `dd if=/dev/zero bs=65536 count=${o.bytes / 65536} 2>/dev/null`].map((c) => `command=${encodeURIComponent(c)}`).join('&');
  const path = `/api/v1/namespaces/default/pods/sleeper-bench/exec?container=app&${cmd}&stdout=true&stderr=true`;
  for (const variant of ['websocket', 'spdy'] as const) {
    const before = await settledRss(nodelet.pid, 1000);
    let got = 0;
    let limited = true;
    let tStart = 0;
    let timer: NodeJS.Timeout | undefined;
    let done!: () => void;
    const closed = new Promise<void>((r) => (done = r));
    let sock: Socket;
    const onBytes = (n: number) => {
      got += n;
      if (!limited) return;
      const allowed = ((performance.now() - tStart) / 1000) * o.rateBps;
      if (got > allowed && !timer) {
        sock.pause();
        timer = setTimeout(() => {
          timer = undefined;
          if (limited) sock.resume();
        }, ((got - allowed) / o.rateBps) * 1000);
      }
    };
    if (variant === 'websocket') {
      tStart = performance.now();
      const c = await WsChannelClient.connect(nodelet.port, path, ['v5.channel.k8s.io'], { onData: (ch, p) => ch === 1 && onBytes(p.length), onClose: () => done() });
      sock = c.socket;
    } else {
      tStart = performance.now();
      const c = await SpdyExecClient.connect(nodelet.port, path, ['v4.channel.k8s.io'], { onData: (t, p) => t === 'stdout' && onBytes(p.length), onFin: (t) => t === 'stdout' && (done(), c.teardown()), onClose: () => done() });
      sock = c.socket;
      await c.openStream('error');
      await c.openStream('stdout');
      await c.openStream('stderr');
    }
    let maxRss = before;
    while (performance.now() - tStart < o.seconds * 1000) {
      await sleep(250);
      maxRss = Math.max(maxRss, rssOf(nodelet.pid));
    }
    const readSlow = got;
    limited = false;
    clearTimeout(timer);
    sock.resume();
    await Promise.race([closed, sleep(60_000)]);
    if (!sock.destroyed) sock.destroy();
    const growth = maxRss - before;
    const complete = got === o.bytes;
    o.log(`slow reader ${variant}: RSS ${(before / MiB).toFixed(1)} → max ${(maxRss / MiB).toFixed(1)} MiB; read ${(readSlow / MB).toFixed(1)} MB slowly, ${got} B in all`);
    const m: Metric = {
      metric: 'slow_reader_rss_growth',
      variant,
      value: round(growth / MiB, 2),
      unit: 'MiB',
      baseline: round(before / MiB, 2),
      baseline_variant: 'nodelet RSS (MiB) before the stream',
      ratio: null,
      min: null,
      max: null,
      rounds: 1,
      produced_bytes: o.bytes,
      slow_seconds: o.seconds,
      slow_read_bytes: readSlow,
      complete,
      ...target(TARGETS.slowReaderMiB, '<=', 'value', complete ? growth / MiB : Number.NaN),
    };
    metrics.push(m);
    rows.push([`  nodelet ${variant}`, f(before / MiB, 1), f(maxRss / MiB, 1), f(growth / MiB, 1), f(readSlow / MB, 1), complete ? 'yes' : `NO (${got} B)`, verdict(m)]);
  }
  return { metrics, lines: [table(rows), '  (reduced from 1 GiB at 1 MB/s = 17 min: the producer outruns the reader within a second; then it blocks on backpressure.)', ''] };
}
