import type { ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { StatusError, badRequest } from '../api/errors.js';
import { CountingSlots } from '../streaming/slots.js';
import { requestUser } from './identity.js';
import type { CloseReason, WatchEvent, WatchHub } from '../watch/hub.js';
import type { KubeObject } from '../watch/store.js';
import { preferredTableVersion, type TableVersion } from './negotiate.js';
import { queryValue } from './params.js';
import { validateListOptions } from './list-options.js';
import { acceptWatchWebSocket, isUpgradeRequest } from './upgrade.js';
import { offeredSubprotocols } from '../streaming/websocket/handshake.js';
import type { Table } from './table.js';

/**
 * `?watch=true` over HTTP, the apiserver's way: `200`, `application/json`, chunked, one
 * `{"type":…,"object":…}` per line, the headers flushed at once (clients block on them). Each
 * event's bytes are encoded once per format and shared by every watcher that gets the same event,
 * and written to each socket without a copy; a watcher's queue is drained only as fast as its
 * socket takes bytes (`drain`), and the hub closes a watcher that falls too far behind. Ends on
 * `timeoutSeconds` (default: a random 30–60 min, the apiserver's `minRequestTimeout` spread), when
 * the client leaves, or when the server closes (`WatchStreams.closeAll`), always with the last
 * chunk, so clients see a clean end of stream.
 */

export interface WatchParams {
  resourceVersion: string | undefined;
  timeoutSeconds: number | undefined;
  allowWatchBookmarks: boolean;
  sendInitialEvents: boolean;
}

/** Go's `strconv.ParseBool` true spellings, as the apiserver's query decoder accepts them. */
const TRUE = new Set(['1', 't', 'T', 'TRUE', 'true', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'FALSE', 'false', 'False', '']);

function boolParam(request: FastifyRequest, key: string): boolean {
  const v = queryValue(request, key);
  if (TRUE.has(v)) return true;
  if (FALSE.has(v)) return false;
  throw badRequest(`${key}: Invalid value: ${JSON.stringify(v)}: strconv.ParseBool: parsing ${JSON.stringify(v)}: invalid syntax`);
}

/** Whether the request asks for a watch (`watch=true`, `watch=1`, …). */
export function isWatchRequest(request: FastifyRequest): boolean {
  return boolParam(request, 'watch');
}

export function watchParams(request: FastifyRequest): WatchParams {
  validateListOptions(request, true);
  const q = request.query as Record<string, unknown> | undefined;
  const rv = q && Object.hasOwn(q, 'resourceVersion') ? queryValue(request, 'resourceVersion') : undefined;
  const rawTimeout = queryValue(request, 'timeoutSeconds');
  let timeoutSeconds: number | undefined;
  if (rawTimeout !== '') {
    if (!/^\d{1,9}$/.test(rawTimeout)) throw badRequest(`timeoutSeconds: Invalid value: ${JSON.stringify(rawTimeout)}: must be a non-negative integer`);
    timeoutSeconds = Number(rawTimeout);
  }
  return {
    resourceVersion: rv,
    timeoutSeconds,
    allowWatchBookmarks: boolParam(request, 'allowWatchBookmarks'),
    sendInitialEvents: boolParam(request, 'sendInitialEvents'),
  };
}

/** How one kind's objects become a one-row Table for `as=Table` watches. */
export type TableOf<T> = (items: readonly T[], now: Date, version: TableVersion, resourceVersion: string) => Table;

/** Seconds a client refused at a watch cap is asked to wait (`Retry-After`), as for log streams. */
export const WATCHES_RETRY_AFTER_SECONDS = 10;
/**
 * The longest watch: a client's `timeoutSeconds` beyond it is lowered to it (the client re-watches
 * from its resourceVersion, as after any end of a watch). Twice the apiserver's default
 * `--min-request-timeout` (1800 s), the top of the default's random spread.
 */
export const MAX_WATCH_TIMEOUT_SECONDS = 3600;

export interface WatchLimits {
  /** Watches open at once (`--max-watches`). */
  readonly max: number;
  /** Watches one user may have open at once (`--max-watches-per-user`). */
  readonly maxPerUser: number;
}

/**
 * The watches a server has open, so closing the server ends them cleanly first, and their caps:
 * a watch holds a connection (a descriptor) and a queue for as long as its client keeps it, so
 * the node and each user may hold only so many (beyond: 429, `Retry-After`). The apiserver bounds
 * the same with API Priority and Fairness (`k8s.io/apiserver` `pkg/util/flowcontrol`), which
 * seats watches per flow, a flow being roughly a user.
 */
export class WatchStreams {
  readonly #open = new Set<WatchWriter<KubeObject>>();
  /** The node's places (`--max-watches`). */
  readonly #node: CountingSlots;
  readonly #maxPerUser: number;
  readonly #perUser = new Map<string, number>();

  constructor(limits: WatchLimits = { max: 1000, maxPerUser: 100 }) {
    this.#node = new CountingSlots(limits.max);
    this.#maxPerUser = limits.maxPerUser;
  }

  get size(): number {
    return this.#open.size;
  }

  /**
   * A place for one more watch of `user`, released (idempotently) when the watch ends; throws the
   * 429 when the node or the user is at its cap. Taken before the watch allocates anything.
   */
  admit(user: string): () => void {
    const mine = this.#perUser.get(user) ?? 0;
    const releaseNode = mine < this.#maxPerUser ? this.#node.tryAcquire() : undefined;
    if (!releaseNode) {
      const message = mine >= this.#maxPerUser ? `too many watches open for user ${JSON.stringify(user)} (limit ${this.#maxPerUser})` : `too many watches open (limit ${this.#node.max})`;
      throw new StatusError('TooManyRequests', `${message}; retry later`, { retryAfterSeconds: WATCHES_RETRY_AFTER_SECONDS });
    }
    this.#perUser.set(user, mine + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      releaseNode();
      const left = (this.#perUser.get(user) ?? 1) - 1;
      if (left > 0) this.#perUser.set(user, left);
      else this.#perUser.delete(user);
    };
  }

  /** @internal */
  add(body: WatchWriter<KubeObject>): void {
    this.#open.add(body);
  }

  /** @internal */
  delete(body: WatchWriter<KubeObject>): void {
    this.#open.delete(body);
  }

  /**
   * Ends every open watch (queued events are still written, then the chunked body ends) and
   * waits up to `graceMs` for the answers to finish, so clients see a clean end of stream rather
   * than a reset when the server then closes its connections.
   */
  async closeAll(graceMs = 1000): Promise<void> {
    const bodies = [...this.#open];
    const done = bodies.map((b) => b.finished);
    for (const b of bodies) b.watcher.close('shutdown');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(done), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
    clearTimeout(timer);
  }
}

type Encode<T> = (ev: WatchEvent<T>, first: boolean) => Buffer;

/** Queued events at which a watcher is pumped at once rather than at the end of the turn. */
const PUMP_NOW = 256;
/** Bytes handed to the socket per write at most (events are never split). */
const BATCH_BYTES = 256 * 1024;
/** How long a closed watch waits for a client that stopped reading before its connection is cut. */
const UNREAD_GRACE_MS = 10_000;

/** Bytes per (event, format), shared by every watcher that writes the same event. */
const encoded = new WeakMap<object, Map<string, Buffer>>();

function cachedEncoding<T>(format: string, encode: (ev: WatchEvent<T>) => unknown): (ev: WatchEvent<T>) => Buffer {
  return (ev) => {
    let byFormat = encoded.get(ev);
    if (!byFormat) {
      byFormat = new Map();
      encoded.set(ev, byFormat);
    }
    let bytes = byFormat.get(format);
    if (!bytes) {
      bytes = Buffer.from(`${JSON.stringify(encode(ev))}\n`);
      byFormat.set(format, bytes);
    }
    return bytes;
  };
}

/**
 * Where a watch's events go: the bytes of a batch of events, handed to the connection without a
 * copy (false: the connection's buffer is full, wait for `drain`), the clean end of the stream,
 * and `settled`, which resolves when the answer is complete or the connection is gone (calling
 * `gone` first when the client left before the end).
 */
interface WatchSink {
  readonly destroyed: boolean;
  write(batch: readonly Buffer[], bytes: number): boolean;
  onDrain(listener: () => void): void;
  end(): void;
  destroy(): void;
  settled(gone: () => void): Promise<void>;
}

/** The HTTP watch: one chunk per batch on the response's socket, the last chunk at the end. */
function chunkedSink(res: ServerResponse): WatchSink {
  return {
    get destroyed() {
      return !res.socket || res.socket.destroyed;
    },
    write(batch, bytes) {
      const socket = res.socket;
      if (!socket) return true;
      socket.cork();
      socket.write(`${bytes.toString(16)}\r\n`, 'latin1');
      for (const b of batch) socket.write(b);
      const ok = socket.write('\r\n', 'latin1');
      socket.uncork();
      return ok;
    },
    onDrain: (listener) => res.socket?.once('drain', listener),
    // The last chunk (`0\r\n\r\n`): a clean end of the stream.
    end: () => res.end(),
    destroy: () => res.socket?.destroy(),
    settled: (gone) =>
      new Promise<void>((resolve) => {
        res.once('finish', resolve);
        res.once('close', () => {
          gone();
          resolve();
        });
      }),
  };
}

/**
 * The WebSocket watch (`k8s.io/apiserver` `pkg/endpoints/handlers/watch.go`, `HandleWS`): one
 * text message per event — the same bytes as the HTTP line, newline included, as the apiserver's
 * `websocketFramer` sends them for JSON — and a close frame with 1000 (normal) at the end. What the
 * client sends is read and dropped (`IgnoreReceives`); the client closing ends the watch.
 */
function webSocketSink(ws: WebSocket, socket: Duplex): WatchSink {
  // A protocol error from the client (a bad frame): `ws` closes the connection itself; the watch
  // ends on the `close` that follows. Without a listener the error would be thrown.
  ws.on('error', () => ws.terminate());
  return {
    get destroyed() {
      return ws.readyState !== ws.OPEN;
    },
    write(batch) {
      socket.cork();
      for (const b of batch) ws.send(b, { binary: false });
      socket.uncork();
      return !socket.writableNeedDrain;
    },
    onDrain: (listener) => socket.once('drain', listener),
    end: () => ws.close(1000),
    destroy: () => ws.terminate(),
    settled: (gone) =>
      new Promise<void>((resolve) => {
        ws.once('close', () => {
          gone();
          resolve();
        });
      }),
  };
}

/**
 * Writes a watcher's queue to its connection (HTTP/1.1 chunks or WebSocket messages), zero-copy:
 * the event Buffers are the shared, cached encodings, handed to the socket as they are (one corked
 * `writev` per batch), and events are taken from the queue only while the socket keeps up
 * (`drain`), so what a slow client has not read stays bounded by the hub's per-watcher queue.
 */
class WatchWriter<T> {
  readonly watcher: ReturnType<WatchHub<T>['watch']>;
  /** The answer is complete (its end handed to the socket) or the connection is gone. */
  readonly finished: Promise<void>;
  readonly #sink: WatchSink;
  readonly #encode: Encode<T>;
  #blocked = false;
  #scheduled = false;
  #cutoff: NodeJS.Timeout | undefined;
  #first = true;
  #ended = false;

  constructor(watcher: ReturnType<WatchHub<T>['watch']>, encode: Encode<T>, sink: WatchSink) {
    this.watcher = watcher;
    this.#encode = encode;
    this.#sink = sink;
    this.finished = sink.settled(() => {
      this.#ended = true;
      if (this.#cutoff) clearTimeout(this.#cutoff);
      watcher.close('stopped');
    });
    watcher.onChange(() => this.#schedule());
  }

  /** Writes what is queued already (the initial events), then follows the watcher. */
  start(): void {
    this.#pump();
  }

  /**
   * Events that arrive together (a burst of status changes is published in one turn of the event
   * loop) are written together: one pump per turn. A queue that grows large is pumped at once
   * instead, so a long burst cannot overflow a reader that keeps up.
   */
  #schedule(): void {
    if (this.watcher.closed !== undefined) {
      this.#pump();
      // A client that stopped reading cannot be sent the end of the stream: cut it off.
      if (this.#blocked && !this.#cutoff) {
        this.#cutoff = setTimeout(() => this.#sink.destroy(), UNREAD_GRACE_MS);
        this.#cutoff.unref();
      }
      return;
    }
    if (this.watcher.pending >= PUMP_NOW) {
      this.#pump();
      return;
    }
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    while (!this.#ended && !this.#blocked) {
      if (this.#sink.destroyed) return;
      const batch: Buffer[] = [];
      let bytes = 0;
      for (let ev = this.watcher.shift(); ev; ev = bytes < BATCH_BYTES ? this.watcher.shift() : undefined) {
        const b = this.#encode(ev, this.#first);
        this.#first = false;
        batch.push(b);
        bytes += b.length;
      }
      if (batch.length === 0) {
        if (this.watcher.closed !== undefined) {
          this.#ended = true;
          this.#sink.end();
        }
        return;
      }
      if (!this.#sink.write(batch, bytes)) {
        this.#blocked = true;
        this.#sink.onDrain(() => {
          this.#blocked = false;
          this.#pump();
        });
      }
    }
  }
}

export interface ServeWatchOptions<T> {
  hub: WatchHub<T>;
  /** The compiled label and field selectors. */
  filter?: (object: T) => boolean;
  /** For `as=Table` watches. */
  table: TableOf<T>;
  streams: WatchStreams;
  /** Overrides the hub's per-watcher queue bound. */
  maxQueue?: number;
  /** Tells the caller how the watch ended (metrics, tests). */
  onEnd?: (reason: CloseReason | undefined) => void;
}

/**
 * Answers a watch request. Errors that can be known up front (a resourceVersion too old, too new,
 * or malformed; bad parameters) are thrown as `StatusError`s and become ordinary Status answers.
 */
export function serveWatch<T extends KubeObject>(request: FastifyRequest, reply: FastifyReply, opts: ServeWatchOptions<T>): FastifyReply {
  const params = watchParams(request);
  const tableVersion = preferredTableVersion(request.headers.accept);
  const streams = opts.streams;
  let release: () => void;
  try {
    release = streams.admit(requestUser(request.raw));
  } catch (err) {
    // A client refused at the cap does not keep its connection (and its descriptor) either.
    void reply.header('connection', 'close');
    throw err;
  }
  let watcher: ReturnType<WatchHub<T>['watch']>;
  try {
    watcher = opts.hub.watch({
    resourceVersion: params.resourceVersion,
    filter: opts.filter,
    bookmarks: params.allowWatchBookmarks,
    sendInitialEvents: params.sendInitialEvents,
    ...(opts.maxQueue !== undefined ? { maxQueue: opts.maxQueue } : {}),
    });
  } catch (err) {
    // A resourceVersion too old or too new, a bad selector: refused, nothing held.
    release();
    throw err;
  }
  /** A watch that never streams lets go of its watcher and its place. */
  const letGo = (): void => {
    watcher.close('stopped');
    release();
  };
  if (request.method === 'HEAD') {
    // A HEAD watch is answered as Go's server answers it: the watch's status and headers, no
    // body (net/http drops what a HEAD handler writes), and nothing is held afterwards.
    letGo();
    return reply.code(200).header('content-type', 'application/json').header('cache-control', 'no-cache, private').send();
  }
  const encode = tableVersion ? tableEncoder(opts.table, tableVersion) : jsonEncoder<T>();
  // The apiserver's `ListResource`: unset or 0 is a random 30–60 min (`minRequestTimeout` × [1, 2)).
  const seconds = params.timeoutSeconds ? Math.min(params.timeoutSeconds, MAX_WATCH_TIMEOUT_SECONDS) : 1800 * (1 + Math.random());
  let following = false;
  const follow = (sink: WatchSink): void => {
    following = true;
    const writer = new WatchWriter<T>(watcher, encode, sink);
    const entry = writer as unknown as WatchWriter<KubeObject>;
    streams.add(entry);
    const timer = setTimeout(() => watcher.close('timeout'), seconds * 1000);
    timer.unref();
    void writer.finished.then(() => {
      release();
      clearTimeout(timer);
      streams.delete(entry);
      opts.onEnd?.(watcher.closed);
    });
    writer.start();
  };
  if (isWebSocketRequest(request)) {
    // `IsWebSocketRequest` → `HandleWS`: the same watch, one WebSocket message per event.
    const offered = offeredSubprotocols(request.raw);
    let socket: ReturnType<typeof acceptWatchWebSocket>;
    try {
      socket = acceptWatchWebSocket(request, reply, offered[0] ?? '', (ws, upgraded) => follow(webSocketSink(ws, upgraded)));
    } catch (err) {
      // A handshake refused before the 101 (a POST, a bad key or version): nothing is held.
      letGo();
      throw err;
    }
    // A socket that dies before the handshake completes never opens: let go.
    socket.once('close', () => {
      if (!following) letGo();
    });
    return reply;
  }
  // The stream is written straight to the socket (see WatchWriter), so Fastify's reply is
  // hijacked: the headers the root hooks would add are set here.
  void reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'application/json',
    'transfer-encoding': 'chunked',
    'cache-control': 'no-cache, private',
    'x-content-type-options': 'nosniff',
  });
  // Headers go out at once: clients (client-go, client-node) wait for them before reading events.
  res.flushHeaders();
  follow(chunkedSink(res));
  return reply;
}

/**
 * Whether a watch was asked for as a WebSocket (`k8s.io/apimachinery` `wsstream.IsWebSocketRequest`:
 * `Connection: Upgrade` and `Upgrade: websocket`); Node hands such requests over as upgrades.
 */
function isWebSocketRequest(request: FastifyRequest): boolean {
  return isUpgradeRequest(request.raw) && String(request.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

function jsonEncoder<T>(): Encode<T> {
  const encode = cachedEncoding<T>('json', (ev) => ({ type: ev.type, object: ev.object }));
  return (ev) => encode(ev);
}

/**
 * `as=Table` watches: each event's object is a Table with one row and the object's
 * resourceVersion; only the first carries column definitions (the apiserver sets `NoHeaders`
 * after the first, and kubectl reuses the columns it has). A BOOKMARK's object stays the bare
 * object with its resourceVersion, as nothing prints it.
 */
function tableEncoder<T extends KubeObject>(table: TableOf<T>, version: TableVersion): Encode<T> {
  const toTable = (ev: WatchEvent<T>, headers: boolean) => {
    if (ev.type === 'BOOKMARK') return { type: ev.type, object: ev.object };
    const t = table([ev.object], new Date(), version, ev.object.metadata?.resourceVersion ?? String(ev.rv));
    return { type: ev.type, object: headers ? t : { ...t, columnDefinitions: [] } };
  };
  const later = cachedEncoding<T>(`table/${version}`, (ev) => toTable(ev, false));
  return (ev, first) => (first ? Buffer.from(`${JSON.stringify(toTable(ev, true))}\n`) : later(ev));
}
