import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../logging/index.js';

/**
 * The connection an HTTP server event belongs to, for every event a client's bytes can cause
 * (`node:http`, `node:https`, `node:tls`, `node:net` server events and their arguments).
 */
const connectionOf: Readonly<Record<string, (args: readonly unknown[]) => Duplex | undefined>> = {
  connection: (args) => args[0] as Duplex,
  secureConnection: (args) => args[0] as Duplex,
  request: (args) => (args[0] as IncomingMessage).socket,
  checkContinue: (args) => (args[0] as IncomingMessage).socket,
  checkExpectation: (args) => (args[0] as IncomingMessage).socket,
  upgrade: (args) => args[1] as Duplex,
  connect: (args) => args[1] as Duplex,
  clientError: (args) => args[1] as Duplex,
  tlsClientError: (args) => args[1] as Duplex,
};

/**
 * The process-level guarantee behind every listener: a handler of a client-caused server event
 * (`request`, `upgrade`, `connection`, …) that throws ends the connection that caused it, never
 * the process. Go's `net/http` gives the kubelet the same (`conn.serve` recovers a handler's
 * panic, logs "http: panic serving <addr>" and closes that connection: `net/http/server.go`);
 * in Node an exception thrown in an event listener is an uncaught exception, which exits. It
 * wraps `server.emit`, so it also covers listeners added later and Node's own.
 */
export function guardConnectionEvents(server: Server, log: Logger, onCaught: () => void = () => undefined): void {
  const emit = server.emit.bind(server) as (event: string | symbol, ...args: unknown[]) => boolean;
  server.emit = function guardedEmit(event: string | symbol, ...args: unknown[]): boolean {
    const connection = typeof event === 'string' ? connectionOf[event] : undefined;
    if (!connection) return emit(event, ...args);
    try {
      return emit(event, ...args);
    } catch (err) {
      const socket = connection(args);
      onCaught();
      log.error({ err, event, remoteAddress: (socket as { remoteAddress?: string } | undefined)?.remoteAddress }, 'http: panic serving a connection; closing it');
      socket?.destroy();
      return true;
    }
  } as Server['emit'];
}

const kAnswers = Symbol('nodelet.pendingAnswers');
const kPending = Symbol('nodelet.pendingAnswer');
interface PendingAnswers {
  count: number;
  waiters: (() => void)[];
}
type TrackedSocket = Duplex & { [kAnswers]?: PendingAnswers };
/** A response not yet answered holds its socket's count; it lets go once, at `finish` or `close`. */
type TrackedResponse = ServerResponse & { [kPending]?: PendingAnswers | undefined };

/**
 * Counts, per connection, the requests whose answers are not complete, so an Upgrade request
 * pipelined behind them waits its turn (`whenAnswered`). Node parses pipelined requests ahead of
 * their answers and hands an Upgrade to the `upgrade` event at once, while the earlier answers
 * still own the socket; Go's `net/http`, the kubelet's server, serves a connection's requests one
 * at a time. Registered first on `request`, so an answer finished synchronously is seen too. The
 * listeners are shared by every response (the count sits on the response), so a request costs
 * no closure.
 */
export function trackAnswers(server: Server): void {
  server.prependListener('request', (req: IncomingMessage, res: TrackedResponse) => {
    const socket = req.socket as TrackedSocket;
    const pending = (socket[kAnswers] ??= { count: 0, waiters: [] });
    pending.count++;
    res[kPending] = pending;
    res.on('finish', answered);
    res.on('close', answered);
  });
}

function answered(this: TrackedResponse): void {
  const pending = this[kPending];
  if (pending === undefined) return;
  this[kPending] = undefined;
  if (--pending.count > 0 || pending.waiters.length === 0) return;
  const waiters = pending.waiters.splice(0);
  for (const waiter of waiters) waiter();
}

/**
 * Runs `fn` once every earlier request on `socket` has been answered (at once when none is
 * pending); never when the socket closes first. Needs `trackAnswers` on the socket's server.
 * `fn` may run inside another answer's 'finish' event, outside any server event: it must not throw.
 */
export function whenAnswered(socket: Duplex, fn: () => void): void {
  const pending = (socket as TrackedSocket)[kAnswers];
  if (!pending || pending.count === 0) return fn();
  let closed = false;
  socket.once('close', () => (closed = true));
  // Node's `resOnFinish` runs before this (its 'finish' listener precedes ours): the answer is
  // detached from the socket by then, and a `Connection: close` answer has ended it.
  pending.waiters.push(() => {
    if (!closed) fn();
  });
}
