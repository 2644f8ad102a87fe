import { spawn, type ChildProcess } from 'node:child_process';
import type { Kubectl } from './kubectl.js';
import { poll } from './soak.js';

/** The two transports kubectl speaks to nodelet: 1.33 WebSocket (port-forward: SPDY tunnelled in it), 1.27 SPDY. */
export const KUBECTLS = [
  { version: '1.33', transport: 'websocket' },
  { version: '1.27', transport: 'spdy' },
] as const;

/** A long-running kubectl process (exec, attach, logs -f, port-forward) a test can watch and kill. */
export interface KubectlProcess {
  readonly child: ChildProcess;
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves once the output matches `re` (the first match), or rejects after `timeoutMs` or an exit. */
  waitOutput(what: string, re: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface Teardown {
  teardown(fn: () => Promise<void> | void): void;
}

/** Spawns kubectl `args`; killed (SIGKILL) at teardown if still running. */
export function kubectlProcess(t: Teardown, kubectl: Kubectl, args: string[], opts: { env?: Record<string, string>; stdin?: boolean } = {}): KubectlProcess {
  const [cmd, ...rest] = kubectl.argv(...args);
  // setpriv --pdeathsig: kubectl dies with the test process, however that ends.
  const child = spawn('setpriv', ['--pdeathsig', 'KILL', '--', cmd ?? kubectl.bin, ...rest], { env: { ...process.env, ...opts.env }, stdio: [opts.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    if (out.length > 1_000_000) out = out.slice(-500_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.stdin?.on('error', () => undefined);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  return {
    child,
    output: () => out,
    exited,
    waitOutput: (what, re, timeoutMs = 30_000) =>
      poll(`kubectl ${args[0]}: ${what}`, () => {
        const m = re.exec(out);
        if (m) return m;
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`kubectl exited (${child.exitCode ?? child.signalCode}): ${out.slice(-1500)}`);
        return undefined;
      }, timeoutMs, 25),
  };
}

/**
 * `kubectl port-forward --address 127.0.0.1 pod/<pod> :<port>…` (one session, one random local
 * port per remote port); resolves with the local port of each remote port once all are forwarded.
 */
export async function kubectlPortForward(t: Teardown, kubectl: Kubectl, pod: string, ports: readonly number[], env: Record<string, string> = {}): Promise<{ proc: KubectlProcess; local: Map<number, number> }> {
  const proc = kubectlProcess(t, kubectl, ['port-forward', '-v=6', '--address', '127.0.0.1', `pod/${pod}`, ...ports.map((p) => `:${p}`)], { env });
  const local = new Map<number, number>();
  await poll(`kubectl port-forward of ${ports.join(',')}`, () => {
    for (const m of proc.output().matchAll(/Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)/g)) local.set(Number(m[2]), Number(m[1]));
    if (local.size === ports.length) return true;
    if (proc.child.exitCode !== null) throw new Error(`kubectl port-forward exited: ${proc.output().slice(-1500)}`);
    return undefined;
  }, 30_000, 25);
  return { proc, local };
}
