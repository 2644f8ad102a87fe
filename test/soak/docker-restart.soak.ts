/**
 * Docker stopped and started again and again with pods running and sessions open
 * (up to five times in a row): the private engine gets SIGTERM as `systemctl stop docker` sends
 * it (it stops every container, no live-restore), then starts again. Each open session — exec over WebSocket and
 * SPDY, kubectl attach, logs -f and port-forward — ends within a bound, an exec never with a fake
 * exit 0; while Docker is down /healthz fails and a new exec fails fast; once it is back /healthz
 * recovers and every pod re-converges to one sandbox and its containers; nodelet's descriptors and
 * memory end where they began.
 */
import http from 'node:http';
import t from 'tap';
import { startTestEngine, stopTestEngine } from '../helpers/docker.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { ChildNode, converge, podManifest, sessionPodContainers, webServing } from '../helpers/soak-node.js';
import { describe, runExec, type ExecResult } from '../helpers/soak-exec.js';
import { kubectlPortForward, kubectlProcess } from '../helpers/soak-kubectl.js';
import { MiB, figures, mib, poll, range, round, sized, stopwatch } from '../helpers/soak.js';

const CYCLES = sized({ ci: 2, full: 5 });
const PODS = sized({ ci: 4, full: 50 });
/** From the stop: every open session has ended (dockerd takes about 10 s to stop `sleep` containers). */
const SESSIONS_END_MS = 60_000;
/** From the stop having completed: /healthz reports the runtime down. */
const HEALTHZ_DOWN_MS = 30_000;
/** A request while Docker is down fails within this. */
const FAST_FAIL_MS = 15_000;
/** From the start: /healthz 200 and every pod converged. */
const RECOVER_MS = sized({ ci: 120_000, full: 300_000 });

const node = await ChildNode.start(t, { flags: ['--exec-disconnect-grace-period', '1s'] });
const names = [...range(PODS).map((i) => `p${i}`), 'sess'];
for (const i of range(PODS)) await node.writeManifest(`p${i}.yaml`, podManifest(`p${i}`, { app: ['sleep', '2147483647'] }));
await node.writeManifest('sess.yaml', podManifest('sess', sessionPodContainers));
const pod = node.podName('sess');
const firstConverge = await converge(node, names, RECOVER_MS);
const kubectlWs = await kubectlFor(t, '1.33', node.url);
const kubectlSpdy = await kubectlFor(t, '1.27', node.url);

const exitZero = (r: ExecResult) => r.outcome === 'exited' && r.exitCode === 0;

t.test(`Docker stopped and started ${CYCLES}x, ${PODS + 1} pods, sessions open`, { timeout: sized({ ci: 420_000, full: 1_800_000 }) }, async (t) => {
  const fds0 = node.fds();
  const rss0 = node.rss();
  figures(t, { pods: PODS + 1, first_converge_s: round(firstConverge), fds: fds0, rss_mib: mib(rss0) });
  for (const cycle of range(CYCLES)) {
    await webServing(node, 'sess');

    // The open sessions.
    let up = 0;
    const execs = (['websocket', 'spdy'] as const).map((protocol) =>
      runExec({ port: node.port, pod, container: 'app', command: ['sh', '-c', 'echo up; exec sleep 600'], protocol, onStdout: () => up++, timeoutMs: SESSIONS_END_MS + 60_000 }),
    );
    const attach = kubectlProcess(t, kubectlWs, ['attach', pod, '-c', 'talker']);
    const logs = kubectlProcess(t, kubectlSpdy, ['logs', '-f', pod, '-c', 'talker']);
    const { proc: forward, local } = await kubectlPortForward(t, kubectlSpdy, pod, [8080]);
    let held = 0;
    let heldEnded = false;
    const download = http.get({ host: '127.0.0.1', port: local.get(8080), path: '/big', agent: false }, (res) => {
      // A reader that stopped after 1 MiB: the download stays under way through the outage.
      res.on('data', (c: Buffer) => {
        held += c.length;
        if (held > MiB) res.pause();
      });
      res.on('close', () => (heldEnded = true));
      res.on('error', () => (heldEnded = true));
    });
    download.on('error', () => (heldEnded = true));
    await poll('every session streaming', () => (up >= 2 && /tick/.test(attach.output()) && /tick/.test(logs.output()) && held > 0 ? true : undefined), 30_000, 50);

    // Docker goes away.
    const stopClock = stopwatch();
    const sessionsEnded = Promise.all([...execs, attach.exited, logs.exited]);
    await stopTestEngine();
    const stopSeconds = stopClock();
    await poll('/healthz failing', async () => ((await node.healthz()) === 500 ? true : undefined), HEALTHZ_DOWN_MS, 200);
    const healthzDownSeconds = stopClock();
    const whileDown = await runExec({ port: node.port, pod, container: 'app', command: ['echo', 'x'], protocol: 'websocket', timeoutMs: FAST_FAIL_MS });
    t.ok(whileDown.outcome !== 'timeout' && !exitZero(whileDown), `cycle ${cycle}: an exec while Docker is down fails fast: ${describe(whileDown)}`);
    const ended = await Promise.race([sessionsEnded, new Promise<undefined>((r) => setTimeout(r, Math.max(0, SESSIONS_END_MS - stopClock() * 1000)))]);
    t.ok(ended, `cycle ${cycle}: every open session ended within ${SESSIONS_END_MS / 1000} s of the stop`);
    const results = await Promise.all(execs);
    for (const r of results) t.notOk(exitZero(r) || r.outcome === 'timeout', `cycle ${cycle}: the open exec ended with an error or a real exit code, never a fake 0: ${describe(r)}`);
    download.destroy();
    await poll('the forwarded connection ended', () => (heldEnded ? true : undefined), 10_000, 50);
    forward.child.kill('SIGINT');
    await forward.exited;

    // Docker returns.
    const startClock = stopwatch();
    await startTestEngine();
    const engineSeconds = startClock();
    await poll('/healthz 200 again', async () => ((await node.healthz()) === 200 ? true : undefined), RECOVER_MS, 200);
    const healthzSeconds = startClock();
    const convergeSeconds = healthzSeconds + (await converge(node, names, RECOVER_MS));
    const after = await runExec({ port: node.port, pod, container: 'app', command: ['echo', 'back'], protocol: 'spdy' });
    t.ok(exitZero(after), `cycle ${cycle}: a new exec works: ${describe(after)}`);
    figures(t, {
      cycle,
      docker_stop_s: stopSeconds,
      healthz_500_s: healthzDownSeconds,
      exec_outcomes: results.map((r) => `${r.outcome}${r.exitCode !== undefined ? `:${r.exitCode}` : ''}`).join('/'),
      while_down: `${whileDown.outcome}${whileDown.httpStatus ? `:${whileDown.httpStatus}` : ''} in ${round(whileDown.ms / 1000, 2)} s`,
      docker_start_s: engineSeconds,
      healthz_200_s: healthzSeconds,
      reconverged_s: round(convergeSeconds),
      fds: node.fds(),
      rss_mib: mib(node.rss()),
    });
  }
  await poll(`descriptors back to ${fds0}`, async (why) => {
    why(`${node.fds()} fds, ${await node.sessions()} sessions`);
    return node.fds() <= fds0 + 2 && (await node.sessions()) === 0 ? true : undefined;
  }, 30_000, 200);
  const rss1 = node.rss();
  t.ok(rss1 - rss0 <= 64 * MiB, `RSS ${mib(rss0)} → ${mib(rss1)} MiB after ${CYCLES} outages (≤ +64 MiB)`);
  figures(t, { fds_before: fds0, fds_after: node.fds(), rss_before_mib: mib(rss0), rss_after_mib: mib(rss1) });
});
