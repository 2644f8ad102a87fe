import { spawn } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { runPlugin } from './plugin-spawner.js';

/**
 * Running one CNI plugin: libcni `pkg/invoke/raw_exec.go` (`ExecPlugin`, `pluginErr`) and
 * `pkg/invoke/exec.go` (the `CNI_*` environment of `pkg/invoke/args.go`).
 */

export type CNICommand = 'ADD' | 'DEL' | 'CHECK' | 'VERSION';

export interface ExecRequest {
  /** The plugin executable (found by `findPlugin`). */
  readonly path: string;
  /** The config `type`, for error messages. */
  readonly type: string;
  readonly command: CNICommand;
  readonly containerId: string;
  /** `''` for a DEL whose netns is gone. */
  readonly netns: string;
  readonly ifName: string;
  /** `CNI_ARGS`: `K=V;K=V`. */
  readonly args: string;
  /** `CNI_PATH`: the bin dirs joined by `:`. */
  readonly cniPath: string;
  /** The network config, on stdin. */
  readonly stdin: Buffer;
  /** Monotonic deadline (`performance.now()` ms) of the whole operation. */
  readonly deadline: number;
}

/** Stdout (the result) and stderr of a plugin are cut off, and the plugin killed, past this. */
export const MAX_PLUGIN_OUTPUT_BYTES = 1024 * 1024;
/** libcni `raw_exec.go` retries "text file busy" this many times, a second apart. */
const TEXT_BUSY_RETRIES = 5;
const TEXT_BUSY_WAIT_MS = 1000;

/** A plugin's failure: `message` is libcni's wording, `code` the CNI error code when it gave one. */
export class PluginError extends Error {
  override name = 'PluginError';
  constructor(
    message: string,
    readonly code?: number,
  ) {
    super(message);
  }
}

/** `CNI_ARGS` from pairs, libcni's `Args.AsEnv` order. */
export function formatCNIArgs(pairs: readonly (readonly [string, string])[]): string {
  return pairs.map(([k, v]) => `${k}=${v}`).join(';');
}

/**
 * The message of a failed run, after libcni `raw_exec.go` `pluginErr` wrapped by `api.go`
 * (`plugin type=%q failed (%s): %w`): the plugin's `msg` verbatim, `; details` when it gave some.
 * Empty stdout: `netplugin failed: "<stderr>"`; unparseable stdout says so and quotes it.
 */
export function pluginFailure(type: string, command: CNICommand, stdout: string, stderr: string, exit: string): PluginError {
  const prefix = `plugin type=${JSON.stringify(type)} failed (${command.toLowerCase()})`;
  if (stdout.trim() === '') return new PluginError(`${prefix}: netplugin failed: ${JSON.stringify(stderr.trim() || exit)}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout);
  } catch (err) {
    return new PluginError(`${prefix}: netplugin failed but error parsing its diagnostic message ${JSON.stringify(stdout.slice(0, 4096))}: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return new PluginError(`${prefix}: netplugin failed but error parsing its diagnostic message ${JSON.stringify(stdout.slice(0, 4096))}: not an object`);
  }
  const e = parsed as Record<string, unknown>;
  const msg = typeof e.msg === 'string' ? e.msg : '';
  const details = typeof e.details === 'string' ? e.details : '';
  const code = typeof e.code === 'number' && Number.isInteger(e.code) ? e.code : undefined;
  const text = details ? `${msg}; ${details}` : msg || `${exit}${stderr.trim() ? `: ${stderr.trim()}` : ''}`;
  return new PluginError(`${prefix}: ${text}`, code);
}

/** What one run of a plugin process gave. */
export interface RunOutcome {
  readonly stdout: string;
  readonly stderr: string;
  readonly exit: string;
  readonly ok: boolean;
}

/** One run of a plugin process, as the plugin helper receives it: everything resolved, no clock of the caller's. */
export interface PluginJob {
  readonly path: string;
  readonly type: string;
  readonly command: CNICommand;
  /** The plugin's `CNI_*` variables, over the environment of the process that starts it (nodelet's, which its helper inherits). */
  readonly env: Readonly<Record<string, string>>;
  readonly stdin: Uint8Array;
  /** Killed past this many milliseconds. */
  readonly timeoutMs: number;
}

/**
 * Runs the plugin process once: config on stdin, stdout and stderr collected (capped), killed
 * past its timeout. Rejects with a `PluginError` (timeout, output over the cap) or the spawn's
 * own error (`ENOENT`, `ETXTBSY`, with its `code`). Runs in a plugin helper process, or in nodelet
 * while none is up (`plugin-spawner.ts`).
 */
export function runPluginProcess(job: PluginJob): Promise<RunOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(job.path, [], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ...job.env } });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let outBytes = 0;
    let errBytes = 0;
    let failure: Error | undefined;
    const kill = (e: Error) => {
      failure ??= e;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => kill(new PluginError(`plugin type=${JSON.stringify(job.type)} failed (${job.command.toLowerCase()}): timed out after ${Math.round(job.timeoutMs)} ms`)), job.timeoutMs);
    child.stdout.on('data', (b: Buffer) => {
      outBytes += b.length;
      if (outBytes > MAX_PLUGIN_OUTPUT_BYTES) kill(new PluginError(`plugin type=${JSON.stringify(job.type)} failed (${job.command.toLowerCase()}): stdout over ${MAX_PLUGIN_OUTPUT_BYTES} bytes`));
      else out.push(b);
    });
    child.stderr.on('data', (b: Buffer) => {
      errBytes += b.length;
      // Diagnostics only: keep the head, drop the rest.
      if (errBytes <= MAX_PLUGIN_OUTPUT_BYTES) err.push(b);
    });
    child.stdin.on('error', () => {
      /* the plugin exited without reading its config: its exit says why */
    });
    child.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      failure ??= e;
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (failure) {
        reject(failure);
        return;
      }
      resolve({
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        exit: signal ? `killed by ${signal}` : `exit status ${code ?? '?'}`,
        ok: code === 0,
      });
    });
    child.stdin.end(job.stdin);
  });
}

function runOnce(req: ExecRequest): Promise<RunOutcome> {
  const remaining = req.deadline - performance.now();
  if (remaining <= 0) return Promise.reject(new PluginError(`plugin type=${JSON.stringify(req.type)} failed (${req.command.toLowerCase()}): timed out`));
  return runPlugin({
    path: req.path,
    type: req.type,
    command: req.command,
    env: {
      CNI_COMMAND: req.command,
      CNI_CONTAINERID: req.containerId,
      CNI_NETNS: req.netns,
      CNI_IFNAME: req.ifName,
      CNI_ARGS: req.args,
      CNI_PATH: req.cniPath,
    },
    stdin: req.stdin,
    timeoutMs: remaining,
  });
}

/**
 * Runs the plugin once (retrying `ETXTBSY`, as libcni does for a binary being replaced), and
 * resolves with its stdout parsed (`undefined` when empty, as a DEL may answer). Rejects with a
 * `PluginError` on a non-zero exit, a timeout, or output over the cap.
 */
export async function execPlugin(req: ExecRequest): Promise<unknown> {
  let outcome: RunOutcome | undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      outcome = await runOnce(req);
      break;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ETXTBSY' && attempt < TEXT_BUSY_RETRIES && performance.now() + TEXT_BUSY_WAIT_MS < req.deadline) {
        await delay(TEXT_BUSY_WAIT_MS);
        continue;
      }
      if (err instanceof PluginError) throw err;
      throw new PluginError(`plugin type=${JSON.stringify(req.type)} failed (${req.command.toLowerCase()}): ${(err as Error).message}`);
    }
  }
  if (!outcome.ok) throw pluginFailure(req.type, req.command, outcome.stdout, outcome.stderr, outcome.exit);
  if (outcome.stdout.trim() === '') return undefined;
  try {
    return JSON.parse(outcome.stdout) as unknown;
  } catch (err) {
    throw new PluginError(`plugin type=${JSON.stringify(req.type)} failed (${req.command.toLowerCase()}): invalid result JSON: ${(err as Error).message}`);
  }
}
