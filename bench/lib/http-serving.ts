/**
 * Part `http`: `/pods` and `/podInfo` serving rate of nodelet's HTTP layer vs a bare Fastify server
 * answering the same bytes, and `/podInfo` latency with 10 vs 1000 pods in the cache. The servers
 * are child processes (bench/lib/serve-child.ts) pinned to CPU 0; the load generator is wrk on CPU 1.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { BenchNodelet, PodLike } from './env.js';
import { TARGETS, fmt as f, table, target, verdict, type Metric, type PartResult } from './report.js';
import { median, rotated, round, spread } from './stats.js';

const run = promisify(execFile);

type Log = (msg: string) => void;

/** wrk from Debian (the load generator, its own process); installed with apt when missing and root. */
export async function ensureWrk(log: Log): Promise<boolean> {
  const has = async () => run('sh', ['-c', 'command -v wrk']).then(() => true, () => false);
  if (await has()) return true;
  if (process.getuid?.() !== 0) return false;
  log('installing wrk (apt-get install -y wrk)');
  await run('sh', ['-c', 'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null 2>&1 || (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk)'], { timeout: 300_000 }).catch(() => undefined);
  return has();
}

interface Child {
  proc: ChildProcess;
  port: number;
}
async function startServeChild(args: string[]): Promise<Child> {
  const script = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, 'serve-child.js');
  // Pinned to CPU 0 (wrk gets CPU 1), when taskset exists, so the server and the load never share a core.
  const hasTaskset = await run('sh', ['-c', 'command -v taskset']).then(() => true, () => false);
  const cmd = hasTaskset ? 'taskset' : process.execPath;
  const argv = hasTaskset ? ['-c', '0', process.execPath, script, ...args] : [script, ...args];
  const proc = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let buf = '';
    proc.stdout!.on('data', (c: Buffer) => {
      buf += c.toString();
      const m = /PORT (\d+)/.exec(buf);
      if (m) resolve(Number(m[1]));
    });
    proc.once('exit', (code) => reject(new Error(`serve-child exited with ${code}`)));
  });
  return { proc, port };
}
function stopChild(c: Child | undefined): Promise<void> {
  if (!c || c.proc.exitCode !== null) return Promise.resolve();
  return new Promise((r) => {
    c.proc.once('exit', () => r());
    c.proc.kill('SIGTERM');
    setTimeout(() => c.proc.kill('SIGKILL'), 5000).unref();
  });
}

interface WrkResult {
  rps: number;
  p50: number;
  p99: number;
}
function toMs(v: string, unit: string): number {
  const n = Number(v);
  return unit === 'us' ? n / 1000 : unit === 's' ? n * 1000 : unit === 'm' ? n * 60_000 : n;
}
async function wrk(url: string, conns: number, seconds: number): Promise<WrkResult> {
  const hasTaskset = await run('sh', ['-c', 'command -v taskset']).then(() => true, () => false);
  const args = ['-t1', `-c${conns}`, `-d${seconds}s`, '--latency', url];
  const { stdout } = hasTaskset ? await run('taskset', ['-c', '1', 'wrk', ...args]) : await run('wrk', args);
  if (/Non-2xx/.test(stdout) || /Socket errors/.test(stdout)) throw new Error(`wrk saw errors for ${url}:\n${stdout}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]);
  const pct = (p: string) => {
    const m = new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s|m)\\b`).exec(stdout);
    return m ? toMs(m[1]!, m[2]!) : Number.NaN;
  };
  return { rps, p50: pct('50'), p99: pct('99') };
}

export async function httpServing(nodelet: BenchNodelet, workDir: string, o: { rounds: number; seconds: number; warmup: boolean; log: Log }): Promise<PartResult> {
  const { log } = o;
  const list = (await (await fetch(`${nodelet.url}/pods`)).json()) as { items: PodLike[] };
  const template = list.items.find((p) => p.metadata?.name === 'sleeper-bench');
  if (!template) throw new Error('sleeper-bench not listed');
  const tpl = join(workDir, 'template-pod.json');
  await writeFile(tpl, JSON.stringify(template));
  const children: Child[] = [];
  try {
    const n110 = await startServeChild(['nodelet', tpl, '110']);
    children.push(n110);
    const n10 = await startServeChild(['nodelet', tpl, '10']);
    children.push(n10);
    const n1000 = await startServeChild(['nodelet', tpl, '1000']);
    children.push(n1000);
    const infoPath = '/podInfo?podID=bench-0055&podNamespace=default';
    const podsBody = Buffer.from(await (await fetch(`http://127.0.0.1:${n110.port}/pods`)).arrayBuffer());
    const infoRes = await fetch(`http://127.0.0.1:${n110.port}${infoPath}`);
    if (infoRes.status !== 200) throw new Error(`/podInfo answered ${infoRes.status}`);
    const infoBody = Buffer.from(await infoRes.arrayBuffer());
    const podsFile = join(workDir, 'pods.json');
    const infoFile = join(workDir, 'podinfo.json');
    await writeFile(podsFile, podsBody);
    await writeFile(infoFile, infoBody);
    const bare = await startServeChild(['bare', podsFile, infoFile]);
    children.push(bare);
    log(`serving: /pods body ${podsBody.length} B (110 pods), /podInfo body ${infoBody.length} B`);

    type V = 'pods-nodelet' | 'pods-bare' | 'info-nodelet' | 'info-bare' | 'lat-10' | 'lat-1000';
    const url: Record<V, string> = {
      'pods-nodelet': `http://127.0.0.1:${n110.port}/pods`,
      'pods-bare': `http://127.0.0.1:${bare.port}/pods`,
      'info-nodelet': `http://127.0.0.1:${n110.port}${infoPath}`,
      'info-bare': `http://127.0.0.1:${bare.port}${infoPath}`,
      'lat-10': `http://127.0.0.1:${n10.port}/podInfo?podID=bench-0005&podNamespace=default`,
      'lat-1000': `http://127.0.0.1:${n1000.port}/podInfo?podID=bench-0555&podNamespace=default`,
    };
    const res: Record<V, WrkResult[]> = { 'pods-nodelet': [], 'pods-bare': [], 'info-nodelet': [], 'info-bare': [], 'lat-10': [], 'lat-1000': [] };
    // Warm-up (JIT, caches): 1 s each (not with --quick).
    if (o.warmup) for (const v of Object.keys(url) as V[]) await wrk(url[v], v.startsWith('lat') ? 1 : 50, 1);
    const rateVs: V[] = ['pods-nodelet', 'pods-bare', 'info-nodelet', 'info-bare'];
    const latVs: V[] = ['lat-10', 'lat-1000'];
    for (let r = 0; r < o.rounds; r++) {
      for (const v of rotated(rateVs, r)) res[v].push(await wrk(url[v], 50, o.seconds));
      for (const v of rotated(latVs, r)) res[v].push(await wrk(url[v], 1, o.seconds));
      log(`round ${r + 1}/${o.rounds} serving: ` + rateVs.map((v) => `${v} ${f(res[v].at(-1)!.rps, 0)}/s`).join(', ') + `; /podInfo p50 10 pods ${f(res['lat-10'].at(-1)!.p50, 3)} ms, 1000 pods ${f(res['lat-1000'].at(-1)!.p50, 3)} ms`);
    }

    const metrics: Metric[] = [];
    const rows: string[][] = [['HTTP serving, wrk -t1 -c50 (own process, CPU 1; servers on CPU 0) — req/s', 'median', '[min–max]', '÷bare', '[min–max]', 'target']];
    for (const [route, nv, bv, label, bytes] of [
      ['pods', 'pods-nodelet', 'pods-bare', '/pods (110 pods)', podsBody.length],
      ['podinfo', 'info-nodelet', 'info-bare', '/podInfo?podID=&podNamespace=', infoBody.length],
    ] as const) {
      const n = res[nv].map((x) => x.rps);
      const b = res[bv].map((x) => x.rps);
      const ratios = n.map((x, i) => x / b[i]!);
      const s = spread(n);
      const rs = spread(ratios);
      const m: Metric = {
        metric: `http_${route}_rps`,
        variant: 'nodelet',
        value: round(s.median, 0),
        unit: 'req/s',
        baseline: round(median(b), 0),
        baseline_variant: 'bare Fastify, same bytes',
        ratio: round(rs.median, 3),
        min: round(s.min, 0),
        max: round(s.max, 0),
        rounds: o.rounds,
        per_round: n.map((x) => round(x, 0)),
        ratio_per_round: ratios.map((x) => round(x, 3)),
        body_bytes: bytes,
        p99_ms: round(median(res[nv].map((x) => x.p99)), 3),
        baseline_p99_ms: round(median(res[bv].map((x) => x.p99)), 3),
        ...target(TARGETS.servingRatio, '>=', 'ratio', rs.median, rs),
      };
      metrics.push(m);
      rows.push([`  bare Fastify ${label}`, f(median(b), 0), `[${f(Math.min(...b), 0)}–${f(Math.max(...b), 0)}]`, '1.00', '', '']);
      rows.push([`  nodelet ${label}`, f(s.median, 0), `[${f(s.min, 0)}–${f(s.max, 0)}]`, f(rs.median), `[${f(rs.min)}–${f(rs.max)}]`, verdict(m)]);
    }
    const lines = [table(rows), ''];

    const l10 = res['lat-10'];
    const l1000 = res['lat-1000'];
    const lrows: string[][] = [['/podInfo latency, wrk -t1 -c1 — ms', 'p50', '[min–max]', 'p99', 'req/s', '÷10 pods (p50)', 'target']];
    const p50ratio = spread(l1000.map((x, i) => x.p50 / l10[i]!.p50));
    const p99ratio = median(l1000.map((x, i) => x.p99 / l10[i]!.p99));
    const lm: Metric = {
      metric: 'http_podinfo_latency_1000_pods',
      variant: 'nodelet',
      value: round(median(l1000.map((x) => x.p50)), 4),
      unit: 'ms (p50)',
      baseline: round(median(l10.map((x) => x.p50)), 4),
      baseline_variant: '10 pods in the cache',
      ratio: round(p50ratio.median, 3),
      min: round(Math.min(...l1000.map((x) => x.p50)), 4),
      max: round(Math.max(...l1000.map((x) => x.p50)), 4),
      rounds: o.rounds,
      p99_ms: round(median(l1000.map((x) => x.p99)), 4),
      baseline_p99_ms: round(median(l10.map((x) => x.p99)), 4),
      p99_ratio: round(p99ratio, 3),
      ...target(TARGETS.podInfoFlat, '<=', 'ratio', p50ratio.median),
    };
    metrics.push(lm);
    for (const [label, xs] of [['  10 pods', l10], ['  1000 pods', l1000]] as const) {
      const p50 = xs.map((x) => x.p50);
      lrows.push([label, f(median(p50), 3), `[${f(Math.min(...p50), 3)}–${f(Math.max(...p50), 3)}]`, f(median(xs.map((x) => x.p99)), 3), f(median(xs.map((x) => x.rps)), 0), xs === l10 ? '' : `${f(p50ratio.median)} (p99 ${f(p99ratio)})`, xs === l10 ? '' : verdict(lm)]);
    }
    lines.push(table(lrows), '  ("flat": 1000-pod p50 within 1.25× of the 10-pod p50, paired per round.)', '');
    return { metrics, lines };
  } finally {
    for (const c of children) await stopChild(c);
  }
}
