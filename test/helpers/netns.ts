import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
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
  const cleanup = () => {
    try {
      ip('netns', 'del', name);
    } catch {
      /* already gone */
    }
  };
  cleanup();
  let code = 1;
  try {
    ip('netns', 'add', name);
    ip('-n', name, 'link', 'set', 'lo', 'up');
    for (const a of [...NODE_IPS, APISERVER_IP]) ip('-n', name, 'addr', 'add', `${a}/32`, 'dev', 'lo');
    nsExec(name, 'sysctl', '-q', '-w', 'net.ipv4.ip_forward=1');
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
    code = await new Promise<number>((resolve) => {
      // nsenter, not `ip netns exec`: that one unshares a mount namespace and remounts /sys,
      // which hides the cgroup mounts dockerd needs ("Devices cgroup isn't mounted").
      const child = spawn('nsenter', [`--net=/run/netns/${name}`, '--', process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
        stdio: 'inherit',
        env: { ...process.env, [ENV]: name },
      });
      const forward = (signal: NodeJS.Signals) => child.kill(signal);
      process.on('SIGTERM', forward);
      process.on('SIGINT', forward);
      child.on('close', (c, signal) => resolve(c ?? (signal ? 128 : 1)));
    });
  } finally {
    cleanup();
  }
  process.exit(code);
}

/** The namespace has no route and no link that leads anywhere: only `lo`, and only local routes. */
function assertSealed(name: string): void {
  const routes = nsExec(name, 'ip', '-o', 'route', 'show', 'table', 'main').trim();
  const links = nsExec(name, 'ip', '-o', 'link').trim().split('\n').map((l) => l.split(':')[1]?.trim());
  if (routes !== '' || links.some((l) => l !== 'lo')) throw new Error(`test netns ${name} is not sealed: routes ${JSON.stringify(routes)}, links ${links.join(',')}`);
}

