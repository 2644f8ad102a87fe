import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * The test cluster's network namespace: the only place pod IPs may exist (the project's network
 * rule). A test file that needs pod IPs calls `await insideTestNetns()` first, at top level:
 *
 * - Outside (the normal tap worker, in the machine's namespace), it creates a fresh namespace
 *   `nodelet-t<pid>` with `lo` up, the node and apiserver addresses below as /32s on `lo` (this
 *   kernel has no `dummy` link type), `ip_forward=1` and, where `br_netfilter` exists,
 *   `bridge-nf-call-iptables=1`; checks
 *   that it has no route and no link leading out; then runs this same test process again (same
 *   argv, execArgv and environment) under `nsenter --net` (the machine's mount namespace stays), with inherited stdio so tap reads the
 *   child's TAP as this file's, and exits with its code once the namespace is deleted. It never
 *   returns there.
 * - Inside (the re-run), it starts a private Docker engine in the namespace (so hostNetwork pods
 *   land in it, and dockerd shares this process's mount namespace, where nodelet mounts its
 *   tmpfs volumes), points DOCKER_HOST at it, builds the local images, and returns the facts.
 *
 * Everything the test then starts (nodelet in-process, the control plane, CNI plugins, clients)
 * inherits the namespace. Nothing in it has a default route, so no packet can leave it.
 */
export interface TestNetns {
  /** The namespace's name (`ip netns` list; `/run/netns/<name>`). */
  readonly name: string;
  /** Node IPs on the namespace's `lo`: nodes 1–3. */
  readonly nodeIPs: readonly [string, string, string];
  /** The apiserver's address on the namespace's `lo`. */
  readonly apiserverIP: string;
  /** The private engine's DOCKER_HOST (also exported in process.env). */
  readonly dockerHost: string;
  /**
   * Restarts the private engine as `systemctl restart docker` does (scripts/docker-engine.sh
   * `restart`): same socket, data and exec roots, still in this namespace; resolves once it
   * answers again. `liveRestore`: its containers keep running through the restart; else dockerd
   * stops them before it exits, as it does by default.
   */
  restartEngine(opts: { liveRestore: boolean }): Promise<void>;
}

export const NODE_IPS = ['10.200.0.1', '10.200.0.2', '10.200.0.3'] as const;
export const APISERVER_IP = '10.200.0.10';
/**
 * The test control plane's Service range (scripts/control-plane.sh --service-cluster-ip-range).
 * It is routed to `lo` inside the namespace so the namespace's own processes can dial ClusterIPs:
 * a packet needs a route before kube-proxy's nat OUTPUT rules rewrite it to a pod IP (and re-route
 * it to a CNI bridge); one that no rule rewrites dies on `lo`. Pods need no such route (theirs
 * is the bridge gateway, where PREROUTING rewrites).
 */
export const SERVICE_CIDR = '10.0.0.0/24';
const ENV = 'NODELET_TEST_NETNS';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ENGINE_SCRIPT = join(ROOT, 'scripts/docker-engine.sh');

export async function insideTestNetns(): Promise<TestNetns> {
  const name = process.env[ENV];
  if (!name) return reRunInsideNewNetns();
  const state = mkdtempSync(join(tmpdir(), 'nodelet-netns-engine-'));
  // The namespace and the engine go when this process exits, however it exits.
  process.once('exit', () => {
    try {
      execFileSync(ENGINE_SCRIPT, ['stop', state], { stdio: 'ignore', timeout: 120_000 });
    } catch {
      /* best effort at exit */
    }
  });
  const { stdout } = await run(ENGINE_SCRIPT, ['private', state], { timeout: 120_000 });
  const dockerHost = stdout.trim();
  process.env.DOCKER_HOST = dockerHost;
  await run(ENGINE_SCRIPT, ['images'], { env: { ...process.env, DOCKER_HOST: dockerHost }, timeout: 300_000 });
  const restartEngine = async ({ liveRestore }: { liveRestore: boolean }) => {
    await run(ENGINE_SCRIPT, ['restart', state, ...(liveRestore ? ['--live-restore'] : [])], { timeout: 180_000 });
  };
  return { name, nodeIPs: NODE_IPS, apiserverIP: APISERVER_IP, dockerHost, restartEngine };
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function nsExec(name: string, ...args: string[]): string {
  return execFileSync('ip', ['netns', 'exec', name, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Creates the namespace, re-runs this process inside it, deletes it, and exits with the child's code. */
async function reRunInsideNewNetns(): Promise<never> {
  const name = `nodelet-t${process.pid}`;
  deleteNetns(name);
  let code = 1;
  try {
    createSealedNetns(name, { loAddrs: [...NODE_IPS, APISERVER_IP] });
    try {
      execFileSync('modprobe', ['br_netfilter'], { stdio: 'ignore' });
    } catch {
      /* built in, or absent: checked below */
    }
    try {
      nsExec(name, 'sysctl', '-q', '-w', 'net.bridge.bridge-nf-call-iptables=1');
      nsExec(name, 'sysctl', '-q', '-w', 'net.bridge.bridge-nf-call-ip6tables=1');
    } catch {
      /* no br_netfilter: Services between pods of one bridge cannot work, the rest can */
    }
    assertSealed(name);
    ip('-n', name, 'route', 'add', SERVICE_CIDR, 'dev', 'lo', 'src', APISERVER_IP);
    // This parent only relays the child's TAP: the child's own t.setTimeout governs the file, so
    // the parent's tap (imported with the test file) must not end it at the default timeout.
    const { default: tap } = await import('tap');
    tap.setTimeout(0);
    code = await new Promise<number>((resolve) => {
      const [cmd, args] = nsenterArgv(name, [process.execPath, ...process.execArgv, ...process.argv.slice(1)]);
      const child = spawn(cmd, args, { stdio: 'inherit', env: { ...process.env, [ENV]: name } });
      const forward = (signal: NodeJS.Signals) => child.kill(signal);
      process.on('SIGTERM', forward);
      process.on('SIGINT', forward);
      child.on('close', (c, signal) => resolve(c ?? (signal ? 128 : 1)));
    });
  } finally {
    deleteNetns(name);
  }
  process.exit(code);
}

// ---- the sealed namespace itself (shared with the bench: bench/lib/pod-network.ts) ------------

/**
 * Creates network namespace `name` sealed: `lo` up (with `loAddrs` as /32s on it), no other link,
 * no route, `net.ipv4.ip_forward=1` (CNI bridges route between pods and the namespace's own
 * addresses, nothing else). Checks the seal before returning; on any failure the namespace is
 * deleted again and the error thrown. The caller deletes it (`deleteNetns`) when done.
 */
export function createSealedNetns(name: string, o: { loAddrs?: readonly string[] } = {}): void {
  try {
    ip('netns', 'add', name);
    ip('-n', name, 'link', 'set', 'lo', 'up');
    for (const a of o.loAddrs ?? []) ip('-n', name, 'addr', 'add', `${a}/32`, 'dev', 'lo');
    nsExec(name, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1');
    assertSealed(name);
  } catch (err) {
    deleteNetns(name);
    throw err;
  }
}

/** Deletes network namespace `name` (`ip netns del`); nothing when it does not exist. */
export function deleteNetns(name: string): void {
  try {
    ip('netns', 'del', name);
  } catch {
    /* already gone */
  }
}

/**
 * The command running `argv` inside namespace `name`: `nsenter --net=/run/netns/<name> -- argv`.
 * nsenter, not `ip netns exec`: that one unshares a mount namespace and remounts /sys, which
 * hides the cgroup mounts dockerd needs ("Devices cgroup isn't mounted"). Only the network
 * namespace changes; the machine's mount namespace (where nodelet mounts tmpfs volumes that
 * dockerd must see) stays.
 */
export function nsenterArgv(name: string, argv: readonly string[]): [string, string[]] {
  return ['nsenter', [`--net=/run/netns/${name}`, '--', ...argv]];
}

/** Whether this process runs inside network namespace `name` (same namespace inode). */
export function runsInsideNetns(name: string): boolean {
  try {
    return statSync(`/run/netns/${name}`).ino === statSync('/proc/self/ns/net').ino;
  } catch {
    return false;
  }
}

/** The namespace has no route and no link that leads anywhere: only `lo`, and no route yet (the test netns adds the Service range to `lo` after this check). */
export function assertSealed(name: string): void {
  const routes = nsExec(name, 'ip', '-o', 'route', 'show', 'table', 'main').trim();
  const links = nsExec(name, 'ip', '-o', 'link').trim().split('\n').map((l) => l.split(':')[1]?.trim());
  if (routes !== '' || links.some((l) => l !== 'lo')) throw new Error(`netns ${name} is not sealed: routes ${JSON.stringify(routes)}, links ${links.join(',')}`);
}

