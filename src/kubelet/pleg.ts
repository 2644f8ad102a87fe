import type { Logger } from '../logging/index.js';
import type { Runtime, RuntimePod } from '../runtime/types.js';
import { Coalescer } from '../async/coalescer.js';

/** Health of the relist loop: when it last tried, last succeeded, the last error, and how many relists succeeded. */
export interface RelistHealth {
  readonly lastAttempt: number;
  readonly lastSuccess: number;
  readonly lastError: string | undefined;
  readonly relists: number;
}

/** The least time between the end of one relist and the start of the next. */
export const MIN_RELIST_GAP_MS = 100;
/** Relists that may follow each other without a gap after a quiet spell (see below). */
export const RELIST_BURST = 3;
/** The period while the runtime's event stream is up (see below). */
export const EVENTED_RELIST_PERIOD_MS = 10_000;

/**
 * The Pod Lifecycle Event Generator: keeps the newest runtime snapshot of every pod and reports
 * which pods changed. It relists on a short period and at once whenever the runtime reports an
 * event that may change a pod (Docker: a container created, started, died, removed…, not an exec, a
 * kill or a stop, nor the create and start of a container nodelet is starting, whose sync relists
 * when it is done; `InspectCache.asksForRelist` in runtime/docker/inspect-cache.ts), so a container that dies shows up
 * within the time of one relist; the period alone covers missed events (Docker restarting, the
 * stream reconnecting).
 *
 * Relists are paced: one starts at least `minRelistGapMs` (100 ms) after the previous one ended,
 * and every call meanwhile shares it — except that idle time is banked for `RELIST_BURST` (3)
 * runs: the few relists one pod start asks for (its sandbox, its container, the sync's own) go at
 * once after a quiet spell, so its status is not held back by a gap (`Coalescer` `burst`). A quiet node still relists at once on an event; a burst of
 * pod starts, whose syncs and Docker events asked for a relist back to back, lists the engine
 * less often (30 pods at once: 1.3 listings per pod start instead of 1.4–1.9; each costs nodelet
 * a parse of every container of the node, and dockerd as much again). The kubelet's generic PLEG lists once per `relistPeriod`, 1 s
 * (pkg/kubelet/pleg/generic.go), whatever happens meanwhile.
 *
 * While the runtime's event stream is up, every change is reported by it, so the period only
 * guards against an event the engine dropped (Docker's event publisher drops one for a subscriber
 * that fell 1024 events behind for 100 ms, moby daemon/events/events.go): it is then
 * `EVENTED_RELIST_PERIOD_MS` (10 s), as the kubelet's Evented PLEG stretches the generic PLEG's to
 * `eventedPlegRelistPeriod` (pkg/kubelet/kubelet.go: 300 s) while CRI events flow. A listing
 * costs dockerd and nodelet a walk of every container of the node (≈ 5 ms of dockerd CPU at 60
 * containers), which an idle node otherwise pays every second. When the stream ends the period
 * is 1 s again until it is back, and a relist follows its return (what happened meanwhile).
 */
export class PLEG {
  readonly #runtime: Runtime;
  readonly #log: Logger;
  readonly #periodMs: number;
  readonly #eventedPeriodMs: number;
  /** The runtime's event stream is up: the period is the evented one. */
  #streamUp = false;
  #pods = new Map<string, RuntimePod>();
  #signatures = new Map<string, string>();
  #timer: NodeJS.Timeout | undefined;
  #unwatch: (() => void) | undefined;
  #stopped = true;
  readonly #relisting: Coalescer;
  #onChange: (uid: string) => void = () => {};
  #lastAttempt = 0;
  #lastSuccess = 0;
  #lastError: string | undefined;
  #relists = 0;

  constructor(opts: { runtime: Runtime; log: Logger; relistPeriodMs?: number; eventedRelistPeriodMs?: number; minRelistGapMs?: number }) {
    this.#runtime = opts.runtime;
    this.#log = opts.log;
    this.#periodMs = opts.relistPeriodMs ?? 1000;
    this.#eventedPeriodMs = Math.max(this.#periodMs, opts.eventedRelistPeriodMs ?? EVENTED_RELIST_PERIOD_MS);
    this.#relisting = new Coalescer(() => this.#relistOnce(), { minGapMs: opts.minRelistGapMs ?? MIN_RELIST_GAP_MS, burst: RELIST_BURST });
  }

  start(onChange: (uid: string) => void): void {
    this.#onChange = onChange;
    this.#stopped = false;
    this.#unwatch = this.#runtime.watch(
      () => void this.relist(),
      (up) => {
        if (up === this.#streamUp) return;
        this.#streamUp = up;
        // Up again: what changed while it was down. Down: back to the short period at once.
        if (up) void this.relist();
        else this.#schedule();
      },
    );
    this.#schedule();
  }

  /** The next periodic relist, one period from now (any pending one replaced). */
  #schedule(): void {
    if (this.#timer) clearTimeout(this.#timer);
    if (this.#stopped) return;
    this.#timer = setTimeout(() => void this.relist().finally(() => this.#schedule()), this.#streamUp ? this.#eventedPeriodMs : this.#periodMs);
    this.#timer.unref();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#unwatch?.();
    this.#unwatch = undefined;
  }

  getPod(uid: string): RuntimePod | undefined {
    return this.#pods.get(uid);
  }

  getPods(): RuntimePod[] {
    return [...this.#pods.values()];
  }

  /** Health of the loop: when it last tried, last succeeded, and the last error. */
  health(): RelistHealth {
    return { lastAttempt: this.#lastAttempt, lastSuccess: this.#lastSuccess, lastError: this.#lastError, relists: this.#relists };
  }

  /**
   * Relists and notifies changed pods. Calls while a relist runs or waits for its gap share one
   * follow-up relist, so a burst of Docker events costs at most two listings and the caller
   * always sees state observed after its call.
   */
  relist(): Promise<void> {
    return this.#relisting.run();
  }

  async #relistOnce(): Promise<void> {
    this.#lastAttempt = Date.now();
    let pods: RuntimePod[];
    try {
      pods = await this.#runtime.listPods();
    } catch (err) {
      if (this.#lastError === undefined) this.#log.warn({ err }, 'Relisting pods from the runtime failed');
      this.#lastError = (err as Error).message;
      return;
    }
    if (this.#lastError !== undefined) this.#log.info('Relisting pods from the runtime works again');
    this.#lastError = undefined;
    this.#lastSuccess = Date.now();
    this.#relists++;
    const next = new Map(pods.map((p) => [p.uid, p]));
    const signatures = new Map(pods.map((p) => [p.uid, signature(p)]));
    const changed: string[] = [];
    for (const [uid, sig] of signatures) if (this.#signatures.get(uid) !== sig) changed.push(uid);
    for (const uid of this.#signatures.keys()) if (!signatures.has(uid)) changed.push(uid);
    this.#pods = next;
    this.#signatures = signatures;
    for (const uid of changed) this.#onChange(uid);
  }
}

function signature(pod: RuntimePod): string {
  const parts = [...pod.sandboxes.map((s) => `${s.id}:${s.ready}`), ...pod.containers.map((c) => `${c.id}:${c.state}:${c.exitCode ?? ''}`)];
  return parts.sort().join(',');
}
