import { readFile } from 'node:fs/promises';
import type { Duplex, Readable, Writable } from 'node:stream';
import type Docker from 'dockerode';
import type { Logger } from '../../logging/index.js';
import { pendingStreams } from '../../streaming/pending.js';
import { stopSocketTimer } from '../../streaming/socket-timer.js';
import type { CommandResult, PendingStreamIO, StreamIO } from '../../streaming/types.js';
import { StdcopyParser } from './demux.js';

/** Client stdin written to Docker but not yet taken by its socket, beyond which the client is paused. */
const STDIN_BACKLOG_LIMIT = 256 * 1024;

export interface ExecOptions {
  /** How long an exec'd process may outlive its disconnected client before it is killed. */
  disconnectGraceMs: number;
  log: Logger;
}

/**
 * Runs `cmd` in a container through Docker's exec API over a hijacked connection and relays it
 * to `io`, with backpressure both ways. Resolves with the exit code from `exec inspect` (polled
 * until Docker reports the process finished — never a guessed 0). When the client goes away
 * (`io.signal`), the Docker stream is closed, and a process still running after the grace period
 * is killed: Docker has no exec-kill call, so nodelet signals the exec's host PID (checked to
 * belong to the container first).
 *
 * With streams to come (`PendingStreamIO`), the exec is created at once (`POST
 * /containers/{id}/exec`, which only records it) and started (`POST /exec/{id}/start`, which runs
 * the process) once the client's streams are all there, so the create overlaps the client's
 * stream handshake. A client that leaves first (`io` rejects, or `io.signal` aborted while the
 * create was in flight) never gets the exec started. The created exec is then left to Docker,
 * which costs no process, no stream and no containerd task, only a record: moby keeps it in the
 * container's exec store until the container stops, when `Daemon.Cleanup` (`daemon/start.go`)
 * unregisters every exec of the container (`execCommandGC`, `daemon/exec.go`, sweeps only execs
 * no container holds any more). The Engine API has no call that deletes an exec.
 */
export async function execInContainer(
  docker: Docker,
  containerId: string,
  cmd: string[],
  streams: StreamIO | PendingStreamIO,
  opts: ExecOptions,
): Promise<CommandResult> {
  const { options, io: connected } = pendingStreams(streams);
  const created = docker.getContainer(containerId).exec({
    Cmd: cmd,
    AttachStdin: options.stdin,
    AttachStdout: options.stdout,
    AttachStderr: options.stderr && !options.tty,
    Tty: options.tty,
  });
  // A failed create rejects at once; the session reports it once the client's streams are there.
  const [exec, io] = await Promise.all([created, connected]);
  if (io.signal.aborted) throw new Error('client disconnected');
  const socket = (await exec.start({ hijack: true, stdin: io.stdin !== undefined, Tty: io.tty })) as Duplex;
  if (io.resizes) void followResizes(io, (size) => exec.resize({ h: size.height, w: size.width }));
  // The relay lasts as long as the session (hours for an idle one): continued by one reaction,
  // not by this async function suspended on it (its generator and registers kept meanwhile).
  return relay(socket, io).then((how) => (how === 'aborted' ? abandoned(exec, containerId, opts) : exited(exec, opts.log)));
}

/** The client went away: the process is killed if it still runs after the grace period. */
function abandoned(exec: Docker.Exec, containerId: string, opts: ExecOptions): never {
  const timer = setTimeout(() => void killExec(exec, containerId, opts.log), opts.disconnectGraceMs);
  timer.unref();
  throw new Error('client disconnected');
}

async function exited(exec: Docker.Exec, log: Logger): Promise<CommandResult> {
  return { kind: 'exited', exitCode: await exitCodeOf(exec, log) };
}

/** Attaches to a container's main process; resolves when its streams end (the process exited). */
export async function attachToContainer(docker: Docker, containerId: string, io: StreamIO): Promise<CommandResult> {
  const container = docker.getContainer(containerId);
  const socket = (await container.attach({
    stream: true,
    hijack: true,
    stdin: io.stdin !== undefined,
    stdout: io.stdout !== undefined,
    stderr: io.stderr !== undefined && !io.tty,
  })) as Duplex;
  if (io.resizes) void followResizes(io, (size) => container.resize({ h: size.height, w: size.width }));
  // As exec's: one reaction for the session's length, no suspended frame.
  return relay(socket, io).then(detached);
}

function detached(how: 'ended' | 'aborted'): CommandResult {
  if (how === 'aborted') throw new Error('client disconnected');
  return { kind: 'detached' };
}

/**
 * Relays one hijacked Docker stream: client stdin → Docker (half-closed at EOF so the process sees
 * EOF), Docker output → stdout/stderr, demultiplexed unless it is a TTY. Docker's chunks are
 * passed on as views (never copied), and the frames of one socket read are written under
 * cork/uncork so the transport can send them as one message (and the client messages of one tick
 * go to Docker as one writev). Reading from Docker pauses whenever
 * a destination is full, so a slow client slows the container, not nodelet's memory. Resolves
 * 'ended' when Docker closed the output, 'aborted' when the client went away. The outputs are not
 * ended here: the streaming session owns them (it ends and flushes them before the status).
 */
function relay(socket: Duplex, io: StreamIO): Promise<'ended' | 'aborted'> {
  // Node's keep-alive agent armed an idle timer on this socket before Docker hijacked it; an exec
  // may idle for hours (the session's own idle timeout governs), and the timer would only be
  // refreshed on every read and write.
  stopSocketTimer(socket);
  return new Promise((resolve) => {
    const r = new Relay(socket as RelaySocket, io, resolve);
    if (io.signal.aborted) return r.finish('aborted');
    io.signal.addEventListener('abort', r);
    r.socket[kRelay] = r;
    socket.on('data', io.tty ? onTtyData : onMultiplexedData);
    socket.on('end', onDockerEnd);
    socket.on('close', onDockerClose);
    socket.on('error', onDockerClose);
    if (io.stdin) feedStdin(socket, io.stdin);
  });
}

const kRelay = Symbol('nodelet.dockerRelay');
type RelaySocket = Duplex & { [kRelay]?: Relay };

/**
 * The state of one relay. An idle exec keeps it for hours, so the Docker socket's listeners are
 * module functions that find it on the socket (`kRelay`), and it is the abort signal's listener
 * itself (`handleEvent`): no closures per session for them.
 */
class Relay {
  readonly socket: RelaySocket;
  readonly io: StreamIO;
  readonly parser: StdcopyParser | undefined;
  #resolve: ((how: 'ended' | 'aborted') => void) | undefined;
  /** Resumes the Docker socket at a destination's 'drain'; made at the first backpressure. */
  #resume: (() => void) | undefined;

  constructor(socket: RelaySocket, io: StreamIO, resolve: (how: 'ended' | 'aborted') => void) {
    this.socket = socket;
    this.io = io;
    this.parser = io.tty ? undefined : new StdcopyParser();
    this.#resolve = resolve;
  }

  /** The abort signal's listener: the client went away. */
  handleEvent(): void {
    this.finish('aborted');
  }

  finish(how: 'ended' | 'aborted'): void {
    const resolve = this.#resolve;
    if (!resolve) return;
    this.#resolve = undefined;
    this.io.signal.removeEventListener('abort', this);
    if (how === 'aborted') this.socket.destroy();
    resolve(how);
  }

  write(dest: Writable | undefined, payload: Buffer): void {
    if (!dest || dest.destroyed || dest.writableEnded) return;
    const socket = this.socket;
    if (!dest.write(payload) && !socket.isPaused()) {
      socket.pause();
      dest.once('drain', (this.#resume ??= () => socket.resume()));
    }
  }

  /** A demultiplexed payload (`StdcopyParser.push`'s callback, called with the relay as `this`). */
  static emit(this: Relay, stream: number, payload: Buffer): void {
    this.write(stream === 1 ? this.io.stdout : this.io.stderr, payload);
  }
}

function onTtyData(this: RelaySocket, chunk: Buffer): void {
  const r = this[kRelay];
  r?.write(r.io.stdout, chunk);
}

function onMultiplexedData(this: RelaySocket, chunk: Buffer): void {
  const r = this[kRelay];
  if (!r?.parser) return;
  const { stdout, stderr } = r.io;
  stdout?.cork();
  stderr?.cork();
  try {
    r.parser.push(chunk, Relay.emit, r);
  } catch {
    this.destroy();
  }
  stdout?.uncork();
  stderr?.uncork();
}

function onDockerEnd(this: RelaySocket): void {
  this[kRelay]?.finish('ended');
}

function onDockerClose(this: RelaySocket): void {
  const r = this[kRelay];
  r?.finish(r.io.signal.aborted ? 'aborted' : 'ended');
}

/** Client stdin → Docker, half-closed at EOF (or a stdin error) so the process sees EOF. */
function feedStdin(socket: Duplex, stdin: Readable): void {
  const resumeStdin = () => stdin.resume();
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  stdin.on('data', (chunk: Buffer) => {
    // The transports parse a whole socket read at once, so its messages (two or more 32 KiB
    // kubectl writes per 64 KiB read) arrive here back to back: held under cork until the
    // tick ends, they reach Docker as one writev instead of one write each. Order, bytes and
    // the backlog check below are unchanged (writableLength counts corked bytes).
    if (!corked) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    socket.write(chunk);
    // Our own bound, not the socket's 16 KiB high-water mark: every 32 KiB client message
    // would cross that and cost a pause, a 'drain' and a resume, while Docker keeps up.
    if (socket.writableLength > STDIN_BACKLOG_LIMIT && !stdin.isPaused()) {
      stdin.pause();
      socket.once('drain', resumeStdin);
    }
  });
  stdin.on('end', () => socket.end());
  stdin.on('error', () => socket.end());
}

async function followResizes(io: StreamIO, apply: (size: { width: number; height: number }) => Promise<unknown>): Promise<void> {
  if (!io.resizes) return;
  try {
    for await (const size of io.resizes) {
      // Docker refuses a resize before the process has a TTY; the next size will land.
      await apply(size).catch(() => undefined);
    }
  } catch {
    /* the session ended */
  }
}

/** Exit code once Docker reports the exec finished (it can lag the stream's EOF slightly). */
async function exitCodeOf(exec: Docker.Exec, log: Logger): Promise<number> {
  for (let i = 0; i < 50; i++) {
    const info = await exec.inspect();
    if (!info.Running) {
      if (typeof info.ExitCode !== 'number') throw new Error('Docker reported no exit code');
      return info.ExitCode;
    }
    await new Promise((r) => setTimeout(r, Math.min(10 * 2 ** i, 500)));
  }
  log.warn({ exec: exec.id }, 'Exec session in the container terminated but process still running');
  throw new Error('exec session ended but the process is still running');
}

async function killExec(exec: Docker.Exec, containerId: string, log: Logger): Promise<void> {
  try {
    const info = await exec.inspect();
    const pid = (info as { Pid?: number }).Pid;
    if (!info.Running || !pid) return;
    // Only signal a PID that is in this container's cgroup: guards against PID reuse and against
    // nodelet running in another PID namespace than Docker.
    const cgroup = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
    if (!cgroup.includes(containerId)) {
      log.warn({ exec: exec.id, pid }, 'Cannot kill the exec of a disconnected client: its PID is not visible here');
      return;
    }
    process.kill(pid, 'SIGKILL');
    log.info({ exec: exec.id, pid }, 'Killed the exec of a disconnected client');
  } catch (err) {
    log.debug({ err }, 'Killing an abandoned exec failed');
  }
}
