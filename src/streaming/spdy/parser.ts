import { SpdyProtocolError } from './errors.js';
import {
  ControlType,
  FLAG_FIN,
  FLAG_SETTINGS_CLEAR_SETTINGS,
  FLAG_UNIDIRECTIONAL,
  FRAME_HEADER_BYTES,
  MAX_FRAME_PAYLOAD,
  MAX_STREAM_ID,
  SPDY_VERSION,
  type Frame,
  type Setting,
} from './frames.js';

/**
 * Cap on a control frame's payload. kubectl's SYN_STREAMs carry a few dozen bytes of compressed
 * headers; 64 KiB leaves room for any real peer while bounding what one frame can make us buffer
 * (and inflate: deflate's best ratio is ~1:1032, so ≤ ~64 MiB of work before the decompressed-size
 * cap in headers.ts cuts it off after `maxHeaderBytes`). It also bounds SETTINGS to 8191 entries.
 */
export const DEFAULT_MAX_CONTROL_PAYLOAD = 64 * 1024;

export interface FrameParserOptions {
  /** Control frame payload cap in bytes (default 64 KiB); larger frames are a protocol error. */
  readonly maxControlPayload?: number;
  /**
   * DATA payload cap (default 2^24−1, the protocol maximum: spdystream writes whatever its
   * caller wrote, usually 32 KiB io.Copy chunks). The parser buffers at most one frame.
   */
  readonly maxDataPayload?: number;
}

const State = { HEADER: 0, PAYLOAD: 1, SKIP: 2, FAILED: 3 } as const;
type State = (typeof State)[keyof typeof State];

interface Header {
  readonly control: boolean;
  /** Control type, or the stream id for DATA. */
  readonly typeOrStream: number;
  readonly flags: number;
  readonly length: number;
}

const fixedLength: Readonly<Record<number, number>> = {
  [ControlType.RST_STREAM]: 8,
  [ControlType.PING]: 4,
  [ControlType.GOAWAY]: 8,
  [ControlType.WINDOW_UPDATE]: 8,
};
const minLength: Readonly<Record<number, number>> = {
  [ControlType.SYN_STREAM]: 10,
  [ControlType.SYN_REPLY]: 4,
  [ControlType.HEADERS]: 4,
  [ControlType.SETTINGS]: 4,
};

/**
 * Incremental SPDY/3 frame parser, fed arbitrary byte chunks (`push`), calling `onFrame` once per
 * complete frame, in order. Structural checks (version, lengths, counts, zero ids) throw a
 * SpdyProtocolError from `push`/`resume` (so does anything `onFrame` throws), after which the
 * parser is dead and re-throws it.
 * Unknown control frame types are skipped without buffering them (§2.2.1: must be ignored).
 *
 * `pause()` (typically from inside `onFrame`) stops delivery after the current frame; later
 * bytes are kept until `resume()`. The owner should stop reading its socket meanwhile, which
 * bounds what is kept to the chunks already read.
 */
export class FrameParser {
  readonly #onFrame: (frame: Frame) => void;
  readonly #maxControl: number;
  readonly #maxData: number;
  #state: State = State.HEADER;
  #buffers: Buffer[] = [];
  #buffered = 0;
  #header: Header | undefined;
  #skipLeft = 0;
  #paused = false;
  #running = false;
  #error: Error | undefined;

  constructor(onFrame: (frame: Frame) => void, opts: FrameParserOptions = {}) {
    this.#onFrame = onFrame;
    this.#maxControl = opts.maxControlPayload ?? DEFAULT_MAX_CONTROL_PAYLOAD;
    this.#maxData = opts.maxDataPayload ?? MAX_FRAME_PAYLOAD;
  }

  /** Bytes received but not yet delivered as frames. */
  get bufferedBytes(): number {
    return this.#buffered;
  }

  get paused(): boolean {
    return this.#paused;
  }

  push(chunk: Buffer): void {
    if (this.#error) throw this.#error;
    if (chunk.length === 0) return;
    this.#buffers.push(chunk);
    this.#buffered += chunk.length;
    this.#run();
  }

  pause(): void {
    this.#paused = true;
  }

  resume(): void {
    if (this.#error) throw this.#error;
    this.#paused = false;
    this.#run();
  }

  #run(): void {
    // Re-entrant calls (onFrame → … → push) only append; the outer loop delivers in order.
    if (this.#running) return;
    this.#running = true;
    try {
      while (!this.#paused && this.#step());
    } catch (err) {
      this.#state = State.FAILED;
      this.#buffers = [];
      this.#buffered = 0;
      // A SpdyProtocolError, or whatever onFrame threw: either way this byte stream is done.
      this.#error = err instanceof Error ? err : new Error(String(err));
      throw this.#error;
    } finally {
      this.#running = false;
    }
  }

  /** Advances the state machine once; false when more bytes are needed. */
  #step(): boolean {
    switch (this.#state) {
      case State.HEADER: {
        if (this.#buffered < FRAME_HEADER_BYTES) return false;
        this.#header = this.#readHeader(this.#take(FRAME_HEADER_BYTES));
        if (this.#state === State.HEADER) this.#state = State.PAYLOAD;
        return true;
      }
      case State.PAYLOAD: {
        const h = this.#header!;
        if (this.#buffered < h.length) return false;
        const payload = this.#take(h.length);
        this.#state = State.HEADER;
        this.#header = undefined;
        this.#onFrame(h.control ? this.#controlFrame(h, payload) : dataFrame(h, payload));
        return true;
      }
      case State.SKIP: {
        this.#skipLeft -= this.#discard(this.#skipLeft);
        if (this.#skipLeft > 0) return false;
        this.#state = State.HEADER;
        return true;
      }
      case State.FAILED:
        return false;
    }
  }

  #readHeader(b: Buffer): Header {
    const word = b.readUInt32BE(0);
    const flagsAndLength = b.readUInt32BE(4);
    const flags = flagsAndLength >>> 24;
    const length = flagsAndLength & 0xffffff;
    if ((word & 0x80000000) === 0) {
      const streamId = word & MAX_STREAM_ID;
      if (streamId === 0) throw new SpdyProtocolError('DATA frame on stream 0');
      if (length > this.#maxData) throw new SpdyProtocolError(`DATA frame of ${length} bytes exceeds ${this.#maxData}`);
      return { control: false, typeOrStream: streamId, flags, length };
    }
    const version = (word >>> 16) & 0x7fff;
    const type = word & 0xffff;
    if (version !== SPDY_VERSION) throw new SpdyProtocolError(`unsupported SPDY version ${version}`);
    const fixed = fixedLength[type];
    const min = minLength[type];
    if (fixed === undefined && min === undefined) {
      // Unknown (or NOOP/CREDENTIAL): ignored, and its payload dropped as it arrives.
      this.#skipLeft = length;
      this.#state = State.SKIP;
      return { control: true, typeOrStream: type, flags, length };
    }
    if (fixed !== undefined && length !== fixed) throw new SpdyProtocolError(`control frame ${type} with length ${length}, want ${fixed}`);
    if (min !== undefined && length < min) throw new SpdyProtocolError(`control frame ${type} too short (${length} bytes)`);
    if (length > this.#maxControl) throw new SpdyProtocolError(`control frame ${type} of ${length} bytes exceeds ${this.#maxControl}`);
    if (type === ControlType.SETTINGS && (length - 4) % 8 !== 0) throw new SpdyProtocolError(`SETTINGS length ${length} is not 4 + 8n`);
    return { control: true, typeOrStream: type, flags, length };
  }

  #controlFrame(h: Header, p: Buffer): Frame {
    const fin = (h.flags & FLAG_FIN) !== 0;
    switch (h.typeOrStream) {
      case ControlType.SYN_STREAM:
        return {
          type: 'SYN_STREAM',
          streamId: nonZeroStream(p.readUInt32BE(0), 'SYN_STREAM'),
          associatedId: p.readUInt32BE(4) & MAX_STREAM_ID,
          priority: p[8]! >>> 5,
          slot: p[9]!,
          fin,
          unidirectional: (h.flags & FLAG_UNIDIRECTIONAL) !== 0,
          headerBlock: p.subarray(10),
        };
      case ControlType.SYN_REPLY:
        return { type: 'SYN_REPLY', streamId: nonZeroStream(p.readUInt32BE(0), 'SYN_REPLY'), fin, headerBlock: p.subarray(4) };
      case ControlType.HEADERS:
        return { type: 'HEADERS', streamId: nonZeroStream(p.readUInt32BE(0), 'HEADERS'), fin, headerBlock: p.subarray(4) };
      case ControlType.RST_STREAM: {
        const status = p.readUInt32BE(4);
        if (status === 0) throw new SpdyProtocolError('RST_STREAM with status 0');
        return { type: 'RST_STREAM', streamId: nonZeroStream(p.readUInt32BE(0), 'RST_STREAM'), status };
      }
      case ControlType.SETTINGS: {
        const count = p.readUInt32BE(0);
        // Checked before anything is allocated from it (CVE-2026-35469).
        if (count * 8 + 4 !== p.length) throw new SpdyProtocolError(`SETTINGS count ${count} does not match length ${p.length}`);
        const settings: Setting[] = [];
        for (let off = 4; off < p.length; off += 8) {
          const word = p.readUInt32BE(off);
          settings.push({ flags: word >>> 24, id: word & 0xffffff, value: p.readUInt32BE(off + 4) });
        }
        return { type: 'SETTINGS', clearSettings: (h.flags & FLAG_SETTINGS_CLEAR_SETTINGS) !== 0, settings };
      }
      case ControlType.PING:
        return { type: 'PING', id: p.readUInt32BE(0) };
      case ControlType.GOAWAY:
        return { type: 'GOAWAY', lastGoodStreamId: p.readUInt32BE(0) & MAX_STREAM_ID, status: p.readUInt32BE(4) };
      case ControlType.WINDOW_UPDATE:
        return { type: 'WINDOW_UPDATE', streamId: p.readUInt32BE(0) & MAX_STREAM_ID, delta: p.readUInt32BE(4) & MAX_STREAM_ID };
      default:
        throw new SpdyProtocolError(`unexpected control frame type ${h.typeOrStream}`, 2);
    }
  }

  /** Removes n (≤ buffered) bytes: a view when they lie in one chunk, else one copy. */
  #take(n: number): Buffer {
    if (n === 0) return EMPTY;
    const first = this.#buffers[0]!;
    this.#buffered -= n;
    if (first.length >= n) {
      if (first.length === n) this.#buffers.shift();
      else this.#buffers[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let off = 0;
    let used = 0;
    while (off < n) {
      const b = this.#buffers[used]!;
      const k = Math.min(b.length, n - off);
      b.copy(out, off, 0, k);
      off += k;
      if (k === b.length) used++;
      else this.#buffers[used] = b.subarray(k);
    }
    this.#buffers.splice(0, used);
    return out;
  }

  /** Drops up to n buffered bytes; returns how many were dropped. */
  #discard(n: number): number {
    let dropped = 0;
    while (dropped < n && this.#buffers.length > 0) {
      const b = this.#buffers[0]!;
      const k = Math.min(b.length, n - dropped);
      if (k === b.length) this.#buffers.shift();
      else this.#buffers[0] = b.subarray(k);
      dropped += k;
    }
    this.#buffered -= dropped;
    return dropped;
  }
}

const EMPTY = Buffer.alloc(0);

function dataFrame(h: Header, payload: Buffer): Frame {
  return { type: 'DATA', streamId: h.typeOrStream, fin: (h.flags & FLAG_FIN) !== 0, payload };
}

function nonZeroStream(word: number, what: string): number {
  const id = word & MAX_STREAM_ID;
  if (id === 0) throw new SpdyProtocolError(`${what} on stream 0`);
  return id;
}
