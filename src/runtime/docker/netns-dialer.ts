import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { Socket, type OnReadOpts, type SocketConstructorOpts } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../logging/index.js';
import { ANSWER_GRACE_MS, CONNECT_TIMEOUT_MS, parseDialAnswer, timeoutReason, type DialRequest } from './portforward-protocol.js';

/** Open dial requests per helper; more are refused at once (a client opening connections in a loop). */
export const DEFAULT_MAX_PENDING = 128;
/** A helper with no open request for this long exits; the next forward starts a new one. */
export const DEFAULT_IDLE_MS = 30_000;
/** The helper's (nsenter's) diagnostics kept for the error text; the cap bounds a runaway. */
const MAX_STDERR_BYTES = 8 * 1024;

/** A dial that connected nothing; `message` is the reason for the client, without the pod prefix. */
export class DialError extends Error {
  override readonly name = 'DialError';
}

export interface NetnsDialersOptions {
  log: Logger;
  maxPending?: number;
  idleMs?: number;
  /** nodelet's wait for one answer (default: the helper's connect timeout plus a grace). */
  answerTimeoutMs?: number;
}

/**
 * The helper's entry point and the Node flags to run it with. The build ships
 * `portforward-helper.js` beside this module and runs it with no flags (nodelet's own, such as a
 * heap size, are not the helper's). Run from TypeScript sources (tests), it is the `.ts` beside
 * this module under the loader flags (`--import`, `--loader`, `--require`) this process got.
 */
export function helperCommand(): { path: string; execArgv: string[] } {
  const js = fileURLToPath(new URL('./portforward-helper.js', import.meta.url));
  if (existsSync(js)) return { path: js, execArgv: [] };
  const ts = fileURLToPath(new URL('./portforward-helper.ts', import.meta.url));
  const execArgv: string[] = [];
  const argv = process.execArgv;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (/^--(import|loader|experimental-loader|require)=/.test(a)) execArgv.push(a);
    else if (/^(--import|--loader|--experimental-loader|--require|-r)$/.test(a) && i + 1 < argv.length) execArgv.push(a, argv[++i] ?? '');
  }
  return { path: ts, execArgv };
}

/**
 * Connections into pods' network namespaces without a process per connection: one helper per
 * sandbox (portforward-helper.ts) started on the first dial inside the sandbox's netns, reused by
 * later dials, stopped after `idleMs` without requests, by `release` (the sandbox stopped or was
 * removed) and by `close` (nodelet stops). The helper connects and passes the connected socket
 * back over Node's IPC channel; the caller relays bytes between two sockets in this process.
 *
 * An idle helper never keeps this process alive (child, channel and pipe are unref'd while no
 * request is open), and each one exits by itself when this process goes away (its IPC channel
 * closes).
 */
export class NetnsDialers {
  readonly #opts: Required<NetnsDialersOptions>;
  readonly #helpers = new Map<string, Helper>();
  #closed = false;

  constructor(opts: NetnsDialersOptions) {
    this.#opts = { maxPending: DEFAULT_MAX_PENDING, idleMs: DEFAULT_IDLE_MS, answerTimeoutMs: CONNECT_TIMEOUT_MS + ANSWER_GRACE_MS, ...opts };
  }

  /**
   * A socket connected to 127.0.0.1:`port` (or `host`:`port`, an IP literal) in the netns of process `pid` (the sandbox's), with
   * `allowHalfOpen` set, not yet read from. With `read` (Node's `onread`), the socket reads into
   * `read.buffer` and hands each read to `read.callback` instead of emitting 'data', and starts
   * paused: `resume()` starts it, and the callback's `false` pauses it again. Rejects with a `DialError` when nothing connected
   * (refused, timed out, the helper could not start, too many open requests, `signal` aborted).
   * A helper started for another pid of the same sandbox (it restarted) is replaced.
   */
  dial(sandboxId: string, pid: number, port: number, signal: AbortSignal, host?: string, read?: OnReadOpts): Promise<Socket> {
    if (this.#closed) return Promise.reject(new DialError('nodelet is stopping'));
    let helper = this.#helpers.get(sandboxId);
    if (helper && (helper.pid !== pid || helper.dead)) {
      helper.kill();
      helper = undefined;
    }
    if (!helper) {
      const h = new Helper(pid, this.#opts, () => {
        if (this.#helpers.get(sandboxId) === h) this.#helpers.delete(sandboxId);
      });
      this.#helpers.set(sandboxId, h);
      helper = h;
    }
    return helper.dial(port, signal, host, read);
  }

  /** Stops the sandbox's helper, if any (idempotent); its open requests fail. */
  release(sandboxId: string): void {
    this.#helpers.get(sandboxId)?.kill();
  }

  /** Stops every helper and resolves once all have exited; later dials are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    const helpers = [...this.#helpers.values()];
    for (const h of helpers) h.kill();
    await Promise.all(helpers.map((h) => h.exited));
  }

  /** Process ids of the running helpers (for tests and diagnostics). */
  pids(): number[] {
    return [...this.#helpers.values()].flatMap((h) => (h.childPid !== undefined && !h.dead ? [h.childPid] : []));
  }
}

interface Pending {
  readonly port: number;
  readonly read: OnReadOpts | undefined;
  resolve(socket: Socket): void;
  reject(err: DialError): void;
}

/** One helper process and its open requests. */
class Helper {
  readonly pid: number;
  readonly exited: Promise<void>;
  readonly #opts: Required<NetnsDialersOptions>;
  readonly #child: ChildProcess | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #idleTimer: NodeJS.Timeout | undefined;
  /** Set once the helper cannot serve any more: why its requests fail. */
  #deadReason: string | undefined;
  #stderr = '';

  constructor(pid: number, opts: Required<NetnsDialersOptions>, onGone: () => void) {
    this.pid = pid;
    this.#opts = opts;
    let exited!: () => void;
    this.exited = new Promise<void>((resolve) => (exited = resolve)).then(onGone);
    const { path, execArgv } = helperCommand();
    let child: ChildProcess;
    try {
      // Nor nodelet's NODE_OPTIONS (a heap size, a preloaded agent): the helper needs none.
      const { NODE_OPTIONS: _ignored, ...env } = process.env;
      child = spawn('nsenter', ['-t', String(pid), '-n', '--', process.execPath, ...execArgv, path], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'json', env });
    } catch (err) {
      // Node throws only for errors it does not expect at run time; still only these dials fail.
      this.#deadReason = err instanceof Error ? err.message : String(err);
      exited();
      return;
    }
    this.#child = child;
    // First, and for good: an 'error' without a listener would take nodelet down.
    child.on('error', (err) => this.#die(err.message));
    child.stderr?.on('data', (chunk: Buffer) => {
      if (this.#stderr.length < MAX_STDERR_BYTES) this.#stderr += chunk.toString('utf8', 0, Math.min(chunk.length, MAX_STDERR_BYTES - this.#stderr.length));
    });
    child.stderr?.on('error', () => undefined);
    child.on('message', (m: unknown, handle: unknown) => this.#onAnswer(m, handle));
    child.once('close', (code, sig) => {
      const lines = this.#stderr.split('\n').map((l) => l.trim()).filter(Boolean);
      // Clients get nsenter's own words (a sandbox gone, a permission), the rest goes to the log.
      const told = lines.filter((l) => l.startsWith('nsenter:')).join('; ');
      const reason = `${sig ? `killed by ${sig}` : `exit status ${code}`}${told ? `: ${told}` : ': port-forward helper exited'}`;
      if (code !== 0 && sig !== 'SIGKILL') opts.log.warn({ pid, reason, stderr: lines.join('\n') }, 'port-forward helper exited');
      this.#die(reason);
      clearTimeout(this.#idleTimer);
      exited();
    });
    if (child.pid === undefined) {
      // No process (EMFILE, EAGAIN, nsenter missing): 'error' follows on the next tick, then 'close'.
      this.#deadReason = 'port-forward helper did not start';
    }
    (child.stderr as Socket | null)?.unref?.();
    this.#armIdle();
  }

  get dead(): boolean {
    return this.#deadReason !== undefined;
  }

  get childPid(): number | undefined {
    return this.#child?.pid;
  }

  dial(port: number, signal: AbortSignal, host?: string, read?: OnReadOpts): Promise<Socket> {
    return new Promise<Socket>((resolve, reject) => {
      const child = this.#child;
      if (this.#deadReason !== undefined || !child?.connected) return reject(new DialError(this.#deadReason ?? 'port-forward helper is gone'));
      if (signal.aborted) return reject(new DialError('aborted'));
      if (this.#pending.size >= this.#opts.maxPending) return reject(new DialError(`too many connections being opened to this pod at once (limit ${this.#opts.maxPending}); retry`));
      // The connected socket becomes a descriptor here when it arrives: with none free the kernel
      // drops it on the way in (Node then retries, gives up, and can trip its own assertion in
      // the helper). So every socket on its way needs a free slot, and a margin stays for the rest
      // of nodelet; without them the connection is refused with the reason.
      const short = descriptorShortage(this.#pending.size + 1);
      if (short) return reject(new DialError(`no file descriptor free in nodelet for the connection (EMFILE: ${short})`));
      const id = this.#nextId++;
      const done = () => {
        this.#pending.delete(id);
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.#armIdle();
      };
      const timer = setTimeout(() => {
        done();
        reject(new DialError(timeoutReason(port, this.#opts.answerTimeoutMs, host)));
      }, this.#opts.answerTimeoutMs);
      timer.unref();
      const onAbort = () => {
        done();
        reject(new DialError('aborted'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#pending.set(id, {
        port,
        read,
        resolve: (s) => {
          done();
          resolve(s);
        },
        reject: (e) => {
          done();
          reject(e);
        },
      });
      this.#armIdle();
      const req: DialRequest = { op: 'dial', id, port, ...(host !== undefined ? { host } : {}) };
      // A failed send means the channel broke: the helper's exit follows and fails this request
      // with the reason (nsenter's words); the answer timeout bounds it if it does not.
      child.send(req, () => undefined);
    });
  }

  /** SIGKILL (nothing of the helper's is worth a grace: handed-over sockets live in nodelet). */
  kill(): void {
    this.#die('port-forward helper stopped');
    const child = this.#child;
    if (child && child.exitCode === null && child.signalCode === null) {
      // Held until reaped, so `exited` (which `close` awaits) is always reached.
      child.ref();
      (child.stderr as Socket | null)?.ref?.();
      child.kill('SIGKILL');
    }
  }

  #onAnswer(m: unknown, handle: unknown): void {
    const a = parseDialAnswer(m);
    const p = a ? this.#pending.get(a.id) : undefined;
    // Either side may half-close; the relay decides when the other side follows.
    const socket = wrapHandle(handle, a?.op === 'dialed' ? p?.read : undefined);
    if (!a || !p) {
      // Late (timed out, aborted) or malformed: a connection nobody waits for is closed.
      socket?.destroy();
      return;
    }
    if (a.op === 'failed') {
      socket?.destroy();
      return p.reject(new DialError(a.reason));
    }
    if (!socket) return p.reject(new DialError('port-forward helper: the connected socket did not arrive'));
    p.resolve(socket);
  }

  #die(reason: string): void {
    this.#deadReason ??= reason;
    for (const p of [...this.#pending.values()]) p.reject(new DialError(this.#deadReason));
  }

  /** Idle (no open request): unref'd, and exits after `idleMs`. Busy: ref'd, no idle timer. */
  #armIdle(): void {
    clearTimeout(this.#idleTimer);
    const child = this.#child;
    if (this.#pending.size > 0) {
      child?.ref();
      child?.channel?.ref();
      return;
    }
    if (this.#deadReason !== undefined) return;
    child?.unref();
    child?.channel?.unref();
    this.#idleTimer = setTimeout(() => this.kill(), this.#opts.idleMs);
    this.#idleTimer.unref();
  }
}

/**
 * The socket around a handle the helper sent: its raw TCP handle (`net.Native`, see
 * portforward-helper.ts), wrapped here the way Node's own `child_process` wraps a received
 * `net.Socket` (`new net.Socket({ handle })`, lib/internal/child_process.js), with half-open
 * allowed and, when `read` is given, Node's `onread` (reads into `read.buffer`, delivered to
 * `read.callback` only — no 'data' events — and paused until `resume()`). Anything else (a
 * `net.Socket` is not what the helper sends) is closed: no socket.
 */
function wrapHandle(handle: unknown, read: OnReadOpts | undefined): Socket | undefined {
  if (handle instanceof Socket) {
    handle.destroy();
    return undefined;
  }
  if (typeof handle !== 'object' || handle === null) return undefined;
  const opts: SocketConstructorOpts & { handle: object; pauseOnCreate?: boolean; onread?: OnReadOpts } = {
    handle,
    allowHalfOpen: true,
    readable: true,
    writable: true,
    ...(read ? { onread: read, pauseOnCreate: true } : {}),
  };
  return new Socket(opts);
}

/** Descriptors left free for the rest of nodelet beyond the sockets on their way in. */
const DESCRIPTOR_MARGIN = 16;

/**
 * Why `needed` more descriptors (plus the margin) would not fit under this process's soft
 * RLIMIT_NOFILE, or undefined when they fit. Reads /proc/self (a directory listing and a small
 * file, tens of microseconds): once per connection, never per byte. Where /proc cannot tell,
 * it does not refuse.
 */
function descriptorShortage(needed: number): string | undefined {
  let open: number;
  let limit: number;
  try {
    open = readdirSync('/proc/self/fd').length;
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    if (!m || m[1] === 'unlimited') return undefined;
    limit = Number(m[1]);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    // The listing itself needs a descriptor: failing for lack of one is the answer.
    return code === 'EMFILE' || code === 'ENFILE' ? (err as Error).message : undefined;
  }
  if (open + needed + DESCRIPTOR_MARGIN <= limit) return undefined;
  return `${open} of ${limit} descriptors open, ${needed} connection(s) on their way, ${DESCRIPTOR_MARGIN} kept spare`;
}
