import { spawn, type ChildProcess } from 'node:child_process';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import type { Logger } from '../../logging/index.js';

/**
 * After the pod side closed, how long the client may still send before its side is closed too
 * (containerd gives the other direction 1 s, dockershim's socat 0.5 s). The other way round
 * there is no limit: a client that half-closed still gets the whole answer.
 */
const CLIENT_LINGER_MS = 1000;
/** socat's own wait after one side's EOF; we end its input ourselves (above), so effectively none. */
const SOCAT_LINGER_SECONDS = '86400';
/** socat's diagnostics kept per connection (it writes a few lines; the cap bounds a runaway). */
const MAX_STDERR_BYTES = 8 * 1024;

/**
 * Relays `stream` to 127.0.0.1:`port` inside the sandbox's network namespace — dockershim's way:
 * `nsenter -t <sandbox pid> -n socat -,shut-down TCP4:127.0.0.1:<port>` with the stream on socat's stdio.
 * The address is fixed: clients choose only the port, never where to connect.
 *
 * Half-close both ways: the stream's EOF ends socat's stdin (socat shuts down the TCP write
 * side and keeps reading); the pod's EOF ends socat's stdout and so the stream. Backpressure
 * through pipes, stderr capped, the child always reaped.
 *
 * Rejects, with the CRI streaming server's text (`error forwarding port P to pod <sandbox>,
 * uid : <reason>`), when the connection cannot be made: sandbox not running, nothing listening
 * (socat exits 1 with "Connection refused"). Once connected, a later failure (a reset) is only
 * logged: kubectl tears down every forwarded connection on any error text, and the client
 * already sees its socket close. Resolves when socat is gone; `signal` kills it.
 */
export async function forwardPort(docker: Docker, sandboxId: string, port: number, stream: Duplex, signal: AbortSignal, log: Logger): Promise<void> {
  const fail = (reason: string) => new Error(`error forwarding port ${port} to pod ${sandboxId}, uid : ${reason}`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw fail(`invalid port ${port}`);
  const pid = await sandboxPid(docker, sandboxId).catch((err: unknown) => {
    throw fail(err instanceof Error ? err.message : String(err));
  });
  if (signal.aborted) return;
  const result = await relay(pid, port, stream, signal);
  if (result.kind === 'failed') throw fail(result.reason);
  if (result.kind === 'broken') log.debug({ sandboxId, port, reason: result.reason }, 'port-forward: connection ended with an error');
}

/**
 * How long a sandbox's PID, once looked up, serves further connections. A burst of forwarded
 * connections (a browser opening a page) then costs one inspect, and one Docker socket, instead of
 * one each; a sandbox that restarted meanwhile makes nsenter fail, which that connection reports.
 */
const PID_CACHE_MS = 1000;
const pids = new Map<string, { at: number; pid: Promise<number> }>();

/** The sandbox's PID: one inspect in flight per sandbox, its answer reused for `PID_CACHE_MS`. */
function sandboxPid(docker: Docker, sandboxId: string): Promise<number> {
  const now = Date.now();
  const cached = pids.get(sandboxId);
  if (cached && now - cached.at < PID_CACHE_MS) return cached.pid;
  for (const [id, entry] of pids) if (now - entry.at >= PID_CACHE_MS) pids.delete(id);
  const pid = inspectPid(docker, sandboxId);
  const entry = { at: now, pid };
  pids.set(sandboxId, entry);
  // A failed lookup is not reused: the next connection asks again.
  pid.catch(() => {
    if (pids.get(sandboxId) === entry) pids.delete(sandboxId);
  });
  return pid;
}

async function inspectPid(docker: Docker, sandboxId: string): Promise<number> {
  let info: Docker.ContainerInspectInfo;
  try {
    info = await docker.getContainer(sandboxId).inspect();
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) throw new Error('sandbox not found');
    throw err;
  }
  const pid = info.State?.Pid ?? 0;
  if (!info.State?.Running || pid <= 0) throw new Error('sandbox is not running');
  return pid;
}

type RelayResult =
  | { readonly kind: 'ok' }
  /** Never connected: the reason goes to the client. */
  | { readonly kind: 'failed'; readonly reason: string }
  /** Connected, then failed. */
  | { readonly kind: 'broken'; readonly reason: string };

/** socat's `-d -d` line once the TCP connection is up. */
const CONNECTED = 'starting data transfer loop';
/** `2026/11/29 20:43:15 socat[23912] E connect(...): Connection refused` → level and text. */
const SOCAT_LINE = /^\S+ \S+ socat\[\d+\] ([A-Z]) (.*)$/;

function relay(pid: number, port: number, stream: Duplex, signal: AbortSignal): Promise<RelayResult> {
  return new Promise((resolve) => {
    // `shut-down`: on the pod's EOF socat shuts down its stdout (a socketpair under libuv), so
    // the EOF reaches us; by default it leaves stdio open until both sides are done.
    const args = ['-t', String(pid), '-n', 'socat', '-d', '-d', '-t', SOCAT_LINGER_SECONDS, '-,shut-down', `TCP4:127.0.0.1:${port}`];
    let child: ChildProcess;
    try {
      child = spawn('nsenter', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (err) {
      // Node throws only for errors it does not expect at run time; still this connection's alone.
      return resolve({ kind: 'failed', reason: err instanceof Error ? err.message : String(err) });
    }
    let spawnError: Error | undefined;
    // First, and for good: a child's 'error' without a listener would take the process down
    // (a failed spawn, a failed kill).
    child.on('error', (err) => {
      spawnError ??= err;
    });
    const { stdin, stdout, stderr } = child;
    if (!stdin || !stdout || !stderr) {
      // No descriptors for the pipes (EMFILE, ENFILE, EAGAIN): Node gives the child no stdio and
      // reports the error on the next tick. Nothing ran; the client is told on its error stream.
      stream.resume();
      child.once('error', (err) => resolve({ kind: 'failed', reason: err.message }));
      return;
    }
    let stderrText = '';
    let connected = false;
    let killed = false;
    let lingerTimer: NodeJS.Timeout | undefined;

    const kill = () => {
      if (killed || child.exitCode !== null || child.signalCode !== null) return;
      killed = true;
      child.kill('SIGKILL');
    };
    const stopInput = () => {
      stream.unpipe(stdin);
      if (!stdin.writableEnded) stdin.end();
      // Bytes the client still sends are discarded, never left unread.
      stream.resume();
    };

    // Broken pipes are expected when either side goes first; the exit status tells what happened.
    stdin.on('error', () => undefined);
    stdout.on('error', () => undefined);
    stderr.on('error', () => undefined);
    stream.on('error', () => undefined);

    stream.pipe(stdin);
    stdout.pipe(stream);
    stderr.on('data', (chunk: Buffer) => {
      if (stderrText.length >= MAX_STDERR_BYTES) return;
      stderrText += chunk.toString('utf8', 0, Math.min(chunk.length, MAX_STDERR_BYTES - stderrText.length));
      if (!connected && stderrText.includes(CONNECTED)) connected = true;
    });
    // The pod closed its side: the client gets a moment to finish sending, then EOF as well.
    stdout.once('end', () => {
      lingerTimer = setTimeout(stopInput, CLIENT_LINGER_MS);
      lingerTimer.unref();
    });
    // The client reset the stream or the session died: nothing more can be relayed.
    const onStreamClose = () => kill();
    stream.once('close', onStreamClose);
    const onAbort = () => kill();
    signal.addEventListener('abort', onAbort, { once: true });
    if (stream.destroyed || signal.aborted) kill();

    child.once('close', (code, sig) => {
      clearTimeout(lingerTimer);
      signal.removeEventListener('abort', onAbort);
      stream.off('close', onStreamClose);
      stream.unpipe(stdin);
      stream.resume();
      if (spawnError) return resolve({ kind: 'failed', reason: spawnError.message });
      if (code === 0) return resolve({ kind: 'ok' });
      // Judged by how socat ended, not by whether we also killed it: a refused connection ends
      // the stream, and the client's reset of it may race socat's own exit.
      if (code === null && killed) return resolve({ kind: 'ok' });
      const reason = `${sig ? `killed by ${sig}` : `exit status ${code}`}: ${socatErrors(stderrText)}`;
      resolve(connected ? { kind: 'broken', reason } : { kind: 'failed', reason });
    });
  });
}

/** socat's error lines without their timestamp prefix; nsenter's own messages as they are. */
function socatErrors(text: string): string {
  const errors: string[] = [];
  for (const line of text.split('\n')) {
    const m = SOCAT_LINE.exec(line.trim());
    if (m) {
      if (m[1] === 'E' || m[1] === 'F') errors.push(m[2] ?? '');
    } else if (line.trim()) {
      errors.push(line.trim());
    }
  }
  return errors.join('; ') || 'socat failed';
}
