/**
 * The real kubelet as the bench's peer of nodelet (`--only kubelet`): the processes.
 *
 * - `ContainerdPeer`: Debian's containerd (1.6, its built-in CRI plugin) with a root, state, socket
 *   and CNI configuration of its own, written by the bench; the images the bench pods use are
 *   imported from the bench's Docker engine into its `k8s.io` namespace (no registry is reachable).
 * - `KubeletPeer`: `kubelet` of the control plane's pin (scripts/control-plane.sh build-kubelet)
 *   with a KubeletConfiguration file, a node kubeconfig of the bench's control plane and a root
 *   directory, cgroup root and pod log directory of its own.
 *
 * Both run in the bench's sealed network namespace (they inherit it from netns-child.js), so the
 * CRI plugin's bridge, veths and pod IPs exist only there. `stop()` removes what they leave on the
 * machine: tasks and their shims, netns mounts, the kubelet's root-dir bind mount and its cgroups.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, rmdirSync, statSync, unlinkSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from '../../test/helpers/wait.js';
import type { ControlPlane } from '../../test/helpers/control-plane.js';
import { freePort } from '../../test/helpers/net.js';
import { bridgeConflist } from './pod-network.js';

const run = promisify(execFile);
type Log = (msg: string) => void;

/** A CNI bridge network of one node (the shape of test/integration/pod-network.test.ts `nodeNet()`). */
export interface BridgeNet {
  name: string;
  confDir: string;
  dataDir: string;
  cacheDir: string;
  subnet: string;
  bridge: string;
}

/** Writes `<dir>/net.d/10-<name>.conflist`: bridge (gateway, hairpin) + host-local + portmap. */
export async function writeBridgeNet(dir: string, name: string, index: number): Promise<BridgeNet> {
  const net: BridgeNet = { name, confDir: join(dir, 'net.d'), dataDir: join(dir, 'leases'), cacheDir: join(dir, 'cni-cache'), subnet: `10.244.${index}.0/24`, bridge: `cni${index}` };
  await mkdir(net.confDir, { recursive: true });
  await writeFile(join(net.confDir, `10-${name}.conflist`), bridgeConflist(name, net));
  return net;
}

/** Command lines of every process, as argv arrays keyed by pid (processes that vanish meanwhile are skipped). */
export function processes(): Map<number, { argv: string[]; ppid: number; comm: string }> {
  const out = new Map<number, { argv: string[]; ppid: number; comm: string }>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      out.set(Number(entry), { argv, ppid, comm });
    } catch {
      /* gone */
    }
  }
  return out;
}

/**
 * Proportional set size of `pid` in bytes (`Pss` of /proc/PID/smaps_rollup), NaN when gone: each
 * shared page counted once over its sharers, so a sum over many shims of one binary is not
 * inflated by their shared text as a sum of RSS is.
 */
export function pssOf(pid: number | undefined): number {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) * 1024 : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** The `containerd-shim*` processes serving the containerd whose socket is `address`. */
export function shimPids(address: string): number[] {
  const pids: number[] = [];
  for (const [pid, p] of processes()) {
    if (!p.argv[0]?.includes('containerd-shim')) continue;
    const i = p.argv.indexOf('-address');
    if (i >= 0 && p.argv[i + 1] === address) pids.push(pid);
  }
  return pids;
}

// ---- containerd ---------------------------------------------------------------------------------

/**
 * containerd's config.toml (version 2) for the kubelet's peer: root, state and sockets below
 * `dir`, the CRI plugin with `sandboxImage`, the CNI network of `net` and runc through the v2 shim
 * on cgroupfs.
 */
export function containerdConfig(o: { dir: string; address: string; sandboxImage: string; net: BridgeNet }): string {
  const { dir, address, net } = o;
  return [
    'version = 2',
    `root = "${dir}/root"`,
    `state = "${dir}/state"`,
    '[grpc]',
    `  address = "${address}"`,
    '[ttrpc]',
    `  address = "${address}.ttrpc"`,
    '[metrics]',
    '  address = ""',
    '[plugins."io.containerd.grpc.v1.cri"]',
    `  sandbox_image = "${o.sandboxImage}"`,
    // Root here lacks CAP_SYS_RESOURCE: a sandbox's oom_score_adj of -998 (what the kubelet
    // asks for the pause container) makes runc's init fail ("can't get final child's PID from
    // pipe"). Clamped to containerd's own score instead, as nodelet does for its sandboxes.
    '  restrict_oom_score_adj = true',
    // The pod netns bind mounts below the state dir, not in the machine's /var/run/netns.
    '  netns_mounts_under_state_dir = true',
    '  [plugins."io.containerd.grpc.v1.cri".cni]',
    '    bin_dir = "/usr/lib/cni"',
    `    conf_dir = "${net.confDir}"`,
    '  [plugins."io.containerd.grpc.v1.cri".containerd]',
    '    snapshotter = "overlayfs"',
    '    default_runtime_name = "runc"',
    '    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]',
    '      runtime_type = "io.containerd.runc.v2"',
    '      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]',
    '        SystemdCgroup = false',
    '',
  ].join('\n');
}

export class ContainerdPeer {
  #stopped = false;

  private constructor(
    readonly child: ChildProcess,
    readonly dir: string,
    readonly address: string,
    readonly logFile: string,
    readonly net: BridgeNet,
  ) {}

  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * Starts containerd with everything below a new short directory (shim socket paths must stay
   * under 108 bytes) and waits until it answers. `sandboxImage`: the CRI sandbox (pause) image.
   */
  static async start(o: { sandboxImage: string; bridgeIndex: number; log: Log }): Promise<ContainerdPeer> {
    const dir = await mkdtemp('/tmp/nlk-ctd.');
    const net = await writeBridgeNet(dir, 'kubeletnet', o.bridgeIndex);
    const address = join(dir, 'c.sock');
    const config = join(dir, 'config.toml');
    await writeFile(config, containerdConfig({ dir, address, sandboxImage: o.sandboxImage, net }));
    const logFile = join(dir, 'containerd.log');
    const fd = openSync(logFile, 'a');
    const child = spawn('/usr/bin/containerd', ['--config', config], { stdio: ['ignore', fd, fd] });
    closeSync(fd);
    const peer = new ContainerdPeer(child, dir, address, logFile, net);
    await waitFor('containerd answering', async () => {
      if (child.exitCode !== null) throw new Error(`containerd exited with ${child.exitCode}; see ${logFile}`);
      await peer.ctr(['version']);
      return true;
    }, 30_000, 100);
    o.log(`containerd pid ${child.pid} on ${address} (CRI: bridge ${net.bridge}, ${net.subnet})`);
    return peer;
  }

  /** `ctr -a <socket> ARGS`; resolves with stdout. */
  async ctr(args: string[], timeoutMs = 60_000): Promise<string> {
    const { stdout } = await run('ctr', ['-a', this.address, ...args], { timeout: timeoutMs, maxBuffer: 16 << 20 });
    return stdout;
  }

  /** `docker save IMAGES | ctr -n k8s.io images import -` from the engine at `dockerHost`. */
  async importImages(dockerHost: string, images: readonly string[]): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const save = spawn('docker', ['save', ...images], { env: { ...process.env, DOCKER_HOST: dockerHost }, stdio: ['ignore', 'pipe', 'pipe'] });
      const imp = spawn('ctr', ['-a', this.address, '-n', 'k8s.io', 'images', 'import', '-'], { stdio: ['pipe', 'ignore', 'pipe'] });
      save.stdout.pipe(imp.stdin);
      let err = '';
      save.stderr.on('data', (c: Buffer) => (err += c.toString()));
      imp.stderr.on('data', (c: Buffer) => (err += c.toString()));
      let pending = 2;
      let failed = false;
      const done = (what: string) => (code: number | null) => {
        if (code !== 0 && !failed) {
          failed = true;
          reject(new Error(`${what} exited with ${code}: ${err.trim()}`));
        }
        if (--pending === 0 && !failed) resolve();
      };
      save.once('close', done('docker save'));
      imp.once('close', done('ctr images import'));
    });
    const listed = (await this.ctr(['-n', 'k8s.io', 'images', 'ls', '-q'])).split('\n');
    for (const image of images) if (!listed.includes(image)) throw new Error(`containerd has no ${image} after the import`);
  }

  /** Tasks (pid and status) by container id in the `k8s.io` namespace. */
  async tasks(): Promise<Map<string, { pid: number; status: string }>> {
    const out = new Map<string, { pid: number; status: string }>();
    for (const line of (await this.ctr(['-n', 'k8s.io', 'tasks', 'ls'])).split('\n').slice(1)) {
      const [id, pid, status] = line.trim().split(/\s+/);
      if (id && pid && status) out.set(id, { pid: Number(pid), status });
    }
    return out;
  }

  /**
   * Stops containerd and removes its directory. Tasks the kubelet did not remove are killed and
   * deleted first (their shims would otherwise outlive containerd), leftover shims are killed, and
   * mounts below the directory (pod netns, rootfs) are detached.
   */
  async stop(keepLog: boolean, log: Log): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    if (this.child.exitCode === null && this.child.signalCode === null) {
      try {
        const tasks = await this.tasks();
        for (const id of tasks.keys()) {
          await this.ctr(['-n', 'k8s.io', 'tasks', 'kill', '-s', 'SIGKILL', id]).catch(() => undefined);
          await this.ctr(['-n', 'k8s.io', 'tasks', 'delete', '-f', id]).catch(() => undefined);
        }
        if (tasks.size > 0) log(`containerd: removed ${tasks.size} task(s) the kubelet left`);
      } catch (err) {
        log(`containerd: listing its tasks failed: ${String(err)}`);
      }
      const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    for (const pid of shimPids(this.address)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await unmountBelow(this.dir);
    if (keepLog) log(`containerd log kept: ${this.logFile}`);
    else await rm(this.dir, { recursive: true, force: true });
  }
}

/** Detaches every mount below `dir`, deepest first (lazily: a busy one goes once released). */
async function unmountBelow(dir: string): Promise<void> {
  const mounts = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' ')[1] ?? '')
    .filter((m) => m === dir || m.startsWith(`${dir}/`))
    .sort((a, b) => b.length - a.length);
  for (const m of mounts) await run('umount', ['-l', m]).catch(() => undefined);
}

// ---- the kubelet ----------------------------------------------------------------------------------

/** The cgroup v1 hierarchies (or the v2 root) where `cgroupRoot` must exist before the kubelet starts. */
function cgroupMounts(): string[] {
  if (statSafe('/sys/fs/cgroup/cgroup.controllers')) return ['/sys/fs/cgroup'];
  return readdirSync('/sys/fs/cgroup')
    .map((d) => join('/sys/fs/cgroup', d))
    .filter((p) => statSafe(join(p, 'cgroup.procs')));
}

function statSafe(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}

/** Removes a cgroup tree bottom-up (rmdir only: a cgroup with processes stays, and says so). */
function removeCgroupTree(dir: string): string[] {
  const failed: string[] = [];
  if (!existsSync(dir)) return failed;
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) failed.push(...removeCgroupTree(join(dir, e.name)));
  try {
    rmdirSync(dir);
  } catch {
    failed.push(dir);
  }
  return failed;
}

export interface KubeletPeerOptions {
  /** The kubelet binary (scripts/control-plane.sh build-kubelet). */
  bin: string;
  cp: ControlPlane;
  containerd: ContainerdPeer;
  nodeName: string;
  /** Its node IP and serving address (an address on the sealed namespace's `lo`). */
  nodeIP: string;
  maxPods: number;
  /** Its containers' log size before rotation (`containerLogMaxSize`), as nodelet's `--container-log-max-size`. */
  containerLogMaxSize: string;
  log: Log;
}

/**
 * The KubeletConfiguration (kubelet.config.k8s.io/v1beta1) of the peer: the defaults
 * (pkg/kubelet/apis/config/v1beta1/defaults.go) but for what this machine and the bench's control
 * plane need.
 */
export function kubeletConfiguration(o: { nodeIP: string; port: number; healthzPort: number; caFile: string; cgroupRoot: string; runtimeAddress: string; podLogsDir: string; maxPods: number; containerLogMaxSize: string }): Record<string, unknown> {
  return {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: o.nodeIP,
    port: o.port,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: o.healthzPort,
    // The apiserver's client certificate (x509) and tokens (webhook), authorized by
    // SubjectAccessReview: as nodelet runs with --client-ca-file and Webhook modes.
    authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: o.caFile } },
    authorization: { mode: 'Webhook' },
    // No systemd here (PID 1 is not systemd): cgroupfs, and containerd's SystemdCgroup=false.
    cgroupDriver: 'cgroupfs',
    cgroupRoot: o.cgroupRoot,
    // This machine has cgroup v1: 1.35 made the kubelet refuse it unless told otherwise
    // (failCgroupV1, pkg/kubelet/apis/config/v1beta1/defaults.go); 1.34 only warns.
    failCgroupV1: false,
    failSwapOn: false,
    containerRuntimeEndpoint: `unix://${o.runtimeAddress}`,
    // Not the machine's /var/log/pods.
    podLogsDir: o.podLogsDir,
    maxPods: o.maxPods,
    containerLogMaxSize: o.containerLogMaxSize,
  };
}

export class KubeletPeer {
  private constructor(
    readonly child: ChildProcess,
    readonly dir: string,
    readonly logFile: string,
    readonly cgroupRoot: string,
    readonly nodeName: string,
  ) {}

  get pid(): number | undefined {
    return this.child.pid;
  }

  static async start(o: KubeletPeerOptions): Promise<KubeletPeer> {
    const dir = await mkdtemp('/tmp/nlk-kubelet.');
    const kubeconfig = await o.cp.nodeKubeconfig(o.nodeName);
    const [port, healthzPort] = [await freePort(), await freePort()];
    // Its own cgroup root: nodelet (--cgroups-per-qos) makes `kubepods` at `/`.
    const cgroupRoot = `/nodelet-bench-kubelet-${process.pid}`;
    for (const m of cgroupMounts()) mkdirSync(join(m, cgroupRoot), { recursive: true });
    const config = join(dir, 'config.yaml');
    await writeFile(config, JSON.stringify(kubeletConfiguration({ nodeIP: o.nodeIP, port, healthzPort, caFile: o.cp.caFile, cgroupRoot, runtimeAddress: o.containerd.address, podLogsDir: join(dir, 'pod-logs'), maxPods: o.maxPods, containerLogMaxSize: o.containerLogMaxSize })));
    const logFile = join(dir, 'kubelet.log');
    const fd = openSync(logFile, 'a');
    const child = spawn(
      o.bin,
      ['--config', config, '--kubeconfig', kubeconfig, '--hostname-override', o.nodeName, '--node-ip', o.nodeIP, '--root-dir', join(dir, 'root'), '--v', '0'],
      { stdio: ['ignore', fd, fd] },
    );
    closeSync(fd);
    const k = new KubeletPeer(child, dir, logFile, cgroupRoot, o.nodeName);
    try {
      await waitFor('the kubelet answering /healthz', async () => {
        k.alive();
        const res = await fetch(`http://127.0.0.1:${healthzPort}/healthz`);
        return res.ok ? true : undefined;
      }, 60_000, 200);
    } catch (err) {
      // Its log stays for the diagnosis; the process, mounts and cgroups go.
      await k.stop(true, o.log);
      k.removeCgroups(o.log);
      throw err;
    }
    o.log(`kubelet pid ${child.pid} (node ${o.nodeName}, ${o.nodeIP}:${port}, cgroup root ${cgroupRoot})`);
    return k;
  }

  alive(): void {
    if (this.child.exitCode !== null) throw new Error(`the kubelet exited with ${this.child.exitCode}; see ${this.logFile}`);
  }

  /**
   * SIGTERM (SIGKILL after 10 s), then its root-dir mounts and log links go, and (unless kept) its
   * directory. Its cgroups go with `removeCgroups`, once the runtime has no task left in them.
   */
  async stop(keepLog: boolean, log: Log): Promise<void> {
    const { child } = this;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((r) => child.once('exit', () => r()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await unmountBelow(this.dir);
    // The kubelet links every container's log into /var/log/containers (a fixed path,
    // pkg/kubelet/kuberuntime/legacy.go) and unlinks it when it removes the
    // container, which its GC had not necessarily done yet: remove the links into our directory.
    const links = '/var/log/containers';
    for (const name of existsSync(links) ? readdirSync(links) : []) {
      try {
        if (readlinkSync(join(links, name)).startsWith(`${this.dir}/`)) unlinkSync(join(links, name));
      } catch {
        /* not a link, or gone */
      }
    }
    if (keepLog) log(`kubelet log kept: ${this.logFile}`);
    else await rm(this.dir, { recursive: true, force: true });
  }

  /** Removes its cgroup root in every hierarchy, bottom-up; a cgroup still holding a process stays, and is named. */
  removeCgroups(log: Log): void {
    const left: string[] = [];
    for (const m of cgroupMounts()) left.push(...removeCgroupTree(join(m, this.cgroupRoot)));
    if (left.length > 0) log(`kubelet: cgroups not removable (still in use): ${left.slice(0, 3).join(', ')}${left.length > 3 ? ', …' : ''}`);
  }
}

/** Builds (cached by version) the kubelet of the control plane's pin; returns its path. Outside the sealed netns: Go may need its module cache. */
export async function buildKubelet(root: string): Promise<string> {
  const { stdout } = await run(join(root, 'scripts/control-plane.sh'), ['build-kubelet'], { timeout: 60 * 60_000, maxBuffer: 16 << 20 });
  return stdout.trim();
}
