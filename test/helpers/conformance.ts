import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The tests that run Kubernetes' own e2e specs: scripts/conformance.sh and its report. */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CONFORMANCE_SCRIPT = join(ROOT, 'scripts/conformance.sh');
export const CONFORMANCE_REPORT = join(ROOT, 'test/conformance/report.mjs');
export const CONFORMANCE_SKIP_FILE = join(ROOT, 'test/conformance/skip.yaml');

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `cmd` to its end (or `timeoutMs`), never rejecting: the exit code and both outputs. */
export function runCommand(cmd: string, args: string[], timeoutMs: number, env: NodeJS.ProcessEnv = process.env): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 64 << 20, env }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** A ginkgo focus that matches exactly these specs' full names (each one escaped, joined by `|`). */
export function focusOn(specs: readonly string[]): string {
  return specs.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
}
