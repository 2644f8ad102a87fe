/**
 * WebSocket port-forward: subprotocol choice and the channel layout of the kubelet's
 * `portforward/websocket.go` (channel mode), plus the name of the SPDY-in-WebSocket tunnel
 * kubectl ≥ 1.31 asks for first.
 */

/** `SPDY/3.1+` and the SPDY port-forward protocol (client-go `tunneling_dialer.go`). */
export const PORT_FORWARD_TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';

/** Channel-mode subprotocols the kubelet accepts besides none (`""`, which is binary). */
export const WEBSOCKET_PORT_FORWARD_PROTOCOLS: readonly string[] = ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io'];

export type PortForwardWebSocketMode =
  | { readonly mode: 'tunnel' }
  /** `protocol` is `''` when none was offered (binary framing, no header echoed). */
  | { readonly mode: 'channel'; readonly protocol: string; readonly base64: boolean };

/**
 * The first offered subprotocol we serve wins (wsstream's order rule; the tunnel counts as one
 * of them). Nothing offered → channel mode without a subprotocol. Only unknown offers → undefined:
 * answer with a non-101 (the kubelet's 403) so kubectl falls back to SPDY.
 */
export function selectPortForwardMode(offered: readonly string[]): PortForwardWebSocketMode | undefined {
  if (offered.length === 0) return { mode: 'channel', protocol: '', base64: false };
  for (const p of offered) {
    if (p === PORT_FORWARD_TUNNEL_PROTOCOL) return { mode: 'tunnel' };
    if (WEBSOCKET_PORT_FORWARD_PROTOCOLS.includes(p)) return { mode: 'channel', protocol: p, base64: p.includes('base64') };
  }
  return undefined;
}

/** `Sec-WebSocket-Protocol` lines → offered names (comma-separated, trimmed, empties dropped). */
export function offeredProtocols(header: string | readonly string[] | undefined): string[] {
  const lines = header === undefined ? [] : typeof header === 'string' ? [header] : header;
  return lines.flatMap((l) => l.split(',')).map((p) => p.trim()).filter(Boolean);
}

/** Port i reads and writes data on channel 2i… */
export const dataChannel = (index: number): number => 2 * index;
/** …and reports its errors (text) on channel 2i+1. */
export const errorChannel = (index: number): number => 2 * index + 1;

/** The first message on both channels of a port: the port as uint16 little-endian. */
export function portPrefix(port: number): Buffer {
  const b = Buffer.alloc(2);
  b.writeUInt16LE(port);
  return b;
}
