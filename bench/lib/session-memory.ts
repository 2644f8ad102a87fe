/**
 * What the `sessions` and `scale` parts share: opening idle WebSocket exec sessions against a static
 * pod, nodelet's memory after a forced GC (bench/lib/gc-hook.ts), and the per-session metric.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { WsChannelClient } from '../../test/clients/ws-client.js';
import type { GcMemory, BenchNodelet } from './env.js';
import type { Metric } from './report.js';
import { median, round } from './stats.js';

const MiB = 1024 ** 2;

type Log = (msg: string) => void;

/**
 * Opens `n` idle WebSocket v5 execs of `sh -c 'echo r; exec sleep …'` spread over the containers
 * of static pod `pod`; a session counts once its `r` arrived. 2 in flight per container: Docker
 * serialises execs per container (≈ 20/s on this machine).
 */
export async function openIdleSessions(nodelet: BenchNodelet, pod: string, containers: number, n: number, log: Log): Promise<{ clients: WsChannelClient[]; seconds: number }> {
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
export async function memoryAfterGc(nodelet: BenchNodelet): Promise<{ rss: number; heap: number }> {
  const xs: GcMemory[] = [];
  for (let i = 0; i < 3; i++) {
    await sleep(500);
    xs.push(await nodelet.forceGc());
  }
  return { rss: median(xs.map((x) => x.rss)), heap: median(xs.map((x) => x.heapUsed + x.external)) };
}

export interface SessionMemory {
  sessions: number;
  before: { rss: number; heap: number };
  after: { rss: number; heap: number };
  openSeconds: number;
}
export const kibPer = (m: SessionMemory, k: 'rss' | 'heap') => (m.after[k] - m.before[k]) / m.sessions / 1024;

export function sessionMetric(metric: string, m: SessionMemory, extra: Record<string, unknown>): Metric {
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
