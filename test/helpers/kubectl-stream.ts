import { spawn } from 'node:child_process';
import type { Kubectl } from './kubectl.js';

/** A long-running kubectl (`get -w`) whose output a test waits on, with deadlines, as it arrives. */
export interface KubectlStream {
  /** stdout so far. */
  readonly stdout: string;
  readonly stderr: string;
  /** Resolves with the first match of `re` in stdout (or stderr) at or after `from` (an offset); rejects after `timeoutMs`. */
  waitFor(what: string, re: RegExp, timeoutMs?: number, from?: number, stream?: 'stdout' | 'stderr'): Promise<RegExpExecArray>;
  /** Resolves when kubectl exits (by itself or after `stop`). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGINT (what Ctrl-C sends), then the exit. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function kubectlStream(kubectl: Kubectl, ...args: string[]): KubectlStream {
  const [cmd, ...rest] = kubectl.argv(...args);
  const child = spawn(cmd ?? kubectl.bin, rest, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const waiters = new Set<() => void>();
  let done = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('close', (code, signal) => {
      done = true;
      for (const w of [...waiters]) w();
      resolve({ code, signal });
    });
  });
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stdout.on('data', (d: string) => {
    stdout += d;
    for (const w of [...waiters]) w();
  });
  child.stderr.on('data', (d: string) => {
    stderr += d;
    for (const w of [...waiters]) w();
  });
  const hardStop = setTimeout(() => child.kill('SIGKILL'), 240_000);
  hardStop.unref();
  void exited.then(() => clearTimeout(hardStop));
  return {
    get stdout() {
      return stdout;
    },
    get stderr() {
      return stderr;
    },
    exited,
    waitFor(what, re, timeoutMs = 30_000, from = 0, stream = 'stdout') {
      return new Promise((resolve, reject) => {
        const check = () => {
          const flags = re.flags.includes('g') ? re.flags : `${re.flags}g`;
          const g = new RegExp(re.source, flags);
          g.lastIndex = from;
          const m = g.exec(stream === 'stdout' ? stdout : stderr);
          if (m) {
            finish();
            resolve(m);
          } else if (done) {
            finish();
            reject(new Error(`kubectl ${args.join(' ')} exited before ${what}; stdout:\n${stdout}\nstderr:\n${stderr}`));
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`timed out waiting for ${what}; stdout:\n${stdout}\nstderr:\n${stderr}`));
        }, timeoutMs);
        const finish = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    async stop() {
      if (!done) child.kill('SIGINT');
      return exited;
    },
  };
}
