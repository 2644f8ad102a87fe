import { copyFile, mkdir, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type Docker from 'dockerode';
import type { Pod, PodList } from '../../src/api/types.js';
import { freePort } from './net.js';
import { Label, DockerType } from '../../src/runtime/docker/labels.js';
import { removeNodeContainers, testDocker, testDockerHost } from './docker.js';
import { unmountUnder } from './nodelet.js';
import { NodeletProcess, standaloneNodeletFlags } from './nodelet-process.js';
export { podManifest } from './pod-manifest.js';
import { childrenOf, fdsOf, isPortForwardHelper, poll, rssOf } from './soak.js';

interface Teardown {
  teardown(fn: () => Promise<void> | void): void;
}

export interface ChildNodeOptions {
  /** Extra nodelet flags. */
  flags?: string[];
  /** The static pod path is this symlink's name in the work dir (for atomic swaps), not a plain directory. */
  manifestLink?: boolean;
}

/**
 * nodelet as a child process (`node dist/cli.js …`, test/helpers/nodelet-process.ts) on a loopback
 * port, against the private test engine, with its own node name, manifest dir and root dir: its descriptors and RSS are read
 * from /proc, and it can be SIGKILLed and started again on the same port and directories.
 */
export class ChildNode {
  readonly docker: Docker = testDocker();
  readonly url: string;
  /** nodelet's stdout+stderr (JSON lines), kept for diagnostics. */
  readonly logFile: string;

  private constructor(
    readonly nodeName: string,
    readonly workDir: string,
    readonly manifestDir: string,
    readonly port: number,
    /** The process (test/helpers/nodelet-process.ts): SIGKILLed and started again by restart(). */
    readonly proc: NodeletProcess,
  ) {
    this.url = proc.url;
    this.logFile = proc.logFile;
  }

  static async start(t: Teardown, opts: ChildNodeOptions = {}): Promise<ChildNode> {
    const nodeName = `soak${randomBytes(3).toString('hex')}`;
    // Under the run's directory when test-soak.sh gives one (removed even if the case is killed).
    const workDir = await mkdtemp(join(process.env.NODELET_SOAK_TMPDIR ?? tmpdir(), 'nodelet-soak-'));
    const manifestDir = join(workDir, opts.manifestLink ? 'manifests' : 'manifests.d');
    if (!opts.manifestLink) await mkdir(manifestDir);
    const port = await freePort();
    const logFile = join(workDir, 'nodelet.log');
    let proc: NodeletProcess | undefined;
    t.teardown(async () => {
      await proc?.kill('SIGKILL');
      // NODELET_SOAK_LOG_DIR keeps each nodelet's log past the run (diagnosing a failed case).
      if (process.env.NODELET_SOAK_LOG_DIR) await copyFile(logFile, join(process.env.NODELET_SOAK_LOG_DIR, `${nodeName}.log`)).catch(() => undefined);
      await removeNodeContainers(testDocker(), nodeName);
      await unmountUnder(workDir);
      await rm(workDir, { recursive: true, force: true });
    });
    // Killed by the teardown above, before the directories go (not by a teardown of its own).
    proc = await NodeletProcess.start(undefined, {
      url: `http://127.0.0.1:${port}`,
      logFile,
      cwd: workDir,
      // Plain HTTP, anonymous: the cases' clients carry no credentials.
      args: standaloneNodeletFlags({ dockerHost: testDockerHost(), manifestDir, rootDir: join(workDir, 'root'), port, nodeName, verbosity: 2, extra: opts.flags ?? [] }),
    });
    return new ChildNode(nodeName, workDir, manifestDir, port, proc);
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  get running(): boolean {
    return this.proc.running;
  }

  /** The last `bytes` of nodelet's log. */
  logTail(bytes = 3000): string {
    return this.proc.logTail(bytes);
  }

  fds(): number {
    return fdsOf(this.pid);
  }

  rss(): number {
    return rssOf(this.pid);
  }

  /**
   * nodelet's child processes other than its port-forward helpers: none should outlive a session
   * (the helper, one per pod, is reused across sessions and exits after 30 s idle).
   */
  children(): number {
    return childrenOf(this.pid).filter((pid) => !isPortForwardHelper(pid)).length;
  }

  /** nodelet's per-pod port-forward helpers. */
  portForwardHelpers(): number {
    return childrenOf(this.pid).filter(isPortForwardHelper).length;
  }

  /** Sends `signal` and waits until the process has exited. */
  kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    return this.proc.kill(signal);
  }

  /** Starts nodelet again on the same port, node name and directories (as after a crash). */
  restart(): Promise<void> {
    return this.proc.restart();
  }

  /** Resolves once `/healthz` answers at all (200 or 500). */
  waitServing(timeoutMs = 30_000): Promise<void> {
    return this.proc.waitReady('serving', timeoutMs);
  }

  async healthz(): Promise<number> {
    const res = await fetch(`${this.url}/healthz`, { signal: AbortSignal.timeout(5000) });
    await res.text();
    return res.status;
  }

  writeManifest(file: string, text: string): Promise<void> {
    return writeFile(join(this.manifestDir, file), text);
  }

  removeManifest(file: string): Promise<void> {
    return unlink(join(this.manifestDir, file));
  }

  /** The pod as listed (`<name>-<node>`). */
  podName(name: string): string {
    return `${name}-${this.nodeName}`;
  }

  async pods(): Promise<Pod[]> {
    const res = await fetch(`${this.url}/pods`, { signal: AbortSignal.timeout(10_000) });
    return ((await res.json()) as PodList).items;
  }

  async pod(name: string): Promise<Pod | undefined> {
    return (await this.pods()).find((p) => p.metadata?.name === this.podName(name));
  }

  /** A gauge or counter from `/metrics` (summed over its series). */
  async metric(name: string): Promise<number> {
    const text = await (await fetch(`${this.url}/metrics`, { signal: AbortSignal.timeout(10_000) })).text();
    let sum = 0;
    for (const line of text.split('\n')) {
      if (line.startsWith(`${name} `) || line.startsWith(`${name}{`)) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return sum;
  }

  /** Open exec, attach and port-forward sessions (`nodelet_streaming_sessions`). */
  sessions(): Promise<number> {
    return this.metric('nodelet_streaming_sessions');
  }

  /** The first running container `container` of pod `name`: its Docker id and host PID. */
  async containerOf(name: string, container: string): Promise<{ id: string; pid: number }> {
    const pod = await this.pod(name);
    const id = pod?.status?.containerStatuses?.find((c) => c.name === container && c.state?.running)?.containerID?.replace('docker://', '');
    if (!id) throw new Error(`container ${container} of ${name} is not running`);
    const info = await this.docker.getContainer(id).inspect();
    return { id, pid: info.State.Pid };
  }
}

/** What Docker holds for one pod: sandboxes and containers by name, with their states. */
export interface PodOnDocker {
  sandboxes: { id: string; state: string }[];
  /** `sandboxId`: the sandbox the instance was created in (`io.kubernetes.sandbox.id`). */
  containers: Map<string, { id: string; state: string; sandboxId?: string }[]>;
}

export async function podOnDocker(docker: Docker, node: string, uid: string, opts: { withoutDead?: boolean } = {}): Promise<PodOnDocker> {
  const list = await docker.listContainers({ all: true, filters: { label: [`${Label.node}=${node}`, `${Label.podUID}=${uid}`] } });
  const out: PodOnDocker = { sandboxes: [], containers: new Map() };
  for (const c of list) {
    // `dead`: Docker's own removal failed (a root filesystem it left mounted across its restart,
    // "device or resource busy"); nodelet retries the removal at each sync but cannot fix it.
    if (opts.withoutDead && c.State === 'dead') continue;
    const entry = { id: c.Id, state: c.State };
    if (c.Labels[Label.dockerType] === DockerType.sandbox) out.sandboxes.push(entry);
    else {
      const name = c.Labels[Label.containerName] ?? '';
      const sandboxId = c.Labels[Label.sandboxID];
      out.containers.set(name, [...(out.containers.get(name) ?? []), { ...entry, ...(sandboxId ? { sandboxId } : {}) }]);
    }
  }
  return out;
}

/** Every container of the node on Docker, grouped by pod UID. */
export async function uidsOnDocker(docker: Docker, node: string): Promise<Map<string, number>> {
  const list = await docker.listContainers({ all: true, filters: { label: [`${Label.node}=${node}`] } });
  const out = new Map<string, number>();
  for (const c of list) out.set(c.Labels[Label.podUID] ?? '', (out.get(c.Labels[Label.podUID] ?? '') ?? 0) + 1);
  return out;
}

/**
 * Why the pods named `names` (manifest names) have not converged yet, or undefined once they
 * have: each listed with every container running and ready, and on Docker exactly one running
 * sandbox — an exited one only while an instance the container GC keeps names it, as the
 * kubelet's `evictSandboxes` keeps it — and per container exactly one running instance and at
 * most one exited one (kept for `logs --previous`), not counting those Docker itself failed to
 * remove (state `dead`); and nothing of the node on Docker belongs to any other pod.
 */
export async function notConverged(node: ChildNode, names: readonly string[]): Promise<string | undefined> {
  const pods = await node.pods();
  const uids = new Set<string>();
  for (const name of names) {
    const pod = pods.find((p) => p.metadata?.name === node.podName(name));
    if (!pod) return `${name} not listed`;
    const uid = pod.metadata?.uid ?? '';
    uids.add(uid);
    const specNames = (pod.spec?.containers ?? []).map((c) => c.name);
    const statuses = pod.status?.containerStatuses ?? [];
    const notRunning = specNames.filter((n) => !statuses.some((s) => s.name === n && s.state?.running && s.ready));
    if (notRunning.length > 0) return `${name}: ${notRunning.join(',')} not running and ready in /pods`;
    const onDocker = await podOnDocker(node.docker, node.nodeName, uid, { withoutDead: true });
    const named = new Set([...onDocker.containers.values()].flat().map((c) => c.sandboxId));
    const running = onDocker.sandboxes.filter((s) => s.state === 'running');
    const unkept = onDocker.sandboxes.filter((s) => s.state !== 'running' && !named.has(s.id));
    if (running.length !== 1 || unkept.length > 0) return `${name}: sandboxes on Docker ${JSON.stringify(onDocker.sandboxes.map((s) => s.state))}`;
    for (const n of specNames) {
      const list = onDocker.containers.get(n) ?? [];
      const running = list.filter((c) => c.state === 'running').length;
      if (running !== 1 || list.length > 2) return `${name}/${n}: on Docker ${JSON.stringify(list.map((c) => c.state))}`;
    }
    const unknown = [...onDocker.containers.keys()].filter((n) => !specNames.includes(n));
    if (unknown.length > 0) return `${name}: containers not in the spec on Docker: ${unknown.join(',')}`;
  }
  const strays = [...(await uidsOnDocker(node.docker, node.nodeName)).keys()].filter((uid) => !uids.has(uid));
  if (strays.length > 0) return `containers of ${strays.length} other pod(s) still on Docker`;
  return undefined;
}

/** Polls until `names` converged (see notConverged); resolves with the seconds it took. */
export async function converge(node: ChildNode, names: readonly string[], timeoutMs = 90_000): Promise<number> {
  const t0 = Date.now();
  await poll(`pods ${names.join(', ')} converged`, async (why) => {
    const reason = await notConverged(node, names);
    if (reason === undefined) return true;
    why(reason);
    return undefined;
  }, timeoutMs, 250);
  return (Date.now() - t0) / 1000;
}

/** What `web` of the session pod serves: /big, 64 MiB of zeros. */
export const SESSION_POD_BIG = 64 * 1024 * 1024;

/**
 * The containers of a pod for streaming sessions: `app` to exec into, `talker` printing
 * `tick <n>` every 200 ms (attach, logs -f), `web` (busybox httpd on 127.0.0.1:8080) serving
 * /big for port-forward.
 */
export const sessionPodContainers: Record<string, readonly string[]> = {
  app: ['sleep', '2147483647'],
  talker: ['sh', '-c', 'i=0; while :; do echo "tick $i"; i=$((i+1)); usleep 200000; done'],
  web: ['sh', '-c', `mkdir -p /www && dd if=/dev/zero of=/www/big bs=1048576 count=${SESSION_POD_BIG / 1024 / 1024} 2>/dev/null && exec httpd -f -p 127.0.0.1:8080 -h /www`],
};

/** Resolves once `web` of session pod `name` has written /big (httpd answers from then on). */
export async function webServing(node: ChildNode, name: string): Promise<void> {
  await poll('httpd serving', async () => {
    const r = await fetch(`${node.url}/run/default/${node.podName(name)}/web?cmd=${encodeURIComponent('ls -l /www/big')}`, { method: 'POST' });
    return (await r.text()).includes(String(SESSION_POD_BIG)) ? true : undefined;
  }, 60_000, 250);
}
