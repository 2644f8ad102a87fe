import { request, type IncomingMessage } from 'node:http';

/** One line of a watch stream. */
export interface WireEvent<T = Record<string, unknown>> {
  type: string;
  object: T & { metadata?: { resourceVersion?: string; name?: string; namespace?: string; annotations?: Record<string, string> } };
}

export interface RawWatch<T = Record<string, unknown>> {
  readonly status: number;
  readonly headers: IncomingMessage['headers'];
  /** Every event received so far, in order. */
  readonly events: WireEvent<T>[];
  /** The body, when the answer was not a 200 stream. */
  readonly body: string;
  /** Resolves with the first event (from `from` on) that satisfies `pred`; rejects after `timeoutMs`. */
  waitFor(what: string, pred: (ev: WireEvent<T>) => boolean, timeoutMs?: number, from?: number): Promise<WireEvent<T>>;
  /** Resolves when the stream ends: `end` for a clean end of the chunked body, `error` for a reset. */
  readonly ended: Promise<'end' | 'error'>;
  readonly res: IncomingMessage | undefined;
  close(): void;
}

/**
 * A raw HTTP watch (no client library): GETs `url`, parses newline-delimited JSON events as they
 * arrive, and lets a test wait on them with deadlines instead of sleeping.
 */
export function openWatch<T = Record<string, unknown>>(url: string, headers: Record<string, string> = {}): Promise<RawWatch<T>> {
  return new Promise((resolve, reject) => {
    const events: WireEvent<T>[] = [];
    const waiters = new Set<() => void>();
    let endedResolve!: (v: 'end' | 'error') => void;
    const ended = new Promise<'end' | 'error'>((r) => (endedResolve = r));
    let isEnded = false;
    const finish = (how: 'end' | 'error') => {
      if (isEnded) return;
      isEnded = true;
      endedResolve(how);
      for (const w of waiters) w();
    };
    const req = request(url, { headers }, (res) => {
      let buf = '';
      let body = '';
      const watch: RawWatch<T> = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        events,
        get body() {
          return body;
        },
        ended,
        res,
        close: () => req.destroy(),
        waitFor(what, pred, timeoutMs = 20_000, from = 0) {
          return new Promise((ok, fail) => {
            const check = (): boolean => {
              for (let i = from; i < events.length; i++) {
                const ev = events[i] as WireEvent<T>;
                if (pred(ev)) {
                  waiters.delete(check as () => void);
                  clearTimeout(timer);
                  ok(ev);
                  return true;
                }
              }
              if (isEnded) {
                waiters.delete(check as () => void);
                clearTimeout(timer);
                fail(new Error(`watch ended before ${what}; got ${events.map((e) => e.type).join(',')}`));
                return true;
              }
              return false;
            };
            const timer = setTimeout(() => {
              waiters.delete(check as () => void);
              fail(new Error(`timed out waiting for ${what}; got ${events.length} events: ${events.map((e) => `${e.type} ${e.object.metadata?.name ?? ''}`).join(', ')}`));
            }, timeoutMs);
            if (!check()) waiters.add(check as () => void);
          });
        },
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (res.statusCode !== 200) {
          body += chunk;
          return;
        }
        buf += chunk;
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          if (line.trim() !== '') events.push(JSON.parse(line) as WireEvent<T>);
        }
        for (const w of [...waiters]) w();
      });
      res.on('end', () => finish('end'));
      res.on('aborted', () => finish('error'));
      res.on('error', () => finish('error'));
      res.on('close', () => finish(res.complete ? 'end' : 'error'));
      resolve(watch);
    });
    req.on('error', (err) => {
      if (isEnded) return;
      finish('error');
      reject(err);
    });
    req.end();
  });
}
