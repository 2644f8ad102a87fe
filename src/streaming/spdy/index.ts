/**
 * Server-side SPDY/3.1 for kubectl's exec/attach/port-forward (moby/spdystream on the client):
 * the session (`SpdyConnection` → `SpdyStream`s), plus the frame and header-block codec it is
 * built on.
 */
export { SpdyConnection, MAX_OUTBOUND_DATA, type SpdyConnectionOptions } from './connection.js';
export { SpdyStream, STREAM_HIGH_WATER_MARK } from './stream.js';
export { SpdyIdleTimeoutError, SpdyProtocolError } from './errors.js';
export * from './frames.js';
export { DEFAULT_MAX_CONTROL_PAYLOAD, FrameParser, type FrameParserOptions } from './parser.js';
export {
  DEFAULT_MAX_HEADER_BYTES,
  HeaderCompressor,
  HeaderDecompressor,
  encodeHeaderBlock,
  firstValues,
  parseHeaderBlock,
  type HeaderInput,
  type HeaderValues,
} from './headers.js';
export { SPDY3_DICTIONARY } from './dictionary.js';
