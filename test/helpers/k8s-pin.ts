import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/**
 * The Kubernetes version the test control plane, e2e.test and the pinned kubectl are built from:
 * the default pin's wrapper module test/control-plane (v1.37.2, what CI runs), or the previous pin's
 * test/control-plane-1.34 (v1.34.4) with NODELET_K8S=1.34 — the same choice scripts/control-plane.sh
 * and scripts/conformance.sh make.
 */
export function controlPlaneModule(): string {
  const pin = process.env.NODELET_K8S ?? '1.37';
  const dir = pin === '1.37' ? 'control-plane' : `control-plane-${pin}`;
  return fileURLToPath(new URL(`../${dir}`, import.meta.url));
}

/** `v1.37.2`: the k8s.io/kubernetes version the selected module requires. */
export function controlPlaneVersion(): string {
  const file = `${controlPlaneModule()}/go.mod`;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    throw new Error(`NODELET_K8S=${process.env.NODELET_K8S ?? ''}: no wrapper module ${file} (1.37 or 1.34)`);
  }
  const m = /^\s*k8s\.io\/kubernetes (v\d+\.\d+\.\d+)\s*$/m.exec(text);
  if (!m?.[1]) throw new Error(`no k8s.io/kubernetes version in ${file}`);
  return m[1];
}

/** `1.37`: the pinned minor, which is also the kubectl version built beside the control plane. */
export function controlPlaneMinor(): string {
  return controlPlaneVersion().replace(/^v(\d+\.\d+)\..*$/, '$1');
}

let binDir: string | undefined;

/**
 * The directory of the control plane's binaries (kubectl among them), built and cached by
 * `scripts/control-plane.sh build`; cached, this returns at once (CI builds it before the tests).
 */
export function controlPlaneBinDir(): string {
  const script = fileURLToPath(new URL('../../scripts/control-plane.sh', import.meta.url));
  binDir ??= execFileSync(script, ['build'], { encoding: 'utf8', timeout: 90 * 60_000, stdio: ['ignore', 'pipe', 'inherit'] }).trim();
  return binDir;
}
