/**
 * Part `sessions`: nodelet's memory per idle exec session (WebSocket v5, `sleep`), after a forced GC
 * before and after opening them across the containers of static pod IDLE_POD.
 */
import type { BenchNodelet } from './env.js';
import { IDLE_CONTAINERS, IDLE_POD } from './part-pods.js';
import { TARGETS, fmt as f, table, target, verdict, type PartResult } from './report.js';
import { kibPer, memoryAfterGc, openIdleSessions, sessionMetric, type SessionMemory } from './session-memory.js';

const MiB = 1024 ** 2;

type Log = (msg: string) => void;

export async function idleSessions(nodelet: BenchNodelet, o: { sessions: number; log: Log }): Promise<PartResult> {
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
