import type { Readable, Writable } from 'node:stream';
import type Docker from 'dockerode';
import { StatusError, internalError } from '../../api/errors.js';
import { LogWriter } from '../../streaming/logs/writer.js';
import type { LogOptions } from '../../streaming/types.js';
import { statusCodeOf } from './client.js';
import { StdcopyParser } from './demux.js';
import { JsonFileDecoder } from './json-file.js';
import { openLogFiles } from './log-files.js';

/**
 * A container's log: for a json-file log on a local engine (`readFiles`), from the engine's own
 * files (log-files.ts) — Docker's follow loses and repeats lines across a rotation, the files
 * followed by inode do not, and a read of them is about three times the engine's speed; otherwise
 * from the engine's logs API. The path read is always the engine's `LogPath` for the container,
 * never one built from request text.
 *
 * Docker is asked for timestamps whenever the answer needs them: they are what `since` is
 * applied with (Docker's own `since` has whole seconds, so it only narrows the read) and what
 * the kubelet's fixed-width prefix is made from; a plain read passes the text through. The stream is stdcopy-framed without a TTY and raw with one; a follow
 * stream ends when the container stops (Docker closes it), a plain read at the end of the log.
 *
 * Backpressure: the source is paused whenever `out` is full, so a slow reader slows the
 * read and memory stays at one chunk plus `out`'s buffer. `signal` (the client left)
 * destroys the source. `out` is ended when the log is done; on an error it is left open
 * for the caller, who may still be able to answer with a status.
 */
export async function containerLogs(docker: Docker, id: string, opts: LogOptions, out: Writable, signal: AbortSignal, source: { readFiles?: boolean } = {}): Promise<void> {
  let stream: Readable | undefined;
  let decode: Decode | undefined;
  try {
    const info = signal.aborted ? undefined : await docker.getContainer(id).inspect({ abortSignal: signal });
    if (info && source.readFiles) {
      const files = await readJsonFile(docker, info, opts);
      if (files) [stream, decode] = [files, jsonFileDecode(opts)];
    }
    if (info && !stream && !signal.aborted) {
      stream = await openLogStream(docker, id, opts, signal);
      decode = info.Config?.Tty === true ? rawDecode : stdcopyDecode();
    }
  } catch (err) {
    stream?.destroy();
    if (!signal.aborted) rethrow(err, id);
    stream = undefined;
  }
  if (stream && decode) await relay(stream, decode, opts, out, signal);
  if (!out.writableEnded && !out.destroyed) out.end();
}

/** Feeds one chunk of the source to the writer: `push(stream, payload, recordEnd)` as LogWriter's. */
type Decode = (chunk: Buffer, push: (stream: number, payload: Buffer, recordEnd?: boolean) => void) => void;

/** A TTY's log is raw: records are found by the writer. */
const rawDecode: Decode = (chunk, push) => push(1, chunk);

function stdcopyDecode(): Decode {
  const parser = new StdcopyParser();
  // Inside `emit` the parser is at a boundary exactly when the piece completes its frame:
  // one frame is one Docker log record. Stream 3 (system error) is not log content.
  return (chunk, push) =>
    parser.push(chunk, (stream, payload) => {
      if (stream !== 3) push(stream, payload, parser.atBoundary);
    });
}

function jsonFileDecode(opts: LogOptions): Decode {
  const decoder = new JsonFileDecoder({ stamped: stampedRead(opts), stream: opts.stream });
  return (chunk, push) => decoder.push(chunk, (stream, payload) => push(stream, payload, true));
}

/**
 * The container's json-file log files, when the engine writes them uncompressed here and they can
 * be opened (undefined otherwise: the engine is asked instead).
 */
async function readJsonFile(docker: Docker, info: Docker.ContainerInspectInfo, opts: LogOptions): Promise<Readable | undefined> {
  const logConfig = info.HostConfig?.LogConfig;
  if (logConfig?.Type !== 'json-file' || !info.LogPath || logConfig.Config?.['compress'] === 'true') return undefined;
  const maxFiles = Number(logConfig.Config?.['max-file'] ?? '1');
  // As the kubelet's follow (pkg/kubelet/kuberuntime/logs/logs.go `isContainerRunning`): gone is
  // stopped, and an engine that does not answer ends the follow with its error — without the
  // engine nothing will say the container stopped, and a stopped engine stops its containers.
  const running = async (): Promise<boolean> => {
    try {
      return (await docker.getContainer(info.Id).inspect()).State?.Running === true;
    } catch (err) {
      if (statusCodeOf(err) === 404) return false;
      throw err;
    }
  };
  return openLogFiles({
    path: info.LogPath,
    follow: opts.follow,
    maxFiles: Number.isInteger(maxFiles) && maxFiles > 0 ? Math.min(maxFiles, MAX_LOG_FILES) : 1,
    ...(opts.tailLines !== undefined ? { tailLines: opts.tailLines } : {}),
    running,
  });
}

/** More rotated files than any node sets are not looked for. */
const MAX_LOG_FILES = 100;

/** Docker's timestamps are asked for only when the answer needs them (`timestamps`, `since`). */
function stampedRead(opts: LogOptions): boolean {
  return opts.timestamps || opts.since !== undefined;
}

/** dockerode's `container.logs()` buffers the whole answer unless it follows: dial it as a stream. */
function openLogStream(docker: Docker, id: string, opts: LogOptions, signal: AbortSignal): Promise<Readable | undefined> {
  // Whole seconds, rounded down: Docker then returns a superset and the writer filters exactly.
  const since = opts.since ? Math.floor(opts.since.getTime() / 1000) : 0;
  const query = {
    follow: opts.follow,
    stdout: opts.stream !== 'Stderr',
    stderr: opts.stream !== 'Stdout',
    timestamps: stampedRead(opts),
    ...(since > 0 ? { since } : {}),
    ...(opts.tailLines !== undefined ? { tail: opts.tailLines } : {}),
  };
  return new Promise((resolve, reject) => {
    docker.modem.dial(
      {
        path: `/containers/${encodeURIComponent(id)}/logs?`,
        method: 'GET',
        isStream: true,
        abortSignal: signal,
        statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
        options: query,
      },
      (err, result) => {
        if (signal.aborted) {
          (result as Readable | null)?.destroy();
          return resolve(undefined);
        }
        if (err) return reject(err);
        resolve(result as Readable);
      },
    );
  });
}

/**
 * Log work (parsing Docker's records, writing to the client) allowed per event-loop turn, across
 * every log stream. Backpressure only shows once a client's socket buffers are full, and on
 * loopback those grow to megabytes per connection: 400 followers of a 50 MB log that never read
 * kept the event loop saturated for minutes while their buffers filled, and /healthz waited up to
 * seconds behind that work. Past the budget a stream's next chunk waits for the next turn, after
 * pending I/O — a health check, any other request — has been served.
 */
export const LOG_TURN_BUDGET_MS = 10;

class TurnBudget {
  /** When this turn's first log work began; -1: none yet. Wall time, so that what the work sets
   * off between chunks (socket writes flushed on the next tick, Docker's HTTP parsing) counts too. */
  #since = -1;
  #turnScheduled = false;
  readonly #waiting: (() => void)[] = [];

  get available(): boolean {
    return this.#since < 0 || performance.now() - this.#since < LOG_TURN_BUDGET_MS;
  }

  /** Log work is about to run. */
  start(): void {
    if (this.#since < 0) this.#since = performance.now();
    this.#scheduleTurn();
  }

  /** Runs `fn` in a later turn, first come first served. */
  defer(fn: () => void): void {
    this.#waiting.push(fn);
    this.#scheduleTurn();
  }

  /** The check phase ends a turn: after the poll phase's I/O, before the next one. */
  #scheduleTurn(): void {
    if (this.#turnScheduled) return;
    this.#turnScheduled = true;
    setImmediate(() => {
      this.#turnScheduled = false;
      this.#since = -1;
      while (this.#waiting.length > 0 && this.available) this.#waiting.shift()?.();
      if (this.#waiting.length > 0) this.#scheduleTurn();
    });
  }
}

/** Largest piece of the Docker response worked on at once. */
const MAX_CHUNK = 64 * 1024;

/** One budget for the process: the event loop is shared by every nodelet in it. */
const budget = new TurnBudget();

function relay(stream: Readable, decode: Decode, opts: LogOptions, out: Writable, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    let waitingForDrain = false;
    let deferred = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', stop);
      out.off('close', stop);
      out.off('drain', onDrain);
      stream.destroy();
      if (err) reject(err);
      else resolve();
    };
    const stop = () => finish();
    const onDrain = () => {
      waitingForDrain = false;
      pump();
    };
    if (signal.aborted) return finish();
    signal.addEventListener('abort', stop);
    // The reader went away without an abort (destroyed body): stop reading Docker as well.
    out.once('close', stop);

    // What one chunk of the source makes is written to `out` as one piece: a chunk holds hundreds of
    // short records, and a write each (a chunk of HTTP chunked encoding each) cost more than the rest.
    let batch: Buffer[] = [];
    const writer = new LogWriter({ ...opts, stamped: stampedRead(opts) }, (piece) => batch.push(piece) > 0);
    const push = (id: number, payload: Buffer, recordEnd?: boolean) => writer.push(id, payload, recordEnd);
    /** Writes the batch; false when `out` is full. */
    const flush = (): boolean => {
      if (batch.length === 0 || out.writableEnded || out.destroyed) return true;
      const data = batch.length === 1 ? batch[0]! : Buffer.concat(batch);
      batch = [];
      return out.write(data);
    };
    /** One chunk through the decoder and writer; false once the stream is finished. */
    const handle = (chunk: Buffer): boolean => {
      budget.start();
      try {
        decode(chunk, push);
      } catch (err) {
        flush();
        finish(err as Error);
        return false;
      }
      const room = flush();
      if (writer.done) {
        finish();
        return false;
      }
      if (!room) {
        waitingForDrain = true;
        out.once('drain', onDrain);
      }
      return true;
    };
    /**
     * Reads Docker (paused mode: what is not read stays in the response, then in the socket, so
     * Docker itself is held back) while the client has room and the turn has budget.
     */
    const pump = () => {
      while (!settled && !waitingForDrain) {
        if (!budget.available) {
          if (!deferred) {
            deferred = true;
            budget.defer(() => {
              deferred = false;
              pump();
            });
          }
          return;
        }
        // At most one socket read's worth: a bigger backlog is worked through over several turns.
        const chunk = (stream.readableLength > MAX_CHUNK ? stream.read(MAX_CHUNK) : stream.read()) as Buffer | null;
        // Nothing buffered: 'readable' says when there is.
        if (chunk === null) return;
        if (!handle(chunk)) return;
      }
    };
    stream.on('readable', pump);
    stream.once('end', () => finish());
    stream.on('error', (err) => finish(signal.aborted ? undefined : err));
    stream.once('close', () => finish(stream.readableEnded || signal.aborted ? undefined : (stream.errored ?? new Error('Docker closed the log stream early'))));
  });
}

/** Docker's refusals as statuses: a removed container is a 404, anything else the runtime's fault. */
function rethrow(err: unknown, id: string): never {
  if (err instanceof StatusError) throw err;
  if (statusCodeOf(err) === 404) throw new StatusError('NotFound', `container ${id} no longer exists`);
  throw internalError(`failed to read the log of container ${id}: ${err instanceof Error ? err.message : String(err)}`);
}
