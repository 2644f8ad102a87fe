import { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import type { Probe } from 'kubernetes-types/core/v1.js';
import { grpcHealthCheck } from './grpc.js';

/** One probe attempt's outcome, as the kubelet's `probe.Result` plus the output it records. */
export interface ProbeOutcome {
  readonly result: 'success' | 'failure';
  /** What the handler saw: command output, HTTP status, connection error (for the Unhealthy event). */
  readonly output: string;
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

/** Why a probe cannot run at all (checked once, reported as a container config error). */
export function unsupportedProbe(probe: Probe): string | undefined {
  for (const [kind, host] of [['httpGet', probe.httpGet?.host], ['tcpSocket', probe.tcpSocket?.host]] as const) {
    const h = handlerHost(host);
    if ('error' in h) return `${kind} probe: ${h.error}`;
  }
  if (probe.httpGet?.scheme && probe.httpGet.scheme !== 'HTTP' && probe.httpGet.scheme !== 'HTTPS') return `httpGet probe: scheme ${JSON.stringify(probe.httpGet.scheme)} is neither HTTP nor HTTPS`;
  if (!probe.exec && !probe.httpGet && !probe.tcpSocket && !probe.grpc) return 'the probe has no handler (exec, httpGet, tcpSocket or grpc)';
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
      const headers = new Map<string, string>([
        ['Host', `${host.includes(':') ? `[${host}]` : host}:${port}`],
        ['User-Agent', 'kube-probe/1.30'],
        ['Accept', '*/*'],
        ['Connection', 'close'],
      ]);
      for (const h of probe.httpGet.httpHeaders ?? []) headers.set(h.name, h.value);
      const request = `GET ${path} HTTP/1.1\r\n${[...headers].map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`;
      const bytes = Buffer.from(request, 'latin1');
      const answer = probe.httpGet.scheme === 'HTTPS' ? await tlsExchange(io, port, host, bytes, timeoutMs) : await io.connect(port, bytes, timeoutMs, (got) => got.includes('\r\n'), host);
      const statusLine = answer.toString('latin1').split('\r\n')[0] ?? '';
      const code = Number(/^HTTP\/\d(?:\.\d)? (\d{3})/.exec(statusLine)?.[1]);
      if (!Number.isFinite(code)) return { result: 'failure', output: `HTTP probe failed: no HTTP answer from port ${port}` };
      return code >= 200 && code < 400
        ? { result: 'success', output: `HTTP probe succeeded with statuscode: ${code}` }
        : { result: 'failure', output: `HTTP probe failed with statuscode: ${code}` };
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
      if (Buffer.concat(chunks).includes('\r\n')) finish();
    });
    tls.once('end', () => finish());
    tls.once('error', (err) => finish(err));
  });
}
