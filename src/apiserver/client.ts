import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { ApiserverConnection } from '../config/kubeconfig.js';

/**
 * nodelet's apiserver client: JSON requests and watches over node:http(s), configured from the
 * kubeconfig (TLS against its CA, bearer token or client certificate, keep-alive sockets).
 *
 * Hand-written rather than `@kubernetes/client-node` because a kubelet needs exactly what that
 * client gets wrong or hides: strategic-merge patches by content type, watches with
 * `timeoutSeconds`/bookmarks and a staleness watchdog, 410 handling, bounded answers, and errors
 * that carry the apiserver's `Status` (code, reason) so callers can tell "gone" from "retry".
 * Error messages name the method, path and status only: never a token or a body sent.
 */

/** The apiserver answered with a non-2xx status (its `Status` object decoded when present). */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    /** `Retry-After` in seconds, when the apiserver sent one (429, 503). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** No answer: connection refused or reset, TLS failure, timeout. Always worth retrying. */
export class TransportError extends Error {
  override name = 'TransportError';
}

export const isNotFound = (err: unknown): boolean => err instanceof ApiError && err.code === 404;
export const isConflict = (err: unknown): boolean => err instanceof ApiError && err.code === 409;
export const isGone = (err: unknown): boolean => err instanceof ApiError && err.code === 410;

export type PatchType = 'application/strategic-merge-patch+json' | 'application/merge-patch+json' | 'application/json-patch+json';

export interface RequestOptions {
  body?: unknown;
  contentType?: 'application/json' | PatchType;
  /** Default 30 s. */
  timeoutMs?: number;
}

export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: T;
}

/** Largest non-watch answer accepted (a PodList of 110 pods is a few MiB at most). */
const MAX_ANSWER_BYTES = 64 << 20;
/** Largest single watch event (one object; the apiserver's request limit is 3 MiB). */
const MAX_WATCH_LINE_BYTES = 16 << 20;

export class KubeClient {
  #conn: ApiserverConnection;
  #agent: HttpAgent;
  readonly #https: boolean;
  readonly #userAgent: string;
  readonly #maxSockets: number;

  constructor(conn: ApiserverConnection, opts: { userAgent?: string; maxSockets?: number } = {}) {
    this.#conn = conn;
    this.#https = conn.server.startsWith('https:');
    this.#userAgent = opts.userAgent ?? 'nodelet';
    this.#maxSockets = opts.maxSockets ?? 32;
    this.#agent = this.#newAgent();
  }

  #newAgent(): HttpAgent {
    const conn = this.#conn;
    const maxSockets = this.#maxSockets;
    return this.#https
      ? new HttpsAgent({
          keepAlive: true,
          maxSockets,
          rejectUnauthorized: !conn.insecureSkipTLSVerify,
          minVersion: 'TLSv1.2',
          ...(conn.ca ? { ca: conn.ca } : {}),
          ...(conn.clientCert && conn.clientKey ? { cert: conn.clientCert, key: conn.clientKey } : {}),
          ...(conn.tlsServerName ? { servername: conn.tlsServerName } : {}),
        })
      : new HttpAgent({ keepAlive: true, maxSockets });
  }

  /**
   * A rotated client certificate: new requests go out on new connections with it, and every
   * connection made with the old one is closed, in-flight requests and watches included (their
   * callers retry), as the kubelet's `UpdateTransport` does (pkg/kubelet/certificate/transport.go)
   * so that no connection outlives the certificate it was authenticated with.
   */
  setClientCertificate(cert: Buffer, key: Buffer): void {
    this.#conn = { ...this.#conn, clientCert: cert, clientKey: key };
    const old = this.#agent;
    this.#agent = this.#newAgent();
    old.destroy();
  }

  get server(): string {
    return this.#conn.server;
  }

  /** One request; resolves with the decoded JSON answer of a 2xx, rejects with ApiError or TransportError. */
  request<T>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, opts: RequestOptions = {}): Promise<T> {
    const payload = opts.body === undefined ? undefined : Buffer.from(JSON.stringify(opts.body));
    const what = `${method} ${pathOnly(path)}`;
    const timeoutMs = opts.timeoutMs ?? 30_000;
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | undefined, value?: T) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(value as T);
      };
      const req = this.#send(method, path, payload, opts.contentType ?? 'application/json', (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_ANSWER_BYTES) {
            req.destroy();
            finish(new TransportError(`${what}: answer larger than ${MAX_ANSWER_BYTES} bytes`));
          } else chunks.push(c);
        });
        res.on('error', (err) => finish(new TransportError(`${what}: ${err.message}`)));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString('utf8');
          if (status < 200 || status > 299) return finish(apiError(what, status, text, res.headers['retry-after']));
          try {
            finish(undefined, (text === '' ? {} : JSON.parse(text)) as T);
          } catch {
            finish(new TransportError(`${what}: the answer is not JSON`));
          }
        });
      });
      const timer = setTimeout(() => {
        finish(new TransportError(`${what}: no answer within ${timeoutMs} ms`));
        req.destroy();
      }, timeoutMs);
      req.on('error', (err: NodeJS.ErrnoException) => finish(new TransportError(`${what}: ${err.code ?? err.message}`)));
      req.end(payload);
    });
  }

  /**
   * A watch (`path` must carry `watch=1` and usually `resourceVersion`). Calls `onEvent` for every
   * event, in order; resolves when the apiserver ends the watch (its `timeoutSeconds`), rejects
   * with ApiError when it refuses it or sends an `ERROR` event (410 for a too-old version), and
   * with TransportError when the connection fails, `signal` aborts, or nothing (not even a
   * bookmark) arrives for `idleTimeoutMs`: a stalled watch is ended, never waited on forever.
   */
  watch<T>(path: string, onEvent: (event: WatchEvent<T>) => void, opts: { signal?: AbortSignal; idleTimeoutMs: number }): Promise<void> {
    const what = `WATCH ${pathOnly(path)}`;
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      let idle: NodeJS.Timeout | undefined;
      let req: ClientRequest | undefined;
      const finish = (err: Error | undefined) => {
        if (settled) return;
        settled = true;
        clearTimeout(idle);
        opts.signal?.removeEventListener('abort', onAbort);
        req?.destroy();
        if (err) reject(err);
        else resolve();
      };
      const onAbort = () => finish(new TransportError(`${what}: aborted`));
      const armIdle = () => {
        clearTimeout(idle);
        idle = setTimeout(() => finish(new TransportError(`${what}: no event within ${opts.idleTimeoutMs} ms`)), opts.idleTimeoutMs);
      };
      if (opts.signal?.aborted) return onAbort();
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      armIdle();
      req = this.#send('GET', path, undefined, 'application/json', (res) => {
        const status = res.statusCode ?? 0;
        if (status < 200 || status > 299) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.length < 64 && chunks.push(c));
          res.on('end', () => finish(apiError(what, status, Buffer.concat(chunks).toString('utf8'), res.headers['retry-after'])));
          res.on('error', (err) => finish(new TransportError(`${what}: ${err.message}`)));
          return;
        }
        let pending: Buffer[] = [];
        let pendingBytes = 0;
        const line = (bytes: Buffer) => {
          if (bytes.length === 0) return;
          let event: WatchEvent<T>;
          try {
            event = JSON.parse(bytes.toString('utf8')) as WatchEvent<T>;
          } catch {
            return finish(new TransportError(`${what}: an event is not JSON`));
          }
          if (event.type === 'ERROR') {
            const s = event.object as unknown as { code?: number; reason?: string; message?: string };
            return finish(new ApiError(s.code ?? 500, s.reason ?? '', `${what}: ${s.message ?? 'watch error'}`));
          }
          onEvent(event);
        };
        res.on('data', (chunk: Buffer) => {
          armIdle();
          let start = 0;
          for (let nl = chunk.indexOf(10); nl !== -1 && !settled; nl = chunk.indexOf(10, start)) {
            const piece = chunk.subarray(start, nl);
            line(pending.length ? Buffer.concat([...pending, piece]) : piece);
            pending = [];
            pendingBytes = 0;
            start = nl + 1;
          }
          if (start < chunk.length && !settled) {
            pending.push(chunk.subarray(start));
            pendingBytes += chunk.length - start;
            if (pendingBytes > MAX_WATCH_LINE_BYTES) finish(new TransportError(`${what}: an event is larger than ${MAX_WATCH_LINE_BYTES} bytes`));
          }
        });
        res.on('end', () => finish(undefined));
        res.on('error', (err) => finish(new TransportError(`${what}: ${err.message}`)));
        res.on('aborted', () => finish(new TransportError(`${what}: connection closed`)));
      });
      req.on('error', (err: NodeJS.ErrnoException) => finish(new TransportError(`${what}: ${err.code ?? err.message}`)));
      req.end();
    });
  }

  close(): void {
    this.#agent.destroy();
  }

  readonly #requestListeners = new Set<(method: string, path: string) => void>();

  /** Tells `listener` of every request sent (method and path with its query), watches included; returns the function that stops it. */
  onRequest(listener: (method: string, path: string) => void): () => void {
    this.#requestListeners.add(listener);
    return () => this.#requestListeners.delete(listener);
  }

  #send(method: string, path: string, payload: Buffer | undefined, contentType: string, onResponse: (res: IncomingMessage) => void): ClientRequest {
    for (const listener of this.#requestListeners) listener(method, path);
    const url = new URL(this.#conn.server + path);
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': this.#userAgent };
    if (payload) {
      headers['content-type'] = contentType;
      headers['content-length'] = String(payload.length);
    }
    if (this.#conn.token !== undefined) headers.authorization = `Bearer ${this.#conn.token}`;
    const request = this.#https ? httpsRequest : httpRequest;
    return request(url, { method, headers, agent: this.#agent }, onResponse);
  }
}

function pathOnly(path: string): string {
  const q = path.indexOf('?');
  return q === -1 ? path : path.slice(0, q);
}

function apiError(what: string, status: number, text: string, retryAfter: string | string[] | undefined): ApiError {
  let reason = '';
  let message = `the apiserver answered ${status}`;
  try {
    const s = JSON.parse(text) as { kind?: string; reason?: string; message?: string };
    if (s.kind === 'Status') {
      reason = s.reason ?? '';
      if (s.message) message = `${status} ${reason}: ${s.message}`;
    }
  } catch {
    // Not a Status: keep the bare code.
  }
  const seconds = Number(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
  return new ApiError(status, reason, `${what}: ${message}`, Number.isFinite(seconds) && seconds > 0 ? seconds : undefined);
}

/** `a=b,c=d` style query helper: encodes every value. */
export function query(params: Record<string, string | number | boolean | undefined>): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(params)) if (v !== undefined) parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

/**
 * A request's verb and resource, as the apiserver's `apiserver_request_total` labels them
 * (staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go): `GET` of a collection is
 * `LIST`, with `watch=1` `WATCH`; the resource with its subresource (`pods/status`). Names and
 * namespaces are left out, so the label set stays small.
 */
export function requestKind(method: string, path: string): { verb: string; resource: string } {
  const q = path.indexOf('?');
  const query = new URLSearchParams(q === -1 ? '' : path.slice(q + 1));
  const parts = pathOnly(path).split('/').filter(Boolean);
  // /api/v1/... or /apis/<group>/<version>/...
  let rest = parts[0] === 'api' ? parts.slice(2) : parts[0] === 'apis' ? parts.slice(3) : [];
  if (rest[0] === 'namespaces' && rest.length > 2) rest = rest.slice(2);
  const [resource = parts.join('/') || '/', name, subresource] = rest;
  const watch = query.get('watch') === '1' || query.get('watch') === 'true';
  const verb = method === 'GET' ? (watch ? 'WATCH' : name === undefined ? 'LIST' : 'GET') : method;
  return { verb, resource: subresource ? `${resource}/${subresource}` : resource };
}
