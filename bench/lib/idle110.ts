/**
 * The idle110 part (`--only idle110`): nodelet's own CPU and memory with a full node of idle pods.
 *
 * A second nodelet (`BenchNodelet` of bench/lib/env.ts, as users run it: no GC hook, no
 * --trace-gc) on the bench's private engine, with 110 static busybox pods sleeping (110 is the
 * kubelet's default `maxPods`; more raise `--max-pods`) and no other pod. Once every pod runs,
 * the bench samples nodelet's CPU-seconds (/proc/PID/stat) and RSS (VmRSS) every 30 s for 10
 * minutes (2 with --quick) and reports CPU-seconds per minute, RSS at the start and the end, and
 * the RSS slope by least squares.
 *
 * "Flat": |slope| ≤ FLAT_FRACTION_PER_MIN of the starting RSS per minute (0.2 %/min, 2 % over the
 * 10 minutes; about 200 KiB/min for a 100 MiB process). Why that much: V8 grows the old
 * generation between major GCs and returns memory to the system only lazily, so an idle Node
 * process's RSS moves by a few MiB between samples with nothing leaking, and a least-squares
 * line through 21 such samples tilts by up to ≈ 1–2 % of RSS over the window. What it still
 * catches: a leak proportional to the work nodelet does while idle — the relist every second over
 * 110 pods (pkg/kubelet/pleg/generic.go), the status and stats loops — of 100 bytes per pod per
 * relist is 110 × 100 B × 60 /min ≈ 640 KiB/min, three times the bound.
 */
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { waitFor } from '../../test/helpers/wait.js';
import { BUSYBOX, BenchNodelet, type PodLike } from './env.js';
import { rssOf } from '../../test/helpers/proc.js';
import { cpuSecondsOf } from './proc.js';
import { fmt, table, type Metric, type PartResult } from './report.js';
import { round } from './stats.js';

type Log = (msg: string) => void;

/** The kubelet's default maxPods (pkg/kubelet/apis/config/v1beta1/defaults.go). */
const DEFAULT_MAX_PODS = 110;
const SAMPLE_EVERY_MS = 30_000;
/** The flat bound on |RSS slope|, as a fraction of the starting RSS per minute (see the file comment). */
const FLAT_FRACTION_PER_MIN = 0.002;
/**
 * The second slope starts here (minutes after the first sample): the first sample comes right
 * after 110 pods started, and the garbage of that start is still in the heap then.
 */
const SETTLED_AFTER_MIN = 1;
const KiB = 1024;
const MiB = 1024 ** 2;

export interface IdleOptions {
  root: string;
  dockerHost: string;
  cli: string | undefined;
  pods: number;
  minutes: number;
  keepLogs: boolean;
  log: Log;
  /** Registers a cleanup with the bench (runs on failure and on SIGINT/SIGTERM too). */
  defer: (fn: () => Promise<void>) => void;
}

interface Sample {
  /** Minutes since the first sample. */
  min: number;
  cpuS: number;
  rss: number;
}

const podName = (i: number): string => `idle-${String(i).padStart(3, '0')}`;

function idleManifest(name: string): string {
  return `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: app
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sleep", "2147483647"]
`;
}

/** Least-squares slope of y over x (NaN with fewer than two distinct x). */
export function leastSquaresSlope(xs: readonly number[], ys: readonly number[]): number {
  const n = Math.min(xs.length, ys.length);
  if (n < 2) return Number.NaN;
  const mx = xs.slice(0, n).reduce((a, b) => a + b, 0) / n;
  const my = ys.slice(0, n).reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (let i = 0; i < n; i++) {
    sxy += (xs[i]! - mx) * (ys[i]! - my);
    sxx += (xs[i]! - mx) ** 2;
  }
  return sxx === 0 ? Number.NaN : sxy / sxx;
}

const running = (p: PodLike): boolean => {
  const cs = p.status?.containerStatuses ?? [];
  return cs.length > 0 && cs.every((c) => c.state?.running !== undefined && c.containerID !== undefined);
};

export async function idle110Part(o: IdleOptions): Promise<PartResult> {
  const { log } = o;
  const manifests: Record<string, string> = {};
  for (let i = 0; i < o.pods; i++) manifests[podName(i)] = idleManifest(podName(i));
  const nodelet = await BenchNodelet.start({
    root: o.root,
    dockerHost: o.dockerHost,
    cli: o.cli,
    nodeName: 'bench-idle',
    sleeper: false,
    extraManifests: manifests,
    args: o.pods > DEFAULT_MAX_PODS ? ['--max-pods', String(o.pods)] : [],
  });
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await nodelet.stop();
    await nodelet.cleanup(o.keepLogs);
    if (o.keepLogs) log(`idle110: nodelet log kept: ${nodelet.logFile}`);
  };
  o.defer(stop);
  try {
    log(`idle110: nodelet pid ${nodelet.pid} (node bench-idle) with ${o.pods} static pods; waiting for all to run`);
    const t0 = performance.now();
    const countRunning = async (): Promise<number> => {
      nodelet.alive('the idle110 nodelet');
      const list = (await (await fetch(`${nodelet.url}/pods`)).json()) as { items?: PodLike[] };
      return (list.items ?? []).filter(running).length;
    };
    let lastCount = 0;
    await waitFor(`${o.pods} idle pods running`, async () => {
      lastCount = await countRunning();
      return lastCount >= o.pods ? true : undefined;
    }, 20 * 60_000, 2_000).catch((err: unknown) => {
      throw new Error(`${String(err)} (${lastCount} running); see ${nodelet.logFile}`);
    });
    const startupS = (performance.now() - t0) / 1000;
    log(`idle110: all ${o.pods} pods running after ${startupS.toFixed(0)} s; sampling nodelet every ${SAMPLE_EVERY_MS / 1000} s for ${o.minutes} min`);

    const loadStart = loadavg().map((x) => x.toFixed(2)).join(' ');
    const samples: Sample[] = [];
    const s0 = performance.now();
    const n = Math.round((o.minutes * 60_000) / SAMPLE_EVERY_MS);
    for (let k = 0; k <= n; k++) {
      // The sampling cadence (a measurement interval, not a wait for a condition).
      const due = s0 + k * SAMPLE_EVERY_MS;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      const cpuS = cpuSecondsOf(nodelet.pid);
      const rss = rssOf(nodelet.pid);
      if (!Number.isFinite(cpuS) || !Number.isFinite(rss)) throw new Error(`idle110: nodelet (pid ${nodelet.pid}) is gone; see ${nodelet.logFile}`);
      samples.push({ min: (performance.now() - s0) / 60_000, cpuS, rss });
      if (k > 0) log(`idle110: ${samples.at(-1)!.min.toFixed(1)} min, CPU ${(cpuS - samples[0]!.cpuS).toFixed(2)} s, RSS ${(rss / MiB).toFixed(1)} MiB`);
    }
    const stillRunning = await countRunning();
    const loadEnd = loadavg().map((x) => x.toFixed(2)).join(' ');
    return report(o, samples, { startupS, stillRunning, loadStart, loadEnd });
  } finally {
    await stop();
  }
}

function report(o: IdleOptions, samples: Sample[], meta: { startupS: number; stillRunning: number; loadStart: string; loadEnd: string }): PartResult {
  const first = samples[0]!;
  const last = samples.at(-1)!;
  const minutes = last.min - first.min;
  const cpuPerMin = (last.cpuS - first.cpuS) / minutes;
  // Per interval, to show whether the CPU use is steady.
  const perInterval = samples.slice(1).map((s, i) => (s.cpuS - samples[i]!.cpuS) / (s.min - samples[i]!.min));
  const slopeKiB = leastSquaresSlope(samples.map((s) => s.min), samples.map((s) => s.rss / KiB));
  const boundKiB = (FLAT_FRACTION_PER_MIN * first.rss) / KiB;
  const flat = Math.abs(slopeKiB) <= boundKiB;
  const settled = samples.filter((s) => s.min >= SETTLED_AFTER_MIN - 0.05);
  const settledSlopeKiB = settled.length >= 3 ? leastSquaresSlope(settled.map((s) => s.min), settled.map((s) => s.rss / KiB)) : Number.NaN;
  const settledBoundKiB = settled.length >= 3 ? (FLAT_FRACTION_PER_MIN * settled[0]!.rss) / KiB : Number.NaN;
  const settledFlat = Math.abs(settledSlopeKiB) <= settledBoundKiB;
  const common = {
    pods: o.pods,
    minutes: round(minutes, 2),
    samples_every_s: SAMPLE_EVERY_MS / 1000,
    pods_running_at_end: meta.stillRunning,
    startup_s: round(meta.startupS, 1),
    load_at_start: meta.loadStart,
    load_at_end: meta.loadEnd,
  };
  const cpu: Metric = {
    metric: 'idle110_nodelet_cpu',
    variant: `${o.pods} idle static pods`,
    value: round(cpuPerMin, 3),
    unit: 'CPU-s/min',
    baseline: null,
    baseline_variant: null,
    ratio: null,
    min: round(Math.min(...perInterval), 3),
    max: round(Math.max(...perInterval), 3),
    rounds: 1,
    percent_of_one_core: round((cpuPerMin / 60) * 100, 2),
    per_interval: perInterval.map((x) => round(x, 3)),
    ...common,
  };
  const rss: Metric = {
    metric: 'idle110_nodelet_rss',
    variant: `${o.pods} idle static pods`,
    value: round(last.rss / MiB, 1),
    unit: 'MiB (end)',
    baseline: round(first.rss / MiB, 1),
    baseline_variant: 'RSS at the start (all pods running)',
    ratio: round(last.rss / first.rss, 3),
    min: round(Math.min(...samples.map((s) => s.rss)) / MiB, 1),
    max: round(Math.max(...samples.map((s) => s.rss)) / MiB, 1),
    rounds: 1,
    slope_kib_per_min: round(slopeKiB, 1),
    flat_bound_kib_per_min: round(boundKiB, 1),
    flat,
    settled_after_min: SETTLED_AFTER_MIN,
    settled_slope_kib_per_min: round(settledSlopeKiB, 1),
    settled_flat_bound_kib_per_min: round(settledBoundKiB, 1),
    settled_flat: settledFlat,
    per_sample_mib: samples.map((s) => round(s.rss / MiB, 1)),
    ...common,
  };
  const rows = [
    [`idle110: nodelet with ${o.pods} idle static pods (busybox sleep), ${fmt(minutes, 1)} min, sampled every ${SAMPLE_EVERY_MS / 1000} s`, 'value', '[min–max]', ''],
    ['  CPU-seconds per minute (per 30 s interval)', fmt(cpuPerMin, 3), `[${fmt(Math.min(...perInterval), 3)}–${fmt(Math.max(...perInterval), 3)}]`, `${fmt((cpuPerMin / 60) * 100, 2)} % of one core`],
    ['  RSS at the start → at the end, MiB', `${fmt(first.rss / MiB, 1)} → ${fmt(last.rss / MiB, 1)}`, `[${fmt(Math.min(...samples.map((s) => s.rss)) / MiB, 1)}–${fmt(Math.max(...samples.map((s) => s.rss)) / MiB, 1)}]`, ''],
    ['  RSS slope (least squares), KiB/min', fmt(slopeKiB, 1), '', `${flat ? 'flat' : 'NOT flat'}: |slope| ≤ ${fmt(boundKiB, 0)} (0.2 % of RSS per min)`],
    [`  RSS slope from ${SETTLED_AFTER_MIN} min on (${settled.length} samples), KiB/min`, fmt(settledSlopeKiB, 1), '', Number.isFinite(settledSlopeKiB) ? `${settledFlat ? 'flat' : 'NOT flat'}: |slope| ≤ ${fmt(settledBoundKiB, 0)}` : ''],
  ];
  return {
    metrics: [cpu, rss],
    lines: [
      table(rows),
      `  (all ${o.pods} pods running ${fmt(meta.startupS, 0)} s after nodelet started; ${meta.stillRunning} still running at the end. Load average ${meta.loadStart} at the first sample, ${meta.loadEnd} at the last.)`,
      '',
    ],
  };
}
