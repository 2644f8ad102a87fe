import { spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import type Docker from 'dockerode';
import { StdcopyParser } from '../../src/runtime/docker/demux.js';
import { SpdyExecClient } from '../../test/clients/spdy-client.js';
import { WsChannelClient } from '../../test/clients/ws-client.js';

/** Result of one bulk transfer: wall time of the measured span and bytes moved. */
export interface TransferResult {
  readonly ms: number;
  readonly bytes: number;
}

/** One exec session-setup sample: request → first stdout byte, and → exit status known. */
export interface LatencySample {
  readonly firstByteMs: number;
  readonly exitMs: number;
}

/** What every path can do: the three measured operations. */
export interface ExecPath {
  readonly name: string;
  /** Runs `cmd`, counts stdout bytes; the clock stops at the last expected byte. */
  stdout(cmd: string[], expected: number): Promise<TransferResult>;
  /** Streams `total` zero bytes in `chunk`-byte writes into `cmd`, half-closes, waits for exit 0. */
  stdin(cmd: string[], total: number, chunk: number): Promise<TransferResult>;
  /** `echo x`: request → first output byte, and → exit status. */
  latency(): Promise<LatencySample>;
}

const now = (): number => performance.now();

function withTimeout<T>(what: string, ms: number, p: Promise<T>, onTimeout: () => void = () => undefined): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(new Error(`${what}: timed out after ${ms} ms`));
    }, ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: Error) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // Rejections may happen before anyone awaits (e.g. a close while stdin is still being sent).
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

const TRANSFER_TIMEOUT_MS = 180_000;
const LATENCY_TIMEOUT_MS = 15_000;

// ---- direct: the best in-process consumer of the same Docker exec stream ----------------------

/**
 * dockerode exec over the hijacked connection (exactly the calls nodelet makes), with the zero-copy
 * `StdcopyParser` that only counts stdout bytes. The stdout clock starts before `exec create`
 * (like a client's request) and stops at the last byte.
 */
export class DirectPath implements ExecPath {
  readonly name = 'direct';
  readonly #container: Docker.Container;

  constructor(docker: Docker, containerId: string) {
    this.#container = docker.getContainer(containerId);
  }

  async #run(cmd: string[], stdin: boolean): Promise<{ exec: Docker.Exec; socket: Duplex }> {
    const exec = await this.#container.exec({ Cmd: cmd, AttachStdin: stdin, AttachStdout: true, AttachStderr: true, Tty: false });
    const socket = (await exec.start({ hijack: true, stdin, Tty: false })) as Duplex;
    return { exec, socket };
  }

  async #exitCode(exec: Docker.Exec): Promise<number> {
    for (let i = 0; i < 50; i++) {
      const info = await exec.inspect();
      if (!info.Running) return info.ExitCode ?? -1;
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error('exec still running after its stream ended');
  }

  async stdout(cmd: string[], expected: number): Promise<TransferResult> {
    const t0 = now();
    const { exec, socket } = await this.#run(cmd, false);
    const parser = new StdcopyParser();
    let bytes = 0;
    let tLast = Number.NaN;
    const ended = deferred();
    socket.on('data', (chunk: Buffer) => {
      parser.push(chunk, (stream, payload) => {
        if (stream !== 1) return;
        bytes += payload.length;
        if (bytes >= expected && Number.isNaN(tLast)) tLast = now();
      });
    });
    socket.on('end', () => ended.resolve());
    socket.on('close', () => ended.resolve());
    socket.on('error', (e: Error) => ended.reject(e));
    await withTimeout('direct stdout', TRANSFER_TIMEOUT_MS, ended.promise, () => socket.destroy());
    const code = await this.#exitCode(exec);
    if (code !== 0 || bytes !== expected) throw new Error(`direct stdout: exit ${code}, ${bytes}/${expected} bytes`);
    return { ms: tLast - t0, bytes };
  }

  async stdin(cmd: string[], total: number, chunk: number): Promise<TransferResult> {
    const t0 = now();
    const { exec, socket } = await this.#run(cmd, true);
    const ended = deferred();
    socket.on('data', () => undefined);
    socket.on('end', () => ended.resolve());
    socket.on('close', () => ended.resolve());
    socket.on('error', (e: Error) => ended.reject(e));
    const buf = Buffer.alloc(chunk);
    const send = async () => {
      for (let sent = 0; sent < total; sent += chunk) {
        if (!socket.write(sent + chunk <= total ? buf : buf.subarray(0, total - sent))) {
          await new Promise<void>((r) => {
            const go = () => {
              socket.off('drain', go);
              socket.off('close', go);
              r();
            };
            socket.on('drain', go);
            socket.on('close', go);
          });
        }
      }
      socket.end(); // half-close: Docker closes the process's stdin, `cat` exits
    };
    await withTimeout('direct stdin', TRANSFER_TIMEOUT_MS, Promise.all([send(), ended.promise]), () => socket.destroy());
    const code = await this.#exitCode(exec);
    const ms = now() - t0;
    if (code !== 0) throw new Error(`direct stdin: exit ${code}`);
    return { ms, bytes: total };
  }

  async latency(): Promise<LatencySample> {
    const t0 = now();
    const { exec, socket } = await this.#run(['echo', 'x'], false);
    const parser = new StdcopyParser();
    let first = Number.NaN;
    const ended = deferred();
    socket.on('data', (chunk: Buffer) => {
      parser.push(chunk, (stream, payload) => {
        if (stream === 1 && payload.length > 0 && Number.isNaN(first)) first = now() - t0;
      });
    });
    socket.on('end', () => ended.resolve());
    socket.on('close', () => ended.resolve());
    socket.on('error', (e: Error) => ended.reject(e));
    await withTimeout('direct latency', LATENCY_TIMEOUT_MS, ended.promise, () => socket.destroy());
    const code = await this.#exitCode(exec);
    const exitMs = now() - t0;
    if (code !== 0 || Number.isNaN(first)) throw new Error(`direct echo: exit ${code}, output ${Number.isNaN(first) ? 'missing' : 'ok'}`);
    return { firstByteMs: first, exitMs };
  }
}

// ---- the docker CLI --------------------------------------------------------------------------

/** `docker exec` as a user runs it: whole-process wall time, output to /dev/null. */
export class CliPath implements ExecPath {
  readonly name = 'cli';

  constructor(
    private readonly containerId: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {}

  #spawn(file: string, args: string[], onStdout?: (first: boolean) => void): Promise<number> {
    return new Promise((resolve, reject) => {
      const devnull = onStdout ? undefined : openSync('/dev/null', 'w');
      const child = spawn(file, args, { env: this.env, stdio: ['ignore', devnull ?? 'pipe', 'pipe'] });
      if (devnull !== undefined) closeSync(devnull);
      let stderr = '';
      let seen = false;
      child.stdout?.on('data', () => {
        onStdout?.(!seen);
        seen = true;
      });
      child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), TRANSFER_TIMEOUT_MS);
      child.on('error', reject);
      child.on('close', (code) => {
        clearTimeout(timer);
        if (code !== 0) reject(new Error(`${file} ${args.join(' ')}: exit ${code}: ${stderr.slice(0, 300)}`));
        else resolve(code);
      });
    });
  }

  async stdout(cmd: string[], expected: number): Promise<TransferResult> {
    const t0 = now();
    await this.#spawn('docker', ['exec', this.containerId, ...cmd]);
    return { ms: now() - t0, bytes: expected };
  }

  async stdin(cmd: string[], total: number, chunk: number): Promise<TransferResult> {
    if (total % chunk !== 0) throw new Error('stdin size must be a multiple of the chunk size');
    const quoted = cmd.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const t0 = now();
    await this.#spawn('sh', ['-c', `dd if=/dev/zero bs=${chunk} count=${total / chunk} status=none | docker exec -i ${this.containerId} ${quoted}`]);
    return { ms: now() - t0, bytes: total };
  }

  async latency(): Promise<LatencySample> {
    const t0 = now();
    let first = Number.NaN;
    await this.#spawn('docker', ['exec', this.containerId, 'echo', 'x'], (isFirst) => {
      if (isFirst) first = now() - t0;
    });
    return { firstByteMs: first, exitMs: now() - t0 };
  }
}

// ---- nodelet over WebSocket v5 ---------------------------------------------------------------

function execPath(pod: string, cmd: string[], stdin: boolean): string {
  const q = new URLSearchParams();
  q.set('container', 'app');
  for (const c of cmd) q.append('command', c);
  if (stdin) q.set('stdin', 'true');
  q.set('stdout', 'true');
  q.set('stderr', 'true');
  return `/api/v1/namespaces/default/pods/${pod}/exec?${q.toString()}`;
}

function checkStatus(what: string, status: string): void {
  let parsed: { status?: string } | undefined;
  try {
    parsed = JSON.parse(status) as { status?: string };
  } catch {
    /* reported below */
  }
  if (parsed?.status !== 'Success') throw new Error(`${what}: exec status ${status || '(none)'}`);
}

/** nodelet's apiserver-style exec path, `v5.channel.k8s.io` as kubectl ≥ 1.30 speaks it. */
export class WebSocketPath implements ExecPath {
  readonly name = 'websocket';
  static readonly protocol = 'v5.channel.k8s.io';

  constructor(
    private readonly port: number,
    private readonly pod: string,
    /** Diagnostic only: send stdin with a zero mask key, which `ws` does not unmask. */
    private readonly zeroMask = false,
  ) {}

  async #session(
    what: string,
    cmd: string[],
    stdin: boolean,
    timeoutMs: number,
    onStdout: (payload: Buffer) => void,
    feed?: (c: WsChannelClient) => Promise<void>,
  ): Promise<{ statusAt: number }> {
    const status: Buffer[] = [];
    const statusDone = deferred<number>();
    let client: WsChannelClient | undefined;
    const run = async () => {
      client = await WsChannelClient.connect(this.port, execPath(this.pod, cmd, stdin), [WebSocketPath.protocol], {
        onData: (channel, payload) => {
          if (channel === 1) onStdout(payload);
          else if (channel === 3) status.push(Buffer.from(payload));
        },
        onMessageEnd: (channel) => {
          if (channel === 3) statusDone.resolve(now());
        },
        onClose: () => statusDone.reject(new Error('connection closed before the exec status')),
      });
      if (client.protocol !== WebSocketPath.protocol) throw new Error(`server chose subprotocol "${client.protocol}"`);
      if (feed) await feed(client);
      const statusAt = await statusDone.promise;
      await client.closed; // the server closes with 1000 after the status; we echo the close
      return statusAt;
    };
    const statusAt = await withTimeout(what, timeoutMs, run(), () => client?.destroy());
    checkStatus(what, Buffer.concat(status).toString());
    return { statusAt };
  }

  async stdout(cmd: string[], expected: number): Promise<TransferResult> {
    let bytes = 0;
    let tLast = Number.NaN;
    const t0 = now();
    await this.#session('websocket stdout', cmd, false, TRANSFER_TIMEOUT_MS, (p) => {
      bytes += p.length;
      if (bytes >= expected && Number.isNaN(tLast)) tLast = now();
    });
    if (bytes !== expected) throw new Error(`websocket stdout: ${bytes}/${expected} bytes`);
    return { ms: tLast - t0, bytes };
  }

  async stdin(cmd: string[], total: number, chunk: number): Promise<TransferResult> {
    if (total % chunk !== 0) throw new Error('stdin size must be a multiple of the chunk size');
    const frame = WsChannelClient.frame(0, Buffer.alloc(chunk), 0x2, this.zeroMask);
    const eof = WsChannelClient.frame(undefined, Buffer.from([0xff, 0])); // v5 CLOSE signal for stdin
    const t0 = now();
    const { statusAt } = await this.#session('websocket stdin', cmd, true, TRANSFER_TIMEOUT_MS, () => undefined, async (c) => {
      await c.writeRepeated(frame, total / chunk);
      c.write(eof);
    });
    return { ms: statusAt - t0, bytes: total };
  }

  async latency(): Promise<LatencySample> {
    let first = Number.NaN;
    const t0 = now();
    const { statusAt } = await this.#session('websocket echo', ['echo', 'x'], false, LATENCY_TIMEOUT_MS, (p) => {
      if (p.length > 0 && Number.isNaN(first)) first = now() - t0;
    });
    if (Number.isNaN(first)) throw new Error('websocket echo: no output');
    return { firstByteMs: first, exitMs: statusAt - t0 };
  }
}

// ---- nodelet over SPDY/3.1 -------------------------------------------------------------------

/** The same path over SPDY/3.1 with remote-command v4, as kubectl ≤ 1.29 (or with WebSockets off) speaks it. */
export class SpdyPath implements ExecPath {
  readonly name = 'spdy';
  static readonly versions = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io'];

  constructor(
    private readonly port: number,
    private readonly pod: string,
  ) {}

  async #session(
    what: string,
    cmd: string[],
    stdin: boolean,
    timeoutMs: number,
    onStdout: (payload: Buffer) => void,
    feed?: (c: SpdyExecClient, stdinId: number) => Promise<void>,
  ): Promise<{ statusAt: number }> {
    const status: Buffer[] = [];
    const statusDone = deferred<number>();
    let client: SpdyExecClient | undefined;
    const run = async () => {
      client = await SpdyExecClient.connect(this.port, execPath(this.pod, cmd, stdin), SpdyPath.versions, {
        onData: (type, payload) => {
          if (type === 'stdout') onStdout(payload);
          else if (type === 'error') status.push(Buffer.from(payload));
        },
        onFin: (type) => {
          if (type === 'error') statusDone.resolve(now());
        },
        // The server resets stdin once the command is over (as the kubelet does): not a failure.
        onReset: (type, code) => {
          if (type === 'error') statusDone.reject(new Error(`server reset the error stream (${code})`));
        },
        onClose: () => statusDone.reject(new Error('connection closed before the exec status')),
      });
      if (client.version !== 'v4.channel.k8s.io') throw new Error(`server chose "${client.version}"`);
      // client-go's order: error, stdin, stdout, stderr — each waiting for its SYN_REPLY.
      await client.openStream('error');
      const stdinId = stdin ? await client.openStream('stdin') : 0;
      await client.openStream('stdout');
      await client.openStream('stderr');
      if (feed) await feed(client, stdinId);
      const statusAt = await statusDone.promise;
      client.teardown();
      await client.closed;
      return statusAt;
    };
    const statusAt = await withTimeout(what, timeoutMs, run(), () => client?.destroy());
    checkStatus(what, Buffer.concat(status).toString());
    return { statusAt };
  }

  async stdout(cmd: string[], expected: number): Promise<TransferResult> {
    let bytes = 0;
    let tLast = Number.NaN;
    const t0 = now();
    await this.#session('spdy stdout', cmd, false, TRANSFER_TIMEOUT_MS, (p) => {
      bytes += p.length;
      if (bytes >= expected && Number.isNaN(tLast)) tLast = now();
    });
    if (bytes !== expected) throw new Error(`spdy stdout: ${bytes}/${expected} bytes`);
    return { ms: tLast - t0, bytes };
  }

  async stdin(cmd: string[], total: number, chunk: number): Promise<TransferResult> {
    if (total % chunk !== 0) throw new Error('stdin size must be a multiple of the chunk size');
    const t0 = now();
    const { statusAt } = await this.#session('spdy stdin', cmd, true, TRANSFER_TIMEOUT_MS, () => undefined, async (c, id) => {
      await c.writeRepeated(SpdyExecClient.dataFrame(id, Buffer.alloc(chunk)), total / chunk);
      c.write(SpdyExecClient.dataFrame(id, Buffer.alloc(0), true)); // stdin EOF: empty DATA with FIN
    });
    return { ms: statusAt - t0, bytes: total };
  }

  async latency(): Promise<LatencySample> {
    let first = Number.NaN;
    const t0 = now();
    const { statusAt } = await this.#session('spdy echo', ['echo', 'x'], false, LATENCY_TIMEOUT_MS, (p) => {
      if (p.length > 0 && Number.isNaN(first)) first = now() - t0;
    });
    if (Number.isNaN(first)) throw new Error('spdy echo: no output');
    return { firstByteMs: first, exitMs: statusAt - t0 };
  }
}
