/**
 * The bench's own control plane: a thin wrapper over scripts/control-plane.sh (the script the
 * cluster-mode tests use), without importing anything from test/. It builds the binaries when they
 * are not cached (a cold build takes minutes), starts etcd, kube-apiserver, controller-manager
 * and scheduler on 127.0.0.1 in a temp directory, issues node kubeconfigs, and stops everything.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ENV_KEYS = ['APISERVER_URL', 'CA_FILE', 'ADMIN_KUBECONFIG', 'KUBELET_CLIENT_CERT', 'KUBELET_CLIENT_KEY', 'K8S_VERSION'] as const;
type EnvKey = (typeof ENV_KEYS)[number];

export class BenchControlPlane {
  #stopped = false;
  readonly #stopSync: () => void;

  private constructor(
    readonly script: string,
    readonly dir: string,
    readonly env: Readonly<Record<EnvKey, string>>,
  ) {
    // A bench that dies without its cleanup must not leave etcd and kube-apiserver running.
    this.#stopSync = () => {
      if (!this.#stopped) execFileSync(this.script, ['stop', this.dir], { stdio: 'ignore' });
    };
    process.once('exit', this.#stopSync);
  }

  get server(): string {
    return this.env.APISERVER_URL;
  }

  /** Builds (cached) and starts a fresh control plane; resolves once pods can be created. */
  static async start(root: string, log: (msg: string) => void, onDir: (stop: () => Promise<void>) => void): Promise<BenchControlPlane> {
    const script = join(root, 'scripts/control-plane.sh');
    const built = await runScript(script, ['build'], 60 * 60_000);
    log(`control plane binaries in ${built}`);
    const dir = await mkdtemp(join(tmpdir(), 'nodelet-bench-cp-'));
    let cp: BenchControlPlane | undefined;
    onDir(async () => {
      if (cp) await cp.stop();
      else await runScript(script, ['stop', dir], 60_000).catch(() => rm(dir, { recursive: true, force: true }));
    });
    await runScript(script, ['start', dir], 180_000);
    cp = new BenchControlPlane(script, dir, readEnv(dir));
    return cp;
  }

  /** A kubeconfig for `system:node:<name>` (group system:nodes); returns its path. */
  nodeKubeconfig(name: string): Promise<string> {
    return runScript(this.script, ['node-kubeconfig', this.dir, name], 30_000);
  }

  /** Stops every process and removes the directory; safe to call twice. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    await runScript(this.script, ['stop', this.dir], 60_000);
    this.#stopped = true;
    process.removeListener('exit', this.#stopSync);
  }
}

function runScript(script: string, args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(script, args, { timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`scripts/control-plane.sh ${args.join(' ')} failed (${err.message.split('\n')[0] ?? ''}):\n${stderr}`));
      else resolve(stdout.trim());
    });
  });
}

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
