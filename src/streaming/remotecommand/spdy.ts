import type { SpdyConnection, SpdyStream } from '../spdy/index.js';
import type { RemoteCommandVersion, StreamOptions } from '../types.js';
import { RemoteCommand, type RemoteCommandSpec } from './session.js';

export interface SpdySessionOptions extends RemoteCommandSpec {
  /** The client must open all its streams within this (the kubelet's 30 s). */
  readonly creationTimeoutMs: number;
  /** After the status, how long the client may take to close the connection. */
  readonly closeWaitMs: number;
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
 * command handler). The command is handed to the runtime at once (`RemoteCommand.prepare`): the
 * client opens its streams one after another, each waiting for its SYN_REPLY (client-go
 * `remotecommand/v2.go` `createStreams`), and Docker's exec create overlaps those round trips.
 * The command starts once every expected stream is there and has its SYN_REPLY (the kubelet's
 * `waitForStreams`, `pkg/kubelet/cri/streaming/remotecommand/httpstream.go`) — kubectl blocks
 * reading stdout until all its streams are answered, so output racing ahead of a reply would
 * deadlock it. A client that leaves (or times out) before its streams are complete never gets
 * the command started (`RemoteCommand.abandon`). When the command ends: outputs are FINed, the
 * status goes on the error stream (v4 always, v1–v3 on failure only), then the client gets
 * `closeWaitMs` to hang up before nodelet does. Resolves (never rejects) once the session is over.
 */
export function serveSpdyRemoteCommand(conn: SpdyConnection, opts: SpdySessionOptions): Promise<void> {
  const { log } = opts;
  const expected = expectedStreams(opts.version, opts.options);
  const streams = new Map<StreamType, SpdyStream>();
  const closed = new Promise<void>((resolve) => conn.once('close', () => resolve()));
  const command = new RemoteCommand(opts);
  command.prepare();

  return new Promise<void>((resolve) => {
    let started = false;
    const replies: Promise<void>[] = [];
    const creation = setTimeout(() => {
      log.info({ have: [...streams.keys()], want: [...expected] }, 'timed out waiting for client to create streams');
      conn.close();
    }, opts.creationTimeoutMs);
    creation.unref();

    void closed.then(() => {
      clearTimeout(creation);
      if (started) return;
      // The session is over now; the runtime lets go of what it prepared on its own time.
      void command.abandon();
      resolve();
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

    function run(): Promise<void> {
      const resizeStream = streams.get('resize');
      if (resizeStream) {
        resizeStream.on('data', (chunk: Buffer) => command.resize(chunk));
        resizeStream.on('end', () => command.resizes?.close());
        resizeStream.on('close', () => command.resizes?.close());
      }
      const stdin = streams.get('stdin');
      return command.serve({
        stdin,
        stdout: streams.get('stdout'),
        stderr: streams.get('stderr'),
        gone: closed,
        // Streams end with the connection; stdin is reset after the status (below).
        endInput: () => undefined,
        finish: async (payload) => {
          const errorStream = streams.get('error');
          if (errorStream) errorStream.end(payload);
          // stdin is ours to close once the command is over (the kubelet resets it).
          stdin?.destroy();
          await waitForClientClose(conn, opts.closeWaitMs);
        },
      });
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
