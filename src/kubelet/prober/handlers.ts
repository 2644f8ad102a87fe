import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import type { Container, Probe } from 'kubernetes-types/core/v1.js';
import { grpcHealthCheck } from './grpc.js';

/** One probe attempt's outcome, as the kubelet's `probe.Result` plus the output it records. */
export interface ProbeOutcome {
  readonly result: 'success' | 'failure';
  /** What the handler saw: command output, HTTP status, connection error (for the Unhealthy event). */
  readonly output: string;
  /**
   * A success the kubelet calls `probe.Warning` (an HTTP redirect to another host, not followed):
   * what its `ProbeWarning` event says.
   */
  readonly warning?: string;
}

/**
 * The two ways a probe reaches a container. Both stay inside the pod: commands run in the
 * container, connections are made from inside the pod's network namespace — to the pod IP by
 * default (as the kubelet's), or to the IP a probe's `host` names, which the pod could reach
 * itself — never from the node's own namespace.
 */
export interface ProbeIO {
  /** Where a connection without a `host` goes: the pod IP, else (no pod network) 127.0.0.1. */
  readonly host: string;
  /** Runs `cmd` in the container; resolves with its exit code and (bounded) combined output. */
  exec(cmd: string[], timeoutMs: number): Promise<{ exitCode: number; output: string }>;
  /**
   * Connects to `127.0.0.1:port` in the pod's network namespace, writes `send` (then half-closes),
   * and resolves with what came back (bounded) once the pod side ends or `timeoutMs` passes with
   * something read; rejects when the connection cannot be made.
   */
  connect(port: number, send: Buffer, timeoutMs: number, until?: (received: Buffer) => boolean, host?: string): Promise<Buffer>;
  /**
   * A byte stream to `127.0.0.1:port` in the pod's network namespace, for protocols that talk
   * both ways (gRPC's HTTP/2); it errors when the connection cannot be made and is torn down
   * when `signal` aborts.
   */
  dial(port: number, signal: AbortSignal, host?: string): Duplex;
}

/** Largest output kept from a probe (the kubelet's `maxProbeRespLength` is 10 KiB). */
export const MAX_PROBE_OUTPUT = 10 * 1024;

/**
 * A handler's `host` as an address to dial: an IP literal as given, `localhost` as 127.0.0.1,
 * undefined when unset (the pod IP). A name is refused: the kubelet resolves it with the node's
 * resolver, nodelet resolves nothing on a pod's behalf.
 */
export function handlerHost(host: string | undefined): { host?: string } | { error: string } {
  if (!host) return {};
  if (host === 'localhost') return { host: '127.0.0.1' };
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  if (isIP(bare) !== 0) return { host: bare };
  return { error: `host ${JSON.stringify(host)} is not an IP address: nodelet connects to IP addresses (or localhost) only, it resolves no names` };
}

/**
 * Why an `httpGet` handler's `protocol` cannot be applied, or undefined. The field is the alpha
 * H2CContainerProbe of 1.37 (k8s.io/api/core/v1/types.go `HTTPGetAction.Protocol`, off by default:
 * the apiserver drops it, pkg/api/pod/util.go `dropHTTPProbeProtocol`): `HTTP1` is what nodelet
 * speaks anyway, `HTTP2` (h2c, pkg/kubelet/prober/prober.go `ProbeH2C`) is not implemented.
 */
export function httpProtocolRefusal(httpGet: object | undefined): string | undefined {
  const protocol = (httpGet as { protocol?: unknown } | undefined)?.protocol;
  if (protocol == null || protocol === 'HTTP1') return undefined;
  return `protocol ${JSON.stringify(protocol)} is not supported by nodelet (the alpha H2CContainerProbe feature; only HTTP1)`;
}

/** Why a probe cannot run at all (checked before the container is created: `probeRefusal`). */
export function unsupportedProbe(probe: Probe): string | undefined {
  for (const [kind, host] of [['httpGet', probe.httpGet?.host], ['tcpSocket', probe.tcpSocket?.host]] as const) {
    const h = handlerHost(host);
    if ('error' in h) return `${kind} probe: ${h.error}`;
  }
  if (probe.httpGet?.scheme && probe.httpGet.scheme !== 'HTTP' && probe.httpGet.scheme !== 'HTTPS') return `httpGet probe: scheme ${JSON.stringify(probe.httpGet.scheme)} is neither HTTP nor HTTPS`;
  const protocol = httpProtocolRefusal(probe.httpGet);
  if (protocol) return `httpGet probe: ${protocol}`;
  // `grpc.mode` (the alpha GRPCContainerProbeTLS of 1.37, off by default, dropped by the
  // apiserver): `Plaintext` is what nodelet's gRPC probe does; `TLS` (prober.go `useTLS`) is not.
  const mode = (probe.grpc as { mode?: unknown } | undefined)?.mode;
  if (mode != null && mode !== 'Plaintext') return `grpc probe: mode ${JSON.stringify(mode)} is not supported by nodelet (the alpha GRPCContainerProbeTLS feature; only Plaintext)`;
  if (!probe.exec && !probe.httpGet && !probe.tcpSocket && !probe.grpc) return 'the probe has no handler (exec, httpGet, tcpSocket or grpc)';
  return undefined;
}

/**
 * Why the container is refused (`CreateContainerConfigError`, before it is created) for one of its
 * probes: a probe nodelet cannot run is never accepted and left without a worker, which would
 * leave the container ready and never restarted whatever its application does.
 */
export function probeRefusal(container: Container): string | undefined {
  for (const kind of ['startupProbe', 'livenessProbe', 'readinessProbe'] as const) {
    const probe = container[kind];
    const why = probe ? unsupportedProbe(probe) : undefined;
    if (why) return `${kind}: ${why}`;
  }
  return undefined;
}

/** A named port (`port: http`) resolved against the container's ports. */
export function resolvePort(port: number | string | undefined, ports: readonly { name?: string; containerPort: number }[]): number | undefined {
  if (typeof port === 'number') return port >= 1 && port <= 65535 ? port : undefined;
  if (typeof port !== 'string') return undefined;
  if (/^\d+$/.test(port)) return resolvePort(Number(port), ports);
  return ports.find((p) => p.name === port)?.containerPort;
}

/**
 * Runs one attempt of `probe` (the kubelet's `prober.runProbe`): exec succeeds on exit 0; httpGet
 * on a status in [200, 400), over TLS without verifying the certificate for `scheme: HTTPS` (as
 * the kubelet's `InsecureSkipVerify`); tcpSocket when the connection opens; grpc when the health
 * service answers SERVING. A timeout is a failure.
 */
export async function runProbe(probe: Probe, ports: readonly { name?: string; containerPort: number }[], io: ProbeIO): Promise<ProbeOutcome> {
  const timeoutMs = Math.max(1, probe.timeoutSeconds ?? 1) * 1000;
  try {
    if (probe.exec) {
      const { exitCode, output } = await io.exec(probe.exec.command ?? [], timeoutMs);
      return { result: exitCode === 0 ? 'success' : 'failure', output: output.slice(0, MAX_PROBE_OUTPUT) };
    }
    if (probe.httpGet) {
      const port = resolvePort(probe.httpGet.port, ports);
      if (port === undefined) return { result: 'failure', output: `invalid port ${JSON.stringify(probe.httpGet.port)}` };
      const target = handlerHost(probe.httpGet.host);
      if ('error' in target) return { result: 'failure', output: target.error };
      const host = target.host ?? io.host;
      const path = probe.httpGet.path ? (probe.httpGet.path.startsWith('/') ? probe.httpGet.path : `/${probe.httpGet.path}`) : '/';
      return await httpProbe(io, { https: probe.httpGet.scheme === 'HTTPS', host, port, path }, probe.httpGet.httpHeaders ?? [], timeoutMs);
    }
    if (probe.tcpSocket) {
      const port = resolvePort(probe.tcpSocket.port, ports);
      if (port === undefined) return { result: 'failure', output: `invalid port ${JSON.stringify(probe.tcpSocket.port)}` };
      const target = handlerHost(probe.tcpSocket.host);
      if ('error' in target) return { result: 'failure', output: target.error };
      await io.connect(port, Buffer.alloc(0), timeoutMs, undefined, target.host ?? io.host);
      return { result: 'success', output: '' };
    }
    if (probe.grpc) {
      const port = probe.grpc.port;
      if (!(port >= 1 && port <= 65535)) return { result: 'failure', output: `invalid port ${JSON.stringify(port)}` };
      return await grpcHealthCheck(port, probe.grpc.service ?? '', timeoutMs, (signal) => io.dial(port, signal));
    }
    return { result: 'failure', output: unsupportedProbe(probe) ?? 'unsupported probe' };
  } catch (err) {
    return { result: 'failure', output: err instanceof Error ? err.message : String(err) };
  }
}

/** Where one HTTP probe request goes. */
interface HttpTarget {
  https: boolean;
  host: string;
  port: number;
  /** Path and query, from `/`. */
  path: string;
}

/** The most redirects a probe follows (Go's http.Client default, kept by `RedirectChecker`). */
const MAX_REDIRECTS = 10;

/**
 * An httpGet probe (pkg/probe/http/http.go `DoHTTPProbe` with `RedirectChecker(false)`): a status in
 * [200, 400) succeeds. A redirect to the same host name (any port or scheme) is followed, up to 10;
 * one to another host is not, and the redirect itself is the answer: a success with the warning
 * "Probe terminated redirects, Response body: <body>" (the kubelet's `probe.Warning`, reported as
 * a `ProbeWarning` event).
 */
async function httpProbe(io: ProbeIO, first: HttpTarget, extraHeaders: readonly { name: string; value: string }[], timeoutMs: number): Promise<ProbeOutcome> {
  let target = first;
  for (let redirects = 0; ; redirects++) {
    const hostPort = `${target.host.includes(':') ? `[${target.host}]` : target.host}:${target.port}`;
    const headers = new Map<string, string>([
      ['Host', hostPort],
      ['User-Agent', 'kube-probe/1.30'],
      ['Accept', '*/*'],
      ['Connection', 'close'],
    ]);
    for (const h of extraHeaders) headers.set(h.name, h.value);
    const request = Buffer.from(`GET ${target.path} HTTP/1.1\r\n${[...headers].map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`, 'latin1');
    const answer = target.https ? await tlsExchange(io, target.port, target.host, request, timeoutMs) : await io.connect(target.port, request, timeoutMs, httpAnswerComplete, target.host);
    const response = parseHttpAnswer(answer);
    if (!response) return { result: 'failure', output: `HTTP probe failed: no HTTP answer from port ${target.port}` };
    const { code } = response;
    if (code < 200 || code >= 400) return { result: 'failure', output: `HTTP probe failed with statuscode: ${code}` };
    if (code < 300) return { result: 'success', output: `HTTP probe succeeded with statuscode: ${code}` };
    const next = redirectTarget(target, response.location);
    if (next && next.host === first.host) {
      if (redirects + 1 >= MAX_REDIRECTS) return { result: 'failure', output: `Get "${urlOf(next)}": stopped after ${MAX_REDIRECTS} redirects` };
      target = next;
      continue;
    }
    return { result: 'success', output: `HTTP probe succeeded with statuscode: ${code}`, warning: `Probe terminated redirects, Response body: ${response.body}` };
  }
}

const urlOf = (t: HttpTarget) => `${t.https ? 'https' : 'http'}://${t.host.includes(':') ? `[${t.host}]` : t.host}:${t.port}${t.path}`;

/** Where a `Location` sends the next request, resolved against the current one; undefined when it cannot be followed. */
function redirectTarget(from: HttpTarget, location: string | undefined): HttpTarget | undefined {
  if (location === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(location, urlOf(from));
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  const https = url.protocol === 'https:';
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return { https, host, port: url.port ? Number(url.port) : https ? 443 : 80, path: `${url.pathname}${url.search}` };
}

/**
 * Whether an HTTP answer read so far is enough: its status line for anything but a redirect; for
 * a redirect (whose `Location` and body are needed) its headers and `Content-Length` bytes of body,
 * or, without a length, the end of the connection.
 */
function httpAnswerComplete(got: Buffer): boolean {
  const text = got.toString('latin1');
  const statusEnd = text.indexOf('\r\n');
  if (statusEnd < 0) return false;
  const code = Number(/^HTTP\/\d(?:\.\d)? (\d{3})/.exec(text.slice(0, statusEnd))?.[1]);
  if (!(code >= 300 && code < 400)) return true;
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd < 0) return false;
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, headEnd + 2))?.[1];
  return length !== undefined && got.length - (headEnd + 4) >= Number(length);
}

/** Status code, `Location` and (bounded) body of an HTTP answer; undefined when it is not one. */
function parseHttpAnswer(answer: Buffer): { code: number; location: string | undefined; body: string } | undefined {
  const text = answer.toString('latin1');
  const code = Number(/^HTTP\/\d(?:\.\d)? (\d{3})/.exec(text)?.[1]);
  if (!Number.isFinite(code)) return undefined;
  const headEnd = text.indexOf('\r\n\r\n');
  const head = headEnd < 0 ? text : text.slice(0, headEnd);
  const location = /\r\nlocation:[ \t]*([^\r\n]*)/i.exec(head)?.[1]?.trim();
  const body = headEnd < 0 ? '' : answer.subarray(headEnd + 4).toString('utf8').slice(0, MAX_PROBE_OUTPUT);
  return { code, location, body };
}

/**
 * One HTTPS request over a connection dialed inside the pod: TLS with no certificate check (the
 * kubelet's probes use `InsecureSkipVerify`), `request` written, the answer read until its status
 * line is in (bounded to MAX_PROBE_OUTPUT) or the peer ends; rejects on a TLS or connection error
 * and on the timeout.
 */
function tlsExchange(io: ProbeIO, port: number, host: string, request: Buffer, timeoutMs: number): Promise<Buffer> {
  const controller = new AbortController();
  const raw = io.dial(port, controller.signal, host);
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const tls = tlsConnect({ socket: raw, rejectUnauthorized: false, ALPNProtocols: ['http/1.1'], ...(isIP(host) === 0 ? { servername: host } : {}) });
    const finish = (err?: Error) => {
      clearTimeout(timer);
      tls.destroy();
      controller.abort();
      if (err && size === 0) reject(err);
      else resolve(Buffer.concat(chunks));
    };
    const timer = setTimeout(() => finish(new Error(`no answer from port ${port} within ${timeoutMs / 1000}s`)), timeoutMs);
    tls.once('secureConnect', () => tls.write(request));
    tls.on('data', (chunk: Buffer) => {
      if (size < MAX_PROBE_OUTPUT) {
        chunks.push(chunk);
        size += chunk.length;
      }
      if (httpAnswerComplete(Buffer.concat(chunks))) finish();
    });
    tls.once('end', () => finish());
    tls.once('error', (err) => finish(err));
  });
}
