import { connect, type Socket } from 'node:net';
import t, { type Test } from 'tap';
import WebSocket from 'ws';
import { BUSYBOX } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';
import { awaitSwitchingProtocols, rawRequest } from '../helpers/raw-http.js';
import { finOf, openForwardPair, TestClient } from '../unit/streaming/spdy/fixtures/helpers.js';

/** busybox httpd on 8080 serving a page; nothing listens on 9999. */
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

async function webNode(t: Test, overrides: Parameters<typeof startTestNode>[1] = {}): Promise<{ node: TestNode; pod: string; uid: string }> {
  const node = await startTestNode(t, overrides);
  await node.writeManifest('web.yaml', manifest);
  const pod = await node.waitFor('web running', async () => {
    const p = await node.pod('web');
    return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
  });
  const name = pod.metadata?.name ?? '';
  // httpd answers inside the pod (over its loopback, which is what port-forward reaches too).
  await node.waitFor('httpd listening', async () => {
    const res = await fetch(`${node.url}/run/default/${name}/httpd?cmd=${encodeURIComponent('netstat -ltn')}`, { method: 'POST' });
    return (await res.text()).includes(':8080 ') ? true : undefined;
  });
  return { node, pod: name, uid: pod.metadata?.uid ?? '' };
}

const ws = (protocol?: string) => ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', ...(protocol ? [`Sec-WebSocket-Protocol: ${protocol}`] : [])];
const spdy = (...versions: string[]) => ['Connection: Upgrade', 'Upgrade: SPDY/3.1', ...versions.map((v) => `X-Stream-Protocol-Version: ${v}`)];

t.test('bad port-forward requests are answered before any upgrade', async (t) => {
  const { node, pod, uid } = await webNode(t);
  const status = async (path: string, method = 'GET') => {
    const res = await fetch(node.url + path, { method });
    return { code: res.status, message: ((await res.json()) as { message?: string }).message ?? '' };
  };
  t.same(await status('/portForward/default/nopod'), { code: 404, message: 'pod does not exist' });
  t.same(await status('/portForward/default/nopod/some-uid'), { code: 404, message: 'pod does not exist' });
  t.same(await status('/api/v1/namespaces/default/pods/nopod/portforward'), { code: 404, message: 'pods "nopod" not found' });
  t.same(await status(`/portForward/default/${pod}/not-${uid}`), { code: 404, message: 'pod not found' }, 'uid mismatch');
  for (const path of [`/portForward/default/${pod}`, `/portForward/default/${pod}/${uid}`, `/api/v1/namespaces/default/pods/${pod}/portforward?ports=8080`]) {
    t.same(await status(path), { code: 400, message: 'Upgrade request required' }, `GET ${path}`);
    t.same(await status(path, 'POST'), { code: 400, message: 'Upgrade request required' }, `POST ${path}`);
  }

  const upgrade = (path: string, headers: string[]) => rawRequest(node.url, [`GET ${path} HTTP/1.1`, 'Host: x', ...headers]);
  const wsCases: [string, string][] = [
    ['', 'query parameter "port" is required'],
    ['?port=', 'query parameter "port" cannot be empty'],
    ['?port=abc', 'unable to parse "abc" as a port: strconv.ParseUint: parsing "abc": invalid syntax'],
    ['?port=-1', 'invalid syntax'],
    ['?port=0', 'port "0" must be > 0'],
    ['?port=65536', 'value out of range'],
    ['?ports=80,', 'invalid syntax'],
    [`?port=${Array.from({ length: 1000 }, (_, i) => i + 1).join(',')}`, 'too many ports'],
  ];
  for (const [query, message] of wsCases) {
    const r = await upgrade(`/portForward/default/${pod}${query}`, ws('v4.channel.k8s.io'));
    t.equal(r.status, 400, `ws ${query.slice(0, 30)}`);
    t.ok(((JSON.parse(r.body) as { message: string }).message).includes(message), message);
  }
  const v5 = await upgrade(`/portForward/default/${pod}?port=8080`, ws('v5.channel.k8s.io'));
  t.equal(v5.status, 403, 'an unserved subprotocol is refused, so kubectl falls back to SPDY');
  const missingPod = await upgrade('/portForward/default/nopod?port=8080', ws());
  t.equal(missingPod.status, 404, 'upgrade requests get the same answers');

  const noVersion = await upgrade(`/portForward/default/${pod}`, spdy());
  t.equal(noVersion.status, 400);
  t.match(noVersion.body, /X-Stream-Protocol-Version is required/);
  const wrongVersion = await upgrade(`/portForward/default/${pod}`, spdy('v4.channel.k8s.io'));
  t.equal(wrongVersion.status, 403);
  t.same(wrongVersion.headers['x-accepted-stream-protocol-versions'], ['portforward.k8s.io']);

  // The accepted forms, including the B15 edge ports.
  const ok = await upgrade(`/portForward/default/${pod}/${uid}`, spdy('portforward.k8s.io'));
  t.equal(ok.status, 101, 'SPDY with the right uid');
  t.same(ok.headers['x-stream-protocol-version'], ['portforward.k8s.io']);
  const channel = await upgrade(`/portForward/default/${pod}?port=1&port=65535`, ws('v5.channel.k8s.io, v4.channel.k8s.io'));
  t.equal(channel.status, 101, 'ports 1 and 65535');
  t.same(channel.headers['sec-websocket-protocol'], ['v4.channel.k8s.io'], 'the first offered protocol we serve');
  const tunnel = await upgrade(`/api/v1/namespaces/default/pods/${pod}/portforward`, ws('SPDY/3.1+portforward.k8s.io'));
  t.equal(tunnel.status, 101, 'the kubectl ≥ 1.31 tunnel needs no ports in the query');
  t.same(tunnel.headers['sec-websocket-protocol'], ['SPDY/3.1+portforward.k8s.io']);
  await node.waitFor('sessions closed', () => (node.nodelet.sessions.size === 0 ? true : undefined), 10_000);
});

/** A raw SPDY port-forward session, as kubectl opens it. */
async function spdySession(t: Test, url: string, path: string): Promise<{ client: TestClient; socket: Socket }> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  t.teardown(() => socket.destroy());
  socket.write([`POST ${path} HTTP/1.1`, 'Host: x', ...spdy('portforward.k8s.io'), '', ''].join('\r\n'));
  await awaitSwitchingProtocols(socket);
  const client = new TestClient(socket);
  socket.resume();
  t.teardown(() => client.close());
  return { client, socket };
}

t.test('SPDY: a closed port fails only its own pair; other pairs of the session work', async (t) => {
  const { node, pod } = await webNode(t);
  const { client } = await spdySession(t, node.url, `/portForward/default/${pod}`);
  const get = 'GET /index.html HTTP/1.0\r\n\r\n';
  const [good, bad] = [await openForwardPair(client, 8080, 0), await openForwardPair(client, 9999, 1)];
  client.data(good.data, get);
  await client.waitFor(finOf(bad.error), 10_000);
  t.match(client.dataOf(bad.error).bytes.toString(), /^error forwarding port 9999 to pod [0-9a-f]{64}, uid : exit status 1: .*Connection refused$/);
  await client.waitFor(finOf(bad.data));
  await client.waitFor(finOf(good.data), 10_000);
  t.match(client.dataOf(good.data).bytes.toString(), /^HTTP\/1\.[01] 200 OK\r\n[^]*\r\n\r\nhello\n$/);
  await client.waitFor(finOf(good.error));
  t.equal(client.dataOf(good.error).bytes.length, 0, 'no error for the good pair');

  // The session is still usable after a failed pair, and the client's half-close passes through.
  const again = await openForwardPair(client, 8080, 2);
  client.data(again.data, get, true);
  await client.waitFor(finOf(again.data), 10_000);
  t.match(client.dataOf(again.data).bytes.toString(), /hello\n$/);
  t.equal(node.nodelet.sessions.size, 1, 'one session for all pairs');
});

t.test('WebSocket channel mode: data and errors per port, closed once every port is done', async (t) => {
  const { node, pod } = await webNode(t);
  const url = `${node.url.replace('http', 'ws')}/portForward/default/${pod}?port=8080,9999`;
  const client = new WebSocket(url, ['v4.channel.k8s.io']);
  t.teardown(() => client.terminate());
  const frames: Buffer[] = [];
  client.on('message', (d: Buffer) => frames.push(Buffer.from(d)));
  const closed = new Promise<number>((resolve) => client.once('close', (code: number) => resolve(code)));
  await new Promise((resolve, reject) => {
    client.once('open', resolve);
    client.once('error', reject);
  });
  t.equal(client.protocol, 'v4.channel.k8s.io');
  client.send(Buffer.concat([Buffer.from([0]), Buffer.from('GET /index.html HTTP/1.0\r\n\r\n')]));
  t.equal(await closed, 1000);
  const on = (ch: number) => Buffer.concat(frames.filter((f) => f[0] === ch).map((f) => f.subarray(1)));
  t.same([...on(0).subarray(0, 2)], [0x90, 0x1f], 'data channel of port 8080 opens with 8080 LE');
  t.match(on(0).subarray(2).toString(), /200 OK[^]*hello\n$/);
  t.same([...on(1)], [0x90, 0x1f], 'its error channel: only the prefix');
  t.same([...on(2)], [0x0f, 0x27], 'port 9999: prefix only, no data');
  t.match(on(3).subarray(2).toString(), /^error forwarding port 9999 to pod .*Connection refused$/);
  await node.waitFor('session closed', () => (node.nodelet.sessions.size === 0 ? true : undefined));
});

t.test('removing the pod ends its sessions; the pod then answers 404', async (t) => {
  const { node, pod } = await webNode(t);
  const { client, socket } = await spdySession(t, node.url, `/portForward/default/${pod}`);
  const p = await openForwardPair(client, 8080, 0);
  client.data(p.data, 'GET /index.html HTTP/1.0\r\n\r\n', true);
  await client.waitFor(finOf(p.data), 10_000);
  const gone = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await node.removeManifest('web.yaml');
  await gone;
  t.pass('the session closed when the pod went away');
  t.ok(client.received.some((f) => f.type === 'GOAWAY'), 'with a GOAWAY first');
  await node.waitFor('sessions released', () => (node.nodelet.sessions.size === 0 ? true : undefined));
  t.equal((await fetch(`${node.url}/portForward/default/${pod}`)).status, 404);
});
