import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubectlBinary, type KubectlResult, type RunOptions } from './kubectl.js';
import { repoRoot } from './repo-root.js';

/**
 * scripts/control-plane.sh: builds (cached) and runs etcd + kube-apiserver + controller-manager +
 * scheduler. This file is the one harness over it: the cluster-mode tests, the soak suite and the
 * bench (its cluster, eviction and kubelet parts) all start theirs here.
 */
export const CONTROL_PLANE_SCRIPT = join(repoRoot(), 'scripts/control-plane.sh');

/** The kubectl the harness runs by default: the newest the machine has (the pinned one, built, is `controlPlaneMinor()`). */
export const CONTROL_PLANE_KUBECTL = '1.33';

export interface ControlPlaneKubectlOptions extends RunOptions {
  /** Another kubeconfig, e.g. a node's from `nodeKubeconfig` (default: the admin one). */
  kubeconfig?: string;
  /** A kubectl minor version from the machine's set (default CONTROL_PLANE_KUBECTL). */
  version?: string;
}

export interface ControlPlane {
  /** The state directory (PKI, etcd data, logs, pids); removed by stop(). */
  readonly dir: string;
  /** `https://127.0.0.1:<port>`. */
  readonly server: string;
  /** The k8s.io/kubernetes version the binaries were built from (`v1.34.4`). */
  readonly k8sVersion: string;
  /** The CA that signed the apiserver's serving cert and every client cert. */
  readonly caFile: string;
  readonly caKey: string;
  /** Cluster-admin (group system:masters). */
  readonly adminKubeconfig: string;
  /** The identity kube-apiserver presents to kubelets (CN kube-apiserver-kubelet-client, O system:masters). */
  readonly kubeletClientCert: string;
  readonly kubeletClientKey: string;
  /**
   * With `bootstrap`: a kubeconfig holding a bootstrap token (group `system:bootstrappers`), as
   * `kubeadm token create` gives one.
   */
  readonly bootstrapKubeconfig: string | undefined;
  /** A kubeconfig for `system:node:<name>` in group `system:nodes`, signed by the CA. */
  nodeKubeconfig(name: string): Promise<string>;
  /** Runs the machine's kubectl against the control plane (admin unless opts.kubeconfig); never rejects on a non-zero exit. */
  kubectl(args: string[], opts?: ControlPlaneKubectlOptions): Promise<KubectlResult>;
  /** Stops every process and removes `dir` (also registered as a teardown; safe to call twice). */
  stop(): Promise<void>;
  /** Stops only kube-apiserver: an apiserver outage. */
  stopApiserver(): Promise<void>;
  /** Starts kube-apiserver again with the same flags and port; resolves once /readyz is ok. */
  startApiserver(): Promise<void>;
  /**
   * Starts kube-proxy (iptables mode) as node `nodeName` (whose Node must exist); resolves once its
   * first sync programmed the rules. Only inside the test netns, with `apiserverAddress` set.
   */
  startProxy(nodeName: string): Promise<void>;
}

export interface ControlPlaneOptions {
  /**
   * Serve and advertise kube-apiserver on this address instead of 127.0.0.1 (the test netns's
   * APISERVER_IP): the `kubernetes` Service gets it as endpoint, so pods reach the apiserver.
   */
  apiserverAddress?: string;
  /**
   * TLS bootstrap as kubeadm sets it up (scripts/control-plane.sh, NODELET_CONTROL_PLANE_BOOTSTRAP):
   * bootstrap tokens, auto-approval of node client CSRs, and `--kubelet-certificate-authority`
   * (kubelets must serve a certificate of the cluster CA, e.g. from a kubelet-serving CSR).
   */
  bootstrap?: boolean;
  /** The controller-manager's `--cluster-signing-duration` (e.g. `10m`): how long CSR certificates last. */
  clusterSigningDuration?: string;
  /** Progress lines (the bench's log): where the binaries are, once built. */
  log?: (msg: string) => void;
}

interface Teardown {
  teardown(fn: () => Promise<void> | void): void;
}

/** Runs the script; rejects with its stderr (which ends with the failing component's log) on failure. */
function script(args: string[], timeoutMs: number, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(CONTROL_PLANE_SCRIPT, args, { timeout: timeoutMs, maxBuffer: 16 << 20, env }, (err, stdout, stderr) => {
      if (err) reject(new Error(`scripts/control-plane.sh ${args.join(' ')} failed (${err.message.split('\n')[0] ?? ''}):\n${stderr}`));
      else resolve(stdout.trim());
    });
  });
}

const ENV_KEYS = ['APISERVER_URL', 'CA_FILE', 'CA_KEY', 'ADMIN_KUBECONFIG', 'KUBELET_CLIENT_CERT', 'KUBELET_CLIENT_KEY', 'K8S_VERSION'] as const;
type EnvKey = (typeof ENV_KEYS)[number];

/** The values of the shell-sourceable DIR/env the script wrote (sourced by bash, so quoting is bash's). */
function readEnv(dir: string): Record<EnvKey, string> {
  const print = ENV_KEYS.map((k) => `"$${k}"`).join(' ');
  const out = execFileSync('bash', ['-c', `set -eu; . "$1/env"; printf '%s\\0' ${print}`, 'env', dir], { encoding: 'utf8' });
  const values = out.split('\0');
  const env = {} as Record<EnvKey, string>;
  ENV_KEYS.forEach((k, i) => {
    const v = values[i];
    if (v === undefined || v === '') throw new Error(`${dir}/env has no ${k}`);
    env[k] = v;
  });
  return env;
}

/**
 * Builds the control plane's binaries when they are not cached yet (a cold build takes minutes;
 * `.ci/run` does it before the tests), starts a fresh one in a temp directory, and stops it at
 * teardown. Resolves once the `default` ServiceAccount exists, so pods can be created at once.
 */
export async function startControlPlane(t: Teardown, opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binDir = await script(['build'], 60 * 60_000);
  opts.log?.(`control plane binaries in ${binDir}`);
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-cp-'));
  let stopped = false;
  const stopSync = () => {
    if (!stopped) execFileSync(CONTROL_PLANE_SCRIPT, ['stop', dir], { stdio: 'ignore' });
  };
  // A test process that dies without its teardown must not leave etcd and kube-apiserver running.
  process.once('exit', stopSync);
  const stop = async () => {
    if (stopped) return;
    await script(['stop', dir], 60_000);
    stopped = true;
    process.removeListener('exit', stopSync);
  };
  try {
    const env = {
      ...process.env,
      ...(opts.apiserverAddress ? { NODELET_APISERVER_ADDRESS: opts.apiserverAddress } : {}),
      ...(opts.bootstrap ? { NODELET_CONTROL_PLANE_BOOTSTRAP: '1' } : {}),
      ...(opts.clusterSigningDuration ? { NODELET_CLUSTER_SIGNING_DURATION: opts.clusterSigningDuration } : {}),
    };
    await script(['start', dir], 180_000, env);
  } catch (err) {
    await stop().catch(() => rm(dir, { recursive: true, force: true }));
    throw err;
  }
  t.teardown(stop);

  const env = readEnv(dir);
  const adminKubeconfig = env.ADMIN_KUBECONFIG;
  const kubectl = (args: string[], opts: ControlPlaneKubectlOptions = {}) =>
    new Promise<KubectlResult>((resolve) => {
      const bin = kubectlBinary(opts.version ?? CONTROL_PLANE_KUBECTL);
      const argv = ['--kubeconfig', opts.kubeconfig ?? adminKubeconfig, '--cache-dir', join(dir, 'kubectl-cache'), ...args];
      const child = spawn(bin, argv, { env: { ...process.env, HOME: dir, ...opts.env } });
      const out: Buffer[] = [];
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => out.push(d));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.stdin.on('error', () => undefined);
      child.stdin.end(opts.input ?? '');
      const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        const raw = Buffer.concat(out);
        resolve({ code: code ?? (signal ? 128 : 1), stdout: raw.toString('utf8'), stderr, raw });
      });
    });

  return {
    dir,
    server: env.APISERVER_URL,
    k8sVersion: env.K8S_VERSION,
    caFile: env.CA_FILE,
    caKey: env.CA_KEY,
    adminKubeconfig,
    kubeletClientCert: env.KUBELET_CLIENT_CERT,
    kubeletClientKey: env.KUBELET_CLIENT_KEY,
    bootstrapKubeconfig: opts.bootstrap ? join(dir, 'bootstrap.kubeconfig') : undefined,
    nodeKubeconfig: (name) => script(['node-kubeconfig', dir, name], 30_000),
    kubectl,
    stop,
    stopApiserver: async () => {
      await script(['stop-apiserver', dir], 30_000);
    },
    startApiserver: async () => {
      await script(['start-apiserver', dir], 120_000);
    },
    startProxy: async (nodeName) => {
      await script(['start-proxy', dir, nodeName], 120_000);
    },
  };
}
