import type { PortForwardStreamType } from './headers.js';

/** The streams of one forwarded connection gathered so far. */
export interface PendingPair<S> {
  readonly requestId: string;
  readonly error?: S;
  readonly data?: S;
}

export type AddResult<S> =
  | { readonly kind: 'pending' }
  | { readonly kind: 'complete'; readonly requestId: string; readonly error: S; readonly data: S }
  /** A second stream of a type the pair already has; the kubelet reports it on the pair's error stream. */
  | { readonly kind: 'duplicate'; readonly message: string; readonly pair: PendingPair<S> };

export interface PairingOptions<S> {
  /** The kubelet's stream creation timeout (30 s). */
  readonly timeoutMs: number;
  /** A pair still incomplete after `timeoutMs`; it is forgotten first. */
  readonly onTimeout: (pair: PendingPair<S>, message: string) => void;
}

interface Entry<S> {
  requestId: string;
  error?: S;
  data?: S;
  timer: NodeJS.Timeout;
}

/**
 * Pairs the `error` and `data` streams of each forwarded connection by request ID, like the
 * kubelet's `httpStreamHandler` (`getStreamPair`/`monitorStreamPair`): the first stream of a
 * request starts its timer; a completed pair leaves the table, so a later stream reusing the
 * ID starts a new pair. Streams are opaque here; the session owns them.
 */
export class StreamPairing<S> {
  readonly #pending = new Map<string, Entry<S>>();
  readonly #opts: PairingOptions<S>;

  constructor(opts: PairingOptions<S>) {
    this.#opts = opts;
  }

  /** Pairs waiting for their other stream. */
  get size(): number {
    return this.#pending.size;
  }

  add(stream: S, type: PortForwardStreamType, requestId: string): AddResult<S> {
    let entry = this.#pending.get(requestId);
    if (!entry) {
      const timer = setTimeout(() => this.#expire(requestId), this.#opts.timeoutMs);
      timer.unref();
      entry = { requestId, timer };
      this.#pending.set(requestId, entry);
    }
    if (entry[type] !== undefined) {
      return { kind: 'duplicate', message: `error processing stream for request ${requestId}: ${type} stream already assigned`, pair: snapshot(entry) };
    }
    entry[type] = stream;
    if (entry.error === undefined || entry.data === undefined) return { kind: 'pending' };
    clearTimeout(entry.timer);
    this.#pending.delete(requestId);
    return { kind: 'complete', requestId, error: entry.error, data: entry.data };
  }

  /** Stops every timer and hands back the incomplete pairs (the session is over). */
  close(): PendingPair<S>[] {
    const left = [...this.#pending.values()];
    this.#pending.clear();
    for (const e of left) clearTimeout(e.timer);
    return left.map(snapshot);
  }

  #expire(requestId: string): void {
    const entry = this.#pending.get(requestId);
    if (!entry) return;
    this.#pending.delete(requestId);
    this.#opts.onTimeout(snapshot(entry), `(request=${requestId}) timed out waiting for streams`);
  }
}

function snapshot<S>(e: Entry<S>): PendingPair<S> {
  return { requestId: e.requestId, ...(e.error !== undefined ? { error: e.error } : {}), ...(e.data !== undefined ? { data: e.data } : {}) };
}
