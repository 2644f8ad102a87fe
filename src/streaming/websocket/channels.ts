/**
 * Channel framing of the `*.channel.k8s.io` WebSocket protocols (kubelet `wsstream/conn.go`,
 * client-go/client-node constants):
 * - binary protocols: every message is `[channel byte][payload]`;
 * - base64 protocols: every message is text, `'0'+channel` then the base64 payload;
 * - `v5.channel.k8s.io` only: `[0xFF, channel]` half-closes a channel (client stdin EOF).
 */
export const STDIN_CHANNEL = 0;
export const STDOUT_CHANNEL = 1;
export const STDERR_CHANNEL = 2;
export const ERROR_CHANNEL = 3;
export const RESIZE_CHANNEL = 4;
/** exec/attach always open all five channels (unrequested ones discard writes and read EOF). */
export const REMOTE_COMMAND_CHANNELS = 5;
export const CLOSE_SIGNAL = 0xff;

export interface Framing {
  /** Text frames with base64 payloads (`base64.channel.k8s.io`, `v4.base64.channel.k8s.io`). */
  readonly base64: boolean;
  /** `[0xFF, channel]` is a CLOSE signal (`v5.channel.k8s.io` only). */
  readonly supportsClose: boolean;
  /** Number of valid channels; frames for higher channels are ignored. */
  readonly channels: number;
}

export type DecodedFrame =
  | { readonly kind: 'data'; readonly channel: number; readonly payload: Buffer }
  | { readonly kind: 'close'; readonly channel: number }
  /** The caller must close the connection (wsstream ends its read loop). */
  | { readonly kind: 'violation'; readonly reason: string };

// Go's base64.StdEncoding: padded standard alphabet; it skips CR/LF, nothing else.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Decodes one inbound message the way wsstream's `handle` loop does. Returns undefined for frames
 * that are ignored: empty messages, channels ≥ `framing.channels`, invalid base64. The frame type
 * (text/binary) is not checked, as `x/net/websocket` `Message.Receive` does not either.
 */
export function decodeFrame(data: Buffer, framing: Framing): DecodedFrame | undefined {
  if (data.length === 0) return undefined;
  if (framing.supportsClose && data[0] === CLOSE_SIGNAL) {
    if (data.length !== 2) return { kind: 'violation', reason: `close signal must carry exactly 1 channel byte, got ${data.length - 1}` };
    const channel = data[1] as number;
    if (channel >= framing.channels) return { kind: 'violation', reason: `close signal for invalid channel ${channel}` };
    return { kind: 'close', channel };
  }
  // Go computes `channel - '0'` on a byte, so anything below '0' wraps around and is out of range.
  const channel = framing.base64 ? ((data[0] as number) - 0x30 + 256) % 256 : (data[0] as number);
  if (channel >= framing.channels) return undefined;
  const rest = data.subarray(1);
  if (!framing.base64) return { kind: 'data', channel, payload: rest };
  const text = rest.toString('latin1').replace(/[\r\n]/g, '');
  if (!BASE64.test(text)) return undefined;
  return { kind: 'data', channel, payload: Buffer.from(text, 'base64') };
}
