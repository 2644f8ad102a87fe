/**
 * The `kubelet` part's streaming figures: kubectl through the apiserver to a pod of each node, as
 * a user runs it — `kubectl exec` stdout and stdin throughput and first-byte latency, `kubectl
 * logs` of a finished container's output, `kubectl port-forward` throughput. Every transfer is
 * checked for its exact byte count (stdin: the count `wc -c` prints inside the pod), so a relay
 * that drops or truncates fails the part instead of reporting a speed.
 *
 * Each figure includes kubectl's own start (≈ 50–100 ms here, the same binary on both sides)
 * except port-forward's, which is timed from the HTTP request over an established forward.
 */
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { Container, Pod, PodSpec } from 'kubernetes-types/core/v1.js';
import { BUSYBOX } from './env.js';

const MB = 1e6;
/** The port the port-forward pod's httpd listens on (inside its own network namespace). */
export const PF_PORT = 8080;
/** One log line of the logs pod: 127 characters and the newline, so 100 MiB is whole lines. */
const LOG_LINE_CHARS = 127;

export interface KubectlRun {
  /** ms from spawning kubectl to its first stdout byte (NaN when none came). */
  firstByteMs: number;
  /** ms from spawning kubectl to its exit. */
  totalMs: number;
  /** stdout bytes. */
  bytes: number;
  /** The last ≤ 64 stdout bytes, as text (what a short answer such as `wc -c`'s is checked by). */
  tail: string;
}

/**
 * Runs `kubectl --kubeconfig K ARGS`, counting stdout without keeping it; with `stdinBytes`,
 * writes that many zero bytes into its stdin (64 KiB writes, honouring backpressure) and closes it.
 * Rejects on a non-zero exit with kubectl's stderr.
 */
export function runKubectl(bin: string, kubeconfig: string, args: string[], stdinBytes = 0): Promise<KubectlRun> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(bin, ['--kubeconfig', kubeconfig, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let firstByteMs = Number.NaN;
    let bytes = 0;
    let tail: Buffer = Buffer.alloc(0);
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      if (bytes === 0) firstByteMs = performance.now() - t0;
      bytes += c.length;
      tail = c.length >= 64 ? c.subarray(c.length - 64) : Buffer.concat([tail, c]).subarray(-64);
    });
    child.stderr.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4096)));
    child.once('error', reject);
    child.once('close', (code) => {
      if (code !== 0) reject(new Error(`kubectl ${args.slice(0, 2).join(' ')} exited with ${code}: ${err.trim()}`));
      else resolve({ firstByteMs, totalMs: performance.now() - t0, bytes, tail: tail.toString() });
    });
    const stdin = child.stdin;
    if (stdinBytes === 0) stdin.end();
    else {
      // EPIPE after kubectl exits early is reported through its exit status instead.
      stdin.on('error', () => undefined);
      const chunk = Buffer.alloc(64 * 1024);
      let left = stdinBytes;
      const pump = () => {
        while (left > 0) {
          const n = Math.min(left, chunk.length);
          left -= n;
          if (!stdin.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void stdin.once('drain', pump);
        }
        stdin.end();
      };
      pump();
    }
  });
}

/** MB/s (10^6 B/s) of `bytes` in `ms`. */
export const mbps = (bytes: number, ms: number): number => bytes / MB / (ms / 1000);

/** `kubectl exec POD -c app -- dd …`: `bytes` of stdout (a multiple of 64 KiB). */
export async function execStdout(bin: string, kubeconfig: string, pod: string, bytes: number): Promise<KubectlRun> {
  const r = await runKubectl(bin, kubeconfig, ['exec', pod, '-c', 'app', '--', 'dd', 'if=/dev/zero', 'bs=65536', `count=${bytes / 65536}`]);
  if (r.bytes !== bytes) throw new Error(`kubectl exec ${pod}: ${r.bytes} B of stdout, expected ${bytes}`);
  return r;
}

/** `kubectl exec -i POD -c app -- wc -c` fed `bytes` on stdin; the pod's count must be exact. */
export async function execStdin(bin: string, kubeconfig: string, pod: string, bytes: number): Promise<KubectlRun> {
  const r = await runKubectl(bin, kubeconfig, ['exec', '-i', pod, '-c', 'app', '--', 'wc', '-c'], bytes);
  if (r.tail.trim() !== String(bytes)) throw new Error(`kubectl exec -i ${pod}: the pod counted ${JSON.stringify(r.tail.trim())} B of stdin, expected ${bytes}`);
  return r;
}

/** `kubectl exec POD -c app -- echo x`: its first byte is the setup latency through the apiserver. */
export async function execEcho(bin: string, kubeconfig: string, pod: string): Promise<KubectlRun> {
  const r = await runKubectl(bin, kubeconfig, ['exec', pod, '-c', 'app', '--', 'echo', 'x']);
  if (r.tail !== 'x\n') throw new Error(`kubectl exec ${pod} -- echo x printed ${JSON.stringify(r.tail)}`);
  return r;
}

/** `kubectl logs POD -c app` of the logs pod: all `bytes` of its output. */
export async function logs(bin: string, kubeconfig: string, pod: string, bytes: number): Promise<KubectlRun> {
  const r = await runKubectl(bin, kubeconfig, ['logs', pod, '-c', 'app']);
  if (r.bytes !== bytes) throw new Error(`kubectl logs ${pod}: ${r.bytes} B, expected ${bytes}`);
  return r;
}

/**
 * `kubectl port-forward pod/POD :PF_PORT`, then one `GET /blob` of `bytes` through the forward;
 * ms from the request to the last byte (kubectl's start and the forward's set-up excluded: the
 * first connection's stream set-up is included, as a client's first request has it).
 */
export function portForwardGet(bin: string, kubeconfig: string, pod: string, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, ['--kubeconfig', kubeconfig, 'port-forward', '--address', '127.0.0.1', `pod/${pod}`, `:${PF_PORT}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let settled = false;
    const finish = (e: Error | undefined, ms?: number) => {
      if (settled) return;
      settled = true;
      child.kill('SIGTERM');
      if (e) reject(e);
      else resolve(ms!);
    };
    child.stderr.on('data', (c: Buffer) => (err = (err + c.toString()).slice(-4096)));
    child.once('error', (e) => finish(e));
    child.once('close', (code) => finish(new Error(`kubectl port-forward ${pod} exited with ${code} before the transfer ended: ${err.trim()}`)));
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(out);
      if (!m) return;
      child.stdout.removeAllListeners('data');
      child.stdout.resume();
      const t0 = performance.now();
      let got = 0;
      const req = httpRequest({ host: '127.0.0.1', port: Number(m[1]), path: '/blob', agent: false }, (res) => {
        if (res.statusCode !== 200) return finish(new Error(`port-forward GET /blob from ${pod}: HTTP ${res.statusCode}`));
        res.on('data', (b: Buffer) => (got += b.length));
        res.once('error', (e) => finish(e));
        res.once('end', () => (got === bytes ? finish(undefined, performance.now() - t0) : finish(new Error(`port-forward GET /blob from ${pod}: ${got} B, expected ${bytes}`))));
      });
      req.once('error', (e) => finish(e));
      req.end();
    });
  });
}

/** A busybox pod of the part pinned to `node`, labelled with its own name, no grace period; `container` and `spec` add to it. */
function busyboxPod(name: string, namespace: string, node: string, container: Omit<Container, 'name' | 'image' | 'imagePullPolicy'>, spec: Partial<PodSpec> = {}): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, labels: { 'bench-batch': name } },
    spec: { nodeName: node, automountServiceAccountToken: false, terminationGracePeriodSeconds: 0, ...spec, containers: [{ name: 'app', image: BUSYBOX, imagePullPolicy: 'Never', ...container }] },
  };
}

/** A pod that writes `bytes` of log (whole 128-byte lines) and exits 0 (`restartPolicy: Never`). */
export function logsPod(name: string, namespace: string, node: string, bytes: number): Pod {
  return busyboxPod(name, namespace, node, { command: ['sh', '-c', `yes ${'x'.repeat(LOG_LINE_CHARS)} | head -c ${bytes}`] }, { restartPolicy: 'Never' });
}

/** A pod whose busybox httpd serves `/blob` (`bytes` of zeros) on PF_PORT, Ready once it listens. */
export function httpPod(name: string, namespace: string, node: string, bytes: number): Pod {
  return busyboxPod(name, namespace, node, {
    command: ['sh', '-c', `mkdir -p /www && dd if=/dev/zero of=/www/blob bs=65536 count=${bytes / 65536} 2>/dev/null && exec httpd -f -p ${PF_PORT} -h /www`],
    readinessProbe: { tcpSocket: { port: PF_PORT }, periodSeconds: 1 },
  });
}
