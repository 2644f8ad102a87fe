/**
 * SPDY/3.1 frame model and encoders (SPDY Protocol Draft 3.1, §2.2 and §2.6). Every frame starts
 * with an 8-byte header: control frames `1|version:15|type:16|flags:8|length:24`, DATA frames
 * `0|stream-id:31|flags:8|length:24`. Big-endian throughout.
 */

export const SPDY_VERSION = 3;
export const FRAME_HEADER_BYTES = 8;
/** The 24-bit length field's ceiling: no frame payload can exceed it. */
export const MAX_FRAME_PAYLOAD = 0xffffff;
/** Stream ids, ping ids and window deltas are 31-bit. */
export const MAX_STREAM_ID = 0x7fffffff;

/** Control frame type codes. 5 (NOOP) and 10 (CREDENTIAL) are not used by SPDY/3.1 peers. */
export const ControlType = {
  SYN_STREAM: 1,
  SYN_REPLY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PING: 6,
  GOAWAY: 7,
  HEADERS: 8,
  WINDOW_UPDATE: 9,
} as const;

export const FLAG_FIN = 0x01;
/** SYN_STREAM only: the recipient must not send on the stream. */
export const FLAG_UNIDIRECTIONAL = 0x02;
/** SETTINGS only. */
export const FLAG_SETTINGS_CLEAR_SETTINGS = 0x01;

/** RST_STREAM status codes (§2.6.2). */
export const RstStatus = {
  PROTOCOL_ERROR: 1,
  INVALID_STREAM: 2,
  REFUSED_STREAM: 3,
  UNSUPPORTED_VERSION: 4,
  CANCEL: 5,
  INTERNAL_ERROR: 6,
  FLOW_CONTROL_ERROR: 7,
  STREAM_IN_USE: 8,
  STREAM_ALREADY_CLOSED: 9,
  INVALID_CREDENTIALS: 10,
  FRAME_TOO_LARGE: 11,
} as const;

/** GOAWAY status codes (§2.6.6). */
export const GoAwayStatus = { OK: 0, PROTOCOL_ERROR: 1, INTERNAL_ERROR: 2 } as const;

/** SETTINGS ids (§2.6.4). */
export const SettingsId = {
  UPLOAD_BANDWIDTH: 1,
  DOWNLOAD_BANDWIDTH: 2,
  ROUND_TRIP_TIME: 3,
  MAX_CONCURRENT_STREAMS: 4,
  CURRENT_CWND: 5,
  DOWNLOAD_RETRANS_RATE: 6,
  INITIAL_WINDOW_SIZE: 7,
  CLIENT_CERTIFICATE_VECTOR_SIZE: 8,
} as const;

/** The flow-control window every stream and the session start with (§2.6.8, §2.6.9). */
export const DEFAULT_WINDOW = 64 * 1024;

export interface Setting {
  readonly id: number;
  readonly value: number;
  /** FLAG_SETTINGS_PERSIST_VALUE (1) / FLAG_SETTINGS_PERSISTED (2). */
  readonly flags: number;
}

/** Frames carrying a header block hold it still compressed: it must be inflated in frame order. */
export interface SynStreamFrame {
  readonly type: 'SYN_STREAM';
  readonly streamId: number;
  readonly associatedId: number;
  /** 0 (highest) … 7. */
  readonly priority: number;
  readonly slot: number;
  readonly fin: boolean;
  readonly unidirectional: boolean;
  readonly headerBlock: Buffer;
}

export interface SynReplyFrame {
  readonly type: 'SYN_REPLY';
  readonly streamId: number;
  readonly fin: boolean;
  readonly headerBlock: Buffer;
}

export interface RstStreamFrame {
  readonly type: 'RST_STREAM';
  readonly streamId: number;
  readonly status: number;
}

export interface SettingsFrame {
  readonly type: 'SETTINGS';
  readonly clearSettings: boolean;
  readonly settings: readonly Setting[];
}

export interface PingFrame {
  readonly type: 'PING';
  readonly id: number;
}

export interface GoAwayFrame {
  readonly type: 'GOAWAY';
  readonly lastGoodStreamId: number;
  readonly status: number;
}

export interface HeadersFrame {
  readonly type: 'HEADERS';
  readonly streamId: number;
  readonly fin: boolean;
  readonly headerBlock: Buffer;
}

export interface WindowUpdateFrame {
  readonly type: 'WINDOW_UPDATE';
  /** 0 = the session window (SPDY/3.1). */
  readonly streamId: number;
  readonly delta: number;
}

export interface DataFrame {
  readonly type: 'DATA';
  readonly streamId: number;
  readonly fin: boolean;
  /** A view into the received bytes (copied only when the frame spanned several chunks). */
  readonly payload: Buffer;
}

export type Frame =
  | SynStreamFrame
  | SynReplyFrame
  | RstStreamFrame
  | SettingsFrame
  | PingFrame
  | GoAwayFrame
  | HeadersFrame
  | WindowUpdateFrame
  | DataFrame;

// ---- encoders ------------------------------------------------------------------------------

function checkId(what: string, id: number, min = 1): void {
  if (!Number.isInteger(id) || id < min || id > MAX_STREAM_ID) throw new RangeError(`invalid ${what}: ${id}`);
}

function control(type: number, flags: number, payloadLength: number): Buffer {
  if (payloadLength > MAX_FRAME_PAYLOAD) throw new RangeError(`frame payload too large: ${payloadLength}`);
  const buf = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payloadLength);
  buf.writeUInt16BE(0x8000 | SPDY_VERSION, 0);
  buf.writeUInt16BE(type, 2);
  buf.writeUInt32BE(((flags & 0xff) << 24 | payloadLength) >>> 0, 4);
  return buf;
}

/** Client-side (used by tests and any future server push); a server never opens streams here. */
export function encodeSynStream(f: Omit<SynStreamFrame, 'type'>): Buffer {
  checkId('stream id', f.streamId);
  checkId('associated stream id', f.associatedId, 0);
  const flags = (f.fin ? FLAG_FIN : 0) | (f.unidirectional ? FLAG_UNIDIRECTIONAL : 0);
  const buf = control(ControlType.SYN_STREAM, flags, 10 + f.headerBlock.length);
  buf.writeUInt32BE(f.streamId, 8);
  buf.writeUInt32BE(f.associatedId, 12);
  buf[16] = (f.priority & 0x07) << 5;
  buf[17] = f.slot & 0xff;
  f.headerBlock.copy(buf, 18);
  return buf;
}

function streamHeaders(type: number, streamId: number, headerBlock: Buffer, fin: boolean): Buffer {
  checkId('stream id', streamId);
  const buf = control(type, fin ? FLAG_FIN : 0, 4 + headerBlock.length);
  buf.writeUInt32BE(streamId, 8);
  headerBlock.copy(buf, 12);
  return buf;
}

export function encodeSynReply(streamId: number, headerBlock: Buffer, fin = false): Buffer {
  return streamHeaders(ControlType.SYN_REPLY, streamId, headerBlock, fin);
}

export function encodeHeaders(streamId: number, headerBlock: Buffer, fin = false): Buffer {
  return streamHeaders(ControlType.HEADERS, streamId, headerBlock, fin);
}

export function encodeRstStream(streamId: number, status: number): Buffer {
  checkId('stream id', streamId);
  const buf = control(ControlType.RST_STREAM, 0, 8);
  buf.writeUInt32BE(streamId, 8);
  buf.writeUInt32BE(status >>> 0, 12);
  return buf;
}

export function encodeSettings(settings: readonly Setting[], clearSettings = false): Buffer {
  const buf = control(ControlType.SETTINGS, clearSettings ? FLAG_SETTINGS_CLEAR_SETTINGS : 0, 4 + 8 * settings.length);
  buf.writeUInt32BE(settings.length, 8);
  settings.forEach((s, i) => {
    // 8-bit flags then a 24-bit id, then the 32-bit value.
    buf.writeUInt32BE(((s.flags & 0xff) << 24 | (s.id & 0xffffff)) >>> 0, 12 + 8 * i);
    buf.writeUInt32BE(s.value >>> 0, 16 + 8 * i);
  });
  return buf;
}

export function encodePing(id: number): Buffer {
  const buf = control(ControlType.PING, 0, 4);
  buf.writeUInt32BE(id >>> 0, 8);
  return buf;
}

export function encodeGoAway(lastGoodStreamId: number, status: number = GoAwayStatus.OK): Buffer {
  checkId('last-good stream id', lastGoodStreamId, 0);
  const buf = control(ControlType.GOAWAY, 0, 8);
  buf.writeUInt32BE(lastGoodStreamId, 8);
  buf.writeUInt32BE(status >>> 0, 12);
  return buf;
}

export function encodeWindowUpdate(streamId: number, delta: number): Buffer {
  checkId('stream id', streamId, 0);
  checkId('window delta', delta);
  const buf = control(ControlType.WINDOW_UPDATE, 0, 8);
  buf.writeUInt32BE(streamId, 8);
  buf.writeUInt32BE(delta, 12);
  return buf;
}

/** Header and payload in one buffer: one socket write, one completion callback. */
export function encodeData(streamId: number, payload: Uint8Array, fin = false): Buffer {
  const buf = Buffer.allocUnsafe(FRAME_HEADER_BYTES + payload.length);
  encodeDataHeader(streamId, payload.length, fin).copy(buf, 0);
  buf.set(payload, FRAME_HEADER_BYTES);
  return buf;
}

/**
 * Just the 8-byte header of a DATA frame, so a payload can be written after it as it is: relaying
 * a gigabyte then allocates 8 bytes per frame instead of copying every payload (copies of this
 * size are external memory to V8 and drove full-GC storms in the benchmark).
 */
export function encodeDataHeader(streamId: number, length: number, fin = false): Buffer {
  checkId('stream id', streamId);
  if (length > MAX_FRAME_PAYLOAD) throw new RangeError(`DATA payload too large: ${length}`);
  const buf = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  buf.writeUInt32BE(streamId, 0);
  buf.writeUInt32BE(((fin ? FLAG_FIN : 0) << 24 | length) >>> 0, 4);
  return buf;
}

/** Re-encodes any parsed frame (header blocks are carried as-is); the inverse of FrameParser. */
export function encodeFrame(f: Frame): Buffer {
  switch (f.type) {
    case 'SYN_STREAM':
      return encodeSynStream(f);
    case 'SYN_REPLY':
      return encodeSynReply(f.streamId, f.headerBlock, f.fin);
    case 'RST_STREAM':
      return encodeRstStream(f.streamId, f.status);
    case 'SETTINGS':
      return encodeSettings(f.settings, f.clearSettings);
    case 'PING':
      return encodePing(f.id);
    case 'GOAWAY':
      return encodeGoAway(f.lastGoodStreamId, f.status);
    case 'HEADERS':
      return encodeHeaders(f.streamId, f.headerBlock, f.fin);
    case 'WINDOW_UPDATE':
      return encodeWindowUpdate(f.streamId, f.delta);
    case 'DATA':
      return encodeData(f.streamId, f.payload, f.fin);
  }
}
