import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import { pino, type Bindings, type ChildLoggerOptions, type Level } from 'pino';
import type { Logger } from '../logging/index.js';

/** Per-request lines at debug: the kubelet logs HTTP requests at V(3) (httplog), not V(2). */
export class RequestLogController extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (levelEnabled(request.log, 'debug') && !this.isLogDisabled(request)) request.log.debug({ req: request }, 'incoming request');
  }
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      if (!this.isLogDisabled(request)) reply.log.error({ res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    } else if (levelEnabled(reply.log, 'debug') && !this.isLogDisabled(request)) {
      reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
    }
  }
}

/** A pino logger (Fastify's wrapper of nodelet's, or a `RequestLogger`) can say whether a level is written; others are asked to write. */
type LevelAware = FastifyBaseLogger & { isLevelEnabled(level: Level): boolean };
const isLevelAware = (log: FastifyBaseLogger): log is LevelAware => typeof (log as Partial<LevelAware>).isLevelEnabled === 'function';
/** Whether a line at `level` would be written: the debug lines' objects are built only then. */
const levelEnabled = (log: FastifyBaseLogger, level: Level): boolean => !isLevelAware(log) || log.isLevelEnabled(level);

type LogArgs = [obj: unknown, msg?: string, ...args: unknown[]];

/**
 * A request's logger (`request.log`, `reply.log`): the logger's child with the request id bound,
 * made on the first line the request actually writes. Fastify makes one child per request; at the
 * default verbosity most requests write nothing (their lines are debug, the access log V(3)), so
 * the child (pino `child` and its bindings serialised) is made for the few that do. A line below
 * the logger's level is dropped before anything is made; the level is read at each call, so a
 * level changed while a request runs applies to it.
 */
export class RequestLogger implements LevelAware {
  readonly #parent: LevelAware;
  readonly #bindings: Bindings;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: LevelAware, bindings: Bindings) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  /** Whether the child has been made (for the tests: a request that writes nothing makes none). */
  get made(): boolean {
    return this.#child !== undefined;
  }

  isLevelEnabled(level: Level): boolean {
    return this.#child === undefined ? this.#parent.isLevelEnabled(level) : levelEnabled(this.#child, level);
  }

  #made(): FastifyBaseLogger {
    if (this.#child) return this.#child;
    const parent = this.#parent;
    // A lazy child of a lazy logger: the real child is made under the parent's real one.
    return (this.#child = parent instanceof RequestLogger ? parent.#made().child(this.#bindings) : parent.child(this.#bindings));
  }

  #write(level: Level, args: LogArgs): void {
    if (!this.isLevelEnabled(level)) return;
    const child = this.#made();
    Reflect.apply(child[level], child, args);
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }
  set level(level: string) {
    this.#made().level = level;
  }
  fatal(...args: LogArgs): void {
    this.#write('fatal', args);
  }
  error(...args: LogArgs): void {
    this.#write('error', args);
  }
  warn(...args: LogArgs): void {
    this.#write('warn', args);
  }
  info(...args: LogArgs): void {
    this.#write('info', args);
  }
  debug(...args: LogArgs): void {
    this.#write('debug', args);
  }
  trace(...args: LogArgs): void {
    this.#write('trace', args);
  }
  silent(): void {}
  /**
   * A child with `bindings`, itself made on its first line written when no options are given (a
   * streaming session's logger lives as long as the session, hours for an idle exec, and mostly
   * writes nothing: two pino children with their bindings serialised cost it ≈ 0.6 KiB).
   */
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    if (options === undefined) return new RequestLogger(this, bindings);
    return this.#made().child(bindings, options);
  }
}

/** Fastify's `res` serializer (lib/logger-pino.js): a reply is logged as its status code. */
function replySummary(reply: FastifyReply): { statusCode: number } {
  return { statusCode: reply.statusCode };
}

/** Fastify's `req` serializer (lib/logger-pino.js): what the request is, never its headers (credentials). */
function requestValue(request: FastifyRequest): Record<string, unknown> {
  return {
    method: request.method,
    url: request.url,
    version: request.headers['accept-version'],
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** A pino logger's own serializers (pino keeps them under a symbol). */
function serializersOf(logger: Logger): Readonly<Record<string, unknown>> {
  const own = (logger as unknown as Record<symbol, unknown>)[pino.symbols.serializersSym];
  return typeof own === 'object' && own !== null ? (own as Record<string, unknown>) : {};
}

/**
 * Request logging for a server whose Fastify instance has no logger of its own (so Fastify makes
 * no per-request child and sets no response listeners for logging): `base` is nodelet's logger
 * with Fastify's `req`, `res` and `err` serializers where the logger has none of its own (nodelet's
 * has `req`: `requestSummary`), as Fastify's `loggerInstance` would have made it.
 *   - `childLoggerFactory`: each request's `request.log` and `reply.log`, a `RequestLogger` over
 *     `base` made on its first line written (or `base`'s own child at once when the route asks for
 *     its own level or serializers; no nodelet route does). Fastify calls it for every request,
 *     404s and framework errors included.
 *   - `accessLog`: whether the access log's completion lines ("request completed") are written,
 *     i.e. `base` is at debug (V(3)): the caller then adds an `onResponse` hook, which makes
 *     Fastify time every response and call `RequestLogController.requestCompleted`.
 */
export function requestLogging(logger: Logger): { base: Logger; childLoggerFactory: (logger: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions) => FastifyBaseLogger; accessLog: boolean } {
  // Fastify's serializers where the logger has none of its own (nodelet's has `req`), as Fastify merges them.
  const own = serializersOf(logger);
  const serializers: Record<string, pino.SerializerFn> = { req: requestValue, res: replySummary, err: pino.stdSerializers.err };
  for (const name of Object.keys(own)) delete serializers[name];
  const base = logger.child({}, { serializers });
  return { base, childLoggerFactory: (_fastifyLogger, bindings, opts) => requestChildLogger(base, bindings, opts), accessLog: base.isLevelEnabled('debug') };
}

/**
 * A request's logger over `logger`: a `RequestLogger`, or `logger`'s own child at once when the
 * route asks for its own level or serializers.
 */
export function requestChildLogger(logger: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions): FastifyBaseLogger {
  if (opts.level !== undefined || opts.serializers !== undefined || !isLevelAware(logger)) return logger.child(bindings, opts);
  return new RequestLogger(logger, bindings);
}
