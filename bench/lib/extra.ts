/**
 * The figures beyond the exec relay: `/pods` and `/podInfo` serving rate vs a bare
 * Fastify server, `/podInfo` latency with 10 vs 1000 pods, status freshness after `docker kill`,
 * RSS per idle exec session, RSS growth under a slow reader, port-forward throughput vs a direct
 * connection inside the pod's netns. Each returns JSON metrics (the shape of run.ts's `Metric`)
 * and table lines.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { Agent, get as httpGet } from 'node:http';
import type { Socket } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { rssOf } from '../../test/helpers/proc.js';
import { BUSYBOX, type GcMemory, type NodeletProcess, type PodLike } from './env.js';
import { SpdyExecClient } from '../../test/clients/spdy-client.js';
import { WsChannelClient } from '../../test/clients/ws-client.js';
import { median, round, spread } from './stats.js';
import { TARGETS, fmt, table, target, verdict, type Metric, type PartResult } from './report.js';

export type { PartResult } from './report.js';

const run = promisify(execFile);
const MiB = 1024 ** 2;
const MB = 1e6;

type XMetric = Metric;
type Log = (msg: string) => void;
const f = fmt;

const rotated = <T>(xs: readonly T[], r: number): T[] => xs.map((_, i) => xs[(i + r) % xs.length]!);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function settledRss(pid: number | undefined, settleMs = 1500): Promise<number> {
  await sleep(settleMs);
  const xs: number[] = [];
  for (let i = 0; i < 5; i++) {
    xs.push(rssOf(pid));
    await sleep(100);
  }
  return median(xs);
}

// ---- static pods the parts need ----------------------------------------------------------------

export const FRESHNESS_POD = 'victims';
export const IDLE_POD = 'idlers';
export const PF_POD = 'pfserver';
export const IDLE_CONTAINERS = 8;
export const SCALE_POD = 'scalers';
export const SCALE_CONTAINERS = 16;

const containers = (n: number, prefix: string, cmd: string) =>
  Array.from({ length: n }, (_, i) => `    - name: ${prefix}${i}\n      image: ${BUSYBOX}\n      imagePullPolicy: Never\n      command: ${cmd}\n`).join('');

export function extraManifests(parts: Set<string>, o: { freshnessSamples: number; pfBytes: number }): Record<string, string> {
  const head = (name: string, policy = 'Always') =>
    `apiVersion: v1\nkind: Pod\nmetadata: { name: ${name} }\nspec:\n  terminationGracePeriodSeconds: 0\n  restartPolicy: ${policy}\n  containers:\n`;
  const out: Record<string, string> = {};
  if (parts.has('freshness')) out[FRESHNESS_POD] = head(FRESHNESS_POD, 'Never') + containers(o.freshnessSamples, 'v', '["sleep", "2147483647"]');
  if (parts.has('sessions')) out[IDLE_POD] = head(IDLE_POD) + containers(IDLE_CONTAINERS, 'c', '["sleep", "2147483647"]');
  if (parts.has('scale')) out[SCALE_POD] = head(SCALE_POD) + containers(SCALE_CONTAINERS, 'c', '["sleep", "2147483647"]');
  if (parts.has('portforward')) {
    const count = o.pfBytes / MiB;
    out[PF_POD] = head(PF_POD) + containers(1, 'web', `["sh", "-c", "mkdir -p /www && dd if=/dev/zero of=/www/big bs=1048576 count=${count} 2>/dev/null && exec httpd -f -p 127.0.0.1:8080 -h /www"]`);
  }
  return out;
}

// ---- 1 + 2: /pods and /podInfo serving (wrk against child servers) ----------------------------

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

export async function httpServing(nodelet: NodeletProcess, workDir: string, o: { rounds: number; seconds: number; warmup: boolean; log: Log }): Promise<PartResult> {
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

    const metrics: XMetric[] = [];
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
      const m: XMetric = {
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
        ...target(TARGETS.servingRatio, '>=', 'ratio', rs.median),
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
    const lm: XMetric = {
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

// ---- 3: status freshness ---------------------------------------------------------------------

async function podStatus(nodelet: NodeletProcess, name: string): Promise<PodLike['status']> {
  const r = await fetch(`${nodelet.url}/podInfo?podID=${name}-bench&podNamespace=default`);
  return (await r.json()) as PodLike['status'];
}

export async function freshness(nodelet: NodeletProcess, docker: Docker, o: { samples: number; log: Log }): Promise<PartResult> {
  const pod = await nodelet.waitForPodRunning(FRESHNESS_POD);
  const cs = pod.status?.containerStatuses ?? [];
  const samples: number[] = [];
  const killMs: number[] = [];
  const afterKill: number[] = [];
  for (let i = 0; i < o.samples; i++) {
    const c = cs.find((x) => x.name === `v${i}`);
    if (!c?.containerID) throw new Error(`container v${i} of ${FRESHNESS_POD} has no ID`);
    // A random phase, so samples do not lock onto a periodic relist.
    await sleep(50 + Math.random() * 450);
    const t0 = performance.now();
    const killed = docker.getContainer(c.containerID.replace(/^docker:\/\//, '')).kill().then(() => killMs.push(performance.now() - t0));
    for (;;) {
      const st = await podStatus(nodelet, FRESHNESS_POD);
      const now = st?.containerStatuses?.find((x) => x.name === `v${i}`);
      if (now?.state?.terminated) break;
      if (performance.now() - t0 > 30_000) throw new Error(`v${i}: status still not terminated after 30 s`);
      await sleep(2);
    }
    samples.push(performance.now() - t0);
    await killed;
    afterKill.push(samples.at(-1)! - killMs.at(-1)!);
  }
  const s = spread(samples);
  o.log(`freshness: ${samples.map((x) => x.toFixed(0)).join(', ')} ms`);
  const m: XMetric = {
    metric: 'status_freshness',
    variant: 'nodelet /podInfo',
    value: round(s.median, 1),
    unit: 'ms',
    baseline: round(median(killMs), 1),
    baseline_variant: 'docker kill API call itself (dockerode)',
    ratio: null,
    min: round(s.min, 1),
    max: round(s.max, 1),
    rounds: 1,
    samples: samples.map((x) => round(x, 1)),
    after_kill_returned_ms: round(median(afterKill), 1),
    p90: round([...samples].sort((a, b) => a - b)[Math.floor(samples.length * 0.9)] ?? Number.NaN, 1),
    ...target(TARGETS.freshnessMs, '<=', 'value', s.median),
  };
  const rows = [
    [`status freshness, ${o.samples} samples: docker kill → /podInfo shows terminated — ms`, 'median', '[min–max]', 'p90', 'kill call', 'after kill returned', 'target'],
    ['  nodelet (polled every 2 ms)', f(s.median, 1), `[${f(s.min, 1)}–${f(s.max, 1)}]`, f(m.p90 as number, 1), f(median(killMs), 1), f(median(afterKill), 1), verdict(m)],
  ];
  return { metrics: [m], lines: [table(rows), ''] };
}

// ---- 4: memory per idle exec session (1000), and the scale figure (10,000) -----------------------

/**
 * Opens `n` idle WebSocket v5 execs of `sh -c 'echo r; exec sleep …'` spread over the containers
 * of static pod `pod`; a session counts once its `r` arrived. 2 in flight per container: Docker
 * serialises execs per container (≈ 20/s on this machine).
 */
async function openIdleSessions(nodelet: NodeletProcess, pod: string, containers: number, n: number, log: Log): Promise<{ clients: WsChannelClient[]; seconds: number }> {
  const clients: WsChannelClient[] = [];
  const t0 = performance.now();
  let next = 0;
  let lastLog = t0;
  const cmd = ['sh', '-c', 'echo r; exec sleep 7200'].map((c) => `command=${encodeURIComponent(c)}`).join('&');
  const openOne = async (i: number) => {
    const path = `/api/v1/namespaces/default/pods/${pod}-bench/exec?container=c${i % containers}&${cmd}&stdout=true&stderr=true`;
    let ready!: () => void;
    const started = new Promise<void>((r) => (ready = r));
    const c = await WsChannelClient.connect(nodelet.port, path, ['v5.channel.k8s.io'], {
      onData: (ch) => ch === 1 && ready(),
      onClose: () => ready(),
    });
    clients.push(c);
    await started;
    if (c.socket.destroyed) throw new Error(`session ${i} closed before its exec ran (close code ${c.closeCode})`);
    if (performance.now() - lastLog > 15_000) {
      lastLog = performance.now();
      log(`  ${clients.length}/${n} sessions open after ${((lastLog - t0) / 1000).toFixed(0)} s`);
    }
  };
  await Promise.all(
    Array.from({ length: containers * 2 }, async () => {
      while (next < n) await openOne(next++);
    }),
  );
  return { clients, seconds: (performance.now() - t0) / 1000 };
}

/** nodelet's memory after a forced GC, once the heap settled (a short pause, then the median of 3). */
async function memoryAfterGc(nodelet: NodeletProcess): Promise<{ rss: number; heap: number }> {
  const xs: GcMemory[] = [];
  for (let i = 0; i < 3; i++) {
    await sleep(500);
    xs.push(await nodelet.forceGc());
  }
  return { rss: median(xs.map((x) => x.rss)), heap: median(xs.map((x) => x.heapUsed + x.external)) };
}

interface SessionMemory {
  sessions: number;
  before: { rss: number; heap: number };
  after: { rss: number; heap: number };
  openSeconds: number;
}
const kibPer = (m: SessionMemory, k: 'rss' | 'heap') => (m.after[k] - m.before[k]) / m.sessions / 1024;

function sessionMetric(metric: string, m: SessionMemory, extra: Record<string, unknown>): XMetric {
  return {
    metric,
    variant: 'websocket',
    value: round(kibPer(m, 'rss'), 2),
    unit: 'KiB/session',
    baseline: round(m.before.rss / MiB, 2),
    baseline_variant: 'nodelet RSS (MiB) before the sessions, after a forced GC',
    ratio: null,
    min: null,
    max: null,
    rounds: 1,
    sessions: m.sessions,
    rss_before_mib: round(m.before.rss / MiB, 2),
    rss_after_mib: round(m.after.rss / MiB, 2),
    heap_kib_per_session: round(kibPer(m, 'heap'), 2),
    open_seconds: round(m.openSeconds, 1),
    ...extra,
  };
}

export async function idleSessions(nodelet: NodeletProcess, o: { sessions: number; log: Log }): Promise<PartResult> {
  await nodelet.waitForPodRunning(IDLE_POD);
  const before = await memoryAfterGc(nodelet);
  const { clients, seconds } = await openIdleSessions(nodelet, IDLE_POD, IDLE_CONTAINERS, o.sessions, o.log);
  const after = await memoryAfterGc(nodelet);
  for (const c of clients) c.destroy();
  const mem: SessionMemory = { sessions: o.sessions, before, after, openSeconds: seconds };
  o.log(`idle sessions: ${o.sessions} opened in ${seconds.toFixed(1)} s; nodelet RSS after GC ${(before.rss / MiB).toFixed(1)} → ${(after.rss / MiB).toFixed(1)} MiB`);
  const m = sessionMetric('idle_exec_session_rss', mem, target(TARGETS.idleSessionKiB, '<=', 'value', kibPer(mem, 'rss')));
  const rows = [
    [`idle exec sessions (WebSocket v5, \`sleep\`, ${IDLE_CONTAINERS} containers) — nodelet memory after a forced GC`, 'sessions', 'RSS before MiB', 'after MiB', 'KiB/session', 'heap+external KiB/session', 'target'],
    ['  nodelet', String(o.sessions), f(before.rss / MiB, 1), f(after.rss / MiB, 1), f(kibPer(mem, 'rss'), 1), f(kibPer(mem, 'heap'), 1), verdict(m)],
  ];
  return { metrics: [m], lines: [table(rows), ''] };
}

/** `/healthz` latency: `n` sequential GETs on one keep-alive connection, a few ms apart; p50 and p99 in ms. */
async function healthzLatency(nodelet: NodeletProcess, n = 400): Promise<{ p50: number; p99: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const t0 = performance.now();
      httpGet(`${nodelet.url}/healthz`, { agent }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`/healthz answered ${res.statusCode}`))));
      }).on('error', reject);
    });
  const xs: number[] = [];
  try {
    for (let i = 0; i < 20; i++) await once(); // warm-up
    for (let i = 0; i < n; i++) {
      xs.push(await once());
      await sleep(5);
    }
  } finally {
    agent.destroy();
  }
  xs.sort((a, b) => a - b);
  return { p50: xs[Math.floor(xs.length * 0.5)]!, p99: xs[Math.min(xs.length - 1, Math.floor(xs.length * 0.99))]! };
}

/**
 * Raises this process's descriptor limit (children inherit it: the engine, nodelet) to at least
 * `want` with `prlimit` (util-linux; raising the hard limit needs root). Returns the soft limit
 * in force afterwards.
 */
export async function raiseFdLimit(want: number, log: Log): Promise<number> {
  const current = () => Number(/Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? Number.NaN);
  if (current() >= want) return current();
  const nrOpen = Number(readFileSync('/proc/sys/fs/nr_open', 'utf8').trim());
  const n = Math.min(want, nrOpen);
  await run('prlimit', ['--pid', String(process.pid), `--nofile=${n}:${n}`]).catch((err: unknown) => log(`cannot raise the descriptor limit to ${n}: ${String(err)}`));
  log(`descriptor limit: ${current()} (wanted ${want})`);
  return current();
}

/** Open descriptors of `pid` (NaN when it cannot be read). */
function fdCount(pid: number | undefined): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}

/** The soft descriptor limit of `pid`. */
function fdLimitOf(pid: number | undefined): number {
  try {
    return Number(/Max open files\s+(\d+)/.exec(readFileSync(`/proc/${pid}/limits`, 'utf8'))?.[1] ?? Number.NaN);
  } catch {
    return Number.NaN;
  }
}

/** The `containerd` dockerd started (its child), if any. */
function containerdOf(dockerdPid: number | undefined): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === dockerdPid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').startsWith('containerd')) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/**
 * How many sessions the descriptor limits allow: a probe of sessions gives each process's
 * descriptors per session; the tightest process, less a margin of 5 %, bounds the count.
 */
function sessionsTheLimitsAllow(pids: Record<string, number | undefined>, probed: number, before: Record<string, number>): { allowed: number; perSession: Record<string, number> } {
  const perSession: Record<string, number> = {};
  let allowed = Number.POSITIVE_INFINITY;
  for (const [name, pid] of Object.entries(pids)) {
    const per = (fdCount(pid) - before[name]!) / probed;
    perSession[name] = per;
    if (per > 0) allowed = Math.min(allowed, Math.floor((fdLimitOf(pid) * 0.95 - before[name]!) / per));
  }
  return { allowed, perSession };
}

export async function scaleSessions(nodelet: NodeletProcess, o: { sessions: number; dockerdPid: number | undefined; log: Log }): Promise<PartResult> {
  await nodelet.waitForPodRunning(SCALE_POD);
  const idle = await healthzLatency(nodelet);
  const before = await memoryAfterGc(nodelet);
  const pids = { bench: process.pid, nodelet: nodelet.pid, dockerd: o.dockerdPid, containerd: containerdOf(o.dockerdPid) };
  const fdsBefore = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, fdCount(pid)]));
  // Every session holds a socket here, two in nodelet and more in dockerd: probe what one costs,
  // then open as many as the descriptor limits allow, up to the count asked for.
  const probe = await openIdleSessions(nodelet, SCALE_POD, SCALE_CONTAINERS, Math.min(200, o.sessions), o.log);
  const { allowed, perSession } = sessionsTheLimitsAllow(pids, probe.clients.length, fdsBefore);
  const n = Math.max(probe.clients.length, Math.min(o.sessions, allowed));
  const fdNote =
    n < o.sessions
      ? `CAPPED at ${n} of ${o.sessions} sessions by the descriptor limits (${Object.entries(perSession).map(([k, v]) => `${k} ${fmt(v, 1)}/session`).join(', ')}; limit ${fdLimitOf(nodelet.pid)}; raise ulimit -n)`
      : '';
  if (fdNote) o.log(`scale: ${fdNote}`);
  const rest = await openIdleSessions(nodelet, SCALE_POD, SCALE_CONTAINERS, n - probe.clients.length, o.log);
  const clients = [...probe.clients, ...rest.clients];
  const seconds = probe.seconds + rest.seconds;
  const after = await memoryAfterGc(nodelet);
  const busy = await healthzLatency(nodelet);
  const stillOpen = clients.filter((c) => !c.socket.destroyed).length;
  const fds = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, fdCount(pid)]));
  for (const c of clients) c.destroy();
  const mem: SessionMemory = { sessions: n, before, after, openSeconds: seconds };
  o.log(`scale: ${n} sessions opened in ${seconds.toFixed(0)} s; RSS after GC ${(before.rss / MiB).toFixed(0)} → ${(after.rss / MiB).toFixed(0)} MiB; /healthz p50 ${idle.p50.toFixed(2)} → ${busy.p50.toFixed(2)} ms`);
  const m = sessionMetric('scale_exec_session_rss', mem, {
    sessions_asked: o.sessions,
    still_open: stillOpen,
    fd_per_session: Object.fromEntries(Object.entries(perSession).map(([k, v]) => [k, round(v, 2)])),
    fds_open: fds,
    ...(fdNote ? { capped: fdNote } : {}),
  });
  const h: XMetric = {
    metric: 'scale_healthz_latency',
    variant: 'nodelet',
    value: round(busy.p50, 3),
    unit: 'ms (p50)',
    baseline: round(idle.p50, 3),
    baseline_variant: '/healthz with no session open',
    ratio: round(busy.p50 / idle.p50, 3),
    min: null,
    max: null,
    rounds: 1,
    sessions: n,
    p99_ms: round(busy.p99, 3),
    baseline_p99_ms: round(idle.p99, 3),
  };
  const rows = [
    [`scale: ${n} idle exec sessions (--max-streaming-sessions), ${SCALE_CONTAINERS} containers — after a forced GC`, 'RSS before MiB', 'after MiB', 'KiB/session', 'heap+external KiB/session', 'open s', 'still open', 'fds nodelet', 'fds dockerd', 'fds containerd'],
    ['  nodelet', f(before.rss / MiB, 1), f(after.rss / MiB, 1), f(kibPer(mem, 'rss'), 1), f(kibPer(mem, 'heap'), 1), f(seconds, 0), `${stillOpen}/${n}`, String(fds.nodelet), String(fds.dockerd), String(fds.containerd)],
  ];
  const hrows = [
    ['/healthz latency, sequential GETs on one connection — ms', 'p50', 'p99'],
    ['  no session open', f(idle.p50, 2), f(idle.p99, 2)],
    [`  ${n} sessions open`, f(busy.p50, 2), f(busy.p99, 2)],
  ];
  return { metrics: [m, h], lines: [table(rows), table(hrows), ...(fdNote ? [`  ${fdNote}`] : []), '  (no target.)', ''] };
}

// ---- 5: RSS growth under a slow reader ----------------------------------------------------------

export async function slowReader(nodelet: NodeletProcess, o: { bytes: number; seconds: number; rateBps: number; log: Log }): Promise<PartResult> {
  const metrics: XMetric[] = [];
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
    const m: XMetric = {
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

// ---- 6: port-forward throughput ----------------------------------------------------------------

async function spdyForward(nodelet: NodeletProcess, requestId: number): Promise<{ bytes: number; ms: number }> {
  const t0 = performance.now();
  let bytes = 0;
  let fin!: () => void;
  const finished = new Promise<void>((r) => (fin = r));
  let errText = '';
  const c = await SpdyExecClient.connect(nodelet.port, `/portForward/default/${PF_POD}-bench`, ['portforward.k8s.io'], {
    onData: (t, p) => {
      if (t === 'data') bytes += p.length;
      else if (t === 'error') errText += p.toString();
    },
    onFin: (t) => t === 'data' && fin(),
    onClose: () => fin(),
  });
  const hdr = { port: '8080', requestid: String(requestId) };
  await c.openStream('error', hdr);
  const dataId = await c.openStream('data', hdr);
  c.write(SpdyExecClient.dataFrame(dataId, Buffer.from('GET /big HTTP/1.0\r\n\r\n')));
  await finished;
  const ms = performance.now() - t0;
  c.teardown();
  if (errText) throw new Error(`port-forward error stream: ${errText}`);
  return { bytes, ms };
}

async function directForward(pid: number): Promise<{ bytes: number; ms: number }> {
  const script = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, 'pf-direct.js');
  const { stdout } = await run('nsenter', ['-t', String(pid), '-n', process.execPath, script, '8080', '/big'], { timeout: 120_000 });
  return JSON.parse(stdout) as { bytes: number; ms: number };
}

export async function portForward(nodelet: NodeletProcess, docker: Docker, o: { rounds: number; bytes: number; log: Log }): Promise<PartResult> {
  const pod = await nodelet.waitForPodRunning(PF_POD);
  const id = pod.status!.containerStatuses![0]!.containerID!.replace(/^docker:\/\//, '');
  const pid = ((await docker.getContainer(id).inspect()) as { State: { Pid: number } }).State.Pid;
  // httpd is up once the file is written; wait for it to answer.
  for (let i = 0; ; i++) {
    try {
      const r = await directForward(pid);
      if (r.bytes >= o.bytes) break;
    } catch (err) {
      if (i > 120) throw err;
    }
    await sleep(500);
  }
  await spdyForward(nodelet, 0); // warm-up
  const res: Record<'direct' | 'spdy', number[]> = { direct: [], spdy: [] };
  let reqId = 1;
  for (let r = 0; r < o.rounds; r++) {
    for (const v of rotated(['direct', 'spdy'] as const, r)) {
      const x = v === 'direct' ? await directForward(pid) : await spdyForward(nodelet, reqId++);
      if (x.bytes < o.bytes) throw new Error(`port-forward ${v}: ${x.bytes} B < ${o.bytes}`);
      res[v].push(x.bytes / MB / (x.ms / 1000));
    }
    o.log(`round ${r + 1}/${o.rounds} port-forward: direct ${f(res.direct.at(-1), 0)} MB/s, SPDY ${f(res.spdy.at(-1), 0)} MB/s`);
  }
  const ratios = res.spdy.map((x, i) => x / res.direct[i]!);
  const s = spread(res.spdy);
  const rs = spread(ratios);
  const m: XMetric = {
    metric: 'portforward_throughput',
    variant: 'spdy',
    value: round(s.median, 1),
    unit: 'MB/s',
    baseline: round(median(res.direct), 1),
    baseline_variant: 'direct: TCP client inside the pod netns (nsenter)',
    ratio: round(rs.median, 3),
    min: round(s.min, 1),
    max: round(s.max, 1),
    rounds: o.rounds,
    per_round: res.spdy.map((x) => round(x, 1)),
    baseline_per_round: res.direct.map((x) => round(x, 1)),
    bytes: o.bytes,
    ...target(TARGETS.portForwardRatio, '>=', 'ratio', rs.median),
  };
  const ds = spread(res.direct);
  const rows = [
    [`port-forward, GET of ${o.bytes / MiB} MiB from busybox httpd on 127.0.0.1:8080 in the pod — MB/s`, 'median', '[min–max]', '÷direct', '[min–max]', 'target'],
    ['  direct (client in the pod netns via nsenter)', f(ds.median, 0), `[${f(ds.min, 0)}–${f(ds.max, 0)}]`, '1.00', '', ''],
    ['  nodelet SPDY portforward.k8s.io', f(s.median, 0), `[${f(s.min, 0)}–${f(s.max, 0)}]`, f(rs.median), `[${f(rs.min)}–${f(rs.max)}]`, verdict(m)],
  ];
  return { metrics: [m], lines: [table(rows), ''] };
}
