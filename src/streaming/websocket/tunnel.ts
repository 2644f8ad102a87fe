import { Duplex } from 'node:stream';
import type WebSocket from 'ws';
import type { Logger } from '../../logging/index.js';
import { OUTBOUND_HIGH_WATER_MARK } from './connection.js';

const INBOUND_HIGH_WATER_MARK = 64 * 1024;

/**
 * The byte stream inside a `SPDY/3.1+portforward.k8s.io` WebSocket (client-go's
 * `TunnelingConnection`, the apiserver's `streamtunnel.go`): binary messages carry SPDY bytes
 * verbatim and their boundaries mean nothing (kubectl writes frame headers as separate 2- and
 * 4-byte messages). A text message is a protocol error and drops the connection. Ending the
 * stream sends close 1000, which client-go reads as a clean EOF. Backpressure both ways: a full
 * read buffer pauses the socket; writes complete once `ws` has room (or flushed them).
 */
export function tunnelStream(ws: WebSocket, log: Pick<Logger, 'debug'>): Duplex {
  let paused = false;
  const stream = new Duplex({
    allowHalfOpen: false,
    readableHighWaterMark: INBOUND_HIGH_WATER_MARK,
    read() {
      if (!paused) return;
      paused = false;
      ws.resume();
    },
    write(chunk: Buffer, _enc, cb) {
      if (ws.readyState !== ws.OPEN) return cb();
      let called = false;
      const done = () => {
        if (!called) {
          called = true;
          cb();
        }
      };
      ws.send(chunk, { binary: true }, () => done());
      if (ws.bufferedAmount < OUTBOUND_HIGH_WATER_MARK) done();
    },
    final(cb) {
      if (ws.readyState === ws.OPEN) ws.close(1000);
      cb();
    },
    destroy(err, cb) {
      if (ws.readyState !== ws.CLOSED) ws.terminate();
      cb(err);
    },
  });

  ws.on('message', (data: WebSocket.RawData, isBinary: boolean) => {
    if (stream.destroyed) return;
    if (!isBinary) {
      log.debug('port-forward tunnel: text message, closing');
      stream.destroy();
      return;
    }
    const chunk = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
    if (!stream.push(chunk) && !paused) {
      paused = true;
      ws.pause();
    }
  });
  ws.on('close', () => {
    if (!stream.destroyed && !stream.readableEnded) stream.push(null);
    // The peer is gone either way: nothing more can be written.
    setImmediate(() => stream.destroy());
  });
  ws.on('error', (err: Error) => stream.destroy(err));
  return stream;
}
