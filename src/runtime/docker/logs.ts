import type { IncomingMessage } from 'node:http';
import type { Writable } from 'node:stream';
import type Docker from 'dockerode';
import { StatusError, internalError } from '../../api/errors.js';
import { LogWriter } from '../../streaming/logs/writer.js';
import type { LogOptions } from '../../streaming/types.js';
import { statusCodeOf } from './client.js';
import { StdcopyParser } from './demux.js';

/**
 * A container's log through Docker's logs API — never by opening a file: the kubelet reads CRI log
 * files, nodelet asks the engine, so no path is ever built from request text.
 *
 * Docker is always asked for timestamps: they are what `since` is applied with (Docker's own
 * `since` has whole seconds, so it only narrows the read) and what the kubelet's fixed-width
 * prefix is made from. The stream is stdcopy-framed without a TTY and raw with one; a follow
 * stream ends when the container stops (Docker closes it), a plain read at the end of the log.
 *
 * Backpressure: the Docker response is paused whenever `out` is full, so a slow reader slows the
 * read and memory stays at one Docker chunk plus `out`'s buffer. `signal` (the client left)
 * destroys the Docker response. `out` is ended when the log is done; on an error it is left open
 * for the caller, who may still be able to answer with a status.
 */
export async function containerLogs(docker: Docker, id: string, opts: LogOptions, out: Writable, signal: AbortSignal): Promise<void> {
  let stream: IncomingMessage | undefined;
  let tty = false;
  try {
    if (!signal.aborted) tty = (await docker.getContainer(id).inspect({ abortSignal: signal })).Config?.Tty === true;
    if (!signal.aborted) stream = await openLogStream(docker, id, opts, signal);
  } catch (err) {
    if (!signal.aborted) rethrow(err, id);
  }
  if (stream) await relay(stream, tty, opts, out, signal);
  if (!out.writableEnded && !out.destroyed) out.end();
}

/** dockerode's `container.logs()` buffers the whole answer unless it follows: dial it as a stream. */
function openLogStream(docker: Docker, id: string, opts: LogOptions, signal: AbortSignal): Promise<IncomingMessage | undefined> {
  // Whole seconds, rounded down: Docker then returns a superset and the writer filters exactly.
  const since = opts.since ? Math.floor(opts.since.getTime() / 1000) : 0;
  const query = {
    follow: opts.follow,
    stdout: opts.stream !== 'Stderr',
    stderr: opts.stream !== 'Stdout',
    timestamps: true,
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
          (result as IncomingMessage | null)?.destroy();
          return resolve(undefined);
        }
        if (err) return reject(err);
        resolve(result as IncomingMessage);
      },
    );
  });
}

function relay(stream: IncomingMessage, tty: boolean, opts: LogOptions, out: Writable, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', stop);
      out.off('close', stop);
      out.off('drain', resume);
      stream.destroy();
      if (err) reject(err);
      else resolve();
    };
    const stop = () => finish();
    const resume = () => stream.resume();
    if (signal.aborted) return finish();
    signal.addEventListener('abort', stop);
    // The reader went away without an abort (destroyed body): stop reading Docker as well.
    out.once('close', stop);

    const writer = new LogWriter(opts, (chunk) => (out.writableEnded || out.destroyed ? false : out.write(chunk)));
    const parser = tty ? undefined : new StdcopyParser();
    stream.on('data', (chunk: Buffer) => {
      try {
        if (!parser) writer.push(1, chunk);
        // Inside `emit` the parser is at a boundary exactly when the piece completes its frame:
        // one frame is one Docker log record. Stream 3 (system error) is not log content.
        else
          parser.push(chunk, (id, payload) => {
            if (id !== 3) writer.push(id, payload, parser.atBoundary);
          });
      } catch (err) {
        return finish(err as Error);
      }
      if (writer.done) return finish();
      if (writer.takeBlocked()) {
        stream.pause();
        out.once('drain', resume);
      }
    });
    stream.once('end', () => finish());
    stream.on('error', (err) => finish(signal.aborted ? undefined : err));
    stream.once('close', () => finish(stream.readableEnded || signal.aborted ? undefined : new Error('Docker closed the log stream early')));
  });
}

/** Docker's refusals as statuses: a removed container is a 404, anything else the runtime's fault. */
function rethrow(err: unknown, id: string): never {
  if (err instanceof StatusError) throw err;
  if (statusCodeOf(err) === 404) throw new StatusError('NotFound', `container ${id} no longer exists`);
  throw internalError(`failed to read the log of container ${id}: ${err instanceof Error ? err.message : String(err)}`);
}
