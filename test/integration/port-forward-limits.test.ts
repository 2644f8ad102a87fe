import { readFileSync, readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { BUSYBOX, removeNodeContainers, testDocker, testDockerHost } from '../helpers/docker.js';
import { awaitSwitchingProtocols } from '../helpers/raw-http.js';
import { finOf, openForwardPair, TestClient } from '../unit/streaming/spdy/fixtures/helpers.js';
import { waitFor } from '../helpers/wait.js';
import { freePort } from '../helpers/net.js';
import { NodeletProcess } from '../helpers/nodelet-process.js';

/**
 * Port-forward against a nodelet CLI whose open-file limit is lowered with
 * prlimit. Every forwarded connection is one socket in nodelet (the pod's port-forward helper
 * connects it and hands it over); one session holding many connections used to exhaust the
 * descriptors and kill the process. Now a failed connection is reported on its own error stream,
 * and the caps keep nodelet below the limit in the first place.
 */

/** nodelet itself needs about 40 descriptors; 200 leave room for roughly 150 forwarded connections. */
const NOFILE = 200;

/** busybox httpd on 8080: it waits for a request, so an idle forwarded connection stays open. */
const manifest = `apiVersion: v1
kind: Pod
metadata: { name: web }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: httpd
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "mkdir -p /www && echo hello > /www/index.html && exec httpd -f -p 8080 -h /www"]
`;


interface Cli {
  url: string;
  nodelet: NodeletProcess;
  pod: string;
  /** nodelet's log so far (stdout and stderr). */
  stderr(): string;
  fds(): number;
  /** Child processes (the pod's port-forward helper, once a forward started it). */
  children(): number[];
  /** Established connections to the pod's port 8080 from the client side (the ones nodelet holds). */
  held(): number;
}

/** The built CLI under `prlimit --nofile`, serving the httpd pod; resolves once httpd listens. */
async function startCli(t: Test, flags: string[]): Promise<Cli> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-pflimits-'));
  const node = `pfl${process.pid}${Math.floor(Math.random() * 1e6)}`;
  await writeFile(join(dir, 'web.yaml'), manifest);
  const port = await freePort();
  t.teardown(async () => {
    await removeNodeContainers(testDocker(), node);
    await rm(dir, { recursive: true, force: true });
  });
  // Killed at teardown before the one above runs (tap runs teardowns last first).
  const child = await NodeletProcess.start(t, {
    url: `http://127.0.0.1:${port}`,
    logFile: join(dir, 'nodelet.log'),
    wrapper: ['prlimit', `--nofile=${NOFILE}:${NOFILE}`],
    args: ['--pod-manifest-path', dir, '--root-dir', dir, '--file-check-frequency', '1s', '--port', String(port), '--hostname-override', node, '--docker-endpoint', testDockerHost(), '--insecure-dev', '--logging-format=json', '-v=2', ...flags],
  });
  const url = `http://127.0.0.1:${port}`;
  const pod = `web-${node}`;
  await waitFor('the pod running', async () => {
    child.alive();
    const list = (await (await fetch(`${url}/pods`)).json()) as { items: { metadata: { name: string }; status?: { containerStatuses?: { state?: { running?: unknown } }[] } }[] };
    return list.items.find((p) => p.metadata.name === pod)?.status?.containerStatuses?.[0]?.state?.running ? true : undefined;
  });
  await waitFor('httpd listening', async () => {
    const res = await fetch(`${url}/run/default/${pod}/httpd?cmd=${encodeURIComponent('netstat -ltn')}`, { method: 'POST' });
    return (await res.text()).includes(':8080 ') ? true : undefined;
  });
  const children = () => readdirSync(`/proc/${child.pid}/task`).flatMap((tid) => readFileSync(`/proc/${child.pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean)).map(Number);
  // The helper lives in the pod's netns, so its /proc/net/tcp lists the pod's connections: the
  // client ends (remote port 8080 = 1F90) in state ESTABLISHED (01).
  const held = () => children().reduce((n, pid) => n + readFileSync(`/proc/${pid}/net/tcp`, 'utf8').split('\n').filter((l) => / 0100007F:1F90 01 /.test(l)).length, 0);
  return { url, nodelet: child, pod, stderr: () => child.log(), fds: () => readdirSync(`/proc/${child.pid}/fd`).length, children, held };
}

/** A raw SPDY port-forward session, as kubectl opens it. */
async function session(t: Test, c: Cli): Promise<{ client: TestClient; close(): void }> {
  const { hostname, port } = new URL(c.url);
  const socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  socket.write([`POST /portForward/default/${c.pod} HTTP/1.1`, 'Host: x', 'Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: portforward.k8s.io', '', ''].join('\r\n'));
  await awaitSwitchingProtocols(socket);
  const client = new TestClient(socket);
  socket.resume();
  const close = () => {
    client.close();
    socket.destroy();
  };
  t.teardown(close);
  return { client, close };
}

/**
 * Opens `n` pairs to port 8080 that send nothing (httpd keeps them open), `requestid` from
 * `first`; resolves once nodelet has answered the last one (so has taken every pair up).
 */
async function holdPairs(client: TestClient, n: number, first = 0): Promise<{ error: number; data: number }[]> {
  const pairs = [];
  for (let i = first; i < first + n; i++) {
    pairs.push(await openForwardPair(client, 8080, i));
  }
  const last = pairs[pairs.length - 1]?.data;
  await client.waitFor((f) => f.type === 'SYN_REPLY' && f.streamId === last, 20_000);
  return pairs;
}

async function healthz(url: string): Promise<{ status: number; ms: number }> {
  const start = performance.now();
  const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(5000) });
  await res.text();
  return { status: res.status, ms: performance.now() - start };
}

t.test('descriptors exhausted by forwarded connections: failed ones are told on their error stream, nodelet lives on', async (t) => {
  // The caps lifted, so that only the descriptor limit stops the connections.
  const c = await startCli(t, ['--max-port-forward-connections=5000', '--max-port-forward-connections-per-session=5000']);
  const baseline = c.fds();
  const { client, close } = await session(t, c);
  // In waves below the helper's cap on connects in flight (128), each settled before the next:
  // a single burst of 400 could meet that cap first and never reach the descriptor limit.
  const pairs: { error: number; data: number }[] = [];
  let held = 0;
  let failed: string[] = [];
  for (let first = 0; first < 400 && !failed.some((e) => /EMFILE|ENFILE/.test(e)); first += 50) {
    pairs.push(...(await holdPairs(client, 50, first).catch((err: unknown) => {
      throw new Error(!c.nodelet.running ? `nodelet died (${c.nodelet.status}): ${c.nodelet.logTail(1500)}` : String(err));
    })));
    // Every pair ends up either held (connected, no FIN yet) or failed with its reason.
    failed = await waitFor('every pair held or failed', async () => {
      c.nodelet.alive();
      const settled = pairs.filter((p) => client.received.some(finOf(p.error))).map((p) => client.dataOf(p.error).bytes.toString());
      held = c.held();
      return settled.length + held === pairs.length ? settled : undefined;
    }, 60_000);
  }
  t.ok(failed.length > 0, `${held} connections held, ${failed.length} of ${pairs.length} failed for lack of descriptors`);
  // A wave may also meet the helper's cap on connects in flight, which says so.
  const unexpected = failed.filter((e) => !/^error forwarding port 8080 to pod [0-9a-f]{64}, uid : (.*(EMFILE|ENFILE)|too many connections being opened to this pod at once \(limit \d+\); retry$)/.test(e));
  t.same(unexpected.slice(0, 3), [], 'each failure names its cause on that pair\'s error stream');
  t.ok(failed.some((e) => /EMFILE|ENFILE/.test(e)), 'some for lack of descriptors');
  t.ok(c.nodelet.running, 'nodelet is still running');
  t.notMatch(c.stderr(), /MaxListenersExceededWarning/, 'no listener leak warning');
  t.notMatch(c.stderr(), /uncaught|Unhandled/i);
  // The client lets go: descriptors come back and nodelet answers again.
  close();
  const health = await waitFor('/healthz answering', async () => {
    const h = await healthz(c.url);
    return h.status === 200 ? h : undefined;
  });
  t.equal(health.status, 200, `/healthz ${Math.round(health.ms)} ms after the session closed`);
  await waitFor(`fds back near ${baseline}`, async () => (c.fds() <= baseline + 10 ? true : undefined));
  t.ok(c.nodelet.running, 'nodelet is still running');
});

t.test('the caps: extra connections are refused with a reason before nodelet runs out of descriptors', async (t) => {
  const c = await startCli(t, ['--max-port-forward-connections=40', '--max-port-forward-connections-per-session=30']);
  const baseline = c.fds();
  const a = await session(t, c);
  const b = await session(t, c);
  const heldA = await holdPairs(a.client, 30);
  const heldB = await holdPairs(b.client, 10);
  const held = [...heldA, ...heldB];
  const overSession = await holdPairs(a.client, 5, 30);
  const overNode = await holdPairs(b.client, 5, 10);
  const text = (client: TestClient, id: number) => client.waitFor(finOf(id), 10_000).then(() => client.dataOf(id).bytes.toString());
  for (const p of overSession) t.equal(await text(a.client, p.error), 'too many forwarded connections in this port-forward session (limit 30); close some and retry');
  for (const p of overNode) t.equal(await text(b.client, p.error), 'too many forwarded connections on this node (limit 40); retry later');
  t.equal(held.length, 40);
  // Taken up is not yet connected: the helper's connects finish a moment later.
  await waitFor('40 connections in the pod', () => (c.held() === 40 ? true : undefined));
  // At least 20 more, not 40: keep-alive sockets to Docker opened by the start-up's parallel calls
  // idle out (5 s) meanwhile, so the baseline can be high by as many as start-up opened (19 seen
  // in a CI run under load); 0 would mean nodelet holds none.
  t.ok(c.fds() - baseline >= 20, `40 held connections hold their descriptors (${c.fds() - baseline} more than at rest)`);
  const settled = (client: TestClient, pairs: { error: number }[]) => pairs.filter((p) => client.received.some(finOf(p.error)));
  t.same([...settled(a.client, heldA), ...settled(b.client, heldB)], [], 'every held connection is still open');
  t.equal(c.children().length, 1, 'one helper process for all of them');
  t.equal(c.held(), 40, 'each one connection in the pod');
  const h = await healthz(c.url);
  t.equal(h.status, 200, `/healthz answers while the caps are reached (${Math.round(h.ms)} ms)`);
  t.ok(h.ms < 3000, "a liveness bound, not a speed target");
  t.notMatch(c.stderr(), /EMFILE|ENFILE/, 'never out of descriptors');
  // A slot freed in session a is usable again.
  a.client.data(heldA[0]!.data, '', true);
  await a.client.waitFor(finOf(heldA[0]!.data), 10_000);
  const [again] = await holdPairs(a.client, 1, 100);
  a.client.data(again!.data, 'GET /index.html HTTP/1.0\r\n\r\n', true);
  await a.client.waitFor(finOf(again!.data), 10_000);
  t.match(a.client.dataOf(again!.data).bytes.toString(), /hello\n$/, 'a new connection in the freed slot works');
  t.ok(c.nodelet.running, 'nodelet is still running');
});

