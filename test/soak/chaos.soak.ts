/**
 * A seeded chaos run: while clients keep exec'ing
 * (WebSocket and SPDY: stdin loopbacks with sha256, exit codes, echoes) and following a container
 * log of numbered lines, faults are injected one after the other, chosen by the seed: Docker
 * stopped and started, nodelet SIGKILLed and restarted, clients killed mid-session, the manifest
 * directory swapped atomically (a pod added or removed). Invariants, checked throughout:
 * - every session ends within its bound, with the right exit code or an error — never a fake 0,
 *   never a Success with a byte lost or duplicated (a process killed by a signal, exit ≥ 128, is
 *   a right exit code when Docker stopped it);
 * - every log stream holds consecutive lines, none lost or duplicated, while it lasts;
 * - after each fault the pods converge (one sandbox each, every container running and ready)
 *   within a bound, and service resumes (sessions succeed again);
 * - at the end no session or child is left, and descriptors and memory are back to baseline.
 * The seed is printed; NODELET_SOAK_SEED=<seed> replays the same fault schedule and client choices
 * (timing still varies).
 */
import http from 'node:http';
import { mkdir, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { startTestEngine, stopTestEngine } from '../helpers/docker.js';
import { fuzzSeed, prng } from '../helpers/prng.js';
import { ChildNode, converge, podManifest } from '../helpers/soak-node.js';
import { describe, runExec, type ExecResult, type Protocol } from '../helpers/soak-exec.js';
import { KiB, MiB, figures, mib, poll, range, round, sha256, sized, stopwatch } from '../helpers/soak.js';

const DURATION_MS = sized({ ci: 60_000, full: 600_000 });
const EXEC_WORKERS = 3;
const LOG_WORKERS = 2;
const CONVERGE_MS = 180_000;
const SESSION_MS = 90_000;
/** Before each fault: at least this many sessions succeed (service resumed), plus a seeded 0–20 more (load). */
const RESUMED_AFTER = 3;
type Fault = 'docker-restart' | 'nodelet-kill' | 'client-kill' | 'manifest-swap';
const FAULTS: readonly Fault[] = ['docker-restart', 'nodelet-kill', 'client-kill', 'manifest-swap'];

const seed = fuzzSeed('NODELET_SOAK_SEED');

t.test(`${DURATION_MS / 1000} s of seeded faults under load, seed ${seed}`, { timeout: DURATION_MS + 900_000 }, async (t) => {
  t.comment(`seed ${seed} (replay: NODELET_SOAK_SEED=${seed} npm run test:soak -- test/soak/chaos.soak.ts)`);
  const node = await ChildNode.start(t, { manifestLink: true, flags: ['--exec-disconnect-grace-period', '1s'] });
  const base: Record<string, string> = {
    work: podManifest('work', {
      app: ['sleep', '2147483647'],
      talker: ['sh', '-c', 'i=0; while :; do j=0; while [ $j -lt 20 ]; do echo "line $i"; i=$((i+1)); j=$((j+1)); done; usleep 20000; done'],
    }),
    idle: podManifest('idle', { app: ['sleep', '2147483647'] }),
  };
  let version = 0;
  let withExtra = false;
  const publish = async () => {
    const dir = join(node.workDir, `..v${++version}`);
    await mkdir(dir);
    const pods = { ...base, ...(withExtra ? { extra: podManifest('extra', { app: ['sleep', '2147483647'] }) } : {}) };
    for (const [name, text] of Object.entries(pods)) await writeFile(join(dir, `${name}.yaml`), text);
    const tmp = join(node.workDir, `manifests.tmp${version}`);
    await symlink(dir, tmp);
    await rename(tmp, node.manifestDir);
  };
  const names = () => ['work', 'idle', ...(withExtra ? ['extra'] : [])];
  await publish();
  await converge(node, names(), CONVERGE_MS);
  const pod = node.podName('work');
  const fds0 = node.fds();
  const rss0 = node.rss();

  const violations: string[] = [];
  const counts = { sessions: 0, ok: 0, errors: 0, signalled: 0, killedByClient: 0, bytes: 0, logStreams: 0, logLines: 0 };
  let okSinceFault = 0;
  let stopping = false;
  /** In-flight sessions a client-kill fault may pick. */
  const inFlight = new Set<() => void>();

  /** Checks one session's end against what it had to be; true when it ended in an error. */
  const judge = (what: string, r: ExecResult, expect: { exit: number; sha?: string; stdinBytes?: number }, killed: boolean): boolean => {
    counts.sessions++;
    if (r.outcome === 'timeout') {
      violations.push(`${what}: hung: ${describe(r)}`);
      return true;
    }
    if (r.outcome !== 'exited') {
      counts.errors++;
      if (killed) counts.killedByClient++;
      return true;
    }
    if (r.exitCode === expect.exit) {
      const sha = expect.sha ?? r.stdinSha;
      if (expect.exit === 0 && (r.stdoutSha !== sha || (expect.stdinBytes !== undefined && r.stdinBytes !== expect.stdinBytes))) {
        violations.push(`${what}: Success with wrong bytes: ${describe(r)}`);
      } else {
        counts.ok++;
        counts.bytes += r.stdoutBytes;
        okSinceFault++;
      }
    } else if ((r.exitCode ?? 0) >= 128) {
      counts.signalled++;
    } else {
      violations.push(`${what}: exit ${r.exitCode}, expected ${expect.exit}: ${describe(r)}`);
    }
    return false;
  };

  const execWorker = async (w: number) => {
    const random = prng(seed * 31 + w);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    while (!stopping) {
      const protocol: Protocol = pick(['websocket', 'spdy'] as const);
      const kind = pick(['cat', 'exit', 'echo'] as const);
      let killed = false;
      let kill: (() => void) | undefined;
      const onOpen = (k: () => void) => {
        kill = () => {
          killed = true;
          k();
        };
        inFlight.add(kill);
      };
      const req = { port: node.port, pod, container: 'app', protocol, timeoutMs: SESSION_MS, onOpen };
      let failed: boolean;
      if (kind === 'cat') {
        const bytes = Math.floor((64 * KiB + random() * 4 * MiB) / 1024) * 1024;
        const chunk = pick([1 * KiB, 4 * KiB, 64 * KiB, 128 * KiB]);
        const r = await runExec({ ...req, command: ['cat'], stdin: { bytes, chunk } });
        failed = judge(`cat ${bytes} B over ${protocol}`, r, { exit: 0, stdinBytes: bytes }, killed);
      } else if (kind === 'exit') {
        const code = Math.floor(random() * 4);
        const r = await runExec({ ...req, command: ['sh', '-c', `sleep 0.${Math.floor(random() * 9)}; exit ${code}`] });
        failed = judge(`exit ${code} over ${protocol}`, r, { exit: code, sha: sha256('') }, killed);
      } else {
        const nonce = `n${Math.floor(random() * 1e9)}`;
        const r = await runExec({ ...req, command: ['echo', nonce] });
        failed = judge(`echo over ${protocol}`, r, { exit: 0, sha: sha256(`${nonce}\n`) }, killed);
      }
      if (kill) inFlight.delete(kill);
      // While a fault is on sessions fail fast: retry, but not in a tight loop.
      if (!stopping && failed) await new Promise((r) => setTimeout(r, 250));
    }
  };

  const logWorker = async () => {
    while (!stopping) {
      await new Promise<void>((resolve) => {
        let partial = '';
        let expected: number | undefined;
        const req = http.get(`${node.url}/containerLogs/default/${pod}/talker?follow=true`, { agent: false }, (res) => {
          if (res.statusCode !== 200) {
            res.resume();
            res.on('end', () => resolve());
            return;
          }
          counts.logStreams++;
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            const parts = (partial + chunk).split('\n');
            partial = parts.pop() ?? '';
            for (const line of parts) {
              const n = /^line (\d+)$/.exec(line);
              if (!n) {
                violations.push(`log stream: a line that was never written: ${JSON.stringify(line.slice(0, 80))}`);
                continue;
              }
              const v = Number(n[1]);
              if (expected !== undefined && v !== expected) violations.push(`log stream: line ${v} after line ${expected - 1} (lost or duplicated lines)`);
              expected = v + 1;
              counts.logLines++;
            }
          });
          res.on('end', () => resolve());
          res.on('error', () => resolve());
          res.on('close', () => resolve());
        });
        req.on('error', () => resolve());
        // Streams end with the container, Docker or nodelet; the worker stops the last one.
        const stopper = setInterval(() => {
          if (stopping) {
            req.destroy();
            clearInterval(stopper);
          }
        }, 100);
        req.on('close', () => clearInterval(stopper));
      });
      // Pacing of the load, not synchronisation: a stream that ended (container, Docker or
      // nodelet going away) is reopened 200 ms later rather than in a tight loop.
      if (!stopping) await new Promise((r) => setTimeout(r, 200));
    }
  };

  const workers = [...range(EXEC_WORKERS).map((w) => execWorker(w)), ...range(LOG_WORKERS).map(() => logWorker())];
  const random = prng(seed);
  const schedule: string[] = [];
  const reconverge: number[] = [];
  const faultCounts: Record<Fault, number> = { 'docker-restart': 0, 'nodelet-kill': 0, 'client-kill': 0, 'manifest-swap': 0 };
  const elapsed = stopwatch();
  try {
    while (elapsed() * 1000 < DURATION_MS) {
      // Service first: sessions succeed before the next fault.
      okSinceFault = 0;
      const load = RESUMED_AFTER + Math.floor(random() * 21);
      await poll(`${load} sessions succeeding`, () => (okSinceFault >= load ? true : undefined), CONVERGE_MS, 50);
      const fault = FAULTS[Math.floor(random() * FAULTS.length)]!;
      faultCounts[fault]++;
      schedule.push(fault);
      const clock = stopwatch();
      if (fault === 'docker-restart') {
        await stopTestEngine();
        await startTestEngine();
      } else if (fault === 'nodelet-kill') {
        await node.restart();
      } else if (fault === 'client-kill') {
        await poll('a session in flight', () => (inFlight.size > 0 ? true : undefined), 30_000, 10);
        for (const kill of [...inFlight].slice(0, 1 + Math.floor(random() * 3))) kill();
      } else {
        withExtra = !withExtra;
        await publish();
      }
      await poll('/healthz 200', async () => ((await node.healthz()) === 200 ? true : undefined), CONVERGE_MS, 200);
      reconverge.push(round(clock() + (await converge(node, names(), CONVERGE_MS))));
      t.comment(`fault ${schedule.length} ${fault}: converged in ${reconverge.at(-1)} s`);
    }
  } finally {
    stopping = true;
    await Promise.all(workers);
  }
  const seconds = elapsed();
  t.same(violations.slice(0, 5), [], `no invariant broken over ${counts.sessions} sessions and ${counts.logLines} log lines (${violations.length} violations)`);
  t.ok(counts.ok > 0 && counts.logLines > 0, 'the clients kept working');
  await poll('no session or child left', async () => ((await node.sessions()) === 0 && node.children() === 0 ? true : undefined), 30_000, 100);
  await poll(`descriptors back to ${fds0}`, (why) => {
    why(`${node.fds()} open`);
    return node.fds() <= fds0 + 3 ? true : undefined;
  }, 30_000, 200);
  const rss1 = node.rss();
  t.ok(rss1 - rss0 <= 64 * MiB, `RSS ${mib(rss0)} → ${mib(rss1)} MiB (≤ +64 MiB)`);
  await converge(node, names(), CONVERGE_MS);
  figures(t, {
    seed,
    seconds,
    faults: Object.entries(faultCounts).map(([k, v]) => `${k}:${v}`).join(' '),
    max_reconverge_s: Math.max(...reconverge),
    sessions: counts.sessions,
    ok: counts.ok,
    errors: counts.errors,
    killed_by_signal: counts.signalled,
    killed_clients: counts.killedByClient,
    mib_verified: mib(counts.bytes),
    log_streams: counts.logStreams,
    log_lines: counts.logLines,
    violations: violations.length,
    fds_before: fds0,
    fds_after: node.fds(),
    rss_before_mib: mib(rss0),
    rss_after_mib: mib(rss1),
  });
});
