/**
 * Part `portforward`: SPDY port-forward throughput through nodelet vs a direct TCP client inside the
 * pod's network namespace (bench/lib/pf-direct.ts under nsenter), both downloading from busybox
 * httpd in static pod PF_POD. Beside MB/s, the CPU-seconds per GiB of each SPDY transfer: nodelet's
 * (/proc/PID/stat), the client's (this process, which parses the SPDY frames) and the rest of the
 * machine (httpd, the kernel's softirq work, whatever else runs).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import { SpdyExecClient } from '../../test/clients/spdy-client.js';
import type { BenchNodelet } from './env.js';
import { PF_POD } from './part-pods.js';
import { cpuSecondsOf, selfCpuSeconds, systemBusySeconds } from './proc.js';
import { TARGETS, fmt as f, table, target, verdict, type Metric, type PartResult } from './report.js';
import { median, rotated, round, spread } from './stats.js';

const run = promisify(execFile);
const MiB = 1024 ** 2;
const MB = 1e6;

type Log = (msg: string) => void;

async function spdyForward(nodelet: BenchNodelet, requestId: number): Promise<{ bytes: number; ms: number }> {
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

export async function portForward(nodelet: BenchNodelet, docker: Docker, o: { rounds: number; bytes: number; log: Log }): Promise<PartResult> {
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
  const cpu: Record<'nodelet' | 'client' | 'rest', number[]> = { nodelet: [], client: [], rest: [] };
  let reqId = 1;
  for (let r = 0; r < o.rounds; r++) {
    for (const v of rotated(['direct', 'spdy'] as const, r)) {
      const before = { nodelet: cpuSecondsOf(nodelet.pid), client: selfCpuSeconds(), system: systemBusySeconds() };
      const x = v === 'direct' ? await directForward(pid) : await spdyForward(nodelet, reqId++);
      if (x.bytes < o.bytes) throw new Error(`port-forward ${v}: ${x.bytes} B < ${o.bytes}`);
      res[v].push(x.bytes / MB / (x.ms / 1000));
      if (v === 'spdy') {
        const gib = x.bytes / 1024 ** 3;
        const n = cpuSecondsOf(nodelet.pid) - before.nodelet;
        const c = selfCpuSeconds() - before.client;
        cpu.nodelet.push(n / gib);
        cpu.client.push(c / gib);
        cpu.rest.push((systemBusySeconds() - before.system - n - c) / gib);
      }
    }
    o.log(`round ${r + 1}/${o.rounds} port-forward: direct ${f(res.direct.at(-1), 0)} MB/s, SPDY ${f(res.spdy.at(-1), 0)} MB/s, nodelet ${f(cpu.nodelet.at(-1))} CPU-s/GiB`);
  }
  const ratios = res.spdy.map((x, i) => x / res.direct[i]!);
  const s = spread(res.spdy);
  const rs = spread(ratios);
  const m: Metric = {
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
    nodelet_cpu_per_gib: round(median(cpu.nodelet), 3),
    nodelet_cpu_per_gib_per_round: cpu.nodelet.map((x) => round(x, 3)),
    client_cpu_per_gib: round(median(cpu.client), 3),
    rest_of_system_cpu_per_gib: round(median(cpu.rest), 3),
    ...target(TARGETS.portForwardRatio, '>=', 'ratio', rs.median, rs),
  };
  const ns = spread(cpu.nodelet);
  const ds = spread(res.direct);
  const rows = [
    [`port-forward, GET of ${o.bytes / MiB} MiB from busybox httpd on 127.0.0.1:8080 in the pod — MB/s`, 'median', '[min–max]', '÷direct', '[min–max]', 'target'],
    ['  direct (client in the pod netns via nsenter)', f(ds.median, 0), `[${f(ds.min, 0)}–${f(ds.max, 0)}]`, '1.00', '', ''],
    ['  nodelet SPDY portforward.k8s.io', f(s.median, 0), `[${f(s.min, 0)}–${f(s.max, 0)}]`, f(rs.median), `[${f(rs.min)}–${f(rs.max)}]`, verdict(m)],
  ];
  const cpuRows = [
    ['port-forward SPDY: CPU-seconds per GiB (median [min–max])', 'nodelet', '[min–max]', 'client', 'rest'],
    ['  nodelet SPDY portforward.k8s.io', f(ns.median), `[${f(ns.min)}–${f(ns.max)}]`, f(median(cpu.client)), f(median(cpu.rest))],
  ];
  return { metrics: [m], lines: [table(rows), '', table(cpuRows), ''] };
}
