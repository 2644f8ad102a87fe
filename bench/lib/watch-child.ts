/**
 * A child process serving nodelet's watch path, for the watch figures:
 *
 *   node --expose-gc watch-child.js <template-pod.json> <N>
 *
 * nodelet's real `buildServer` over its real `KubeletHost`, `PodManager`, `StatusManager` and
 * watch feeds, holding N copies of a template pod (taken from the live bench nodelet: real spec,
 * real status). Only the runtime and kubelet behind the host are stubs: watches are fed by the
 * status manager's subscription, as in nodelet, and never reach them. Commands on stdin, one per
 * line, answers on stdout:
 *
 *   rss           → `RSS <rss bytes> <heapUsed bytes>` after a full GC
 *   burst <K>     → K status changes, one per pod (pods 0..K-1), each stamped with the wall-clock
 *                   time it was made (`status.message = "bench-t=<ms>"`); → `BURST <first ms> <last ms>`
 *   watchers      → `WATCHERS <open pod watchers>`
 *
 * Prints `PORT <n>` once listening on 127.0.0.1. Ends on SIGTERM or stdin EOF.
 */
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import type { Pod, PodStatus } from '../../src/api/types.js';
import { EventRecorder } from '../../src/events/recorder.js';
import { KubeletHost } from '../../src/kubelet/host.js';
import { PodManager } from '../../src/pod/manager.js';
import { buildServer } from '../../src/server/index.js';
import { StatusManager } from '../../src/status/manager.js';

/** N copies of the template, each its own name and UID (as serve-child makes them). */
function clonePods(template: Pod, n: number): Pod[] {
  return Array.from({ length: n }, (_, i) => {
    const p = structuredClone(template);
    const name = `bench-${String(i).padStart(4, '0')}`;
    p.metadata = { ...p.metadata, name, namespace: 'default', uid: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` };
    delete (p.metadata as { annotations?: unknown }).annotations;
    return p;
  });
}

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across processes. */
export const wallMs = (): number => performance.timeOrigin + performance.now();

async function main(): Promise<void> {
  const [templateFile, count, watchers] = process.argv.slice(2);
  const template = JSON.parse(readFileSync(templateFile!, 'utf8')) as Pod;
  const pods = clonePods(template, Number(count));
  const podManager = new PodManager();
  const statusManager = new StatusManager();
  podManager.setPods(pods.map((p) => ({ ...p, status: undefined }) as Pod));
  for (const p of pods) statusManager.setPodStatus(p, (p.status ?? {}) as PodStatus);
  const unused = new Proxy({}, { get: () => () => { throw new Error('not used by watches'); } });
  const host = new KubeletHost({
    nodeName: 'bench',
    podManager,
    statusManager,
    runtime: unused as never,
    recorder: new EventRecorder({ nodeName: 'bench' }),
    kubelet: unused as never,
  });
  // The bench's watchers are one (anonymous) user: both caps admit them all.
  const caps = { maxWatches: Number(watchers), maxWatchesPerUser: Number(watchers) };
  const app = buildServer({ host, logger: pino({ level: 'silent' }), version: { gitVersion: 'v0.0.0-bench' }, ...caps });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const addr = app.server.address();
  process.stdout.write(`PORT ${typeof addr === 'object' && addr ? addr.port : 0}\n`);

  let generation = 0;
  const gc = (globalThis as { gc?: () => void }).gc;
  const lines = createInterface({ input: process.stdin });
  lines.on('line', (line) => {
    const [cmd, arg] = line.trim().split(/\s+/);
    if (cmd === 'rss') {
      gc?.();
      gc?.();
      const m = process.memoryUsage();
      process.stdout.write(`RSS ${m.rss} ${m.heapUsed}\n`);
    } else if (cmd === 'burst') {
      const k = Math.min(Number(arg), pods.length);
      generation++;
      const first = wallMs();
      for (let i = 0; i < k; i++) {
        const pod = pods[i] as Pod;
        const status = statusManager.getPodStatus(pod.metadata?.uid ?? '') ?? {};
        // A real change (a condition message flips), stamped with when it was made.
        statusManager.setPodStatus(pod, { ...structuredClone(status), message: `bench-t=${wallMs().toFixed(3)} gen ${generation}` });
      }
      process.stdout.write(`BURST ${first.toFixed(3)} ${wallMs().toFixed(3)}\n`);
    } else if (cmd === 'watchers') {
      process.stdout.write(`WATCHERS ${host.watch.pods.hub.watcherCount}\n`);
    }
  });
  const stop = () => void app.close().finally(() => process.exit(0));
  lines.on('close', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`watch-child: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
