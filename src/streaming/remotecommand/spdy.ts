import type { Logger } from '../../logging/index.js';
import type { SpdyConnection, SpdyStream } from '../spdy/index.js';
import type { CommandResult, RemoteCommandVersion, StreamIO, StreamOptions } from '../types.js';
import { ResizeDecoder, ResizeQueue } from './resize.js';
import { statusPayload, type SessionKind, type SessionOutcome } from './status.js';

export interface SpdySessionOptions {
  readonly version: RemoteCommandVersion;
  readonly options: StreamOptions;
  /** The client must open all its streams within this (the kubelet's 30 s). */
  readonly creationTimeoutMs: number;
  /** After the status, how long the client may take to close the connection. */
  readonly closeWaitMs: number;
  readonly log: Logger;
  readonly run: (io: StreamIO) => Promise<CommandResult>;
  readonly command: readonly string[];
  readonly kind: SessionKind;
}

type StreamType = 'error' | 'stdin' | 'stdout' | 'stderr' | 'resize';

/**
 * The streams a client creates, in order (client-go `v2.go` `createStreams`, kubelet
 * `waitForStreams`): error always; stdin, stdout, stderr as requested (no stderr with a TTY);
 * resize with a TTY from v3 on.
 */
export function expectedStreams(version: RemoteCommandVersion, o: StreamOptions): Set<StreamType> {
  const set = new Set<StreamType>(['error']);
  if (o.stdin) set.add('stdin');
  if (o.stdout) set.add('stdout');
  if (o.stderr && !o.tty) set.add('stderr');
  if (o.tty && version !== 'v1' && version !== 'v2') set.add('resize');
  return set;
}

/**
 * Serves one exec/attach over an accepted SPDY connection (the kubelet's `httpstream` remote
 * command handler). Every expected stream gets its SYN_REPLY before the command starts — kubectl
 * blocks reading stdout until all its streams are answered, so output racing ahead of a reply
 * would deadlock it (kubectl-contract.md §8). When the command ends: outputs are FINed, the
 * status goes on the error stream (v4 always, v1–v3 on failure only), then the client gets
 * `closeWaitMs` to hang up before nodelet does. Resolves (never rejects) once the session is over.
 */
export function serveSpdyRemoteCommand(conn: SpdyConnection, opts: SpdySessionOptions): Promise<void> {
  const { log } = opts;
  const expected = expectedStreams(opts.version, opts.options);
  const streams = new Map<StreamType, SpdyStream>();
  const abort = new AbortController();
  let closed = false;

  return new Promise<void>((resolve) => {
    let started = false;
    const replies: Promise<void>[] = [];
    const creation = setTimeout(() => {
      log.info({ have: [...streams.keys()], want: [...expected] }, 'timed out waiting for client to create streams');
      conn.close();
    }, opts.creationTimeoutMs);
    creation.unref();

    conn.once('close', () => {
      closed = true;
      clearTimeout(creation);
      abort.abort();
      if (!started) resolve();
    });

    conn.on('stream', (stream: SpdyStream) => {
      // A stream must never throw into the process, whatever the client does with it.
      stream.on('error', () => undefined);
      const type = stream.headers.streamtype as StreamType | undefined;
      if (started || !type || !expected.has(type) || streams.has(type)) {
        // The kubelet logs unknown stream types and ignores them; a late or duplicate one is reset.
        log.debug({ streamtype: type, id: stream.id }, 'ignoring unexpected SPDY stream');
        stream.reset();
        return;
      }
      streams.set(type, stream);
      replies.push(stream.reply());
      if (streams.size === expected.size) {
        started = true;
        clearTimeout(creation);
        void Promise.all(replies)
          .then(() => run())
          .finally(resolve);
      }
    });

    async function run(): Promise<void> {
      const resizes = streams.has('resize') ? new ResizeQueue() : undefined;
      const resizeStream = streams.get('resize');
      if (resizeStream && resizes) {
        const decoder = new ResizeDecoder();
        resizeStream.on('data', (chunk: Buffer) => {
          for (const size of decoder.push(chunk)) resizes.push(size);
        });
        resizeStream.on('end', () => resizes.close());
        resizeStream.on('close', () => resizes.close());
      }
      const io: StreamIO = {
        stdin: streams.get('stdin'),
        stdout: streams.get('stdout'),
        stderr: streams.get('stderr'),
        tty: opts.options.tty,
        resizes,
        signal: abort.signal,
      };
      let outcome: SessionOutcome;
      try {
        outcome = await opts.run(io);
      } catch (error) {
        outcome = { kind: 'error', error };
      }
      resizes?.close();
      if (closed) return;
      const errorStream = streams.get('error');
      const payload = statusPayload(opts.version, opts.kind, opts.command, outcome);
      if (errorStream) {
        if (payload !== undefined) errorStream.write(payload);
        errorStream.end();
      }
      // stdin is ours to close once the command is over (the kubelet resets it).
      streams.get('stdin')?.destroy();
      await waitForClientClose(conn, opts.closeWaitMs);
    }
  });
}

/** Lets the client read everything and hang up itself; then, or after `ms`, the session ends. */
function waitForClientClose(conn: SpdyConnection, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      conn.goAway();
      conn.close();
    }, ms);
    timer.unref();
    conn.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
