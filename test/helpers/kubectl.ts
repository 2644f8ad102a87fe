import { execFile, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/**
 * The machine's versioned kubectl binaries (`kubectl.1.27` … `kubectl.1.33`) live beside the
 * real file `kubectl` points to. Missing binaries fail the test: CI must run these, not skip them.
 */
export function kubectlBinary(version: string): string {
  const real = execFileSync('sh', ['-c', 'readlink -f "$(command -v kubectl)"'], { encoding: 'utf8' }).trim();
  const bin = join(dirname(real), `kubectl.${version}`);
  if (!existsSync(bin)) throw new Error(`kubectl ${version} not found at ${bin}`);
  return bin;
}

export interface Kubectl {
  /** Runs kubectl with a kubeconfig pointing at `server`; never rejects on a non-zero exit. */
  run(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
}

interface Teardown {
  teardown(fn: () => Promise<void> | void): void;
}

export async function kubectlFor(t: Teardown, version: string, server: string, namespace = 'default'): Promise<Kubectl> {
  const bin = kubectlBinary(version);
  const home = await mkdtemp(join(tmpdir(), 'nodelet-kubectl-'));
  const kubeconfig = join(home, 'config');
  await writeFile(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters: [{ name: nodelet, cluster: { server: "${server}" } }]
users: [{ name: nodelet, user: {} }]
contexts: [{ name: nodelet, context: { cluster: nodelet, user: nodelet, namespace: ${namespace} } }]
current-context: nodelet
`,
  );
  t.teardown(() => rm(home, { recursive: true, force: true }));
  return {
    run: (...args) =>
      new Promise((resolve) => {
        execFile(
          bin,
          ['--kubeconfig', kubeconfig, '--cache-dir', join(home, 'cache'), ...args],
          { env: { ...process.env, HOME: home }, timeout: 60_000 },
          (err, stdout, stderr) => {
            const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : 1) : 0;
            resolve({ code, stdout, stderr });
          },
        );
      }),
  };
}
