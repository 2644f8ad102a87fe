/**
 * Part `freshness`: how soon nodelet's `/podInfo` shows a container terminated after `docker kill`
 * (the containers of static pod FRESHNESS_POD, one per sample), beside the kill call itself.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type Docker from 'dockerode';
import type { BenchNodelet, PodLike } from './env.js';
import { FRESHNESS_POD } from './part-pods.js';
import { TARGETS, fmt as f, table, target, verdict, type Metric, type PartResult } from './report.js';
import { median, round, spread } from './stats.js';

type Log = (msg: string) => void;

async function podStatus(nodelet: BenchNodelet, name: string): Promise<PodLike['status']> {
  const r = await fetch(`${nodelet.url}/podInfo?podID=${name}-bench&podNamespace=default`);
  return (await r.json()) as PodLike['status'];
}

export async function freshness(nodelet: BenchNodelet, docker: Docker, o: { samples: number; log: Log }): Promise<PartResult> {
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
  const m: Metric = {
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
