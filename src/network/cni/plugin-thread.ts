import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { PluginError, type PluginJob, type RunOutcome, runPluginProcess } from './exec.js';

/**
 * CNI plugin processes are started on a thread of their own. Node's `spawn` is synchronous: it
 * forks nodelet (a copy of its page tables) and then blocks until the child has exec'd, so on a
 * loaded machine each start held the event loop for tens of milliseconds (a third of nodelet's
 * busy time in a 30-pod burst, three plugins per ADD and per DEL), during which no other pod's
 * sync, status or watch event moved. On this thread the wait blocks only this thread; the
 * runs themselves are unchanged (`runPluginProcess`). libcni (`pkg/invoke/raw_exec.go`) execs in
 * its caller's goroutine, which Go's runtime never lets block the others: this is the same.
 *
 * Up to MAX_PLUGIN_THREADS threads, made as runs overlap and ended after PLUGIN_THREAD_IDLE_MS
 * without work; a thread holds the process alive only while its runs are pending. If one cannot
 * start or dies, its pending runs fail with the reason and later runs go to another.
 */

const ROLE = 'nodelet-cni-plugin-thread';

interface Request {
  readonly id: number;
  readonly job: PluginJob;
}

/** A failure crossing the thread boundary: an Error's class and `code` do not survive a structured clone. */
interface Failure {
  readonly message: string;
  readonly code?: string | number;
  readonly plugin: boolean;
}

type Reply = { readonly id: number; readonly outcome: RunOutcome } | { readonly id: number; readonly failure: Failure };

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

// ---- the thread's side ----------------------------------------------------------------------------

if (!isMainThread && (workerData as { role?: string } | null)?.role === ROLE && parentPort) {
  const port = parentPort;
  port.on('message', (req: Request) => {
    runPluginProcess({ ...req.job, stdin: Buffer.from(req.job.stdin) }).then(
      (outcome) => port.postMessage({ id: req.id, outcome } satisfies Reply),
      (err: unknown) => port.postMessage({ id: req.id, failure: toFailure(err) } satisfies Reply),
    );
  });
}

// ---- the caller's side ----------------------------------------------------------------------------

/**
 * At most this many threads: a burst of pods sets up their networks at once (containerd runs each
 * pod's CNI calls in a goroutine of its own), and a thread waits out one spawn at a time.
 */
export const MAX_PLUGIN_THREADS = 4;
/** A thread with nothing to run for this long ends, so an idle node holds none. */
export const PLUGIN_THREAD_IDLE_MS = 30_000;

interface Pending {
  resolve: (o: RunOutcome) => void;
  reject: (e: Error) => void;
}

interface PluginThread {
  readonly worker: Worker;
  readonly pending: Map<number, Pending>;
  idleTimer: NodeJS.Timeout | undefined;
}

const threads = new Set<PluginThread>();
let nextId = 0;

/** The thread's module: this file, as built (`.js`) or as the tests load it (`.ts`). */
const entry = new URL(`./plugin-thread${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

function startThread(): PluginThread {
  const worker = new Worker(entry, { workerData: { role: ROLE }, stdout: false, stderr: false });
  const t: PluginThread = { worker, pending: new Map(), idleTimer: undefined };
  const fail = (err: Error) => {
    threads.delete(t);
    if (t.idleTimer) clearTimeout(t.idleTimer);
    for (const p of t.pending.values()) p.reject(err);
    t.pending.clear();
  };
  worker.on('message', (reply: Reply) => {
    const p = t.pending.get(reply.id);
    if (!p) return;
    t.pending.delete(reply.id);
    if (t.pending.size === 0) idle(t);
    if ('outcome' in reply) p.resolve(reply.outcome);
    else p.reject(fromFailure(reply.failure));
  });
  worker.on('error', (err) => fail(new Error(`CNI plugin thread failed: ${err.message}`)));
  worker.on('exit', (code) => fail(new Error(`CNI plugin thread exited (code ${code})`)));
  threads.add(t);
  return t;
}

/** Nothing pending: the thread no longer holds the process alive, and ends once idle long enough. */
function idle(t: PluginThread): void {
  t.worker.unref();
  t.idleTimer = setTimeout(() => {
    if (t.pending.size > 0) return;
    threads.delete(t);
    void t.worker.terminate();
  }, PLUGIN_THREAD_IDLE_MS);
  t.idleTimer.unref();
}

/** The least busy thread; a new one while every thread is busy and there are fewer than the maximum. */
function pickThread(): PluginThread {
  let best: PluginThread | undefined;
  for (const t of threads) if (!best || t.pending.size < best.pending.size) best = t;
  if (best && (best.pending.size === 0 || threads.size >= MAX_PLUGIN_THREADS)) return best;
  return startThread();
}

/** Plugin threads alive now (for tests). */
export function pluginThreadCount(): number {
  return threads.size;
}

/** Runs `job` on a plugin thread (see the file's comment); resolves or rejects as `runPluginProcess`. */
export function runOnPluginThread(job: PluginJob): Promise<RunOutcome> {
  const t = pickThread();
  const id = nextId++;
  return new Promise<RunOutcome>((resolve, reject) => {
    if (t.idleTimer) clearTimeout(t.idleTimer);
    t.idleTimer = undefined;
    t.pending.set(id, { resolve, reject });
    t.worker.ref();
    t.worker.postMessage({ id, job } satisfies Request);
  });
}
