import type { Readable, Writable } from 'node:stream';
import { finished } from 'node:stream/promises';
import type { Logger } from '../../logging/index.js';
import type { CommandResult, PendingStreamIO, RemoteCommandVersion, StreamIO, StreamOptions } from '../types.js';
import { ResizeDecoder, ResizeQueue } from './resize.js';
import { statusPayload, type SessionKind, type SessionOutcome } from './status.js';

/** What the command is, decided before the upgrade (the protocol version is negotiated once, by the route). */
export interface RemoteCommandSpec {
  readonly version: RemoteCommandVersion;
  readonly options: StreamOptions;
  readonly kind: SessionKind;
  /** argv, for the NonZeroExitCode message (exec); `[]` for attach. */
  readonly command: readonly string[];
  /**
   * Runs the command: called when the session starts (`prepare`), before the client's streams are
   * all there, so the runtime's setup overlaps the stream handshake; the runtime starts the
   * command once `pending.io` resolves, and never when it rejects (the client left first).
   */
  readonly run: (pending: PendingStreamIO) => Promise<CommandResult>;
  /** Only the level methods: Fastify's `request.log` children fit as well as nodelet's pino Logger. */
  readonly log: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;
}

/** What a transport (WebSocket channels, SPDY streams) gives the core once the client is connected. */
export interface CommandTransport {
  readonly stdin: Readable | undefined;
  readonly stdout: Writable | undefined;
  readonly stderr: Writable | undefined;
  /** Resolves once the client is unreachable (disconnect, idle timeout, protocol violation). */
  readonly gone: Promise<void>;
  /** No more input will be read: EOF stdin (WebSocket) — called when the run ends or the client left. */
  endInput(): void;
  /**
   * Writes the error-channel payload (if any), then ends the connection letting the client drain
   * (close-and-wait). Resolves once the connection is closed; never rejects.
   */
  finish(payload: string | undefined): Promise<void>;
}

/** A run that needs nothing before the client's streams are there (attach, tests): it waits for them. */
export function whenConnected(run: (io: StreamIO) => Promise<CommandResult>): (pending: PendingStreamIO) => Promise<CommandResult> {
  return (pending) => pending.io.then(run);
}

/**
 * The transport-neutral remote command (the kubelet's `ServeExec`/`ServeAttach`): runs the
 * command with the transport's streams, and when it ends — inputs ended, outputs ended and flushed
 * (this is their one owner: the runtime never ends them), then the status, then close-and-wait.
 * When the client goes away first, the runtime is aborted (`io.signal`), stdin gets EOF, resizes
 * end, and nothing more is sent.
 */
export class RemoteCommand {
  readonly spec: RemoteCommandSpec;
  /** The terminal sizes the transport feeds (`resize`); undefined without a TTY. */
  readonly resizes: ResizeQueue | undefined;
  #decoder: ResizeDecoder | undefined;
  readonly #abort = new AbortController();
  #runDone = false;
  /** The client left (`t.gone` resolved and its handler ran). */
  #left = false;
  /** The run, from `prepare` on; its `pending.io` is settled by `serve` (resolved) or `abandon` (rejected). */
  #outcome: Promise<SessionOutcome> | undefined;
  /** Settles `pending.io`; dropped once used (an idle session keeps no closures for it). */
  #connect: { resolve(io: StreamIO): void; reject(reason: Error): void } | undefined;

  constructor(spec: RemoteCommandSpec) {
    this.spec = spec;
    this.resizes = spec.options.tty ? new ResizeQueue() : undefined;
  }

  /** Bytes from the client's resize channel/stream (JSON objects, split anywhere). */
  resize(chunk: Buffer): void {
    if (!this.resizes) return;
    this.#decoder ??= new ResizeDecoder();
    for (const size of this.#decoder.push(chunk)) this.resizes.push(size);
  }

  /**
   * Hands the command to the runtime now, before the client's streams are all there (a SPDY client
   * opens them one round trip at a time): Docker's exec create then overlaps the handshake, and the
   * runtime waits for `serve` (or `abandon`) to start it (or not). Later calls do nothing.
   */
  prepare(): void {
    if (this.#outcome) return;
    const io = new Promise<StreamIO>((resolve, reject) => (this.#connect = { resolve, reject }));
    // A runtime that failed before reading `io` must not leave its rejection unhandled.
    io.catch(() => undefined);
    this.#outcome = this.#run({ options: this.spec.options, io });
  }

  /**
   * The client left before its streams were complete: the runtime never starts the command.
   * Resolves once the runtime let go of it (never rejects).
   */
  async abandon(): Promise<void> {
    if (!this.#outcome) return;
    this.#abort.abort(new Error('client disconnected'));
    this.#settle()?.reject(new Error('client disconnected before its streams were complete'));
    const outcome = await this.#outcome;
    if (outcome.kind === 'error') this.spec.log.debug({ err: outcome.error }, 'remote command: never started, the client left');
  }

  #settle(): { resolve(io: StreamIO): void; reject(reason: Error): void } | undefined {
    const connect = this.#connect;
    this.#connect = undefined;
    return connect;
  }

  /**
   * Runs the command over `t`; resolves (never rejects) once it settled and the connection is over.
   * While the command runs (hours for an idle exec) the session is held by reactions on the
   * outcome and on `t.gone`, not by a suspended async frame (nor by an async function's promise
   * waiting on the one it returned); `#ended` continues it.
   */
  serve(t: CommandTransport): Promise<void> {
    const gone = t.gone.then(() => {
      this.#left = true;
      if (!this.#runDone) this.#abort.abort(new Error('client disconnected'));
      t.endInput();
      this.resizes?.close();
      return undefined;
    });
    const io: StreamIO = { stdin: t.stdin, stdout: t.stdout, stderr: t.stderr, tty: this.spec.options.tty, resizes: this.resizes, signal: this.#abort.signal };
    this.prepare();
    this.#settle()?.resolve(io);
    const outcome = this.#outcome as Promise<SessionOutcome>;
    return Promise.race([outcome, gone]).then((ended) => this.#ended(t, outcome, ended));
  }

  /** The run ended (`ended`) or the client left first (undefined): outputs flushed, then the status. */
  async #ended(t: CommandTransport, outcome: Promise<SessionOutcome>, ended: SessionOutcome | undefined): Promise<void> {
    const { spec } = this;
    if (ended === undefined) {
      // Client gone mid-run: the runtime was aborted; let it finish.
      const late = await outcome;
      if (late.kind === 'error') spec.log.debug({ err: late.error }, 'remote command: run ended after disconnect');
      return;
    }
    this.#runDone = true;
    t.endInput();
    this.resizes?.close();
    if (ended.kind === 'error') spec.log.info({ err: ended.error, kind: spec.kind }, 'remote command failed');
    // Every stdout/stderr byte is handed to the transport before the status.
    const outputs = [t.stdout, t.stderr].filter((w): w is Writable => w !== undefined);
    for (const w of outputs) if (!w.writableEnded && !w.destroyed) w.end();
    // Only the writable side: a SPDY stream is a Duplex whose readable side the client may never end.
    await Promise.race([Promise.all(outputs.map((w) => finished(w, { readable: false }).catch(() => undefined))), t.gone]);
    if (this.#left) return;
    await t.finish(statusPayload(spec.version, spec.kind, spec.command, ended));
  }

  /** The run's outcome, its failure included; not an async function: no suspended frame per open session. */
  #run(pending: PendingStreamIO): Promise<SessionOutcome> {
    try {
      return this.spec.run(pending).then(succeeded, failed);
    } catch (error) {
      return Promise.resolve(failed(error));
    }
  }
}

/** The run's outcome handlers, shared (not closures per session). */
function succeeded(result: CommandResult): SessionOutcome {
  return result;
}
function failed(error: unknown): SessionOutcome {
  return { kind: 'error', error };
}
