import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { controlPlaneBinDir, controlPlaneMinor } from './k8s-pin.js';

/**
 * The machine's versioned kubectl binaries (`kubectl.1.27` … `kubectl.1.33`) live beside the
 * real file `kubectl` points to; the control plane's pinned minor (`controlPlaneMinor()`, 1.37) is
 * the kubectl that scripts/control-plane.sh builds from the same module. Missing binaries fail the
 * test: CI must run these, not skip them.
 */
export function kubectlBinary(version: string): string {
  if (version === controlPlaneMinor()) {
    const built = join(controlPlaneBinDir(), 'kubectl');
    if (!existsSync(built)) throw new Error(`kubectl ${version} not found at ${built}`);
    return built;
  }
  const real = execFileSync('sh', ['-c', 'readlink -f "$(command -v kubectl)"'], { encoding: 'utf8' }).trim();
  const bin = join(dirname(real), `kubectl.${version}`);
  if (!existsSync(bin)) throw new Error(`kubectl ${version} not found at ${bin}`);
  return bin;
}

export interface RunOptions {
  /** Extra environment, e.g. `KUBECTL_REMOTE_COMMAND_WEBSOCKETS`. */
  env?: Record<string, string>;
  /** Bytes written to kubectl's stdin (then EOF). Without it stdin is empty. */
  input?: Buffer | string;
  timeoutMs?: number;
}

export interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout as bytes, for binary round trips. */
  raw: Buffer;
}

export interface Kubectl {
  readonly bin: string;
  readonly kubeconfig: string;
  /** Runs kubectl with a kubeconfig pointing at the server; never rejects on a non-zero exit. */
  run(...args: string[]): Promise<KubectlResult>;
  runWith(opts: RunOptions, ...args: string[]): Promise<KubectlResult>;
  /** The argv prefix (binary + kubeconfig flags), for running kubectl under `script`. */
  argv(...args: string[]): string[];
}

interface Teardown {
  teardown(fn: () => Promise<void> | void): void;
}

/** Credentials for the kubeconfig's user; an https server is trusted blindly (`insecure-skip-tls-verify`). */
export interface KubectlAuth {
  /** Bearer token (kubectl sends it only over https). */
  token?: string;
  /** Client certificate and key files. */
  clientCertificate?: string;
  clientKey?: string;
}

export async function kubectlFor(t: Teardown, version: string, server: string, namespace = 'default', auth: KubectlAuth = {}): Promise<Kubectl> {
  const bin = kubectlBinary(version);
  const home = await mkdtemp(join(tmpdir(), 'nodelet-kubectl-'));
  const kubeconfig = join(home, 'config');
  const insecure = server.startsWith('https:') ? ', insecure-skip-tls-verify: true' : '';
  const user = [
    auth.token !== undefined ? `token: "${auth.token}"` : '',
    auth.clientCertificate !== undefined ? `client-certificate: "${auth.clientCertificate}"` : '',
    auth.clientKey !== undefined ? `client-key: "${auth.clientKey}"` : '',
  ].filter((x) => x !== '').join(', ');
  await writeFile(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters: [{ name: nodelet, cluster: { server: "${server}"${insecure} } }]
users: [{ name: nodelet, user: { ${user} } }]
contexts: [{ name: nodelet, context: { cluster: nodelet, user: nodelet, namespace: ${namespace} } }]
current-context: nodelet
`,
  );
  t.teardown(() => rm(home, { recursive: true, force: true }));
  const argv = (...args: string[]) => [bin, '--kubeconfig', kubeconfig, '--cache-dir', join(home, 'cache'), ...args];
  const runWith = (opts: RunOptions, ...args: string[]) =>
    new Promise<KubectlResult>((resolve) => {
      const [cmd, ...rest] = argv(...args);
      const child = spawn(cmd ?? bin, rest, { env: { ...process.env, HOME: home, ...opts.env } });
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
  return { bin, kubeconfig, argv, run: (...args) => runWith({}, ...args), runWith };
}
