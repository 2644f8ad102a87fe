import { LogController, type FastifyBaseLogger, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level } from 'pino';
import type { Logger } from '../logging/index.js';

/** Per-request lines at debug: the kubelet logs HTTP requests at V(3) (httplog), not V(2). */
export class RequestLogController extends LogController {
  readonly #logger: Logger;

  /** `logger`: the server's logger, whose level decides whether a request's debug lines are built at all. */
  constructor(logger: Logger) {
    super();
    this.#logger = logger;
  }

  override incomingRequest(request: FastifyRequest): void {
    if (this.#logger.isLevelEnabled('debug') && !this.isLogDisabled(request)) request.log.debug({ req: request }, 'incoming request');
  }
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (error) {
      if (!this.isLogDisabled(request)) reply.log.error({ res: reply, err: error, responseTime: reply.elapsedTime }, 'request errored');
    } else if (this.#logger.isLevelEnabled('debug') && !this.isLogDisabled(request)) {
      reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
    }
  }
}

type LogArgs = [obj: unknown, msg?: string, ...args: unknown[]];

/**
 * A request's logger (`request.log`, `reply.log`): the logger's child with the request id bound,
 * made on the first line the request actually writes. Fastify makes one child per request; at the
 * default verbosity most requests write nothing (their lines are debug, the access log V(3)), so
 * the child (pino `child` and its bindings serialised) is made for the few that do. A line below
 * the logger's level is dropped before anything is made; the level is read at each call, so a
 * level changed while a request runs applies to it.
 */
class RequestLogger implements FastifyBaseLogger {
  readonly #parent: Logger;
  readonly #bindings: Bindings;
  #child: Logger | undefined;

  constructor(parent: Logger, bindings: Bindings) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  #made(): Logger {
    return (this.#child ??= this.#parent.child(this.#bindings));
  }

  #write(level: Level, args: LogArgs): void {
    if (!this.#parent.isLevelEnabled(level)) return;
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
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#made().child(bindings, options);
  }
}

/**
 * Fastify's `childLoggerFactory` for nodelet's servers: a `RequestLogger` over `parent`, or pino's
 * own child at once when the route asks for its own level or serializers (no nodelet route does).
 */
export function requestChildLogger(parent: Logger): (logger: FastifyBaseLogger, bindings: Bindings, opts: ChildLoggerOptions) => FastifyBaseLogger {
  return (_logger, bindings, opts) => (opts.level !== undefined || opts.serializers !== undefined ? parent.child(bindings, opts) : new RequestLogger(parent, bindings));
}
