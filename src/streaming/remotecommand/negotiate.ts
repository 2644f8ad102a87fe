import type { HeaderLines } from '../headers.js';
import { handshake, type HandshakeResult } from '../spdy/handshake.js';
import type { RemoteCommandVersion } from '../types.js';

/**
 * The kubelet's SPDY remote-command list (CRI streaming server). There is no v5 over SPDY: a client
 * offering v5 first (client-go ≥ 1.29) gets v4, because the first CLIENT protocol the server knows wins.
 */
export const SPDY_REMOTE_COMMAND_PROTOCOLS: readonly string[] = [
  'v4.channel.k8s.io',
  'v3.channel.k8s.io',
  'v2.channel.k8s.io',
  'channel.k8s.io',
];

/**
 * WebSocket remote-command subprotocols we serve: the kubelet's wsstream set plus `v5.channel.k8s.io`
 * (which upstream only the apiserver/kubelet translator speaks; kubectl ≥ 1.30 offers nothing else).
 */
export const WEBSOCKET_REMOTE_COMMAND_PROTOCOLS: readonly string[] = [
  'v5.channel.k8s.io',
  'v4.channel.k8s.io',
  'v4.base64.channel.k8s.io',
  'channel.k8s.io',
  'base64.channel.k8s.io',
];

/** SPDY exec/attach negotiation (v4…v1; a v5 offer resolves to v4). */
export const negotiateRemoteCommandProtocol = (lines: HeaderLines): HandshakeResult =>
  handshake(lines, SPDY_REMOTE_COMMAND_PROTOCOLS);

/**
 * WebSocket subprotocol selection, like wsstream's `handshake`: the client's order decides (the first
 * offered protocol we serve), not ours — client-node offers v5,v4,v3,v2,v1 and gets v5; kubectl offers
 * only v5. Returns `''` when nothing was offered (binary `channel.k8s.io` semantics, no header echoed),
 * or `false` when only unknown protocols were offered: the caller must then refuse with a non-101
 * (wsstream answers 403) so kubectl falls back to SPDY. Note that `ws`'s own `handleProtocols`
 * returning false still upgrades (just without the header), so refuse BEFORE `handleUpgrade`.
 */
export function selectWebSocketProtocol(offered: ReadonlySet<string> | readonly string[]): string | false {
  const list = [...offered];
  if (list.length === 0) return '';
  return list.find((p) => WEBSOCKET_REMOTE_COMMAND_PROTOCOLS.includes(p)) ?? false;
}

export interface ProtocolInfo {
  readonly version: RemoteCommandVersion;
  /** Text frames with base64 payloads (WebSocket `*.base64.*` protocols only). */
  readonly base64: boolean;
}

const PROTOCOL_INFO: Readonly<Record<string, ProtocolInfo>> = {
  '': { version: 'v1', base64: false },
  'channel.k8s.io': { version: 'v1', base64: false },
  'base64.channel.k8s.io': { version: 'v1', base64: true },
  'v2.channel.k8s.io': { version: 'v2', base64: false },
  'v3.channel.k8s.io': { version: 'v3', base64: false },
  'v4.channel.k8s.io': { version: 'v4', base64: false },
  'v4.base64.channel.k8s.io': { version: 'v4', base64: true },
  'v5.channel.k8s.io': { version: 'v5', base64: false },
};

/**
 * Protocol name → version and framing. `''` (no subprotocol / no SPDY version header echoed) means v1,
 * as client-go assumes. Unknown names → undefined.
 */
export function protocolInfo(protocol: string): ProtocolInfo | undefined {
  return Object.hasOwn(PROTOCOL_INFO, protocol) ? PROTOCOL_INFO[protocol] : undefined;
}

/** Version (+ framing) → the canonical protocol name; v1 is `channel.k8s.io`. */
export function protocolName(version: RemoteCommandVersion, base64 = false): string | undefined {
  for (const [name, info] of Object.entries(PROTOCOL_INFO)) {
    if (name !== '' && info.version === version && info.base64 === base64) return name;
  }
  return undefined;
}
