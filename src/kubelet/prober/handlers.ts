import type { Duplex } from 'node:stream';
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
 * container, connections go to 127.0.0.1 inside the pod's network namespace — never to an address
 * the pod spec (or anyone else) chose.
 */
export interface ProbeIO {
  /** Runs `cmd` in the container; resolves with its exit code and (bounded) combined output. */
  exec(cmd: string[], timeoutMs: number): Promise<{ exitCode: number; output: string }>;
  /**
   * Connects to `127.0.0.1:port` in the pod's network namespace, writes `send` (then half-closes),
   * and resolves with what came back (bounded) once the pod side ends or `timeoutMs` passes with
   * something read; rejects when the connection cannot be made.
   */
  connect(port: number, send: Buffer, timeoutMs: number, until?: (received: Buffer) => boolean): Promise<Buffer>;
  /**
   * A byte stream to `127.0.0.1:port` in the pod's network namespace, for protocols that talk
   * both ways (gRPC's HTTP/2); it errors when the connection cannot be made and is torn down
   * when `signal` aborts.
   */
  dial(port: number, signal: AbortSignal): Duplex;
}

/** Largest output kept from a probe (the kubelet's `maxProbeRespLength` is 10 KiB). */
export const MAX_PROBE_OUTPUT = 10 * 1024;

/** Why a probe cannot run at all (checked once, reported as a container config error). */
export function unsupportedProbe(probe: Probe): string | undefined {
  const host = probe.httpGet?.host;
  if (host && host !== '127.0.0.1' && host !== 'localhost') {
    return `httpGet probes connect to 127.0.0.1 in the pod's network namespace; host ${JSON.stringify(host)} is not supported`;
  }
  const tcpHost = probe.tcpSocket?.host;
  if (tcpHost && tcpHost !== '127.0.0.1' && tcpHost !== 'localhost') {
    return `tcpSocket probes connect to 127.0.0.1 in the pod's network namespace; host ${JSON.stringify(tcpHost)} is not supported`;
  }
  if (probe.httpGet && probe.httpGet.scheme === 'HTTPS') return 'HTTPS probes are not supported by nodelet';
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
 * on a status in [200, 400); tcpSocket when the connection opens; grpc when the health service
 * answers SERVING. A timeout is a failure.
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
      const path = probe.httpGet.path ? (probe.httpGet.path.startsWith('/') ? probe.httpGet.path : `/${probe.httpGet.path}`) : '/';
      const headers = new Map<string, string>([
        ['Host', `127.0.0.1:${port}`],
        ['User-Agent', 'kube-probe/1.30'],
        ['Accept', '*/*'],
        ['Connection', 'close'],
      ]);
      for (const h of probe.httpGet.httpHeaders ?? []) headers.set(h.name, h.value);
      const request = `GET ${path} HTTP/1.1\r\n${[...headers].map(([k, v]) => `${k}: ${v}`).join('\r\n')}\r\n\r\n`;
      const answer = await io.connect(port, Buffer.from(request, 'latin1'), timeoutMs, (got) => got.includes('\r\n'));
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
      await io.connect(port, Buffer.alloc(0), timeoutMs);
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
