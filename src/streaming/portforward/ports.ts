/**
 * Port parsing for port-forward, with the kubelet's texts: the SPDY `port` stream header
 * (`httpStreamReceived`) and the WebSocket `port` query (`NewV4Options`, which also accepts
 * repeated and comma-joined values).
 */

/**
 * Ports per WebSocket request. Kubelet has no cap; ours keeps every channel byte of the base64
 * framing ASCII (`'0' + 79` is the last one) and bounds the TCP connections one request opens.
 */
export const MAX_PORTS = 40;

/** A query value as Fastify hands it over (repeated keys become arrays). */
export type QueryValue = string | string[] | undefined;

export type ParsedPort = { readonly port: number } | { readonly error: string };

/** Go's `strconv.ParseUint(s, 10, 16)`: digits only (no sign, no spaces), at most 65535. */
function parseUint16(s: string): number | string {
  if (!/^[0-9]+$/.test(s)) return `strconv.ParseUint: parsing ${JSON.stringify(s)}: invalid syntax`;
  const n = Number(s.length > 6 ? s.replace(/^0+(?=\d)/, '') : s);
  if (!Number.isSafeInteger(n) || n > 65535) return `strconv.ParseUint: parsing ${JSON.stringify(s)}: value out of range`;
  return n;
}

/**
 * One port, 1..65535. `quoted` is what the error names: the whole query value for the
 * WebSocket form (the kubelet quotes `portString`, not the comma-separated piece).
 */
export function parsePort(text: string, quoted = text): ParsedPort {
  const n = parseUint16(text);
  if (typeof n === 'string') return { error: `unable to parse ${JSON.stringify(quoted)} as a port: ${n}` };
  if (n < 1) return { error: `port ${JSON.stringify(quoted)} must be > 0` };
  return { port: n };
}

/** The SPDY stream's `port` header (validated when the stream is created). */
export function parsePortHeader(value: string | undefined): ParsedPort {
  if (value === undefined || value === '') return { error: '"port" header is required' };
  return parsePort(value);
}

function all(v: QueryValue): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

export type ParsedPortList = { readonly ports: number[] } | { readonly error: string };

/**
 * The WebSocket (channel mode) port list: `port` (kubelet) and `ports` (the apiserver's
 * `PodPortForwardOptions`, which client-node sends), each repeated or comma-joined, in that
 * order. Port i gets channels 2i (data) and 2i+1 (error).
 */
export function parsePortList(query: { readonly port?: QueryValue; readonly ports?: QueryValue }): ParsedPortList {
  const values: [string, string][] = [...all(query.port).map((v): [string, string] => ['port', v]), ...all(query.ports).map((v): [string, string] => ['ports', v])];
  if (values.length === 0) return { error: 'query parameter "port" is required' };
  const ports: number[] = [];
  for (const [name, value] of values) {
    if (value === '') return { error: `query parameter ${JSON.stringify(name)} cannot be empty` };
    for (const piece of value.split(',')) {
      const parsed = parsePort(piece, value);
      if ('error' in parsed) return parsed;
      // Checked per port so a thousand-port query stops at the first one too many.
      if (ports.length === MAX_PORTS) return { error: `too many ports: at most ${MAX_PORTS} per request` };
      ports.push(parsed.port);
    }
  }
  return { ports };
}
