import { createHash } from 'node:crypto';
import { appendFileSync, readFileSync, readdirSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { basename } from 'node:path';
import { rssOf } from './proc.js';

export { rssOf };

/**
 * The soak suite's time budget (`NODELET_SOAK_SCALE`): `ci` (the default) sizes every case so the
 * whole suite fits in about 11 minutes on a 2-core machine; `full` uses the full sizes
 * (1 GiB transfers, 1,000 sessions, 20,000 execs, 10 minutes of chaos).
 */
export type Scale = 'ci' | 'full';

export const scale: Scale = (() => {
  const s = process.env.NODELET_SOAK_SCALE ?? 'ci';
  if (s !== 'ci' && s !== 'full') throw new Error(`NODELET_SOAK_SCALE must be ci or full, not ${JSON.stringify(s)}`);
  return s;
})();

/** The value for the current scale. */
export const sized = <T>(v: { ci: T; full: T }): T => v[scale];

export const KiB = 1024;
export const MiB = 1024 * 1024;

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `check` until it returns something other than undefined, or fails after `timeoutMs` with
 * the last error or the last value `check` explained itself with (`why`). The soak suite's
 * counterpart of wait.ts's waitFor (which has no `why`): its sleep is the poll interval.
 */
export async function poll<T>(what: string, check: (why: (reason: string) => void) => Promise<T | undefined> | T | undefined, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  // The monotonic clock, as wait.ts: a step of the wall clock must not end a poll early.
  const deadline = performance.now() + timeoutMs;
  let last = '';
  const why = (reason: string) => {
    last = reason;
  };
  for (;;) {
    try {
      const v = await check(why);
      if (v !== undefined) return v;
    } catch (err) {
      last = err instanceof Error ? err.message : String(err);
    }
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last}` : ''}`);
    await sleep(everyMs);
  }
}

export const sha256 = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

/** Open descriptors of `pid` (`/proc/<pid>/fd`), NaN when it is gone. */
export function fdsOf(pid: number | undefined): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}

/** Direct children of `pid` over all its threads (e.g. nodelet's per-pod port-forward helpers). */
export function childrenOf(pid: number | undefined): number[] {
  try {
    return readdirSync(`/proc/${pid}/task`).flatMap((tid) =>
      readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
    );
  } catch {
    return [];
  }
}

/** Whether process `pid` runs nodelet's per-pod port-forward helper (`nsenter … node portforward-helper.js`). */
export function isPortForwardHelper(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('portforward-helper');
  } catch {
    return false;
  }
}

export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

export const round = (x: number, digits = 1): number => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : x);
export const mib = (bytes: number): number => round(bytes / MiB, 1);

type Figure = number | string | boolean;

interface Commenter {
  comment(...args: unknown[]): void;
  readonly name: string;
}

/**
 * Reports a case's figures: one `t.comment` line, and one JSON line in `NODELET_SOAK_REPORT`
 * (scripts/test-soak.sh prints every case's figures from it in its closing table).
 */
export function figures(t: Commenter, values: Record<string, Figure>): void {
  const text = Object.entries(values)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  t.comment(`figures: ${text}`);
  const file = process.env.NODELET_SOAK_REPORT;
  if (file) {
    const source = basename(process.argv[1] ?? '').replace(/\.soak\.ts$/, '');
    appendFileSync(file, JSON.stringify({ file: source, case: t.name, scale, figures: values }) + '\n');
  }
}

/** Times a case (for its figures): `elapsed()` is seconds since `stopwatch()` was called. */
export function stopwatch(): () => number {
  const t0 = performance.now();
  return () => round((performance.now() - t0) / 1000, 1);
}

/** `/healthz` sampled every `everyMs` while something else runs: latencies and non-200 answers. */
export interface HealthProbe {
  stop(): Promise<{ samples: number; p50: number; p99: number; max: number; failures: number }>;
}

export function probeHealthz(url: string, everyMs = 50): HealthProbe {
  const ms: number[] = [];
  let failures = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const t0 = performance.now();
      try {
        const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5000) });
        await res.text();
        if (res.status !== 200) failures++;
      } catch {
        failures++;
      }
      ms.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, everyMs).unref());
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return { samples: ms.length, p50: round(percentile(ms, 50)), p99: round(percentile(ms, 99)), max: round(Math.max(...ms)), failures };
    },
  };
}

/** The heap after a full collection (the soak suite runs with --expose-gc), in bytes. */
export function settledHeap(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('no global gc(): run the soak suite through `npm run test:soak` (node --expose-gc)');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Number of open descriptors of this process. */
export const selfFds = (): number => fdsOf(process.pid);

/** The peak RSS of `pid` sampled every `everyMs` until `stop()`, in bytes. */
export function peakRss(pid: number | undefined, everyMs = 100): { stop(): number } {
  let peak = rssOf(pid);
  const timer = setInterval(() => {
    const now = rssOf(pid);
    if (now > peak) peak = now;
  }, everyMs);
  // A case that fails before stop() must not keep its test process alive.
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, rssOf(pid) || 0);
    },
  };
}

/** A counting semaphore: at most `n` holders at once. */
export class Semaphore {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(n: number) {
    this.#free = n;
  }

  async acquire(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return;
    }
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}

export const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
