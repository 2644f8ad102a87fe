/**
 * The watch part of `npm run bench`: many concurrent pod watchers and a burst of status changes.
 *
 * - Delivery latency: a child process (watch-child.ts) runs nodelet's real HTTP server, host, pod
 *   manager, status manager and watch feeds over N copies of the live bench pod. W watchers
 *   (`GET /api/v1/pods?watch=true&resourceVersion=<list's>`, one connection each) wait; the child
 *   makes K status changes in one go (one per pod, each stamped with the wall-clock time it was
 *   made); every watcher must receive all K MODIFIED events. Latency = arrival in this process −
 *   the stamp, over every (watcher, event) pair: p50, p99, max, and the time until the last
 *   watcher had the last event. The child (not the bench nodelet) is used because nothing else
 *   can make K status changes at once; the watch path it runs is nodelet's own.
 * - Memory per watcher: RSS (and V8 heap, after a full GC) of that child before and after opening
 *   the W watchers, and RSS of the real bench nodelet process before and after W watchers on it.
 *
 * This process is every watcher's client and parses only the stamp out of each event line, so
 * the client is cheap; on a small machine it still shares the CPUs with the server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { request, type ClientRequest } from 'node:http';
import { join } from 'node:path';
import type { PodList } from '../../src/api/types.js';
import type { BenchNodelet } from './env.js';
import { rssOf } from '../../test/helpers/proc.js';
import { fmt as f, table, type Metric as XMetric, type PartResult } from './report.js';
import { cpuSecondsOf, selfCpuSeconds } from './proc.js';
import { median, round } from './stats.js';

type Log = (msg: string) => void;
const MiB = 1024 ** 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const wallMs = (): number => performance.timeOrigin + performance.now();
/** What watch-child writes into each changed status (`status.message`). */
const STAMP = 'bench-t=';


function percentile(sorted: Float64Array, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The child with a line protocol on stdin/stdout. */
class WatchChild {
  readonly #proc: ChildProcess;
  readonly port: number;
  readonly #lines: string[] = [];
  readonly #waiters: Array<() => void> = [];

  private constructor(proc: ChildProcess, port: number, carry: string[]) {
    this.#proc = proc;
    this.port = port;
    this.#lines.push(...carry);
  }

  get pid(): number | undefined {
    return this.#proc.pid;
  }

  /** `watchers`: the caps of its server (`maxWatches`, `maxWatchesPerUser`: the bench's watchers are one user). */
  static async start(template: string, pods: number, watchers: number): Promise<WatchChild> {
    const script = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, 'watch-child.js');
    // NODELET_BENCH_WATCH_CHILD_ARGS: extra node flags for the child (e.g. `--cpu-prof --cpu-prof-dir=DIR`).
    const extra = (process.env.NODELET_BENCH_WATCH_CHILD_ARGS ?? '').split(' ').filter(Boolean);
    const proc = spawn(process.execPath, ['--expose-gc', ...extra, script, template, String(pods), String(watchers)], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: string[] = [];
    let buf = '';
    let child: WatchChild | undefined;
    const port = await new Promise<number>((resolve, reject) => {
      proc.stdout!.on('data', (c: Buffer) => {
        buf += c.toString();
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          const m = /^PORT (\d+)$/.exec(line);
          if (m) resolve(Number(m[1]));
          else if (child) child.#push(line);
          else lines.push(line);
        }
      });
      proc.once('exit', (code) => reject(new Error(`watch-child exited with ${code}`)));
    });
    child = new WatchChild(proc, port, lines);
    return child;
  }

  #push(line: string): void {
    this.#lines.push(line);
    for (const w of this.#waiters.splice(0)) w();
  }

  /** Sends a command and resolves with the first answer line starting with `answer`. */
  async ask(cmd: string, answer: string, timeoutMs = 30_000): Promise<string[]> {
    this.#proc.stdin!.write(`${cmd}\n`);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const i = this.#lines.findIndex((l) => l.startsWith(`${answer} `));
      if (i >= 0) return this.#lines.splice(i, 1)[0]!.split(' ').slice(1);
      if (Date.now() > deadline) throw new Error(`watch-child did not answer ${cmd}`);
      await new Promise<void>((r) => {
        this.#waiters.push(r);
        setTimeout(r, 200).unref();
      });
    }
  }

  async stop(): Promise<void> {
    if (this.#proc.exitCode !== null) return;
    await new Promise<void>((r) => {
      this.#proc.once('exit', () => r());
      this.#proc.stdin!.end();
      setTimeout(() => this.#proc.kill('SIGKILL'), 5000).unref();
    });
  }
}

/** One watch connection; counts the stamped MODIFIED events and records their latencies. */
interface Watcher {
  req: ClientRequest;
  got: number;
  ended: boolean;
}

async function openWatchers(
  port: number,
  n: number,
  rv: string,
  onStamp: (latencyMs: number) => void,
): Promise<{ watchers: Watcher[]; close: () => void }> {
  const watchers: Watcher[] = [];
  const path = `/api/v1/pods?watch=true&resourceVersion=${rv}&timeoutSeconds=3600`;
  const openOne = () =>
    new Promise<void>((resolve, reject) => {
      const w: Watcher = { req: undefined as unknown as ClientRequest, got: 0, ended: false };
      w.req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        if (res.statusCode !== 200) {
          reject(new Error(`watch answered ${res.statusCode}`));
          return;
        }
        // Only the stamp is read out of each line; latin1 strings keep V8's one-byte fast paths.
        res.setEncoding('latin1');
        let rest = '';
        res.on('data', (chunk: string) => {
          const now = wallMs();
          const text = rest + chunk;
          let start = 0;
          let nl: number;
          while ((nl = text.indexOf('\n', start)) >= 0) {
            const at = text.indexOf(STAMP, start);
            if (at >= 0 && at < nl) {
              const from = at + STAMP.length;
              onStamp(now - Number(text.slice(from, text.indexOf(' ', from))));
              w.got++;
            }
            start = nl + 1;
          }
          rest = text.slice(start);
        });
        res.on('end', () => (w.ended = true));
        res.on('error', () => (w.ended = true));
        resolve();
      });
      w.req.on('error', (err) => {
        w.ended = true;
        reject(err);
      });
      w.req.end();
      watchers.push(w);
    });
  // 100 connections at a time: the listen backlog and the accept loop stay unhurried.
  for (let i = 0; i < n; i += 100) await Promise.all(Array.from({ length: Math.min(100, n - i) }, openOne));
  return { watchers, close: () => watchers.forEach((w) => w.req.destroy()) };
}

async function listRV(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/pods`);
  const list = (await res.json()) as PodList;
  return list.metadata?.resourceVersion ?? '';
}

async function settledRss(pid: number | undefined, settleMs = 1500): Promise<number> {
  await sleep(settleMs);
  const xs: number[] = [];
  for (let i = 0; i < 5; i++) {
    xs.push(rssOf(pid));
    await sleep(100);
  }
  return median(xs);
}

export interface WatchPartOptions {
  nodelet: BenchNodelet;
  workDir: string;
  watchers: number;
  changes: number;
  rounds: number;
  log: Log;
}

export async function watchPart(o: WatchPartOptions): Promise<PartResult> {
  const metrics: XMetric[] = [];
  // The live bench pod, as the template for the child's pods.
  const pods = (await (await fetch(`${o.nodelet.url}/pods`)).json()) as PodList;
  const template = pods.items.find((p) => p.metadata?.name === 'sleeper-bench');
  if (!template) throw new Error('sleeper-bench not listed');
  const tpl = join(o.workDir, 'watch-template-pod.json');
  await writeFile(tpl, JSON.stringify(template));
  const eventBytes = JSON.stringify({ type: 'MODIFIED', object: template }).length + 1;

  const child = await WatchChild.start(tpl, o.changes, o.watchers);
  let closeAll: (() => void) | undefined;
  try {
    const [rss0, heap0] = (await child.ask('rss', 'RSS')).map(Number) as [number, number];
    const latencies = new Float64Array(o.watchers * o.changes * o.rounds);
    let n = 0;
    const t0 = performance.now();
    const { watchers, close } = await openWatchers(child.port, o.watchers, await listRV(child.port), (ms) => {
      if (n < latencies.length) latencies[n++] = ms;
    });
    closeAll = close;
    const openS = (performance.now() - t0) / 1000;
    await sleep(1000);
    const [rss1, heap1] = (await child.ask('rss', 'RSS')).map(Number) as [number, number];
    const perRss = (rss1 - rss0) / o.watchers;
    const perHeap = (heap1 - heap0) / o.watchers;
    o.log(`watch: ${o.watchers} watchers open in ${openS.toFixed(1)} s; child RSS ${(rss0 / MiB).toFixed(1)} → ${(rss1 / MiB).toFixed(1)} MiB, heap ${(heap0 / MiB).toFixed(1)} → ${(heap1 / MiB).toFixed(1)} MiB`);

    const roundRows: string[][] = [];
    const cpuRows: Array<{ child: number; self: number }> = [];
    const completions: number[] = [];
    let complete = true;
    for (let r = 0; r < o.rounds; r++) {
      const want = (r + 1) * o.changes;
      const from = n;
      const cpu0 = { child: cpuSecondsOf(child.pid), self: selfCpuSeconds() };
      const [first] = (await child.ask(`burst ${o.changes}`, 'BURST')).map(Number) as [number, number];
      const deadline = Date.now() + 120_000;
      while (watchers.some((w) => w.got < want && !w.ended) && Date.now() < deadline) await sleep(5);
      const lastArrival = wallMs();
      const cpu = { child: cpuSecondsOf(child.pid) - cpu0.child, self: selfCpuSeconds() - cpu0.self };
      cpuRows.push(cpu);
      const short = watchers.filter((w) => w.got < want).length;
      if (short > 0) complete = false;
      const round_ = latencies.slice(from, n).sort();
      completions.push(lastArrival - first);
      roundRows.push([`  round ${r + 1}`, String(round_.length), f(percentile(round_, 50), 1), f(percentile(round_, 99), 1), f(round_[round_.length - 1], 1), f(lastArrival - first, 0), String(short)]);
      o.log(`watch: round ${r + 1}: ${round_.length} deliveries, p50 ${f(percentile(round_, 50), 1)} ms, p99 ${f(percentile(round_, 99), 1)} ms, all in ${f(lastArrival - first, 0)} ms, ${short} watchers short; CPU s: server ${f(cpu.child, 2)}, clients ${f(cpu.self, 2)}`);
      await sleep(500);
    }
    const open = Number((await child.ask('watchers', 'WATCHERS'))[0]);
    // CPU per delivery does not depend on what else runs on the machine, unlike the latencies.
    const serverUs = (median(cpuRows.map((c) => c.child)) * 1e6) / (o.watchers * o.changes);
    const clientUs = (median(cpuRows.map((c) => c.self)) * 1e6) / (o.watchers * o.changes);
    const all = latencies.slice(0, n).sort();
    const p50 = percentile(all, 50);
    const p99 = percentile(all, 99);
    const common = { rounds: o.rounds, watchers: o.watchers, changes: o.changes, deliveries: n, event_bytes: eventBytes };
    metrics.push(
      { metric: 'watch_delivery_latency_p50', variant: 'child', value: round(p50, 2), unit: 'ms', baseline: null, baseline_variant: null, ratio: null, min: null, max: null, ...common },
      {
        metric: 'watch_delivery_latency_p99',
        variant: 'child',
        value: round(p99, 2),
        unit: 'ms',
        baseline: null,
        baseline_variant: null,
        ratio: null,
        min: null,
        max: null,
        ...common,
        target: 2000,
        target_op: '<=',
        target_of: 'value',
        pass: p99 <= 2000 && complete,
      },
      {
        metric: 'watch_server_cpu_per_delivery',
        variant: 'child',
        value: round(serverUs, 2),
        unit: 'µs',
        baseline: round(clientUs, 2),
        baseline_variant: 'client CPU µs per delivery (this process)',
        ratio: null,
        min: null,
        max: null,
        ...common,
        target: 5,
        target_op: '<=',
        target_of: 'value',
        pass: serverUs <= 5,
      },
      { metric: 'watch_burst_complete', variant: 'child', value: round(median(completions), 0), unit: 'ms', baseline: null, baseline_variant: null, ratio: null, min: round(Math.min(...completions), 0), max: round(Math.max(...completions), 0), ...common, all_delivered: complete, watchers_open_after: open },
      {
        metric: 'watch_rss_per_watcher',
        variant: 'child',
        value: round(perRss / 1024, 2),
        unit: 'KiB/watcher',
        baseline: round(rss0 / MiB, 2),
        baseline_variant: 'child RSS (MiB) before the watchers',
        ratio: null,
        min: null,
        max: null,
        ...common,
        heap_kib_per_watcher: round(perHeap / 1024, 2),
        target: 64,
        target_op: '<=',
        target_of: 'value',
        pass: perRss / 1024 <= 64,
      },
    );
    closeAll();
    closeAll = undefined;

    // The same watchers against the real bench nodelet: its RSS per watcher.
    const before = await settledRss(o.nodelet.pid);
    const real = await openWatchers(o.nodelet.port, o.watchers, await listRV(o.nodelet.port), () => undefined);
    const after = await settledRss(o.nodelet.pid, 2000);
    real.close();
    const perReal = (after - before) / o.watchers;
    o.log(`watch: real nodelet RSS ${(before / MiB).toFixed(1)} → ${(after / MiB).toFixed(1)} MiB with ${o.watchers} watchers`);
    metrics.push({
      metric: 'watch_rss_per_watcher',
      variant: 'nodelet',
      value: round(perReal / 1024, 2),
      unit: 'KiB/watcher',
      baseline: round(before / MiB, 2),
      baseline_variant: 'nodelet RSS (MiB) before the watchers',
      ratio: null,
      min: null,
      max: null,
      rounds: 1,
      watchers: o.watchers,
      target: 64,
      target_op: '<=',
      target_of: 'value',
      pass: perReal / 1024 <= 64,
    });

    const verdict = (m: XMetric) => (m.target === undefined ? '' : `${m.target_op} ${m.target} ${m.pass ? 'PASS' : 'MISS'}`);
    const lines = [
      table([
        [`watch: ${o.watchers} pod watchers, a burst of ${o.changes} status changes (~${(eventBytes / 1024).toFixed(1)} KiB per event) — delivery latency`, 'deliveries', 'p50 ms', 'p99 ms', 'max ms', 'all in ms', 'short'],
        ...roundRows,
        ['  all rounds', String(n), f(p50, 1), f(p99, 1), f(all[all.length - 1], 1), f(median(completions), 0), complete ? '0' : 'SOME'],
      ]),
      `  p99 target ${verdict(metrics[1]!)}; watchers still open after the bursts: ${open}/${o.watchers}`,
      `  CPU per delivery (median round): server ${f(serverUs, 2)} µs ${verdict(metrics[2]!)}, clients ${f(clientUs, 2)} µs; load average now ${loadavg().map((x) => x.toFixed(1)).join(' ')}`,
      '',
      table([
        [`watch: memory per idle pod watcher (${o.watchers} watchers)`, 'before MiB', 'after MiB', 'KiB/watcher', 'heap KiB/watcher', 'target'],
        ['  watch child (after GC)', f(rss0 / MiB, 1), f(rss1 / MiB, 1), f(perRss / 1024, 1), f(perHeap / 1024, 1), verdict(metrics[4]!)],
        ['  bench nodelet (RSS only, no GC control)', f(before / MiB, 1), f(after / MiB, 1), f(perReal / 1024, 1), '–', verdict(metrics[5]!)],
      ]),
      '',
    ];
    return { metrics, lines };
  } finally {
    closeAll?.();
    await child.stop();
  }
}
