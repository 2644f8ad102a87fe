import { type ChildProcess, fork } from 'node:child_process';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PluginError, type PluginJob, type RunOutcome, runPluginProcess } from './exec.js';

/**
 * CNI plugin processes are started by a small helper process of nodelet's (this module run with
 * `--role` below), not by nodelet itself. Node's `spawn` is synchronous: it forks the caller (a
 * copy of its page tables, which for nodelet's few hundred MB cost milliseconds of CPU, more on
 * a loaded machine) and then blocks until the child has exec'd. Called from nodelet's event loop,
 * each start held every other pod's sync, status and watch event for tens of milliseconds in a
 * burst (three plugins per ADD, three per DEL: a third of nodelet's busy time); started from
 * threads of nodelet, the forks of the big process competed and cost twice the CPU. The helper
 * is a bare Node process, cheap to fork, whose loop does nothing else; the runs themselves are
 * unchanged (`runPluginProcess`). libcni (`pkg/invoke/raw_exec.go`) execs in its caller's
 * goroutine, which Go's runtime never lets block the others (and Go's fork is a vfork): this is
 * the same for nodelet.
 *
 * Up to MAX_PLUGIN_SPAWNERS helpers, made as runs overlap and ended after PLUGIN_SPAWNER_IDLE_MS
 * without work (an idle node holds none); one holds nodelet alive only while its runs are
 * pending, and exits when nodelet does (its IPC channel closes). If one cannot start or dies, its
 * pending runs fail with the reason and later runs go to another.
 *
 * A helper pays for itself over a burst, not for one pod: its start is a fork of nodelet plus a
 * Node start-up (≈ 100 ms and 0.1 CPU-s), where one plugin run started by nodelet is one fork
 * (a few ms). So while no helper is up, up to MAX_DIRECT_RUNS runs at once start their plugin
 * from nodelet itself (`runPlugin`): one pod's set-up after an idle spell (loopback beside the
 * default network, then its chained plugins) starts no helper at all, and a burst starts one
 * with its third overlapping run.
 */

const ROLE = '--nodelet-cni-plugin-spawner';

interface Request {
  readonly id: number;
  readonly job: PluginJob;
}

/** A failure crossing the process boundary: an Error's class and `code` do not survive a structured clone. */
interface Failure {
  readonly message: string;
  readonly code?: string | number;
  readonly plugin: boolean;
}

type Reply = { readonly id: number; readonly outcome: RunOutcome } | { readonly id: number; readonly failure: Failure } | { readonly ready: true };

function toFailure(err: unknown): Failure {
  if (err instanceof PluginError) return { message: err.message, ...(err.code !== undefined ? { code: err.code } : {}), plugin: true };
  const e = err as NodeJS.ErrnoException;
  return { message: e instanceof Error ? e.message : String(err), ...(e?.code !== undefined ? { code: e.code } : {}), plugin: false };
}

function fromFailure(f: Failure): Error {
  if (f.plugin) return new PluginError(f.message, typeof f.code === 'number' ? f.code : undefined);
  const e: NodeJS.ErrnoException = new Error(f.message);
  if (typeof f.code === 'string') e.code = f.code;
  return e;
}

// ---- the helper's side ----------------------------------------------------------------------------

if (process.argv.includes(ROLE) && process.send) {
  const send = (reply: Reply) => process.send?.(reply);
  process.on('message', (req: Request) => {
    runPluginProcess({ ...req.job, stdin: Buffer.from(req.job.stdin) }).then(
      (outcome) => send({ id: req.id, outcome }),
      (err: unknown) => send({ id: req.id, failure: toFailure(err) }),
    );
  });
  // nodelet is gone (or ended this helper): nothing more to run.
  process.on('disconnect', () => process.exit(0));
  send({ ready: true });
}

// ---- the caller's side ----------------------------------------------------------------------------

/**
 * At most this many helpers: a burst of pods sets up their networks at once (containerd runs each
 * pod's CNI calls in a goroutine of its own), and a helper waits out one exec at a time.
 */
export const MAX_PLUGIN_SPAWNERS = 2;
/** How long past a run's own timeout nodelet waits for the helper's answer before giving the run up. */
const HELPER_GRACE_MS = 5_000;
/** A helper with nothing to run for this long ends, so an idle node holds none. */
export const PLUGIN_SPAWNER_IDLE_MS = 30_000;

interface Pending {
  resolve: (o: RunOutcome) => void;
  reject: (e: Error) => void;
}

interface Spawner {
  readonly child: ChildProcess;
  /** It has started and said so: until then its runs wait for its start-up (≈ 100 ms of a Node start). */
  ready: boolean;
  readonly pending: Map<number, Pending>;
  idleTimer: NodeJS.Timeout | undefined;
}

const spawners = new Set<Spawner>();
let nextId = 0;

/** The helper's module: this file, as built (`.js`) or as the tests load it (`.ts`, with the test's loader). */
const entry = fileURLToPath(new URL(`./plugin-spawner${extname(fileURLToPath(import.meta.url))}`, import.meta.url));

/** nodelet's own node flags (a loader, a profiler), less a debugger's: its port is taken. */
function helperExecArgv(): string[] {
  return process.execArgv.filter((a) => !/^--inspect/.test(a));
}

function startSpawner(): Spawner {
  const child = fork(entry, [ROLE], { execArgv: helperExecArgv(), serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const s: Spawner = { child, ready: false, pending: new Map(), idleTimer: undefined };
  const fail = (err: Error) => {
    spawners.delete(s);
    if (s.idleTimer) clearTimeout(s.idleTimer);
    for (const p of s.pending.values()) p.reject(err);
    s.pending.clear();
  };
  child.on('message', (reply: Reply) => {
    if ('ready' in reply) {
      s.ready = true;
      return;
    }
    const p = s.pending.get(reply.id);
    if (!p) return;
    s.pending.delete(reply.id);
    if (s.pending.size === 0) idle(s);
    if ('outcome' in reply) p.resolve(reply.outcome);
    else p.reject(fromFailure(reply.failure));
  });
  child.on('error', (err) => fail(new Error(`CNI plugin helper failed: ${err.message}`)));
  child.on('exit', (code, signal) => fail(new Error(`CNI plugin helper exited (${signal ?? `code ${code}`})`)));
  spawners.add(s);
  return s;
}

/** Nothing pending: the helper no longer holds nodelet alive, and ends once idle long enough. */
function idle(s: Spawner): void {
  s.child.unref();
  s.child.channel?.unref();
  s.idleTimer = setTimeout(() => {
    if (s.pending.size > 0) return;
    spawners.delete(s);
    s.child.disconnect();
  }, PLUGIN_SPAWNER_IDLE_MS);
  s.idleTimer.unref();
}

/**
 * The least busy helper that is up; while every one that is up is busy and there are fewer than
 * the maximum, another is started for the runs to come (a helper runs overlapping plugins side by
 * side; a second one only spreads the forks). With none up, the one starting (or a new one): a
 * run never starts a second helper while one is starting, so the overlapping runs of one pod
 * after an idle spell (loopback beside the default network) wait for one start-up, not two.
 */
function pickSpawner(): Spawner {
  let best: Spawner | undefined;
  let starting: Spawner | undefined;
  for (const s of spawners) {
    if (!s.ready) starting = s;
    else if (!best || s.pending.size < best.pending.size) best = s;
  }
  if (!best) return starting ?? startSpawner();
  // Started with nothing to run: it idles (unref'd, its idle timer on) until a run comes.
  if (best.pending.size > 0 && !starting && spawners.size < MAX_PLUGIN_SPAWNERS) idle(startSpawner());
  return best;
}

/** Helper processes alive now (for tests). */
export function pluginSpawnerCount(): number {
  return spawners.size;
}

/**
 * With no helper up, at most this many plugin runs at once are started by nodelet itself: a
 * burst's forks of the big process then stay bounded (the reason helpers exist), and one pod's
 * two overlapping runs (loopback and the default network) need none.
 */
export const MAX_DIRECT_RUNS = 2;
let directRuns = 0;

/** A helper has started and can take runs. */
function helperUp(): boolean {
  for (const s of spawners) if (s.ready) return true;
  return false;
}

/** Runs `job` as the file's comment says: from nodelet while no helper is up and few runs overlap, else in a helper. */
export function runPlugin(job: PluginJob): Promise<RunOutcome> {
  if (directRuns >= MAX_DIRECT_RUNS || helperUp()) return runInPluginSpawner(job);
  directRuns++;
  return runPluginProcess(job).finally(() => directRuns--);
}

/** Runs `job` in a helper process (see the file's comment); resolves or rejects as `runPluginProcess`. */
export function runInPluginSpawner(job: PluginJob): Promise<RunOutcome> {
  const s = pickSpawner();
  const id = nextId++;
  return new Promise<RunOutcome>((resolve, reject) => {
    if (s.idleTimer) clearTimeout(s.idleTimer);
    s.idleTimer = undefined;
    // The helper enforces the timeout; this one only bounds a helper that stopped answering.
    const guard = setTimeout(() => {
      if (!s.pending.delete(id)) return;
      if (s.pending.size === 0) idle(s);
      reject(new PluginError(`plugin type=${JSON.stringify(job.type)} failed (${job.command.toLowerCase()}): timed out (the CNI plugin helper did not answer)`));
    }, job.timeoutMs + HELPER_GRACE_MS);
    s.pending.set(id, {
      resolve: (o) => (clearTimeout(guard), resolve(o)),
      reject: (e) => (clearTimeout(guard), reject(e)),
    });
    s.child.ref();
    s.child.channel?.ref();
    s.child.send({ id, job } satisfies Request);
  });
}
