/**
 * The messages between nodelet and its port-forward helper (portforward-helper.ts), one helper per
 * pod running inside the pod's network namespace, over Node's IPC channel (JSON serialization).
 *
 *   nodelet → helper   `{ op: 'dial', id, port }`     connect to 127.0.0.1:port in the netns
 *   helper → nodelet   `{ op: 'dialed', id }` + the connected socket's raw handle as the message's
 *                      `{ op: 'failed', id, reason }` nothing connected; `reason` is the client's text
 *   nodelet → helper   `{ op: 'dial', id, port, host }`  connect to host:port (an IP literal) in the netns
 *
 * Every `dial` gets exactly one answer with its `id` (unless the helper dies, which fails every
 * request still open). Port-forward names only the port (the pod's own loopback, as the kubelet);
 * probes and lifecycle hooks may name an IP (`httpGet.host`, `tcpSocket.host`, the pod IP), which
 * the pod itself could reach just as well: the connection is made from inside its namespace,
 * never from the node's. Pure: no I/O here, so
 * both sides and the unit tests share it.
 */

export interface DialRequest {
  readonly op: 'dial';
  /** Unique per helper while the request is open (nodelet counts up). */
  readonly id: number;
  /** 1–65535. */
  readonly port: number;
  /** An IPv4 or IPv6 literal; absent: FORWARD_HOST. */
  readonly host?: string;
}

export type DialAnswer =
  | { readonly op: 'dialed'; readonly id: number }
  | { readonly op: 'failed'; readonly id: number; readonly reason: string };

/**
 * How long the helper waits for one connect before it gives up: a listener whose accept queue is
 * full drops SYNs, and the kernel would retry for about two minutes. nodelet's own wait for an
 * answer is this plus `ANSWER_GRACE_MS` (the IPC round trip, a busy machine).
 */
export const CONNECT_TIMEOUT_MS = 10_000;
export const ANSWER_GRACE_MS = 2_000;

/** The only address the helper connects to, as dockershim's `socat … TCP4:127.0.0.1:<port>`. */
export const FORWARD_HOST = '127.0.0.1';

export const isValidPort = (port: unknown): port is number => typeof port === 'number' && Number.isInteger(port) && port >= 1 && port <= 65535;

const isId = (id: unknown): id is number => typeof id === 'number' && Number.isSafeInteger(id) && id >= 0;

const asRecord = (m: unknown): Record<string, unknown> | undefined => (typeof m === 'object' && m !== null && !Array.isArray(m) ? (m as Record<string, unknown>) : undefined);

/** A well-formed `dial` request, or undefined for anything else (the helper ignores those). */
export function parseDialRequest(m: unknown): DialRequest | undefined {
  const r = asRecord(m);
  if (!r || r.op !== 'dial' || !isId(r.id)) return undefined;
  // A bad port still gets its answer (`failed`), so it parses; the helper checks it.
  if (typeof r.port !== 'number') return undefined;
  if (r.host !== undefined && typeof r.host !== 'string') return undefined;
  return { op: 'dial', id: r.id, port: r.port, ...(typeof r.host === 'string' ? { host: r.host } : {}) };
}

/** A well-formed answer, or undefined (nodelet ignores those, and destroys any handle with them). */
export function parseDialAnswer(m: unknown): DialAnswer | undefined {
  const r = asRecord(m);
  if (!r || !isId(r.id)) return undefined;
  if (r.op === 'dialed') return { op: 'dialed', id: r.id };
  if (r.op === 'failed' && typeof r.reason === 'string') return { op: 'failed', id: r.id, reason: r.reason };
  return undefined;
}

/** strerror(3) texts for the errors a loopback connect gives, as socat printed them. */
const STRERROR: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'Connection refused',
  ECONNRESET: 'Connection reset by peer',
  ETIMEDOUT: 'Connection timed out',
  EADDRNOTAVAIL: 'Cannot assign requested address',
  ENETUNREACH: 'Network is unreachable',
  EHOSTUNREACH: 'No route to host',
  EACCES: 'Permission denied',
  EPERM: 'Operation not permitted',
};

/**
 * The reason for a connect that failed in the helper, in the shape dockershim's socat gave
 * (`exit status 1: connect(…): Connection refused`), which kubectl prints after
 * `error forwarding port P to pod <sandbox>, uid : ` and users and tests match. An error without a
 * known errno text keeps Node's message (it names the code, e.g. `connect EMFILE 127.0.0.1:80`).
 */
export function connectFailureReason(port: number, err: { code?: unknown; message?: unknown }, host: string = FORWARD_HOST): string {
  const code = typeof err.code === 'string' ? err.code : undefined;
  const text = (code && STRERROR[code]) ?? (typeof err.message === 'string' && err.message ? err.message : (code ?? 'connect failed'));
  return `exit status 1: connect(${addressText(host, port)}): ${text}`;
}

/** The reason when the helper gave no answer in time (its own connect timeout, or worse). */
export function timeoutReason(port: number, ms: number, host: string = FORWARD_HOST): string {
  return `exit status 1: connect(${addressText(host, port)}): no answer within ${Math.round(ms / 1000)} s`;
}

/** socat's `AF=2 1.2.3.4:80` (IPv4) or `AF=10 [::1]:80` (IPv6). */
function addressText(host: string, port: number): string {
  return host.includes(':') ? `AF=10 [${host}]:${port}` : `AF=2 ${host}:${port}`;
}
