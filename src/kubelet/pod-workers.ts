/**
 * The kubelet's pod workers: one serialised worker per pod UID. A sync requested while one runs
 * is coalesced into one more run after it (never two syncs of a pod at once, never a lost
 * request); `scheduleAfter` arms at most one timer per pod, the earliest asked for (back-off ends, retries, deadlines). A worker is
 * forgotten once idle, without a timer, and `isGone` says the pod left both the sources and the
 * runtime — so memory follows the pods that exist.
 */
export class PodWorkers {
  readonly #sync: (uid: string) => Promise<void>;
  readonly #onError: (err: unknown, uid: string) => void;
  readonly #isGone: (uid: string) => boolean;
  readonly #workers = new Map<string, { running: Promise<void> | undefined; again: boolean; timer: NodeJS.Timeout | undefined; due: number }>();
  #stopped = false;

  constructor(opts: { sync: (uid: string) => Promise<void>; onError: (err: unknown, uid: string) => void; isGone: (uid: string) => boolean }) {
    this.#sync = opts.sync;
    this.#onError = opts.onError;
    this.#isGone = opts.isGone;
  }

  /** Syncs the pod now, or once more right after the sync in progress. */
  schedule(uid: string): void {
    if (!uid || this.#stopped) return;
    let w = this.#workers.get(uid);
    if (!w) {
      w = { running: undefined, again: false, timer: undefined, due: 0 };
      this.#workers.set(uid, w);
    }
    if (w.running) {
      w.again = true;
      return;
    }
    const worker = w;
    worker.running = (async () => {
      do {
        worker.again = false;
        try {
          await this.#sync(uid);
        } catch (err) {
          this.#onError(err, uid);
        }
      } while (worker.again && !this.#stopped);
    })().finally(() => {
      worker.running = undefined;
      if (!worker.timer && this.#isGone(uid)) this.#workers.delete(uid);
    });
  }

  /** Syncs the pod after `ms` (plus a little slack past a back-off's end), unless a timer is armed. */
  scheduleAfter(uid: string, ms: number): void {
    const w = this.#workers.get(uid);
    if (!w) return;
    const due = Date.now() + ms;
    if (w.timer) {
      if (w.due <= due) return;
      clearTimeout(w.timer);
    }
    w.due = due;
    w.timer = setTimeout(() => {
      w.timer = undefined;
      this.schedule(uid);
    }, ms + 20);
    w.timer.unref();
  }

  /** Workers held (idle ones included). */
  get size(): number {
    return this.#workers.size;
  }

  /**
   * No new syncs; waits for the running ones, at most `waitMs`. A sync can take as long as a pod's
   * grace period (a kill waits up to `terminationGracePeriodSeconds` for SIGTERM to work, 600 s
   * and more are legal), and a stopping kubelet does not wait for its pod workers (it exits):
   * past `waitMs` the syncs still running are left to finish on their own. Resolves with the UIDs
   * of those left.
   */
  async stop(waitMs = Infinity): Promise<string[]> {
    this.#stopped = true;
    for (const w of this.#workers.values()) if (w.timer) clearTimeout(w.timer);
    const running = [...this.#workers].filter(([, w]) => w.running);
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<void>((resolve) => {
      if (Number.isFinite(waitMs)) timer = setTimeout(resolve, waitMs);
    });
    await Promise.race([Promise.allSettled(running.map(([, w]) => w.running)), expired]);
    clearTimeout(timer);
    return running.filter(([, w]) => w.running).map(([uid]) => uid);
  }
}
