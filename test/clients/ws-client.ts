import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * A lean WebSocket client for the `*.channel.k8s.io` exec protocols, written for measuring the
 * server rather than itself: it counts channel bytes on received frames without copying them
 * (only control frames and the error channel are collected), and sends bulk stdin as ONE
 * pre-built, pre-masked frame written again and again — so the server still unmasks every byte
 * with a non-zero mask key, as it must for kubectl (gorilla/websocket masks with random keys), but
 * the client spends almost no CPU on the 2 cores the server, dockerd and the shim share.
 * Message handlers are attached in the upgrade callback, before anything is awaited.
 */
export interface WsChannelHandlers {
  /** Payload bytes of a data message on `channel` (a view, valid only during the call). */
  onData?(channel: number, payload: Buffer): void;
  /** The last frame of a data message on `channel` arrived. */
  onMessageEnd?(channel: number): void;
  /** The socket closed (after the server's close frame, if any: see `closeCode`). */
  onClose?(): void;
}

export class WsChannelClient {
  readonly socket: Socket;
  readonly protocol: string;
  readonly #handlers: WsChannelHandlers;
  /** Header bytes of the frame being parsed (≤ 14). */
  readonly #hdr = Buffer.alloc(14);
  #hdrFill = 0;
  #hdrNeed = 2;
  #inPayload = false;
  #left = 0;
  #control: Buffer[] = [];
  /** Channel of the current data message; -1 until its first payload byte arrived. */
  #channel = -1;
  #closeSent = false;
  /** Resolves when the TCP connection is closed. */
  readonly closed: Promise<void>;
  /** The status code of the server's close frame, once received. */
  closeCode: number | undefined;

  private constructor(socket: Socket, protocol: string, head: Buffer, handlers: WsChannelHandlers) {
    this.socket = socket;
    this.protocol = protocol;
    this.#handlers = handlers;
    socket.setNoDelay(true);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => this.#push(chunk));
    socket.on('close', () => this.#handlers.onClose?.());
    if (head.length > 0) this.#push(head);
  }

  /**
   * Opens `ws://127.0.0.1:port/path` offering `protocols`; resolves once upgraded (handlers are
   * live from the first byte). A non-101 answer rejects with its status and body.
   */
  static connect(port: number, path: string, protocols: string[], handlers: WsChannelHandlers): Promise<WsChannelClient> {
    const key = randomBytes(16).toString('base64');
    return new Promise((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1',
        port,
        path,
        method: 'GET',
        agent: false,
        headers: {
          Connection: 'Upgrade',
          Upgrade: 'websocket',
          'Sec-WebSocket-Version': '13',
          'Sec-WebSocket-Key': key,
          'Sec-WebSocket-Protocol': protocols.join(', '),
        },
      });
      req.on('upgrade', (res, socket: Socket, head: Buffer) => {
        const accept = createHash('sha1').update(key + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
        if (res.headers['sec-websocket-accept'] !== accept) {
          socket.destroy();
          reject(new Error('bad Sec-WebSocket-Accept'));
          return;
        }
        const protocol = String(res.headers['sec-websocket-protocol'] ?? '');
        resolve(new WsChannelClient(socket, protocol, head, handlers));
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => reject(new Error(`websocket upgrade refused: HTTP ${res.statusCode} ${body.slice(0, 300)}`)));
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** A masked binary message `[channel][payload]` as one Buffer, to write once or many times. */
  static frame(channel: number | undefined, payload: Buffer, opcode = 0x2, zeroMask = false): Buffer {
    const body = channel === undefined ? payload : Buffer.concat([Buffer.from([channel]), payload]);
    const len = body.length;
    const ext = len < 126 ? 0 : len < 65536 ? 2 : 8;
    const out = Buffer.allocUnsafe(2 + ext + 4 + len);
    out[0] = 0x80 | opcode;
    if (ext === 0) out[1] = 0x80 | len;
    else if (ext === 2) {
      out[1] = 0x80 | 126;
      out.writeUInt16BE(len, 2);
    } else {
      out[1] = 0x80 | 127;
      out.writeBigUInt64BE(BigInt(len), 2);
    }
    const mask = zeroMask ? Buffer.alloc(4) : randomBytes(4);
    // A zero key lets `ws` skip unmasking: keep it non-zero so the server does the real work,
    // unless the caller asks for zero (a diagnostic: what unmasking costs the server).
    if (!zeroMask && (mask[0]! | mask[1]! | mask[2]! | mask[3]!) === 0) mask[0] = 1;
    mask.copy(out, 2 + ext);
    const off = 2 + ext + 4;
    for (let i = 0; i < len; i++) out[off + i] = body[i]! ^ mask[i & 3]!;
    return out;
  }

  /** Writes raw bytes (a pre-built frame); false = the socket buffer is full, wait for 'drain'. */
  write(frame: Buffer): boolean {
    return this.socket.write(frame);
  }

  /** Writes `frame` `count` times, honouring the socket's backpressure. */
  async writeRepeated(frame: Buffer, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      if (this.socket.destroyed) throw new Error('socket closed while sending stdin');
      if (!this.socket.write(frame)) await this.#drain();
    }
  }

  #drain(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.socket.off('drain', done);
        this.socket.off('close', done);
        resolve();
      };
      this.socket.on('drain', done);
      this.socket.on('close', done);
    });
  }

  /** Sends a close frame (1000) once. */
  close(code = 1000): void {
    if (this.#closeSent || this.socket.destroyed) return;
    this.#closeSent = true;
    const payload = Buffer.alloc(2);
    payload.writeUInt16BE(code);
    this.socket.write(WsChannelClient.frame(undefined, payload, 0x8));
  }

  destroy(): void {
    this.socket.destroy();
  }

  #push(chunk: Buffer): void {
    let off = 0;
    while (off < chunk.length) {
      if (!this.#inPayload) {
        const take = Math.min(this.#hdrNeed - this.#hdrFill, chunk.length - off);
        chunk.copy(this.#hdr, this.#hdrFill, off, off + take);
        this.#hdrFill += take;
        off += take;
        if (this.#hdrFill < this.#hdrNeed) continue;
        if (this.#hdrNeed === 2) {
          const len7 = this.#hdr[1]! & 0x7f;
          const masked = (this.#hdr[1]! & 0x80) !== 0;
          this.#hdrNeed = 2 + (len7 === 126 ? 2 : len7 === 127 ? 8 : 0) + (masked ? 4 : 0);
          if (this.#hdrNeed > 2) continue;
        }
        if ((this.#hdr[1]! & 0x80) !== 0) throw new Error('server sent a masked frame');
        const len7 = this.#hdr[1]! & 0x7f;
        this.#left = len7 === 126 ? this.#hdr.readUInt16BE(2) : len7 === 127 ? Number(this.#hdr.readBigUInt64BE(2)) : len7;
        const opcode = this.#hdr[0]! & 0x0f;
        if (opcode !== 0 && opcode < 8) this.#channel = -1; // a new data message (0 = continuation)
        this.#hdrFill = 0;
        this.#hdrNeed = 2;
        this.#inPayload = true;
        this.#control = [];
        if (this.#left === 0) this.#endFrame();
        continue;
      }
      const n = Math.min(this.#left, chunk.length - off);
      const isControl = (this.#hdr[0]! & 0x0f) >= 8;
      if (isControl) {
        this.#control.push(chunk.subarray(off, off + n));
      } else {
        let start = off;
        if (this.#channel < 0 && n > 0) this.#channel = chunk[start++]!;
        if (off + n > start) this.#handlers.onData?.(this.#channel, chunk.subarray(start, off + n));
      }
      off += n;
      this.#left -= n;
      if (this.#left === 0) this.#endFrame();
    }
  }

  #endFrame(): void {
    this.#inPayload = false;
    const opcode = this.#hdr[0]! & 0x0f;
    if (opcode < 8) {
      if ((this.#hdr[0]! & 0x80) !== 0) this.#handlers.onMessageEnd?.(this.#channel);
      return;
    }
    const payload = Buffer.concat(this.#control);
    this.#control = [];
    if (opcode === 0x9) {
      this.socket.write(WsChannelClient.frame(undefined, payload, 0xa)); // pong
    } else if (opcode === 0x8) {
      const code = payload.length >= 2 ? payload.readUInt16BE(0) : undefined;
      this.closeCode = code;
      this.close(code ?? 1000);
      this.socket.end();
    }
  }
}

/** Time since `t0` in ms. */
export const since = (t0: number): number => performance.now() - t0;
