import { pino, type Logger as PinoLogger } from 'pino';
import { LOG_STRING_LIMIT, truncateMessage } from '../api/truncate.js';

/** nodelet's logger: pino, shared with Fastify so request logs and kubelet logs look alike. */
export type Logger = PinoLogger;

/**
 * klog verbosity (`-v`) onto pino levels: V(0) warnings and errors only, V(1..2) info (the
 * kubelet's practical default is 2), V(3..4) debug, V(5+) trace.
 */
export function levelForVerbosity(v: number): pino.LevelWithSilent {
  if (v <= 0) return 'warn';
  if (v <= 2) return 'info';
  if (v <= 4) return 'debug';
  return 'trace';
}

/**
 * The logger. Every record is bounded, whatever a caller hands it (an error whose message quotes
 * an oversized path, a refusal naming a field): each string of it (the message, the fields in
 * plain objects and arrays a few levels deep, an error's message and stack) is cut to
 * `LOG_STRING_LIMIT` by `truncateMessage`, and a line that still comes out longer than
 * `MAX_LOG_LINE_BYTES` (many fields, large arrays) is replaced by a short one saying so.
 */
export function createLogger(opts: { verbosity: number; format: 'text' | 'json'; destination?: pino.DestinationStream }): Logger {
  const options: pino.LoggerOptions = {
    level: levelForVerbosity(opts.verbosity),
    base: { pid: process.pid },
    hooks: {
      logMethod(args, method) {
        const bounded = args.map((a: unknown) => (typeof a === 'string' ? truncateMessage(a, LOG_STRING_LIMIT) : a)) as Parameters<typeof method>;
        return method.apply(this, bounded);
      },
      streamWrite: boundLine,
    },
    // Request lines name the request, never what a client put in its query (see redactURL).
    serializers: { req: requestSummary },
    // Never log credentials, whatever the verbosity.
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'], censor: '[REDACTED]' },
    ...(opts.format === 'text'
      ? {
          // Plain `time level msg key=value` lines, klog-like, without pino-pretty.
          timestamp: pino.stdTimeFunctions.isoTime,
          formatters: { level: (label: string) => ({ level: label }), log: boundFields },
        }
      : { timestamp: pino.stdTimeFunctions.epochTime, messageKey: 'msg', formatters: { log: boundFields } }),
  };
  const dest = opts.destination ?? (opts.format === 'text' ? textDestination() : pino.destination(2));
  return pino(options, dest);
}

/** Turns pino's JSON lines into `2026-11-29T20:00:00.000Z INFO "msg" key=value …` on stderr. */
function textDestination(): pino.DestinationStream {
  const skip = new Set(['time', 'level', 'msg', 'pid', 'hostname']);
  return {
    write(line: string) {
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(line) as Record<string, unknown>;
      } catch {
        process.stderr.write(line);
        return;
      }
      const parts = [String(rec.time ?? ''), String(rec.level ?? '').toUpperCase(), JSON.stringify(rec.msg ?? '')];
      for (const [k, v] of Object.entries(rec)) {
        if (skip.has(k)) continue;
        parts.push(`${k}=${typeof v === 'string' ? JSON.stringify(v) : JSON.stringify(v)}`);
      }
      process.stderr.write(parts.join(' ') + '\n');
    },
  };
}

/**
 * A log line longer than this (after `boundFields`, only a record with very many fields or a
 * large array gets there) is replaced by a short line that says how long it was.
 */
export const MAX_LOG_LINE_BYTES = 64 * 1024;

/** How deep `boundFields` follows plain objects and arrays; deeper values are left to the line cap. */
const MAX_FIELD_DEPTH = 4;

/**
 * pino's `formatters.log`: the record's fields with every string cut to `LOG_STRING_LIMIT`, in
 * plain objects and arrays up to `MAX_FIELD_DEPTH` deep, and in errors (message, stack, `path`
 * and other properties, causes). Other objects (a request, a socket) are left to their serializers.
 * Returns the record itself when nothing needed a cut, so a small record costs one walk.
 */
export function boundFields(record: Record<string, unknown>): Record<string, unknown> {
  return bound(record, 0) as Record<string, unknown>;
}

function bound(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return truncateMessage(value, LOG_STRING_LIMIT);
  if (typeof value !== 'object' || value === null || depth > MAX_FIELD_DEPTH) return value;
  if (value instanceof Error) return boundError(value, depth);
  if (Array.isArray(value)) {
    let changed = false;
    const out = value.map((v: unknown) => {
      const b = bound(v, depth + 1);
      changed ||= b !== v;
      return b;
    });
    return changed ? out : value;
  }
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(value)) {
    const b = bound(v, depth + 1);
    if (b !== v) (out ??= { ...(value as Record<string, unknown>) })[k] = b;
  }
  return out ?? value;
}

/**
 * A copy of `err` with each own property bounded, on the same prototype (so pino's serializer
 * still names its class); the caller's error is not touched.
 */
function boundError(err: Error, depth: number): Error {
  const copy = Object.create(Object.getPrototypeOf(err) as object) as Error;
  for (const key of Object.getOwnPropertyNames(err)) {
    const enumerable = Object.getOwnPropertyDescriptor(err, key)?.enumerable ?? false;
    const value: unknown = (err as unknown as Record<string, unknown>)[key];
    Object.defineProperty(copy, key, { value: bound(value, depth + 1), enumerable, writable: true, configurable: true });
  }
  return copy;
}

/** pino's `hooks.streamWrite`: a line past `MAX_LOG_LINE_BYTES` becomes a short one saying so. */
function boundLine(line: string): string {
  if (line.length <= MAX_LOG_LINE_BYTES / 3 || Buffer.byteLength(line) <= MAX_LOG_LINE_BYTES) return line;
  let level: unknown;
  let time: unknown;
  try {
    // Only the head is read: the level and time lead every pino line.
    const m = /^\{"level":("?[\w]+"?),"time":("?[^",]+"?)/.exec(line.slice(0, 200));
    level = m ? JSON.parse(m[1] ?? 'null') : 40;
    time = m ? JSON.parse(m[2] ?? 'null') : Date.now();
  } catch {
    level = 40;
    time = Date.now();
  }
  return `${JSON.stringify({ level, time, msg: `log line of ${Buffer.byteLength(line)} bytes dropped (over ${MAX_LOG_LINE_BYTES})`, head: truncateMessage(line, LOG_STRING_LIMIT) })}\n`;
}

/**
 * Query parameters whose values are logged as they are: the API's and the kubelet's options,
 * which say how a request is served, not what it carries. Every other value — exec and run
 * commands (`command`, `cmd`), and any token or secret a client puts in a query — is logged as
 * `[REDACTED]`: at `-v 4` every request's URL is logged, and an exec's arguments or an
 * `access_token` would land in the node's logs for anyone who reads them.
 */
const LOGGED_QUERY_KEYS = new Set([
  'allowWatchBookmarks', 'container', 'continue', 'dryRun', 'error', 'fieldSelector', 'follow', 'gracePeriodSeconds', 'input',
  'insecureSkipTLSVerifyBackend', 'labelSelector', 'limit', 'limitBytes', 'output', 'podID', 'podNamespace', 'port', 'ports',
  'pretty', 'previous', 'propagationPolicy', 'resourceVersion', 'resourceVersionMatch', 'sendInitialEvents', 'sinceSeconds',
  'sinceTime', 'stderr', 'stdin', 'stdout', 'tailLines', 'timeoutSeconds', 'timestamps', 'tty', 'watch', 'only_cpu_and_memory',
]);

/** `url` with every query value not in `LOGGED_QUERY_KEYS` replaced by `[REDACTED]` (keys kept, in order). */
export function redactURL(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = url.slice(q + 1).split('&').map((pair) => {
    const eq = pair.indexOf('=');
    const key = eq < 0 ? pair : pair.slice(0, eq);
    let name: string;
    try {
      name = decodeURIComponent(key.replace(/\+/g, ' '));
    } catch {
      name = key;
    }
    return eq < 0 || LOGGED_QUERY_KEYS.has(name) ? pair : `${key}=[REDACTED]`;
  });
  return `${url.slice(0, q)}?${params.join('&')}`;
}

/** Fastify's request serializer (`lib/logger-pino.js`, `asReqValue`) with the URL redacted. */
function requestSummary(req: { method?: string; url?: string; ip?: string; socket?: { remotePort?: number } }): Record<string, unknown> {
  return { method: req.method, url: redactURL(req.url ?? ''), remoteAddress: req.ip, remotePort: req.socket?.remotePort };
}
