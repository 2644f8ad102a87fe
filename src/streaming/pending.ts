import type { PendingStreamIO, StreamIO } from './types.js';

/**
 * `io` as streams to come: a bundle that is already complete (probes, `/run`) resolves at once.
 * The options are read off the bundle: a stream is asked for when it is there (stderr never with
 * a TTY, as the transports build it).
 */
export function pendingStreams(io: StreamIO | PendingStreamIO): PendingStreamIO {
  if (!('signal' in io)) return io;
  return {
    options: { stdin: io.stdin !== undefined, stdout: io.stdout !== undefined, stderr: io.stderr !== undefined && !io.tty, tty: io.tty },
    io: Promise.resolve(io),
  };
}
