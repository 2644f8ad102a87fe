import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join, resolve } from 'node:path';
import { nsenterArgv } from './netns.js';
import { repoRoot } from './repo-root.js';
import { waitFor } from './wait.js';

/**
 * nodelet as a child process (`node dist/cli.js …`): the one harness the CLI tests, the soak suite
 * and the bench start theirs with (the bench imports this file: test/ never imports bench/). It
 * spawns nodelet with the caller's flags, appends its stdout and stderr to a log file, waits until
 * it serves (a /healthz poll with a deadline; nodelet's exit or the deadline fail with the log's
 * tail), and gives its pid (RSS and CPU from /proc), its URL, stop (SIGTERM, then SIGKILL after a
 * deadline), kill (any signal, SIGKILL for chaos) and restart (the same argv again, as after a
 * crash). With a teardown (tap's `t`) it is killed when the test ends.
 */

/** The repository's built CLI, as `npx nodelet` runs it. */
export const NODELET_CLI = join(repoRoot(), 'dist/cli.js');

/**
 * What "ready" is: `serving`, /healthz answers with any status (200, or 500 until the first
 * relist, or 401 where anonymous requests are refused); `healthy`, /healthz answers 200; `none`,
 * no wait (a caller that times nodelet's own start-up from the spawn).
 */
export type NodeletReadiness = 'serving' | 'healthy' | 'none';

export interface NodeletProcessOptions {
  /** nodelet's flags; the caller picks `--address`/`--port` and gives the same in `url`. */
  args: readonly string[];
  /** Where nodelet serves (`http://127.0.0.1:<port>`, or `https://…`, whose certificate is not checked). */
  url: string;
  /** nodelet's stdout and stderr, appended (a restart appends to the same file). */
  logFile: string;
  /** The script node runs (default NODELET_CLI): another build (`--nodelet-cli`) or a wrapper taking the same flags. */
  entry?: string;
  /** Node flags before the entry point (`--expose-gc`, `--cpu-prof` …). */
  nodeArgs?: readonly string[];
  /** Also the node flags of the entry's `#!/usr/bin/env -S node …` line, first: what the bin gives nodelet (src/cli.ts). */
  shebangNodeArgs?: boolean;
  /** The whole environment (default this process's). */
  env?: NodeJS.ProcessEnv;
  /** Working directory (where a `--cpu-prof` without a dir lands). */
  cwd?: string;
  /** A command nodelet runs under, e.g. `['prlimit', '--nofile=200:200']`. */
  wrapper?: readonly string[];
  /** Runs it in network namespace `name` (`nsenter --net`, test/helpers/netns.ts). */
  netns?: string;
  /**
   * `setpriv --pdeathsig KILL` (default true): nodelet dies with this process however that ends (a
   * tap timeout, a killed bench). setpriv, prlimit and nsenter all exec, so `pid` is nodelet's.
   */
  dieWithParent?: boolean;
  /** Default `serving`. */
  ready?: NodeletReadiness;
  /** Deadline of the readiness wait (default 30 s). */
  readyTimeoutMs?: number;
}

interface Teardown {
  teardown(fn: () => Promise<void> | void): void;
}

/**
 * The flags of a standalone nodelet serving plain, anonymous HTTP on loopback (the soak suite's and
 * the bench's nodes: their clients carry no credentials), its static pods read every second and
 * JSON logs at `verbosity`; `extra` comes last.
 */
export function standaloneNodeletFlags(o: { dockerHost: string; manifestDir: string; rootDir: string; port: number; nodeName: string; verbosity: number; extra?: readonly string[] }): string[] {
  return [
    '--docker-endpoint', o.dockerHost,
    '--pod-manifest-path', o.manifestDir,
    '--root-dir', o.rootDir,
    '--address', '127.0.0.1',
    '--port', String(o.port),
    '--hostname-override', o.nodeName,
    '--insecure-dev',
    '--file-check-frequency', '1s',
    '--logging-format', 'json',
    '-v', String(o.verbosity),
    ...(o.extra ?? []),
  ];
}

/** The node flags in a script's `#!/usr/bin/env -S node <flags>` line (none for a plain `node` shebang). */
export function shebangNodeArgs(script: string): string[] {
  const first = readFileSync(script, 'utf8').split('\n', 1)[0] ?? '';
  const m = /^#!\/usr\/bin\/env -S node(?: (.*))?$/.exec(first);
  return m?.[1] ? m[1].trim().split(/\s+/) : [];
}

/** The argv (command first) that runs nodelet as `o` asks. */
export function nodeletArgv(o: Pick<NodeletProcessOptions, 'args' | 'entry' | 'nodeArgs' | 'shebangNodeArgs' | 'wrapper' | 'netns' | 'dieWithParent'>): string[] {
  const entry = resolve(o.entry ?? NODELET_CLI);
  let argv = [process.execPath, ...(o.shebangNodeArgs ? shebangNodeArgs(entry) : []), ...(o.nodeArgs ?? []), entry, ...o.args];
  if (o.wrapper?.length) argv = [...o.wrapper, ...argv];
  if (o.netns) argv = (([cmd, rest]) => [cmd, ...rest])(nsenterArgv(o.netns, argv));
  if (o.dieWithParent ?? true) argv = ['setpriv', '--pdeathsig', 'KILL', '--', ...argv];
  return argv;
}

/** Any HTTP answer of `url` (its status), or a rejection when nothing answers; TLS certificates are not checked. */
function statusOf(url: string, timeoutMs: number): Promise<number> {
  if (url.startsWith('https:')) {
    return new Promise((resolve, reject) => {
      // nodelet's serving certificate is its own CA's or self-signed: the probe only asks whether it answers.
      const req = httpsRequest(url, { rejectUnauthorized: false, timeout: timeoutMs }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`GET ${url}: no answer in ${timeoutMs} ms`)));
      req.on('error', reject);
      req.end();
    });
  }
  return fetch(url, { signal: AbortSignal.timeout(timeoutMs) }).then(async (res) => {
    await res.text();
    return res.status;
  });
}

export class NodeletProcess {
  readonly url: string;
  readonly logFile: string;
  readonly argv: readonly string[];
  #child!: ChildProcess;
  #exited!: Promise<void>;
  #spawnError: Error | undefined;

  private constructor(readonly options: NodeletProcessOptions) {
    this.url = options.url.replace(/\/$/, '');
    this.logFile = options.logFile;
    this.argv = nodeletArgv(options);
    this.#spawn();
  }

  /**
   * Spawns nodelet and waits until it is ready (`o.ready`). With `t`, nodelet is SIGKILLed at its
   * teardown; tap runs teardowns last first, so a cleanup the caller registered before (its
   * containers, its directories) runs after the kill.
   */
  static async start(t: Teardown | undefined, o: NodeletProcessOptions): Promise<NodeletProcess> {
    const entry = resolve(o.entry ?? NODELET_CLI);
    if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first`);
    const proc = new NodeletProcess(o);
    t?.teardown(() => proc.kill('SIGKILL'));
    try {
      await proc.waitReady();
    } catch (err) {
      await proc.kill('SIGKILL');
      throw err;
    }
    return proc;
  }

  #spawn(): void {
    const fd = openSync(this.logFile, 'a');
    const [cmd, ...args] = this.argv;
    const child = spawn(cmd!, args, { stdio: ['ignore', fd, fd], ...(this.options.cwd ? { cwd: this.options.cwd } : {}), ...(this.options.env ? { env: this.options.env } : {}) });
    closeSync(fd);
    this.#child = child;
    this.#spawnError = undefined;
    this.#exited = new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      // A command that cannot be spawned never exits: it counts as ended, with this error.
      child.once('error', (err) => {
        this.#spawnError = err;
        resolve();
      });
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get running(): boolean {
    return this.#spawnError === undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** The exit code, or null while it runs or when a signal ended it. */
  get exitCode(): number | null {
    return this.#child.exitCode;
  }

  get signalCode(): NodeJS.Signals | null {
    return this.#child.signalCode;
  }

  /** How it ended (`exit code 2`, `signal SIGKILL`), or `running`. */
  get status(): string {
    if (this.#spawnError) return `not started: ${this.#spawnError.message}`;
    if (this.#child.exitCode !== null) return `exit code ${this.#child.exitCode}`;
    if (this.#child.signalCode !== null) return `signal ${this.#child.signalCode}`;
    return 'running';
  }

  /** The last `bytes` of nodelet's log. */
  logTail(bytes = 3000): string {
    try {
      return readFileSync(this.logFile, 'utf8').slice(-bytes);
    } catch {
      return '';
    }
  }

  /** The whole log so far. */
  log(): string {
    try {
      return readFileSync(this.logFile, 'utf8');
    } catch {
      return '';
    }
  }

  /** Throws, naming how nodelet ended and the tail of its log, once it has exited. */
  alive(what = 'nodelet'): void {
    if (!this.running) throw new Error(`${what} exited (${this.status}); ${this.logFile} ends:\n${this.logTail()}`);
  }

  /** Resolves once nodelet is ready (`options.ready`); fails when it exits first or at the deadline, with its log's tail. */
  async waitReady(ready: NodeletReadiness = this.options.ready ?? 'serving', timeoutMs = this.options.readyTimeoutMs ?? 30_000): Promise<void> {
    if (ready === 'none') return;
    let exited = false;
    try {
      await waitFor(`nodelet at ${this.url} ${ready === 'healthy' ? 'healthy' : 'serving'}`, async () => {
        if (!this.running) {
          exited = true;
          return 'exited';
        }
        const status = await statusOf(`${this.url}/healthz`, 2000);
        if (ready === 'healthy' && status !== 200) throw new Error(`/healthz answers ${status}`);
        return 'ready';
      }, timeoutMs, 50);
    } catch (err) {
      throw new Error(`${err instanceof Error ? err.message : String(err)}; ${this.logFile} ends:\n${this.logTail()}`);
    }
    if (exited) this.alive();
  }

  /** Sends `signal` without waiting (e.g. SIGUSR2 to the bench's GC hook). */
  signal(signal: NodeJS.Signals): void {
    if (this.running) this.#child.kill(signal);
  }

  /** Sends `signal` (default SIGKILL, as a crash) and waits until the process has exited. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    if (!this.running) return;
    this.#child.kill(signal);
    await this.#exited;
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves with the exit code (null when a signal ended it) once it is gone. */
  async stop(graceMs = 10_000): Promise<number | null> {
    if (this.running) {
      this.#child.kill('SIGTERM');
      const timer = setTimeout(() => this.#child.kill('SIGKILL'), graceMs);
      await this.#exited;
      clearTimeout(timer);
    }
    return this.#child.exitCode;
  }

  /** SIGKILL, then the same argv again (same port, flags and directories, as after a crash); resolves once ready. */
  async restart(): Promise<void> {
    await this.kill('SIGKILL');
    this.#spawn();
    await this.waitReady();
  }
}
