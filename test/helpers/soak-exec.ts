import { createHash, randomBytes } from 'node:crypto';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { SpdyExecClient } from '../clients/spdy-client.js';
import { WsChannelClient } from '../clients/ws-client.js';

/**
 * Programmatic exec sessions for the soak suite, over the lean clients the bench also uses
 * (test/clients): the WebSocket `v5.channel.k8s.io` and SPDY/3.1 `v4.channel.k8s.io` paths
 * kubectl uses, with sha256 of every byte sent and received, and an outcome that separates a real
 * exit (a Status on the error channel) from every way a session can fail.
 */
export type Protocol = 'websocket' | 'spdy';
export const PROTOCOLS: readonly Protocol[] = ['websocket', 'spdy'];

export interface ExecRequest {
  port: number;
  /** The pod's full name as listed. */
  pod: string;
  container: string;
  command: string[];
  protocol: Protocol;
  namespace?: string;
  /** Random stdin: `bytes` in `chunk`-byte messages, then stdin EOF (v5 CLOSE / SPDY FIN); not before `after` settled. */
  stdin?: { bytes: number; chunk: number; after?: Promise<unknown> };
  /** A slow reader: stdout read at no more than `bps` for the first `forMs`, then at full speed. */
  slowRead?: { bps: number; forMs: number };
  /** Whole-session bound; past it the client is destroyed and the outcome is 'timeout'. */
  timeoutMs?: number;
  /** Called once upgraded, with a way to kill the client abruptly (TCP reset, like a SIGKILLed process). */
  onOpen?(kill: () => void): void;
  /** Each stdout payload as it arrives (a view valid during the call). */
  onStdout?(payload: Buffer): void;
}

export interface ExecResult {
  /**
   * - `exited`: a Status arrived: Success (exitCode 0) or NonZeroExitCode (its ExitCode cause);
   * - `failed`: another Status (InternalError…): the session ended with an error;
   * - `refused`: no upgrade (`httpStatus`, 0 when nothing answered);
   * - `broken`: the connection ended without a Status;
   * - `timeout`: the session outlived `timeoutMs`.
   */
  outcome: 'exited' | 'failed' | 'refused' | 'broken' | 'timeout';
  exitCode?: number;
  httpStatus?: number;
  message?: string;
  stdinBytes: number;
  stdinSha: string;
  stdoutBytes: number;
  stdoutSha: string;
  stderr: string;
  ms: number;
}

const V5 = 'v5.channel.k8s.io';
const SPDY_VERSIONS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];

export function execPath(namespace: string, pod: string, container: string, command: readonly string[], stdin: boolean): string {
  const q = new URLSearchParams({ container });
  for (const c of command) q.append('command', c);
  if (stdin) q.set('stdin', 'true');
  q.set('stdout', 'true');
  q.set('stderr', 'true');
  return `/api/v1/namespaces/${namespace}/pods/${pod}/exec?${q.toString()}`;
}

interface StatusLike {
  status?: string;
  reason?: string;
  message?: string;
  details?: { causes?: { reason?: string; message?: string }[] };
}

/** Reading held to `bps` for `forMs`: pauses the socket whenever the reader is ahead of the rate. */
function rateLimiter(slow: ExecRequest['slowRead']): { attach(socket: Socket): void; take(n: number): void } {
  let socket: Socket | undefined;
  let got = 0;
  let t0 = 0;
  let timer: NodeJS.Timeout | undefined;
  return {
    attach(s) {
      socket = s;
      t0 = performance.now();
    },
    take(n) {
      got += n;
      if (!slow || !socket || timer) return;
      const elapsed = performance.now() - t0;
      if (elapsed > slow.forMs) return;
      const ahead = got - (elapsed / 1000) * slow.bps;
      if (ahead <= 0) return;
      const s = socket;
      s.pause();
      timer = setTimeout(() => {
        timer = undefined;
        s.resume();
      }, Math.min((ahead / slow.bps) * 1000, slow.forMs - elapsed));
    },
  };
}

/** Runs one exec session to its end and says how it ended; never throws for a failed session. */
export async function runExec(req: ExecRequest): Promise<ExecResult> {
  const t0 = performance.now();
  const inHash = createHash('sha256');
  const outHash = createHash('sha256');
  let stdinBytes = 0;
  let stdoutBytes = 0;
  let stderr = '';
  const status: Buffer[] = [];
  let statusSeen = false;
  const limiter = rateLimiter(req.slowRead);
  const onStdout = (p: Buffer) => {
    outHash.update(p);
    stdoutBytes += p.length;
    req.onStdout?.(p);
    limiter.take(p.length);
  };
  const onStderr = (p: Buffer) => {
    if (stderr.length < 4096) stderr += p.toString();
  };
  let settle!: () => void;
  const ended = new Promise<void>((resolve) => (settle = resolve));
  const path = execPath(req.namespace ?? 'default', req.pod, req.container, req.command, req.stdin !== undefined);
  let socket: Socket | undefined;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    socket?.destroy();
    settle();
  }, req.timeoutMs ?? 120_000);
  const result = (r: Partial<ExecResult> & Pick<ExecResult, 'outcome'>): ExecResult => {
    clearTimeout(timer);
    return { stdinBytes, stdinSha: inHash.digest('hex'), stdoutBytes, stdoutSha: outHash.digest('hex'), stderr, ms: performance.now() - t0, ...r };
  };
  const chunks = function* (): Generator<Buffer> {
    const s = req.stdin!;
    for (let left = s.bytes; left > 0; left -= s.chunk) {
      const b = randomBytes(Math.min(s.chunk, left));
      inHash.update(b);
      stdinBytes += b.length;
      yield b;
    }
  };

  try {
    if (req.protocol === 'websocket') {
      const c = await WsChannelClient.connect(req.port, path, [V5], {
        onData: (ch, p) => (ch === 1 ? onStdout(p) : ch === 2 ? onStderr(p) : ch === 3 ? status.push(Buffer.from(p)) : undefined),
        onMessageEnd: (ch) => {
          if (ch === 3) statusSeen = true;
        },
        onClose: () => settle(),
      });
      socket = c.socket;
      limiter.attach(c.socket);
      req.onOpen?.(() => c.socket.resetAndDestroy());
      if (req.stdin) {
        try {
          await req.stdin.after;
          for (const b of chunks()) await c.writeRepeated(WsChannelClient.frame(0, b), 1);
          c.write(WsChannelClient.frame(undefined, Buffer.from([0xff, 0]))); // v5 CLOSE of stdin
        } catch {
          /* the connection went away: the outcome below says how */
        }
      }
    } else {
      const c = await SpdyExecClient.connect(req.port, path, SPDY_VERSIONS, {
        onData: (type, p) => (type === 'stdout' ? onStdout(p) : type === 'stderr' ? onStderr(p) : type === 'error' ? status.push(Buffer.from(p)) : undefined),
        onFin: (type) => {
          if (type === 'error') {
            statusSeen = true;
            settle();
          }
        },
        onClose: () => settle(),
      });
      socket = c.socket;
      limiter.attach(c.socket);
      req.onOpen?.(() => c.socket.resetAndDestroy());
      try {
        await c.openStream('error');
        const stdinId = req.stdin ? await c.openStream('stdin') : 0;
        await c.openStream('stdout');
        await c.openStream('stderr');
        if (req.stdin) {
          await req.stdin.after;
          for (const b of chunks()) await c.writeRepeated(SpdyExecClient.dataFrame(stdinId, b), 1);
          c.write(SpdyExecClient.dataFrame(stdinId, Buffer.alloc(0), true));
        }
      } catch {
        /* as above */
      }
      await ended;
      if (statusSeen) c.teardown();
    }
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const code = /HTTP (\d{3})/.exec(message);
    return result({ outcome: 'refused', httpStatus: code ? Number(code[1]) : 0, message });
  }
  await ended;
  if (timedOut) return result({ outcome: 'timeout', message: `session still open after ${req.timeoutMs ?? 120_000} ms` });
  if (!statusSeen) return result({ outcome: 'broken', message: 'the connection ended without a Status' });
  let parsed: StatusLike;
  try {
    parsed = JSON.parse(Buffer.concat(status).toString()) as StatusLike;
  } catch {
    return result({ outcome: 'failed', message: `unparsable status: ${Buffer.concat(status).toString().slice(0, 200)}` });
  }
  if (parsed.status === 'Success') return result({ outcome: 'exited', exitCode: 0 });
  const cause = parsed.details?.causes?.find((c) => c.reason === 'ExitCode')?.message;
  if (parsed.reason === 'NonZeroExitCode' && cause !== undefined) return result({ outcome: 'exited', exitCode: Number(cause), message: parsed.message ?? '' });
  return result({ outcome: 'failed', message: parsed.message ?? JSON.stringify(parsed) });
}

/** A one-line description of a result, for assertion messages. */
export function describe(r: ExecResult): string {
  return `${r.outcome}${r.exitCode !== undefined ? ` exit ${r.exitCode}` : ''}${r.httpStatus !== undefined ? ` HTTP ${r.httpStatus}` : ''} in ${Math.round(r.ms)} ms, in ${r.stdinBytes} B, out ${r.stdoutBytes} B${r.message ? `: ${r.message.slice(0, 300)}` : ''}${r.stderr ? ` stderr: ${r.stderr.slice(0, 200)}` : ''}`;
}
