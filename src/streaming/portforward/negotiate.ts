import type { HeaderLines } from '../headers.js';
import { handshake, type HandshakeResult } from '../spdy/handshake.js';

/**
 * Port-forward's protocols, per transport: SPDY's `portforward.k8s.io` (the kubelet's
 * `portforward/httpstream.go`), WebSocket channel mode (`portforward/websocket.go`), and the
 * SPDY-in-WebSocket tunnel kubectl ≥ 1.31 asks for first.
 */

/** The kubelet's SPDY port-forward list. */
export const SPDY_PORT_FORWARD_PROTOCOLS: readonly string[] = ['portforward.k8s.io'];

/** `SPDY/3.1+` and the SPDY port-forward protocol (client-go `tunneling_dialer.go`). */
export const PORT_FORWARD_TUNNEL_PROTOCOL = 'SPDY/3.1+portforward.k8s.io';

/** Channel-mode subprotocols the kubelet accepts besides none (`""`, which is binary). */
export const WEBSOCKET_PORT_FORWARD_PROTOCOLS: readonly string[] = ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io'];

/** SPDY port-forward negotiation (`portforward.k8s.io` only). */
export const negotiatePortForwardProtocol = (lines: HeaderLines): HandshakeResult => handshake(lines, SPDY_PORT_FORWARD_PROTOCOLS);

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
