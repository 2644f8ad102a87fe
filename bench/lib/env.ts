import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../../test/helpers/net.js';
import { NodeletProcess, standaloneNodeletFlags, type NodeletReadiness } from '../../test/helpers/nodelet-process.js';

const run = promisify(execFile);

export const BUSYBOX = 'nodelet.local/busybox:1.35';

/** A private Docker engine started with scripts/docker-engine.sh (never the host's or a developer's). */
export class Engine {
  private constructor(
    readonly dir: string,
    readonly host: string,
    readonly pid: number | undefined,
  ) {}

  /**
   * Starts the engine with its state in a new temp directory. `onDir` gets the directory before
   * dockerd starts, so an interrupted start can still be stopped (`Engine.stopDir`).
   */
  static async start(root: string, log: (msg: string) => void, onDir: (dir: string) => void): Promise<Engine> {
    const script = join(root, 'scripts/docker-engine.sh');
    // Short path: containerd's socket paths must stay under 108 bytes.
    const dir = await mkdtemp('/tmp/nodelet-bench-docker.');
    onDir(dir);
    log(`starting a private Docker engine in ${dir}`);
    const { stdout } = await run(script, ['private', dir], { timeout: 120_000 });
    const host = stdout.trim().split('\n').pop() ?? '';
    if (!host.startsWith('unix://')) throw new Error(`docker-engine.sh printed no DOCKER_HOST: ${stdout}`);
    const pidText = readFileSync(join(dir, 'docker.pid'), 'utf8').trim();
    const engine = new Engine(dir, host, Number(pidText) || undefined);
    log('building the local images (busybox, pause)');
    await run(script, ['images'], { env: engine.env(), timeout: 300_000 });
    return engine;
  }

  /** The environment for `docker` CLI calls against this engine. */
  env(): NodeJS.ProcessEnv {
    return { ...process.env, DOCKER_HOST: this.host };
  }

  async version(): Promise<string> {
    const { stdout } = await run('docker', ['version', '--format', '{{.Server.Version}} (API {{.Server.APIVersion}})'], { env: this.env() });
    return stdout.trim();
  }

  /** Stops the private engine whose state is in `dir` (removing its containers) and deletes `dir`. */
  static async stopDir(root: string, dir: string): Promise<void> {
    await run(join(root, 'scripts/docker-engine.sh'), ['stop', dir], { timeout: 120_000 });
  }
}


export interface NodeletOptions {
  root: string;
  dockerHost: string;
  /** Extra node flags for the child (e.g. `--cpu-prof`). */
  nodeArgs?: string[];
  /** nodelet's entry point; default `dist/cli.js` of the repository. */
  cli?: string | undefined;
  /** More static pods: file name (without .yaml) → manifest. */
  extraManifests?: Record<string, string>;
  /** More nodelet flags (e.g. `--max-streaming-sessions`). */
  args?: string[];
  /** `--hostname-override` (default `bench`); nodelets sharing one engine need different names. */
  nodeName?: string;
  /** Whether the `sleeper` pod is among the static pods (default true; the exec paths need it). */
  sleeper?: boolean;
  /**
   * What start() waits for (test/helpers/nodelet-process.ts); default `none`: the parts wait for
   * their pods themselves, and idle110 times its start-up from the spawn.
   */
  ready?: NodeletReadiness;
}

/**
 * Node flags that let the bench force a full GC in nodelet: `--expose-gc` and a preloaded hook
 * (`gc-hook.ts`) that collects on SIGUSR2 and logs the memory figures (`BenchNodelet.forceGc`).
 */
export const GC_HOOK_ARGS: readonly string[] = ['--expose-gc', '--import', new URL('./gc-hook.js', import.meta.url).href];

/**
 * The bench's nodelet on static pods: a child process (`node dist/cli.js …`, on the process harness
 * test/helpers/nodelet-process.ts) with the bin's V8 flags, so its CPU time can be read from /proc.
 */
export class BenchNodelet {
  private constructor(
    /** The process: pid, log, stop, signals. */
    readonly proc: NodeletProcess,
    readonly port: number,
    readonly workDir: string,
    readonly traceGc: boolean,
    /** Its `--hostname-override`: static pods are listed as `<name>-<nodeName>`. */
    readonly nodeName: string,
  ) {}

  static readonly nodeName = 'bench';
  static readonly podName = 'sleeper';

  get pid(): number | undefined {
    return this.proc.pid;
  }

  get url(): string {
    return this.proc.url;
  }

  /** nodelet's stdout and stderr. */
  get logFile(): string {
    return this.proc.logFile;
  }

  /** Its `--pod-manifest-path`. */
  get manifestDir(): string {
    return join(this.workDir, 'manifests');
  }

  /** Throws (how it ended, its log's tail) once nodelet has exited. */
  alive(what = 'nodelet'): void {
    this.proc.alive(what);
  }

  static async start(opts: NodeletOptions): Promise<BenchNodelet> {
    const workDir = await mkdtemp(join(tmpdir(), 'nodelet-bench-'));
    const manifests = join(workDir, 'manifests');
    await mkdir(manifests);
    if (opts.sleeper ?? true) await writeFile(join(manifests, 'sleeper.yaml'), podManifest());
    const nodeName = opts.nodeName ?? BenchNodelet.nodeName;
    for (const [name, text] of Object.entries(opts.extraManifests ?? {})) await writeFile(join(manifests, `${name}.yaml`), text);
    const port = await freePort();
    const proc = await NodeletProcess.start(undefined, {
      entry: opts.cli ?? join(opts.root, 'dist/cli.js'),
      // What the bin's shebang gives nodelet (V8 flags, see src/cli.ts), then the bench's own.
      shebangNodeArgs: true,
      nodeArgs: opts.nodeArgs ?? [],
      cwd: workDir,
      logFile: join(workDir, 'nodelet.log'),
      url: `http://127.0.0.1:${port}`,
      ready: opts.ready ?? 'none',
      // Plain HTTP, anonymous: the bench's clients carry no credentials.
      args: standaloneNodeletFlags({ dockerHost: opts.dockerHost, manifestDir: manifests, rootDir: join(workDir, 'root'), port, nodeName, verbosity: 0, extra: opts.args ?? [] }),
    });
    const traceGc = (opts.nodeArgs ?? []).includes('--trace-gc');
    return new BenchNodelet(proc, port, workDir, traceGc, nodeName);
  }

  /** Waits until the bench pod's container runs; returns its Docker container id and the pod name. */
  async waitForPod(timeoutMs = 90_000): Promise<{ containerId: string; pod: string }> {
    const pod = `${BenchNodelet.podName}-${this.nodeName}`;
    const deadline = Date.now() + timeoutMs;
    let last = 'no answer yet';
    while (Date.now() < deadline) {
      this.alive();
      try {
        const res = await fetch(`${this.url}/pods`);
        const list = (await res.json()) as { items?: PodLike[] };
        const p = list.items?.find((x) => x.metadata?.name === pod);
        const cs = p?.status?.containerStatuses?.[0];
        if (cs?.state?.running && cs.containerID) return { containerId: cs.containerID.replace(/^docker:\/\//, ''), pod };
        last = p ? `pod phase ${p.status?.phase ?? '?'}` : 'pod not listed yet';
      } catch (err) {
        last = String(err);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`the bench pod did not start within ${timeoutMs} ms (${last}); see ${this.logFile}`);
  }

  /** Waits until every container of static pod `name` (as listed: `<name>-bench`) runs; returns the pod. */
  async waitForPodRunning(name: string, timeoutMs = 120_000): Promise<PodLike> {
    const pod = `${name}-${this.nodeName}`;
    const deadline = Date.now() + timeoutMs;
    let last = 'no answer yet';
    while (Date.now() < deadline) {
      this.alive();
      try {
        const list = (await (await fetch(`${this.url}/pods`)).json()) as { items?: PodLike[] };
        const p = list.items?.find((x) => x.metadata?.name === pod);
        const cs = p?.status?.containerStatuses ?? [];
        if (p && cs.length > 0 && cs.every((c) => c.state?.running && c.containerID)) return p;
        last = p ? `pod phase ${p.status?.phase ?? '?'}, ${cs.filter((c) => c.state?.running).length}/${cs.length} running` : 'pod not listed yet';
      } catch (err) {
        last = String(err);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`pod ${pod} did not start within ${timeoutMs} ms (${last}); see ${this.logFile}`);
  }

  /**
   * Full (mark-compact) garbage collections nodelet has run so far, counted from its log when it
   * runs with `--trace-gc` (the bench's default); NaN otherwise.
   */
  markCompacts(): number {
    if (!this.traceGc) return Number.NaN;
    try {
      return readFileSync(this.logFile, 'latin1').split('Mark-Compact').length - 1;
    } catch {
      return Number.NaN;
    }
  }

  /**
   * A full GC in nodelet (it must run with `GC_HOOK_ARGS`), then its memory: RSS from /proc, the
   * V8 heap and external memory from `process.memoryUsage()` as the hook logged them.
   */
  async forceGc(timeoutMs = 10_000): Promise<GcMemory> {
    const marker = 'NODELET_BENCH_GC ';
    const seen = () => readFileSync(this.logFile, 'latin1').split(marker).length;
    const before = seen();
    this.proc.signal('SIGUSR2');
    const deadline = Date.now() + timeoutMs;
    while (seen() === before) {
      if (Date.now() > deadline) throw new Error(`nodelet did not answer the GC signal; does it run with ${GC_HOOK_ARGS.join(' ')}?`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const text = readFileSync(this.logFile, 'latin1');
    const line = text.slice(text.lastIndexOf(marker) + marker.length).split('\n', 1)[0]!;
    return JSON.parse(line) as GcMemory;
  }

  /** SIGTERM, then SIGKILL after 10 s; resolves once the child is gone. */
  async stop(): Promise<void> {
    await this.proc.stop(10_000);
  }

  async cleanup(keepLog: boolean): Promise<void> {
    if (!keepLog) await rm(this.workDir, { recursive: true, force: true });
  }
}

/** What gc-hook.ts logs after a forced GC: `process.memoryUsage()` in bytes. */
export interface GcMemory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
}

export interface PodLike {
  metadata?: { name?: string; namespace?: string; uid?: string };
  status?: {
    phase?: string;
    containerStatuses?: { name?: string; containerID?: string; restartCount?: number; state?: { running?: unknown; terminated?: unknown; waiting?: unknown } }[];
  };
}

function podManifest(): string {
  return `apiVersion: v1
kind: Pod
metadata: { name: ${BenchNodelet.podName} }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: app
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sleep", "2147483647"]
`;
}
