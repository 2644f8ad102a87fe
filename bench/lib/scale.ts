/**
 * Part `scale`: thousands of idle exec sessions (nodelet run with --max-streaming-sessions), as many
 * as the descriptor limits of this process, nodelet, dockerd and containerd allow: nodelet's memory
 * per session after a forced GC, descriptors per session, and `/healthz` latency with none and all
 * of them open.
 */
import { execFile } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { Agent, get as httpGet } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { BenchNodelet } from './env.js';
import { SCALE_CONTAINERS, SCALE_POD } from './part-pods.js';
import { fmt as f, table, type Metric, type PartResult } from './report.js';
import { kibPer, memoryAfterGc, openIdleSessions, sessionMetric, type SessionMemory } from './session-memory.js';
import { round } from './stats.js';

const run = promisify(execFile);
const MiB = 1024 ** 2;

type Log = (msg: string) => void;

/** `/healthz` latency: `n` sequential GETs on one keep-alive connection, a few ms apart; p50 and p99 in ms. */
async function healthzLatency(nodelet: BenchNodelet, n = 400): Promise<{ p50: number; p99: number }> {
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

export async function scaleSessions(nodelet: BenchNodelet, o: { sessions: number; dockerdPid: number | undefined; log: Log }): Promise<PartResult> {
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
      ? `CAPPED at ${n} of ${o.sessions} sessions by the descriptor limits (${Object.entries(perSession).map(([k, v]) => `${k} ${f(v, 1)}/session`).join(', ')}; limit ${fdLimitOf(nodelet.pid)}; raise ulimit -n)`
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
  const h: Metric = {
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
