/**
 * Many sessions: exec sessions up to the cap
 * held open at once, then more than the cap (429 + Retry-After before any upgrade), baseline
 * restored; then many short execs in a row with descriptors, heap and Docker exec objects back to
 * baseline. nodelet runs in-process here, so its sessions are counted directly and the heap is
 * taken after a forced collection (descriptors and heap are the whole test process's).
 */
import t from 'tap';
import { testDocker } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';
import { rawRequest } from '../helpers/raw-http.js';
import { podManifest } from '../helpers/soak-node.js';
import { describe, execPath, runExec, type ExecResult, type Protocol } from '../helpers/soak-exec.js';
import { Semaphore, figures, mib, poll, range, round, selfFds, settledHeap, sha256, sized, stopwatch } from '../helpers/soak.js';

const CAP = sized({ ci: 300, full: 1000 });
const BEYOND = sized({ ci: 40, full: 200 });
const SHORT = sized({ ci: 1000, full: 20_000 });
/** Short execs run in this many lanes, each one exec after the other. */
const LANES = 4;
const CONTAINERS = 8;
/** Sessions being opened at once (each is a Docker exec create + start). */
const OPENING = 16;

const node = await startTestNode(t, { maxStreamingSessions: CAP, execDisconnectGracePeriodMs: 1000 });
await node.writeManifest('many.yaml', podManifest('many', Object.fromEntries(range(CONTAINERS).map((i) => [`c${i}`, ['sleep', '2147483647']]))));
const podObj = await node.waitFor('pod many running', async () => {
  const p = await node.pod('many');
  return p?.status?.containerStatuses?.length === CONTAINERS && p.status.containerStatuses.every((c) => c.state?.running) ? p : undefined;
}, 60_000);
const pod = podObj.metadata!.name!;
const port = Number(new URL(node.url).port);
const docker = testDocker();
const containerIds = podObj.status!.containerStatuses!.map((c) => c.containerID!.replace('docker://', ''));
/** Execs Docker still holds for the pod's containers (it lists only live ones). */
const liveExecs = async () => (await Promise.all(containerIds.map(async (id) => (await docker.getContainer(id).inspect()).ExecIDs?.length ?? 0))).reduce((a, b) => a + b, 0);
const protocolOf = (i: number): Protocol => (i % 2 === 0 ? 'websocket' : 'spdy');

t.test(`${CAP} concurrent execs (the cap), ${BEYOND} beyond it refused with 429`, { timeout: sized({ ci: 240_000, full: 900_000 }) }, async (t) => {
  const fds0 = selfFds();
  const heap0 = settledHeap();
  const rss0 = process.memoryUsage().rss;
  const elapsed = stopwatch();
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const opening = new Semaphore(OPENING);
  let open = 0;
  const results: Promise<ExecResult>[] = range(CAP).map(async (i) => {
    await opening.acquire();
    let seen = false;
    const opened = () => {
      if (seen) return;
      seen = true;
      open++;
      opening.release();
    };
    // `r` once running; after stdin EOF `read` returns and it prints `ok`.
    const r = await runExec({ port, pod, container: `c${i % CONTAINERS}`, command: ['sh', '-c', 'echo r; read x; echo ok'], protocol: protocolOf(i), stdin: { bytes: 0, chunk: 1, after: gate }, onStdout: opened, timeoutMs: sized({ ci: 240_000, full: 900_000 }) });
    opened();
    return r;
  });
  await poll(`${CAP} sessions open`, (why) => {
    why(`${open} open`);
    return open === CAP ? true : undefined;
  }, sized({ ci: 180_000, full: 600_000 }), 100);
  const openSeconds = elapsed();
  t.equal(node.nodelet.sessions.size, CAP, `nodelet holds ${CAP} sessions`);
  const fdsPeak = selfFds();
  const rssPeak = process.memoryUsage().rss;

  // Beyond the cap: refused before any upgrade, over both protocols.
  let refused = 0;
  const retryAfter = new Set<string>();
  for (const i of range(BEYOND)) {
    const path = execPath('default', pod, 'c0', ['true'], false);
    const head =
      protocolOf(i) === 'websocket'
        ? ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Protocol: v5.channel.k8s.io']
        : ['Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: v4.channel.k8s.io'];
    const res = await rawRequest(node.url, [`${protocolOf(i) === 'websocket' ? 'GET' : 'POST'} ${path} HTTP/1.1`, 'Host: x', ...head]);
    if (res.status === 429) refused++;
    for (const v of res.headers['retry-after'] ?? []) retryAfter.add(v);
  }
  t.equal(refused, BEYOND, `all ${BEYOND} sessions beyond the cap got 429`);
  t.same([...retryAfter], ['60'], 'each with Retry-After: 60');
  t.equal(node.nodelet.sessions.size, CAP, 'the refused ones never became sessions');

  release();
  const done = await Promise.all(results);
  const closeSeconds = round(elapsed() - openSeconds);
  const want = sha256('r\nok\n');
  const bad = done.filter((r) => !(r.outcome === 'exited' && r.exitCode === 0 && r.stdoutSha === want));
  t.equal(bad.length, 0, `every held session printed ok and exited 0${bad.length ? `; e.g. ${describe(bad[0]!)}` : ''}`);
  await poll('sessions back to 0', () => (node.nodelet.sessions.size === 0 ? true : undefined), 30_000);
  await poll(`descriptors back to ${fds0}`, (why) => {
    why(`${selfFds()} open`);
    return selfFds() <= fds0 + 2 ? true : undefined;
  }, 30_000);
  await poll('no live Docker execs left', async () => ((await liveExecs()) === 0 ? true : undefined), 30_000);
  const again = await runExec({ port, pod, container: 'c0', command: ['echo', 'after'], protocol: 'websocket' });
  t.equal(again.outcome === 'exited' && again.exitCode, 0, `a new session works after the storm: ${describe(again)}`);
  const heap1 = settledHeap();
  figures(t, {
    sessions: CAP,
    open_seconds: openSeconds,
    close_seconds: closeSeconds,
    refused_429: refused,
    fds_before: fds0,
    fds_peak: fdsPeak,
    fds_after: selfFds(),
    rss_before_mib: mib(rss0),
    rss_peak_mib: mib(rssPeak),
    heap_before_mib: mib(heap0),
    heap_after_mib: mib(heap1),
    docker_execs_after: await liveExecs(),
  });
});

t.test(`${SHORT} short execs in ${LANES} lanes: fds, heap, Docker execs back`, { timeout: sized({ ci: 360_000, full: 3_600_000 }) }, async (t) => {
  const one = async (i: number) => {
    const r = await runExec({ port, pod, container: `c${i % CONTAINERS}`, command: ['echo', String(i)], protocol: protocolOf(i), timeoutMs: 30_000 });
    return r.outcome === 'exited' && r.exitCode === 0 && r.stdoutSha === sha256(`${i}\n`) ? undefined : `#${i} ${protocolOf(i)} ${describe(r)}`;
  };
  // Warm-up: the first execs fill caches (JIT, agents) that are not leaks.
  for (const i of range(50)) await one(i);
  await poll('warm-up sessions closed', () => (node.nodelet.sessions.size === 0 ? true : undefined), 10_000);
  const fds0 = selfFds();
  const heap0 = settledHeap();
  const rss0 = process.memoryUsage().rss;
  const execs0 = await liveExecs();
  const elapsed = stopwatch();
  const failures: string[] = [];
  let next = 0;
  await Promise.all(
    range(LANES).map(async () => {
      while (next < SHORT) {
        const failure = await one(next++);
        if (failure) failures.push(failure);
      }
    }),
  );
  const seconds = elapsed();
  t.same(failures.slice(0, 5), [], `all ${SHORT} exited 0 with their own output (${failures.length} did not)`);
  await poll('sessions back to 0', () => (node.nodelet.sessions.size === 0 ? true : undefined), 10_000);
  await poll(`descriptors back to ${fds0}`, (why) => {
    why(`${selfFds()} open`);
    return selfFds() <= fds0 + 2 ? true : undefined;
  }, 30_000);
  await poll('no live Docker execs left', async () => ((await liveExecs()) === execs0 ? true : undefined), 30_000);
  const heap1 = settledHeap();
  const heapBound = heap0 * 1.05 + 2 * 1024 * 1024;
  t.ok(heap1 <= heapBound, `heap after a full GC ${mib(heap1)} MiB ≤ ${mib(heapBound)} MiB (+5% + 2 MiB of ${mib(heap0)})`);
  figures(t, {
    execs: SHORT,
    lanes: LANES,
    seconds,
    execs_per_s: round(SHORT / seconds),
    failures: failures.length,
    fds_before: fds0,
    fds_after: selfFds(),
    heap_before_mib: mib(heap0),
    heap_after_mib: mib(heap1),
    rss_before_mib: mib(rss0),
    rss_after_mib: mib(process.memoryUsage().rss),
    docker_execs_before: execs0,
    docker_execs_after: await liveExecs(),
  });
});
