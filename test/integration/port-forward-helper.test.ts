import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { BUSYBOX } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';
import { awaitSwitchingProtocols } from '../helpers/raw-http.js';
import { finOf, openForwardPair, TestClient } from '../unit/streaming/spdy/fixtures/helpers.js';

/**
 * Port-forward through the per-pod helper (src/runtime/docker/netns-dialer.ts): one process in the
 * pod's netns hands connected sockets to nodelet, which relays them with no process in between.
 */

const BIG_MIB = 48;
/** httpd on 8080 (a page and a random file), an echo server (`nc -ll -e cat`) on 7000. */
const manifest = `apiVersion: v1
kind: Pod
metadata: { name: pf }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: srv
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "mkdir -p /www && echo hello > /www/index.html && dd if=/dev/urandom of=/www/big bs=1048576 count=${BIG_MIB} 2>/dev/null && httpd -p 8080 -h /www && exec nc -ll -p 7000 -e cat"]
`;

async function pfNode(t: Test): Promise<{ node: TestNode; pod: string }> {
  const node = await startTestNode(t);
  await node.writeManifest('pf.yaml', manifest);
  const pod = await node.waitFor('pf running', async () => {
    const p = await node.pod('pf');
    return p?.status?.containerStatuses?.[0]?.state?.running ? (p.metadata?.name ?? '') : undefined;
  });
  await node.waitFor('both servers listening', async () => {
    const res = await fetch(`${node.url}/run/default/${pod}/srv?cmd=${encodeURIComponent('netstat -ltn')}`, { method: 'POST' });
    const text = await res.text();
    return text.includes(':8080 ') && text.includes(':7000 ') ? true : undefined;
  }, 60_000);
  return { node, pod };
}

const helpers = (node: TestNode) => node.nodelet.runtime.portForwardHelperPids();
const running = (pid: number) => existsSync(`/proc/${pid}`);

/** A raw SPDY port-forward session, as kubectl opens it. */
async function spdySession(t: Test, url: string, pod: string): Promise<TestClient> {
  const { hostname, port } = new URL(url);
  const socket: Socket = connect(Number(port), hostname);
  socket.on('error', () => undefined);
  t.teardown(() => socket.destroy());
  socket.write([`POST /portForward/default/${pod} HTTP/1.1`, 'Host: x', 'Connection: Upgrade', 'Upgrade: SPDY/3.1', 'X-Stream-Protocol-Version: portforward.k8s.io', '', ''].join('\r\n'));
  await awaitSwitchingProtocols(socket);
  const client = new TestClient(socket);
  socket.resume();
  t.teardown(() => client.close());
  return client;
}

/** A WebSocket channel-mode forward of one port; `data` is what arrived on its data channel. */
async function wsForward(t: Test, url: string, pod: string, port: number) {
  const ws = new WebSocket(`${url.replace('http', 'ws')}/portForward/default/${pod}?port=${port}`, ['v4.channel.k8s.io']);
  t.teardown(() => ws.terminate());
  const chunks: Buffer[] = [];
  let received = 0;
  let onData = () => undefined as void;
  ws.on('message', (d: Buffer) => {
    if (d[0] !== 0) return;
    chunks.push(d.subarray(1));
    received += d.length - 1;
    onData();
  });
  const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  return {
    send: (b: Buffer | string) => ws.send(Buffer.concat([Buffer.from([0]), Buffer.from(b)])),
    /** Resolves once `n` data bytes (after the 2-byte port prefix) have arrived. */
    until: (n: number) =>
      new Promise<void>((resolve) => {
        onData = () => {
          if (received >= n + 2) resolve();
        };
        onData();
      }),
    data: () => Buffer.concat(chunks).subarray(2),
    close: () => ws.close(),
    closed,
  };
}

t.test('one helper per pod: data both ways, a large download, many connections at once, refusals, reuse, gone with the pod', async (t) => {
  const { node, pod } = await pfNode(t);
  t.same(helpers(node), [], 'no helper before the first forward');

  // Both ways: the echo server returns what we send.
  const echo = await wsForward(t, node.url, pod, 7000);
  const payload = randomBytes(2 * 1024 * 1024);
  for (let off = 0; off < payload.length; off += 64 * 1024) echo.send(payload.subarray(off, off + 64 * 1024));
  await echo.until(payload.length);
  t.ok(echo.data().equals(payload), '2 MiB echoed byte for byte');
  echo.close();
  await echo.closed;
  const [helper] = helpers(node);
  t.equal(helpers(node).length, 1, 'the first forward started one helper');

  // A large download, checked against the pod's own checksum.
  const run = await fetch(`${node.url}/run/default/${pod}/srv?cmd=${encodeURIComponent('sha256sum /www/big')}`, { method: 'POST' });
  const want = (await run.text()).split(' ')[0];
  const dl = await wsForward(t, node.url, pod, 8080);
  dl.send('GET /big HTTP/1.0\r\n\r\n');
  await dl.closed;
  const body = dl.data();
  const headerEnd = body.indexOf('\r\n\r\n');
  t.match(body.subarray(0, headerEnd).toString(), /^HTTP\/1\.[01] 200 OK/);
  const file = body.subarray(headerEnd + 4);
  t.equal(file.length, BIG_MIB * 1024 * 1024, `${BIG_MIB} MiB`);
  t.equal(createHash('sha256').update(file).digest('hex'), want, 'byte-exact (sha256 matches the pod\'s)');

  // Many connections at once over one SPDY session, and a refused port among them.
  const client = await spdySession(t, node.url, pod);
  const get = 'GET /index.html HTTP/1.0\r\n\r\n';
  const pairs = await Promise.all(Array.from({ length: 40 }, (_, i) => openForwardPair(client, 8080, i)));
  const refused = await openForwardPair(client, 9999, 100);
  for (const p of pairs) client.data(p.data, get);
  await Promise.all(pairs.map((p) => client.waitFor(finOf(p.data), 30_000)));
  t.equal(pairs.filter((p) => /200 OK[^]*hello\n$/.test(client.dataOf(p.data).bytes.toString())).length, 40, '40 concurrent connections answered');
  await client.waitFor(finOf(refused.error), 10_000);
  t.match(client.dataOf(refused.error).bytes.toString(), /^error forwarding port 9999 to pod [0-9a-f]{64}, uid : exit status 1: connect\(AF=2 127\.0\.0\.1:9999\): Connection refused$/);
  t.same(helpers(node), [helper], 'all of it through the same helper');
  t.ok(running(helper ?? 0));

  // The pod goes: its helper with it.
  await node.removeManifest('pf.yaml');
  await node.waitFor('the helper gone with the pod', () => (helpers(node).length === 0 && !running(helper ?? 0) ? true : undefined), 60_000);
  t.pass('no helper left');
});

t.test('nodelet stop ends every helper', async (t) => {
  const { node, pod } = await pfNode(t);
  const client = await spdySession(t, node.url, pod);
  const p = await openForwardPair(client, 8080, 0);
  client.data(p.data, 'GET /index.html HTTP/1.0\r\n\r\n', true);
  await client.waitFor(finOf(p.data), 10_000);
  const pids = helpers(node);
  t.equal(pids.length, 1);
  t.ok(pids.every(running));
  await node.stop();
  t.same(pids.filter(running), [], 'reaped by the time stop resolved');
});
