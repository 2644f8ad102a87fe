import { pino, type Logger as PinoLogger } from 'pino';

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

export function createLogger(opts: { verbosity: number; format: 'text' | 'json'; destination?: pino.DestinationStream }): Logger {
  const options: pino.LoggerOptions = {
    level: levelForVerbosity(opts.verbosity),
    base: { pid: process.pid },
    // Never log credentials, whatever the verbosity.
    redact: { paths: ['req.headers.authorization', 'req.headers.cookie', 'headers.authorization'], censor: '[REDACTED]' },
    ...(opts.format === 'text'
      ? {
          // Plain `time level msg key=value` lines, klog-like, without pino-pretty.
          timestamp: pino.stdTimeFunctions.isoTime,
          formatters: { level: (label: string) => ({ level: label }) },
        }
      : { timestamp: pino.stdTimeFunctions.epochTime, messageKey: 'msg' }),
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
