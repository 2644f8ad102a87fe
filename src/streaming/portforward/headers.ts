import { parsePortHeader } from './ports.js';

/** core/v1 `StreamType`, `PortHeader`, `PortForwardRequestIDHeader`, lower-cased as on the wire. */
export const STREAM_TYPE_HEADER = 'streamtype';
export const PORT_HEADER = 'port';
export const REQUEST_ID_HEADER = 'requestid';

export type PortForwardStreamType = 'data' | 'error';

export interface PortForwardStream {
  readonly type: PortForwardStreamType;
  readonly port: number;
  /** Pairs an error stream with its data stream. */
  readonly requestId: string;
}

export type ValidatedStream = { readonly stream: PortForwardStream } | { readonly error: string };

/**
 * Checks a new SPDY stream's headers as the kubelet's `httpStreamReceived` does (port first,
 * then the stream type; such streams are reset) and derives its request ID like
 * `requestID()`: the `requestID` header, or — for clients older than 1.6 that send none — the
 * stream id for an error stream and the id 2 below for a data stream (the error stream is
 * always opened first, so the two meet on the same id).
 */
export function validateStreamHeaders(headers: Readonly<Record<string, string>>, streamId: number): ValidatedStream {
  const port = parsePortHeader(headers[PORT_HEADER]);
  if ('error' in port) return port;
  const type = headers[STREAM_TYPE_HEADER];
  if (type === undefined || type === '') return { error: '"streamType" header is required' };
  if (type !== 'data' && type !== 'error') return { error: `invalid stream type ${JSON.stringify(type)}` };
  const header = headers[REQUEST_ID_HEADER];
  const requestId = header !== undefined && header !== '' ? header : String(type === 'error' ? streamId : streamId - 2);
  return { stream: { type, port: port.port, requestId } };
}
