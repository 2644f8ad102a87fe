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

/** The answer a socket is writing (Node's own field: lib/_http_server.js `assignSocket`/`detachSocket`). */
type AnsweringSocket = Duplex & { _httpMessage?: ServerResponse | null };

/**
 * Runs `fn` once every earlier request on `socket` has been answered (at once when none is
 * pending); never when the socket closes first. Node parses pipelined requests ahead of their
 * answers and hands an Upgrade to the `upgrade` event at once, while the earlier answers still own
 * the socket; Go's `net/http`, the kubelet's server, serves a connection's requests one at a time,
 * so an Upgrade pipelined behind them waits its turn here.
 *
 * Node keeps a connection's answers in order itself: the one writing is `socket._httpMessage`,
 * the others are queued, and each gets the socket when the one before it finishes (its `finish`
 * listener, `resOnFinish`, runs before any added later: it detaches the finished answer and
 * assigns the next). So waiting for the writing answer's end, again and again, waits for them
 * all, and requests that are never followed by an Upgrade pay nothing for it.
 * `fn` may run inside an answer's `finish` event, outside any server event: it must not throw.
 */
export function whenAnswered(socket: Duplex, fn: () => void): void {
  const answering = (socket as AnsweringSocket)._httpMessage;
  if (!answering) return fn();
  let waiting = true;
  const next = (): void => {
    if (!waiting) return;
    waiting = false;
    socket.off('close', closed);
    // A `Connection: close` answer has ended the socket by now: `fn` sees it (not writable).
    whenAnswered(socket, fn);
  };
  const closed = (): void => {
    waiting = false;
  };
  socket.once('close', closed);
  answering.once('finish', next);
  answering.once('close', next);
}
