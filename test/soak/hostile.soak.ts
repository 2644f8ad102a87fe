/**
 * A seeded hostile-client phase: while honest clients keep using the node (a /healthz
 * probe, exec sessions over WebSocket and SPDY), hostile clients act one after the other, in an
 * order the seed deals (every action several times):
 * - pipelining: requests pipelined on one connection with an Upgrade among them (a bare
 *   `/healthz` Upgrade, the packet that once ended the process, and routes the seed picks: /healthz, /pods, /api/v1/pods, a pod, its log, events,
 *   nodes), in one write or split across writes at seeded byte offsets; the last an Upgrade of
 *   the same route or an exec WebSocket upgrade (v5.channel.k8s.io) into a running pod. The
 *   answers must come one per request, in order (each body the route's), and the exec upgrade
 *   after them must be served (101). This used to end the process (ERR_HTTP_SOCKET_ASSIGNED);
 * - watch floods: more never-reading watches (pods, events, nodes) from one (anonymous) client
 *   than the per-user cap (`--max-watches-per-user`, small here): exactly the cap is admitted,
 *   the rest get 429 with `Connection: close`; then they are released;
 * - expansion bombs: a static pod whose 22 env entries double `$(V{i-1})` (64 Mi characters
 *   expanded) used by args and a subPathExpr, added and removed: nodelet must refuse it with
 *   CreateContainerConfigError and a short message;
 * - slow and garbage clients: half a request head then silence, a header flood, random bytes;
 *   clients that disconnect mid-exec.
 * Invariants, checked on a cadence throughout: nodelet alive (the same PID, never restarted);
 * /healthz from an honest client 200 with p99 < 1 s and max < 5 s; honest exec sessions succeed
 * with the right bytes; the honest pods stay Running; the bomb pod's waiting message stays short
 * (< 2 KiB) and /api/v1/events answers 200; RSS < baseline + 150 MiB and descriptors < baseline +
 * the caps + slack. After the phase: no session or child left, descriptors back to baseline and
 * RSS near it. The seed is printed; NODELET_SOAK_SEED=<seed> replays the same schedule.
 */
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import t from 'tap';
import type { Pod } from '../../src/api/types.js';
import { expansionBombManifest, httpAnswers, type Answer } from '../helpers/hostile.js';
import { fuzzSeed, prng } from '../helpers/prng.js';
import { ChildNode, converge, podManifest } from '../helpers/soak-node.js';
import { describe, runExec, type Protocol } from '../helpers/soak-exec.js';
import { KiB, MiB, figures, mib, poll, probeHealthz, range, sha256, sized, stopwatch } from '../helpers/soak.js';

const DURATION_MS = sized({ ci: 70_000, full: 600_000 });
const MAX_WATCHES = 60;
const MAX_WATCHES_PER_USER = 40;
/** A flood is the per-user cap plus this many more (seeded up to it). */
const FLOOD_EXTRA = 30;
/** Slow clients held at once, at most. */
const SLOW_CLIENTS = 20;
const RSS_SLACK = 150 * MiB;
/** Descriptors over the baseline allowed during the phase: every flood and slow socket, exec sessions, Docker. */
const FD_SLACK = MAX_WATCHES_PER_USER + FLOOD_EXTRA + SLOW_CLIENTS + 60;
const MAX_MESSAGE = 2 * KiB;
const HEALTHZ_P99_MS = 1000;
const HEALTHZ_MAX_MS = 5000;
const CONVERGE_MS = 120_000;

type Action = 'pipeline' | 'watch-flood' | 'bomb' | 'slow' | 'exec-disconnect';
const ACTIONS: readonly Action[] = ['pipeline', 'watch-flood', 'bomb', 'slow', 'exec-disconnect'];

const seed = fuzzSeed('NODELET_SOAK_SEED');

const bombManifest = expansionBombManifest();

const WS_UPGRADE = ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='];
const request = (method: string, path: string, extra: readonly string[] = []) =>
  [`${method} ${path} HTTP/1.1`, 'Host: x', ...(method === 'POST' ? ['Content-Length: 0'] : []), ...extra, '', ''].join('\r\n');


/**
 * Writes `writes` (each after the previous has been flushed, a turn of the event loop apart,
 * without waiting for answers) and reads until the server closes or a `101` head arrived (then
 * closes itself), or `expected` complete answers arrived. Resolves with what came; `timedOut`
 * when neither happened within `ms`.
 */
function exchange(port: number, writes: readonly string[], ms = 15_000): Promise<{ text: string; timedOut: boolean; closedByServer: boolean }> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let text = '';
    let done = false;
    const finish = (timedOut: boolean, closedByServer: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, timedOut, closedByServer });
    };
    const timer = setTimeout(() => finish(true, false), ms);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      text += d;
      try {
        if (httpAnswers(text).switched) finish(false, false);
      } catch {
        finish(false, false);
      }
    });
    socket.on('close', () => finish(false, true));
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      const next = (i: number) => {
        if (i >= writes.length || socket.destroyed) return;
        socket.write(writes[i] ?? '', () => setImmediate(() => next(i + 1)));
      };
      next(0);
    });
  });
}

/** A watch that never reads past its response head: resolves with its status once the head came (0: none within 10 s). */
function neverReadingWatch(port: number, path: string): { status: Promise<number>; socket: Socket } {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  const status = new Promise<number>((resolve) => {
    let text = '';
    const timer = setTimeout(() => resolve(0), 10_000);
    socket.setEncoding('latin1');
    const onData = (d: string) => {
      text += d;
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      clearTimeout(timer);
      socket.off('data', onData);
      // From here on nothing is read: the kernel buffers fill and nodelet's writes back up.
      socket.pause();
      const head = text.slice(0, end);
      const code = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
      if (code === 429 && !/\r\nconnection: *close/i.test(head)) resolve(-429);
      else resolve(code);
    };
    socket.on('data', onData);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(0);
    });
  });
  socket.write(request('GET', path));
  return { status, socket };
}

t.test(`${DURATION_MS / 1000} s of seeded hostile clients, seed ${seed}`, { timeout: DURATION_MS + 600_000 }, async (t) => {
  t.comment(`seed ${seed} (replay: NODELET_SOAK_SEED=${seed} npm run test:soak -- test/soak/hostile.soak.ts)`);
  const node = await ChildNode.start(t, {
    flags: ['--exec-disconnect-grace-period', '1s', '--max-watches', String(MAX_WATCHES), '--max-watches-per-user', String(MAX_WATCHES_PER_USER)],
  });
  await node.writeManifest('work.yaml', podManifest('work', {
    app: ['sleep', '2147483647'],
    talker: ['sh', '-c', 'i=0; while :; do echo "tick $i"; i=$((i+1)); usleep 200000; done'],
  }));
  await node.writeManifest('idle.yaml', podManifest('idle', { app: ['sleep', '2147483647'] }));
  const honest = ['work', 'idle'];
  await converge(node, honest, CONVERGE_MS);
  await poll('/healthz 200', async () => ((await node.healthz()) === 200 ? true : undefined), 60_000, 200);
  const pod = node.podName('work');
  const pid0 = node.pid;
  const fds0 = node.fds();
  const rss0 = node.rss();

  const violations: string[] = [];
  const violate = (v: string) => {
    violations.push(v);
    t.comment(`violation: ${v}`);
  };
  const counts = {
    pipelines: 0, pipelinedRequests: 0, upgrades101: 0, floods: 0, watchesAdmitted: 0, watches429: 0,
    bombsAdded: 0, bombsRemoved: 0, slowClients: 0, headerFloods: 0, garbage: 0, execDisconnects: 0,
    honestExecs: 0, honestExecOk: 0, checks: 0,
  };
  let maxFds = fds0;
  let maxRss = rss0;
  let maxMessage = 0;
  let stopping = false;
  let bombPresent = false;

  // Invariants on a cadence: the process and its descriptors and memory every 250 ms; pods,
  // the bomb's message and events every 2 s.
  const checker = (async () => {
    let tick = 0;
    while (!stopping) {
      tick++;
      if (!node.running || node.pid !== pid0) {
        violate(`nodelet is gone (pid ${pid0} → ${node.running ? node.pid : 'exited'}): ${node.logTail(1500)}`);
        return;
      }
      const fds = node.fds();
      const rss = node.rss();
      maxFds = Math.max(maxFds, fds || 0);
      maxRss = Math.max(maxRss, rss || 0);
      if (fds > fds0 + FD_SLACK) violate(`${fds} descriptors open (baseline ${fds0}, bound +${FD_SLACK})`);
      if (rss > rss0 + RSS_SLACK) violate(`RSS ${mib(rss)} MiB (baseline ${mib(rss0)}, bound +${mib(RSS_SLACK)})`);
      if (tick % 8 === 0) {
        counts.checks++;
        try {
          const pods = await node.pods();
          for (const name of honest) {
            const p = pods.find((x) => x.metadata?.name === node.podName(name));
            const down = (p?.spec?.containers ?? []).filter((c) => !p?.status?.containerStatuses?.some((s) => s.name === c.name && s.state?.running));
            if (!p || p.status?.phase !== 'Running' || down.length > 0) violate(`honest pod ${name} not Running (${p?.status?.phase}; ${down.map((c) => c.name).join(',')} down)`);
          }
          const bomb: Pod | undefined = pods.find((x) => x.metadata?.name === node.podName('bomb'));
          for (const s of bomb?.status?.containerStatuses ?? []) {
            const len = Buffer.byteLength(s.state?.waiting?.message ?? '') + Buffer.byteLength(s.state?.terminated?.message ?? '');
            maxMessage = Math.max(maxMessage, len);
            if (len >= MAX_MESSAGE) violate(`bomb/${s.name}: a ${len}-byte status message`);
            if (s.state?.running) violate(`bomb/${s.name} is running`);
          }
          const ev = await fetch(`${node.url}/api/v1/events`, { signal: AbortSignal.timeout(10_000) });
          const evBody = await ev.text();
          if (ev.status !== 200) violate(`GET /api/v1/events: ${ev.status}`);
          else if (evBody.length > 4 * MiB) violate(`GET /api/v1/events: ${evBody.length} bytes`);
        } catch (err) {
          if (!stopping) violate(`check failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      // The cadence of the checks.
      await new Promise((r) => setTimeout(r, 250));
    }
  })();

  // Honest exec sessions, one at a time, alternating protocols.
  const honestExec = (async () => {
    let i = 0;
    while (!stopping && node.running) {
      const protocol: Protocol = i++ % 2 === 0 ? 'websocket' : 'spdy';
      const nonce = `h${i}-${seed}`;
      const r = await runExec({ port: node.port, pod, container: 'app', protocol, command: ['echo', nonce], timeoutMs: 30_000 });
      counts.honestExecs++;
      if (r.outcome === 'exited' && r.exitCode === 0 && r.stdoutSha === sha256(`${nonce}\n`)) counts.honestExecOk++;
      else violate(`honest exec over ${protocol}: ${describe(r)}`);
      // Pacing of the honest load, not synchronisation.
      await new Promise((r) => setTimeout(r, 200));
    }
  })();

  const health = probeHealthz(node.url, 100);
  const random = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  /** Pacing between and inside hostile actions (not synchronisation): 100–1000 ms, seeded. */
  const pace = () => new Promise((r) => setTimeout(r, int(100, 1000)));

  // Routes for pipelining, and what the body of each answer must look like (so the order shows).
  const routes: [path: string, body: RegExp][] = [
    ['/healthz', /^ok$/],
    ['/pods', /"kind":"PodList"/],
    ['/api/v1/pods', /"kind":"PodList"/],
    [`/api/v1/namespaces/default/pods/${pod}`, new RegExp(`"kind":"Pod".*"name":"${pod}"`)],
    [`/containerLogs/default/${pod}/talker?tailLines=3`, /^tick \d+\n/],
    [`/api/v1/namespaces/default/pods/${pod}/log?container=talker&tailLines=2`, /^tick \d+\n/],
    ['/api/v1/events', /"kind":"EventList"/],
    ['/api/v1/nodes', /"kind":"NodeList"/],
  ];
  const watchPaths = ['/api/v1/pods?watch=true', '/api/v1/events?watch=true', '/api/v1/nodes?watch=true', '/api/v1/namespaces/default/pods?watch=1'];

  const pipeline = async () => {
    counts.pipelines++;
    // The bare /healthz Upgrade that once ended the process, or seeded routes with an upgrade of one of them, or an exec upgrade, last.
    const issue = random() < 0.25;
    const chosen = issue ? [routes[0]!] : range(int(1, 4)).map(() => pick(routes));
    const exec = !issue && random() < 0.5;
    const last = exec
      ? request('GET', `/exec/default/${pod}/app?command=true&output=1`, [...WS_UPGRADE, 'Sec-WebSocket-Protocol: v5.channel.k8s.io'])
      : issue ? 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n' : request('GET', chosen.at(-1)![0], WS_UPGRADE);
    const packet = chosen.map(([path]) => request('GET', path)).join('') + last;
    // One write, one per request, or cut at seeded byte offsets.
    const mode = pick(['one', 'per-request', 'cut'] as const);
    let writes: string[];
    if (mode === 'one') writes = [packet];
    else if (mode === 'per-request') writes = [...chosen.map(([path]) => request('GET', path)), last];
    else {
      const cuts = [...new Set(range(int(1, 5)).map(() => int(1, packet.length - 1)))].sort((a, b) => a - b);
      writes = [0, ...cuts].map((c, i) => packet.slice(c, [...cuts, packet.length][i]));
    }
    counts.pipelinedRequests += chosen.length + 1;
    const r = await exchange(node.port, writes);
    const what = `pipelined ${chosen.map(([p]) => p).join(' + ')} + ${exec ? 'exec upgrade' : 'upgrade'} (${mode})`;
    let got: Answer[];
    try {
      got = httpAnswers(r.text).list;
    } catch (err) {
      violate(`${what}: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    if (r.timedOut) violate(`${what}: no end within 15 s (${got.length} answers)`);
    if (got.length !== chosen.length + 1) {
      violate(`${what}: ${got.length} answers (${got.map((a) => a.status).join(', ')}) for ${chosen.length + 1} requests`);
      return;
    }
    chosen.forEach(([path, body], i) => {
      const a = got[i]!;
      if (a.status !== 200 || !body.test(a.body)) violate(`${what}: answer ${i + 1} (${path}) is ${a.status} ${JSON.stringify(a.body.slice(0, 80))}: out of order or wrong`);
    });
    const up = got.at(-1)!;
    if (exec) {
      if (up.status === 101) counts.upgrades101++;
      else violate(`${what}: the exec upgrade after them answered ${up.status}, not 101`);
    } else if (up.status >= 500) violate(`${what}: the upgrade request answered ${up.status}`);
  };

  const watchFlood = async () => {
    counts.floods++;
    const n = MAX_WATCHES_PER_USER + int(5, FLOOD_EXTRA);
    const fdsBefore = node.fds();
    const watches = range(n).map(() => neverReadingWatch(node.port, pick(watchPaths)));
    const statuses = await Promise.all(watches.map((w) => w.status));
    const admitted = statuses.filter((s) => s === 200).length;
    const refused = statuses.filter((s) => s === 429).length;
    counts.watchesAdmitted += admitted;
    counts.watches429 += refused;
    if (statuses.includes(-429)) violate(`watch flood: a 429 without Connection: close`);
    if (admitted !== MAX_WATCHES_PER_USER || refused !== n - MAX_WATCHES_PER_USER) {
      const other = statuses.filter((s) => s !== 200 && s !== 429);
      violate(`watch flood of ${n}: ${admitted} admitted, ${refused} refused with 429, ${other.length} other (${[...new Set(other)].join(',')}); cap ${MAX_WATCHES_PER_USER}`);
    }
    // Held open, never read, while the honest clients carry on (pacing), then released.
    await pace();
    await pace();
    for (const w of watches) w.socket.destroy();
    // Released: nodelet closes them (so the next flood meets an empty cap).
    await poll('the flood released', (why) => {
      why(`${node.fds()} fds, ${fdsBefore} before the flood`);
      return node.fds() <= fdsBefore + 6 ? true : undefined;
    }, 30_000, 100).catch((err: Error) => violate(err.message));
  };

  const bomb = async () => {
    if (!bombPresent) {
      counts.bombsAdded++;
      bombPresent = true;
      await node.writeManifest('bomb.yaml', bombManifest);
      try {
        const waiting = await poll('bomb/app waiting with CreateContainerConfigError', async () => {
          const c = (await node.pod('bomb'))?.status?.containerStatuses?.find((s) => s.name === 'app');
          return c?.state?.waiting?.reason === 'CreateContainerConfigError' ? c.state.waiting : undefined;
        }, 60_000, 200);
        const len = Buffer.byteLength(waiting.message ?? '');
        maxMessage = Math.max(maxMessage, len);
        if (len >= MAX_MESSAGE || !/^env V\d+: \$\(VAR\) expansion would exceed/.test(waiting.message ?? '')) violate(`bomb refused with a ${len}-byte message: ${(waiting.message ?? '').slice(0, 200)}`);
      } catch (err) {
        violate(err instanceof Error ? err.message : String(err));
      }
    } else {
      counts.bombsRemoved++;
      bombPresent = false;
      await node.removeManifest('bomb.yaml');
      await poll('bomb gone', async () => ((await node.pod('bomb')) === undefined ? true : undefined), 60_000, 200).catch((err: Error) => violate(err.message));
    }
  };

  const slow = async () => {
    const kind = pick(['half-head', 'header-flood', 'garbage'] as const);
    if (kind === 'half-head') {
      // Half a request head each, then silence, held open a while (pacing), then dropped.
      const k = int(5, SLOW_CLIENTS);
      counts.slowClients += k;
      const sockets = range(k).map(() => {
        const s = connect(node.port, '127.0.0.1');
        s.on('error', () => undefined);
        const head = request('GET', pick(routes)[0]);
        s.write(head.slice(0, int(1, head.length - 3)));
        return s;
      });
      await pace();
      await pace();
      for (const s of sockets) s.destroy();
    } else if (kind === 'header-flood') {
      counts.headerFloods++;
      // Past the 1 MiB head nodelet takes (Go's DefaultMaxHeaderBytes): refused (431) and closed.
      const headers = range(int(20_000, 40_000)).map((i) => `X-Flood-${i}: ${'v'.repeat(48)}`);
      const r = await exchange(node.port, [request('GET', '/pods', headers)]);
      const got = r.text.startsWith('HTTP/1.1 ') ? Number(r.text.slice(9, 12)) : 0;
      if (r.timedOut || (got !== 0 && got < 400)) violate(`header flood of ${headers.length} headers: ${r.timedOut ? 'no end within 15 s' : `answered ${got}`}`);
    } else {
      counts.garbage++;
      const junk = randomBytes(int(16, 8 * KiB)).toString('latin1');
      const r = await exchange(node.port, [junk, '\r\n\r\n']);
      const got = r.text.startsWith('HTTP/1.1 ') ? Number(r.text.slice(9, 12)) : 0;
      if (r.timedOut || (got !== 0 && got < 400)) violate(`garbage (${junk.length} B): ${r.timedOut ? 'no end within 15 s' : `answered ${got}`}`);
    }
  };

  const execDisconnect = async () => {
    counts.execDisconnects++;
    const protocol: Protocol = pick(['websocket', 'spdy'] as const);
    const after = int(0, 300);
    const r = await runExec({
      port: node.port, pod, container: 'app', protocol, command: ['cat'], stdin: { bytes: 4 * MiB, chunk: 64 * KiB }, timeoutMs: 30_000,
      onOpen: (kill) => setTimeout(kill, after),
    });
    if (r.outcome === 'timeout') violate(`exec disconnected after ${after} ms over ${protocol}: ${describe(r)}`);
  };

  const run: Record<Action, () => Promise<void>> = { pipeline, 'watch-flood': watchFlood, bomb, slow, 'exec-disconnect': execDisconnect };
  const schedule: Action[] = [];
  const elapsed = stopwatch();
  try {
    // Dealt from a seeded shuffle of every action, deck after deck: each comes several times.
    let deck: Action[] = [];
    while (elapsed() * 1000 < DURATION_MS && node.running) {
      if (deck.length === 0) {
        deck = [...ACTIONS, 'pipeline', 'pipeline'];
        for (let i = deck.length - 1; i > 0; i--) {
          const j = Math.floor(random() * (i + 1));
          [deck[i], deck[j]] = [deck[j]!, deck[i]!];
        }
      }
      const action = deck.shift()!;
      schedule.push(action);
      await run[action]();
      await pace();
    }
  } finally {
    stopping = true;
    await Promise.all([checker, honestExec]);
  }
  // probeHealthz's pacing timer is unref'd: with nodelet gone nothing else would keep this process
  // alive while the probe winds down (the case would end "unfinished" instead of failing).
  const keepAlive = setInterval(() => undefined, 1000);
  const hz = await health.stop().finally(() => clearInterval(keepAlive));
  const seconds = elapsed();
  t.comment(`schedule: ${schedule.join(' ')}`);
  t.equal(node.running && node.pid === pid0, true, `nodelet alive throughout (pid ${pid0})`);
  t.same(violations.slice(0, 5), [], `no invariant broken over ${schedule.length} hostile actions (${violations.length} violations)`);
  if (!node.running) {
    figures(t, { seed, seconds, actions: schedule.length, died_after: schedule.join(' '), violations: violations.length });
    return;
  }
  for (const a of ACTIONS) t.ok(schedule.filter((s) => s === a).length >= (DURATION_MS >= 60_000 ? 2 : 1), `${a} ran several times`);
  t.equal(hz.failures, 0, `/healthz never failed (${hz.samples} samples)`);
  t.ok(hz.p99 < HEALTHZ_P99_MS && hz.max < HEALTHZ_MAX_MS, `/healthz p99 ${hz.p99} ms (< ${HEALTHZ_P99_MS}), max ${hz.max} ms (< ${HEALTHZ_MAX_MS})`);
  t.ok(counts.honestExecOk > 0 && counts.honestExecOk === counts.honestExecs, `honest execs succeeded (${counts.honestExecOk}/${counts.honestExecs})`);

  if (bombPresent) {
    await node.removeManifest('bomb.yaml');
    await poll('bomb gone', async () => ((await node.pod('bomb')) === undefined ? true : undefined), 60_000, 200);
  }
  await poll('no session or child left', async (why) => {
    const [s, c] = [await node.sessions(), node.children()];
    why(`${s} sessions, ${c} children`);
    return s === 0 && c === 0 ? true : undefined;
  }, 30_000, 100);
  const settle = stopwatch();
  await poll(`descriptors back to ${fds0}`, (why) => {
    why(`${node.fds()} open`);
    return node.fds() <= fds0 + 6 ? true : undefined;
  }, 60_000, 200);
  const settleS = settle();
  const rss1 = node.rss();
  t.ok(rss1 - rss0 <= 64 * MiB, `RSS ${mib(rss0)} → ${mib(rss1)} MiB after the phase (≤ +64 MiB; peak ${mib(maxRss)})`);
  await converge(node, honest, CONVERGE_MS);
  t.equal(node.pid, pid0, 'still the same nodelet at the end');
  figures(t, {
    seed,
    seconds,
    actions: schedule.length,
    pipelines: counts.pipelines,
    pipelined_requests: counts.pipelinedRequests,
    exec_upgrades_101: counts.upgrades101,
    floods: counts.floods,
    watches_admitted: counts.watchesAdmitted,
    watches_429: counts.watches429,
    bombs: `${counts.bombsAdded}+/${counts.bombsRemoved}-`,
    max_bomb_message_b: maxMessage,
    slow_clients: counts.slowClients,
    header_floods: counts.headerFloods,
    garbage: counts.garbage,
    exec_disconnects: counts.execDisconnects,
    honest_execs: `${counts.honestExecOk}/${counts.honestExecs}`,
    healthz_samples: hz.samples,
    healthz_p99_ms: hz.p99,
    healthz_max_ms: hz.max,
    violations: violations.length,
    fds_before: fds0,
    fds_peak: maxFds,
    fds_after: node.fds(),
    fds_settle_s: settleS,
    rss_before_mib: mib(rss0),
    rss_peak_mib: mib(maxRss),
    rss_after_mib: mib(rss1),
  });
});
