import http from 'node:http';
import type { Socket } from 'node:net';
import {
  GoAwayStatus,
  HeaderCompressor,
  RstStatus,
  encodeData,
  encodeGoAway,
  encodeRstStream,
  encodeSynStream,
} from '../../src/streaming/spdy/index.js';

export const STREAM_PROTOCOL_HEADER = 'X-Stream-Protocol-Version';

export interface SpdyHandlers {
  /** DATA payload on the stream of `streamtype` `type` (a view, valid only during the call). */
  onData?(type: string, payload: Buffer): void;
  /** The server half-closed a stream (FIN). */
  onFin?(type: string): void;
  onReset?(type: string, status: number): void;
  onClose?(): void;
}

/**
 * A kubectl-like SPDY/3.1 exec client (moby/spdystream as client-go drives it): POST with
 * `Upgrade: SPDY/3.1` and the offered `X-Stream-Protocol-Version`s, then one stream per
 * `streamtype` opened in order (error, [stdin], stdout, [stderr]), each SYN_STREAM waiting for its
 * SYN_REPLY as client-go's `createStreams` does; stdin EOF is an empty DATA frame with FIN;
 * teardown is RST_STREAM CANCEL on every stream, GOAWAY, TCP close. No WINDOW_UPDATEs (kubectl
 * sends none). Header blocks go through nodelet's own `HeaderCompressor` (the same SPDY/3 zlib
 * format as Go's); the server's header blocks are never needed and not inflated. DATA payloads
 * are counted in place, without copying.
 */
export class SpdyExecClient {
  readonly socket: Socket;
  readonly version: string;
  readonly #handlers: SpdyHandlers;
  readonly #compressor = new HeaderCompressor();
  readonly #hdr = Buffer.alloc(8);
  #hdrFill = 0;
  #inPayload = false;
  #left = 0;
  #control = false;
  #type = 0;
  #streamId = 0;
  #fin = false;
  #ctl: Buffer[] = [];
  #nextId = 1;
  readonly #replyWaiters = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
  /** Stream id → streamtype, for every stream opened. */
  readonly streams = new Map<number, string>();
  readonly closed: Promise<void>;
  goAwayReceived = false;

  private constructor(socket: Socket, version: string, head: Buffer, handlers: SpdyHandlers) {
    this.socket = socket;
    this.version = version;
    this.#handlers = handlers;
    socket.setNoDelay(true);
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => this.#push(chunk));
    socket.on('close', () => {
      for (const w of this.#replyWaiters.values()) w.reject(new Error('connection closed before SYN_REPLY'));
      this.#replyWaiters.clear();
      this.#compressor.close();
      this.#handlers.onClose?.();
    });
    if (head.length > 0) this.#push(head);
  }

  static connect(port: number, path: string, versions: string[], handlers: SpdyHandlers): Promise<SpdyExecClient> {
    return new Promise((resolve, reject) => {
      const req = http.request({
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: false,
        headers: { Connection: 'Upgrade', Upgrade: 'SPDY/3.1', [STREAM_PROTOCOL_HEADER]: versions },
      });
      req.on('upgrade', (res, socket: Socket, head: Buffer) => {
        const version = String(res.headers[STREAM_PROTOCOL_HEADER.toLowerCase()] ?? '');
        resolve(new SpdyExecClient(socket, version, head, handlers));
      });
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => reject(new Error(`SPDY upgrade refused: HTTP ${res.statusCode} ${body.slice(0, 300)}`)));
      });
      req.on('error', reject);
      req.end();
    });
  }

  /** Opens the next stream with `streamtype: type` (plus e.g. port-forward's `port`/`requestid`) and waits for its SYN_REPLY; returns its id. */
  async openStream(type: string, extraHeaders: Record<string, string> = {}): Promise<number> {
    const id = this.#nextId;
    this.#nextId += 2;
    this.streams.set(id, type);
    const replied = new Promise<void>((resolve, reject) => this.#replyWaiters.set(id, { resolve, reject }));
    const headerBlock = await this.#compressor.compress({ ...extraHeaders, streamtype: type });
    this.socket.write(encodeSynStream({ streamId: id, associatedId: 0, priority: 0, slot: 0, fin: false, unidirectional: false, headerBlock }));
    await replied;
    return id;
  }

  /** A DATA frame, to write once or many times. */
  static dataFrame(streamId: number, payload: Buffer, fin = false): Buffer {
    return encodeData(streamId, payload, fin);
  }

  write(frame: Buffer): boolean {
    return this.socket.write(frame);
  }

  async writeRepeated(frame: Buffer, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      if (this.socket.destroyed) throw new Error('socket closed while sending stdin');
      if (!this.socket.write(frame)) {
        await new Promise<void>((resolve) => {
          const done = () => {
            this.socket.off('drain', done);
            this.socket.off('close', done);
            resolve();
          };
          this.socket.on('drain', done);
          this.socket.on('close', done);
        });
      }
    }
  }

  /** kubectl's teardown: RST_STREAM CANCEL on every stream, GOAWAY, then close TCP. */
  teardown(): void {
    if (this.socket.destroyed) return;
    for (const id of this.streams.keys()) this.socket.write(encodeRstStream(id, RstStatus.CANCEL));
    this.socket.write(encodeGoAway(0, GoAwayStatus.OK));
    this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  #push(chunk: Buffer): void {
    let off = 0;
    while (off < chunk.length) {
      if (!this.#inPayload) {
        const take = Math.min(8 - this.#hdrFill, chunk.length - off);
        chunk.copy(this.#hdr, this.#hdrFill, off, off + take);
        this.#hdrFill += take;
        off += take;
        if (this.#hdrFill < 8) continue;
        this.#hdrFill = 0;
        const word = this.#hdr.readUInt32BE(0);
        const fl = this.#hdr.readUInt32BE(4);
        this.#control = (word & 0x80000000) !== 0;
        this.#type = word & 0xffff;
        this.#streamId = word & 0x7fffffff;
        this.#fin = (fl >>> 24 & 0x01) !== 0;
        this.#left = fl & 0xffffff;
        this.#ctl = [];
        this.#inPayload = true;
        if (this.#left === 0) this.#endFrame();
        continue;
      }
      const n = Math.min(this.#left, chunk.length - off);
      const slice = chunk.subarray(off, off + n);
      if (this.#control) this.#ctl.push(slice);
      else this.#handlers.onData?.(this.streams.get(this.#streamId) ?? '', slice);
      off += n;
      this.#left -= n;
      if (this.#left === 0) this.#endFrame();
    }
  }

  #endFrame(): void {
    this.#inPayload = false;
    if (!this.#control) {
      if (this.#fin) this.#handlers.onFin?.(this.streams.get(this.#streamId) ?? '');
      return;
    }
    const p = Buffer.concat(this.#ctl);
    this.#ctl = [];
    switch (this.#type) {
      case 2: {
        // SYN_REPLY
        const id = p.readUInt32BE(0) & 0x7fffffff;
        this.#replyWaiters.get(id)?.resolve();
        this.#replyWaiters.delete(id);
        if (this.#fin) this.#handlers.onFin?.(this.streams.get(id) ?? '');
        break;
      }
      case 3: {
        // RST_STREAM
        const id = p.readUInt32BE(0) & 0x7fffffff;
        const status = p.readUInt32BE(4);
        this.#replyWaiters.get(id)?.reject(new Error(`stream ${id} reset with status ${status}`));
        this.#replyWaiters.delete(id);
        this.#handlers.onReset?.(this.streams.get(id) ?? '', status);
        break;
      }
      case 7:
        this.goAwayReceived = true;
        break;
      default:
        // SETTINGS, WINDOW_UPDATE, PING (the server sends none of its own), HEADERS: nothing to do.
        break;
    }
  }
}
