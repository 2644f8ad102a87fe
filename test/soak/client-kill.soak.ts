/**
 * Clients SIGKILLed mid-session — mid-exec, mid-attach, mid-port-forward and mid-log-follow, over
 * both protocols: real kubectl
 * processes (1.33: WebSocket, port-forward tunnelled in it; 1.27: SPDY) killed while streaming.
 * nodelet (a child, --exec-disconnect-grace-period 1s) must end the session, close the Docker
 * side, kill an abandoned exec after the grace period, leave an attached container running, and
 * give back its descriptors and children.
 */
import http from 'node:http';
import t from 'tap';
import { kubectlFor } from '../helpers/kubectl.js';
import { ChildNode, SESSION_POD_BIG, podManifest, sessionPodContainers, webServing } from '../helpers/soak-node.js';
import { KUBECTLS, kubectlPortForward, kubectlProcess } from '../helpers/soak-kubectl.js';
import { MiB, figures, poll, round, sized } from '../helpers/soak.js';

/** From the SIGKILL: the session gone, and an abandoned exec killed (grace 1 s + Docker's view). */
const SESSION_GONE_MS = 10_000;
const EXEC_GONE_MS = 15_000;
const ROUNDS = sized({ ci: 1, full: 5 });

const node = await ChildNode.start(t, { flags: ['--exec-disconnect-grace-period', '1s'] });
await node.writeManifest('victim.yaml', podManifest('victim', sessionPodContainers));
const pod = node.podName('victim');
await poll('victim running', async () => {
  const p = await node.pod('victim');
  return p?.status?.containerStatuses?.every((c) => c.state?.running) ? true : undefined;
}, 60_000, 200);
await webServing(node, 'victim');
const liveExecs = async (container: string) => {
  const { id } = await node.containerOf('victim', container);
  return (await node.docker.getContainer(id).inspect()).ExecIDs?.length ?? 0;
};
/**
 * The baseline after a kill: no session, no child but the port-forward helper, descriptors where
 * they were (+1). A helper started during the case keeps its own descriptors in nodelet (the IPC
 * channel and Node's spawn machinery: pipes, an event loop's eventfd and epoll, 8 at most) until it
 * exits idle; a leak per connection would still show, and the stalled-connections soak counts those.
 */
const HELPER_FDS = 8;
const settled = async (fds0: number, what: string, helperStarted = false) => {
  const t0 = Date.now();
  const allowed = fds0 + 1 + (helperStarted ? HELPER_FDS : 0);
  await poll(`${what}: sessions, children and descriptors back`, async (why) => {
    const [s, c, f] = [await node.sessions(), node.children(), node.fds()];
    why(`${s} sessions, ${c} children, ${f} fds (baseline ${fds0}, allowed ${allowed})`);
    return s === 0 && c === 0 && f <= allowed ? true : undefined;
  }, SESSION_GONE_MS, 50);
  return round((Date.now() - t0) / 1000, 2);
};

for (const k of KUBECTLS) {
  t.test(`kubectl ${k.version} (${k.transport}) SIGKILLed mid-exec/attach/port-forward/logs`, { timeout: sized({ ci: 180_000, full: 900_000 }) }, async (t) => {
    const kubectl = await kubectlFor(t, k.version, node.url);
    for (let round_ = 0; round_ < ROUNDS; round_++) {
      // exec: one writing every second (it would also die of SIGPIPE), one silent (only nodelet's kill ends it).
      for (const [kind, script] of [
        ['exec-writer', 'while :; do date; sleep 1; done'],
        ['exec-silent', 'echo started; exec sleep 600'],
      ] as const) {
        const fds0 = node.fds();
        const execs0 = await liveExecs('app');
        const p = kubectlProcess(t, kubectl, ['exec', pod, '-c', 'app', '--', 'sh', '-c', script]);
        await p.waitOutput('first output', /\S/);
        t.equal(await liveExecs('app'), execs0 + 1, `${kind}: the exec runs`);
        p.child.kill('SIGKILL');
        await p.exited;
        const t0 = Date.now();
        const sessionGone = await settled(fds0, kind);
        await poll(`${kind}: the abandoned exec killed`, async () => ((await liveExecs('app')) === execs0 ? true : undefined), EXEC_GONE_MS, 100);
        figures(t, { kind, session_gone_s: sessionGone, exec_gone_s: round((Date.now() - t0) / 1000, 2), fds_before: fds0, fds_after: node.fds() });
      }

      // attach: the session ends, the container's own process does not.
      {
        const fds0 = node.fds();
        const before = await node.containerOf('victim', 'talker');
        const p = kubectlProcess(t, kubectl, ['attach', pod, '-c', 'talker']);
        await p.waitOutput('a tick', /tick \d+/);
        p.child.kill('SIGKILL');
        await p.exited;
        const sessionGone = await settled(fds0, 'attach');
        const after = await node.containerOf('victim', 'talker');
        t.equal(after.id, before.id, 'attach: the attached container still runs (same container)');
        const restarts = (await node.pod('victim'))?.status?.containerStatuses?.find((c) => c.name === 'talker')?.restartCount;
        t.equal(restarts, 0, 'attach: and was never restarted');
        figures(t, { kind: 'attach', session_gone_s: sessionGone, fds_before: fds0, fds_after: node.fds() });
      }

      // port-forward: killed while a 64 MiB download is held mid-way by a reader that stopped.
      {
        const fds0 = node.fds();
        const helpers0 = node.portForwardHelpers();
        const { proc, local } = await kubectlPortForward(t, kubectl, pod, [8080]);
        let got = 0;
        let clientClosed!: () => void;
        const closed = new Promise<void>((resolve) => (clientClosed = resolve));
        let response: http.IncomingMessage | undefined;
        const req = http.get({ host: '127.0.0.1', port: local.get(8080), path: '/big', agent: false }, (res) => {
          response = res;
          res.on('data', (c: Buffer) => {
            got += c.length;
            if (got > MiB && !killed) res.pause(); // a reader that stopped mid-way
          });
          res.on('close', () => clientClosed());
          res.on('error', () => clientClosed());
        });
        req.on('error', () => clientClosed());
        let killed = false;
        await poll('the download under way', () => (got > MiB ? true : undefined), 30_000, 25);
        t.equal(node.portForwardHelpers(), 1, "port-forward: one helper in the pod's network namespace carries the connection");
        proc.child.kill('SIGKILL');
        killed = true;
        await proc.exited;
        const sessionGone = await settled(fds0, 'port-forward', helpers0 === 0);
        // The reader resumes: it gets what was in flight, then the cut.
        response?.resume();
        await poll('the client saw its connection end', () => Promise.race([closed.then(() => true), new Promise<undefined>((r) => setTimeout(r, 50))]), 30_000, 0);
        t.ok(got < SESSION_POD_BIG, `port-forward: the download was cut (${got} of ${SESSION_POD_BIG} B read)`);
        figures(t, { kind: 'port-forward', session_gone_s: sessionGone, bytes_read: got, fds_before: fds0, fds_after: node.fds() });
      }

      // logs -f: a plain HTTP stream; its Docker log stream must go too.
      {
        const fds0 = node.fds();
        const p = kubectlProcess(t, kubectl, ['logs', '-f', pod, '-c', 'talker']);
        await p.waitOutput('a tick', /tick \d+/);
        await poll('the log stream held', () => (node.fds() > fds0 ? true : undefined), 5000, 25);
        p.child.kill('SIGKILL');
        await p.exited;
        const sessionGone = await settled(fds0, 'logs -f');
        figures(t, { kind: 'logs-follow', session_gone_s: sessionGone, fds_before: fds0, fds_after: node.fds() });
      }
    }
  });
}
