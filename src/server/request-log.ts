import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import { pino, type Bindings, type ChildLoggerOptions, type Level } from 'pino';
import type { Logger } from '../logging/index.js';

/**
 * Makes each request's logger, and writes the per-request lines at debug: the kubelet logs HTTP
 * requests at V(3) (httplog), not V(2).
 *
 * Fastify calls `incomingRequest` once for every request it builds a `Request` and `Reply` for:
 * routed ones, 404s and framework errors (fastify/lib/route.js `routeHandler`,
 * lib/four-oh-four.js, fastify.js `onBadUrl`/`onMaxParamLength`/`onAsyncConstraintError`),
 * before any hook runs. The request's logger (`request.log`, `reply.log`) is set here, a
 * `RequestLogger` over `base` with the request id bound, rather than by a `childLoggerFactory`:
 * with a factory of its own Fastify checks every request's logger for seven methods
 * (lib/logger-factory.js `validateLogger`, an array and a closure per request); with its default
 * factory and no logger it hands every request its null logger, replaced here.
 * Routes cannot ask for a level or serializers of their own (`rejectRouteLogOptions`).
 */
export class RequestLogController extends LogController {
  readonly #base: LevelAware;

  constructor(base: LevelAware) {
    super();
    this.#base = base;
  }

  override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
    const log = new RequestLogger(this.#base, { [this.requestIdLogLabel]: request.id });
    request.log = log;
    reply.log = log;
    if (log.isLevelEnabled('debug') && !this.isLogDisabled(request)) log.debug({ req: request }, 'incoming request');
  }
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      if (!this.isLogDisabled(request)) reply.log.error({ res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    } else if (levelEnabled(reply.log, 'debug') && !this.isLogDisabled(request)) {
      reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
    }
  }
  /**
   * A request refused while the server closes (Fastify's 503, lib/route.js): Fastify hands it the
   * null logger, as no `Request` was built; the line goes to `base` (without a request id).
   */
  override serviceUnavailable(): void {
    this.#base.info({ res: { statusCode: 503 } }, 'request aborted - refusing to accept new requests as server is closing');
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
 *   - `logController`: Fastify's `logController` option; it gives each request its `request.log`
 *     and `reply.log`, a `RequestLogger` over `base` made on its first line written.
 *   - `accessLog`: whether the access log's completion lines ("request completed") are written,
 *     i.e. `base` is at debug (V(3)): the caller then adds an `onResponse` hook, which makes
 *     Fastify time every response and call `RequestLogController.requestCompleted`.
 */
export function requestLogging(logger: Logger): { base: Logger; logController: RequestLogController; accessLog: boolean } {
  // Fastify's serializers where the logger has none of its own (nodelet's has `req`), as Fastify merges them.
  const own = serializersOf(logger);
  const serializers: Record<string, pino.SerializerFn> = { req: requestValue, res: replySummary, err: pino.stdSerializers.err };
  for (const name of Object.keys(own)) delete serializers[name];
  const base = logger.child({}, { serializers });
  return { base, logController: new RequestLogController(base), accessLog: base.isLevelEnabled('debug') };
}

/**
 * An `onRoute` hook: a route asking for its own log level or serializers is refused when it is
 * registered. Every request's logger is `base`'s (`RequestLogController.incomingRequest`), so such
 * options would be ignored silently; no nodelet route sets them.
 */
export function rejectRouteLogOptions(route: { url: string; logLevel?: string; logSerializers?: unknown }): void {
  if (route.logLevel || route.logSerializers) throw new Error(`route ${route.url}: per-route logLevel and logSerializers are not supported (src/server/request-log.ts)`);
}
