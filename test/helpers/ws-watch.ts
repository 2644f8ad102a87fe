import WebSocket from 'ws';
import type { WireEvent } from './watch-client.js';

/** A watch opened as a WebSocket (as fabric8 opens every watch), read with the `ws` client. */
export interface WsWatch<T = Record<string, unknown>> {
  /** 101, or the refusal's status. */
  readonly status: number;
  /** The refusal's body (a Status), when there was no 101. */
  readonly body: string;
  /** The subprotocol the server chose ('' for none). */
  readonly protocol: string;
  /** Every message as received: one event each. */
  readonly messages: { text: string; binary: boolean }[];
  readonly events: WireEvent<T>[];
  waitFor(what: string, pred: (ev: WireEvent<T>) => boolean, timeoutMs?: number): Promise<WireEvent<T>>;
  /** The close code and reason, once the connection closed. */
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly socket: WebSocket;
}

/** Opens `url` (http: or https:) as a WebSocket; resolves at the 101 or with the refusal. */
export function openWsWatch<T = Record<string, unknown>>(url: string, protocols: string[] = [], headers: Record<string, string> = {}): Promise<WsWatch<T>> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws'), protocols, { headers, perMessageDeflate: false });
    const messages: { text: string; binary: boolean }[] = [];
    const events: WireEvent<T>[] = [];
    const waiters = new Set<() => void>();
    let closeResolve!: (v: { code: number; reason: string }) => void;
    const closed = new Promise<{ code: number; reason: string }>((r) => (closeResolve = r));
    let isClosed = false;
    const watch = (status: number, body: string): WsWatch<T> => ({
      status,
      body,
      protocol: ws.protocol,
      messages,
      events,
      closed,
      socket: ws,
      waitFor(what, pred, timeoutMs = 20_000) {
        return new Promise((ok, fail) => {
          const check = (): void => {
            const ev = events.find(pred);
            if (ev) {
              waiters.delete(check);
              clearTimeout(timer);
              ok(ev);
            } else if (isClosed) {
              waiters.delete(check);
              clearTimeout(timer);
              fail(new Error(`watch closed before ${what}`));
            }
          };
          const timer = setTimeout(() => {
            waiters.delete(check);
            fail(new Error(`timed out waiting for ${what}; got ${events.map((e) => e.type).join(',')}`));
          }, timeoutMs);
          waiters.add(check);
          check();
        });
      },
    });
    ws.on('message', (data: Buffer, binary) => {
      const text = data.toString('utf8');
      messages.push({ text, binary });
      events.push(JSON.parse(text) as WireEvent<T>);
      for (const w of [...waiters]) w();
    });
    ws.on('close', (code, reason) => {
      isClosed = true;
      closeResolve({ code, reason: reason.toString() });
      for (const w of [...waiters]) w();
    });
    ws.on('open', () => resolve(watch(101, '')));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        isClosed = true;
        closeResolve({ code: 0, reason: '' });
        resolve(watch(res.statusCode ?? 0, body));
      });
    });
    ws.on('error', (err) => {
      if (!isClosed) reject(err);
    });
  });
}
