import { writeFile } from 'node:fs/promises';
import { connect as tcpConnect, type Socket } from 'node:net';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import t, { type Test } from 'tap';
import { BUSYBOX } from '../helpers/docker.js';
import { httpAnswers } from '../helpers/hostile.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';
import { freePort } from '../helpers/net.js';
import { makePki } from '../helpers/pki.js';
import { TOKENS } from '../unit/auth/fixtures/security.js';

/**
 * Requests pipelined on one connection — an Upgrade among them — on every
 * listener (plain HTTP, HTTPS with a token, the read-only port) and every route family. Node
 * parses pipelined requests ahead of their answers; an Upgrade handed over while an earlier
 * answer still owned the socket threw ERR_HTTP_SOCKET_ASSIGNED from an event listener and ended
 * the process (here: the test process, which hosts nodelet). Go's net/http, the kubelet's
 * server, answers a connection's requests one at a time, in order.
 */

const manifest = `apiVersion: v1
kind: Pod
metadata: { name: box }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: app, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sleep", "3600"] }
`;

interface Listener {
  readonly name: string;
  readonly url: string;
  /** Header lines every request on it carries (credentials). */
  readonly auth: readonly string[];
}

const WS_UPGRADE = ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=='];

/** One request of every route family the server has (non-watch, non-follow: each answer ends). */
function families(pod: string): [method: string, path: string][] {
  return [
    ['GET', '/healthz'],
    ['GET', '/healthz/ping'],
    ['GET', '/pods'],
    ['GET', '/runningpods/'],
    ['GET', `/podInfo?podID=${pod}&podNamespace=default`],
    ['GET', '/metrics'],
    ['GET', '/stats/summary'],
    ['GET', '/api'],
    ['GET', '/apis'],
    ['GET', '/version'],
    ['GET', '/api/v1/pods'],
    ['GET', `/api/v1/namespaces/default/pods/${pod}`],
    ['GET', `/api/v1/namespaces/default/pods/${pod}/log?container=app`],
    ['GET', `/containerLogs/default/${pod}/app`],
    ['GET', '/api/v1/events'],
    ['GET', '/api/v1/nodes'],
    ['GET', '/api/v1/namespaces'],
    ['GET', `/exec/default/${pod}/app?command=true&output=1`],
    ['GET', `/attach/default/${pod}/app?output=1`],
    ['GET', `/portForward/default/${pod}?port=80`],
    ['POST', `/run/default/${pod}/app?cmd=true`],
    ['GET', `/api/v1/namespaces/default/pods/${pod}/exec?command=true&stdout=true`],
    ['GET', '/no/such/route'],
  ];
}

/** What came back on one connection: the status codes of the answers, in order, and how it ended. */
interface Exchange {
  readonly statuses: number[];
  readonly text: string;
}

/**
 * Writes `writes` (each after the previous, without waiting for answers) and reads until the
 * server closes, or until a `101`'s head arrived (then closes itself). Fails after 15 s.
 */
function exchange(l: Listener, writes: readonly string[]): Promise<Exchange> {
  const { hostname, port } = new URL(l.url);
  return new Promise((resolve, reject) => {
    const socket: Socket = l.url.startsWith('https:') ? tlsConnect({ host: hostname, port: Number(port), rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }) : tcpConnect(Number(port), hostname);
    let text = '';
    const statuses = () => httpAnswers(text).list.map((a) => a.status);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ statuses: statuses(), text });
    };
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no end of exchange within 15 s on ${l.name}; got ${JSON.stringify(text.slice(0, 300))}`));
    }, 15_000);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => {
      text += d;
      if (httpAnswers(text).switched) finish();
    });
    socket.on('close', finish);
    socket.on('error', () => undefined);
    socket.once(l.url.startsWith('https:') ? 'secureConnect' : 'connect', () => {
      // Each write is its own turn of the event loop, so the server may read them apart.
      const next = (i: number) => {
        if (i >= writes.length || socket.destroyed) return;
        socket.write(writes[i] ?? '', () => setImmediate(() => next(i + 1)));
      };
      next(0);
    });
  });
}


const request = (l: Listener, method: string, path: string, extra: readonly string[] = []) =>
  [`${method} ${path} HTTP/1.1`, 'Host: x', ...l.auth, ...(method === 'POST' ? ['Content-Length: 0'] : []), ...extra, '', ''].join('\r\n');

async function alive(t: Test, l: Listener): Promise<void> {
  const r = await exchange(l, [request(l, 'GET', '/healthz', ['Connection: close'])]);
  t.ok(r.statuses.length === 1 && (r.statuses[0] ?? 500) < 500, `${l.name}: /healthz still answers (${r.statuses.join(', ')})`);
}

/** Starts the pod `box` and waits, through `l`, until its container runs; its name. */
async function boxPod(node: TestNode, l: Listener): Promise<string> {
  await node.writeManifest('box.yaml', manifest);
  const pod = `box-${node.nodeName}`;
  return node.waitFor('box running', async () => {
    const r = await exchange(l, [request(l, 'GET', `/api/v1/namespaces/default/pods/${pod}`, ['Connection: close'])]);
    const body = r.text.slice(r.text.indexOf('\r\n\r\n') + 4);
    return r.statuses[0] === 200 && /"running":\{"startedAt"/.test(body) ? pod : undefined;
  });
}

t.test('pipelined requests, an Upgrade among them, on every listener and route family', async (t) => {
  const pki = makePki(t);
  const tokenFile = join(pki.dir, 'tokens.csv');
  await writeFile(tokenFile, TOKENS);
  const insecure = await startTestNode(t, { readOnlyPort: await freePort() });
  const secure = await startTestNode(t, { tokenAuthFile: tokenFile, anonymousAuth: false, readOnlyPort: await freePort() });
  t.match(secure.url, /^https:/);
  const listeners: [Listener, TestNode][] = [
    [{ name: 'plain HTTP (--insecure-dev)', url: insecure.url, auth: [] }, insecure],
    [{ name: 'HTTPS with a token', url: secure.url, auth: ['Authorization: Bearer admin-token'] }, secure],
    [{ name: 'HTTPS, anonymous (refused)', url: secure.url, auth: [] }, secure],
    [{ name: 'read-only port', url: secure.nodelet.readOnlyUrl ?? '', auth: [] }, secure],
  ];
  const pods = new Map<TestNode, string>([
    [insecure, await boxPod(insecure, listeners[0]![0])],
    [secure, await boxPod(secure, listeners[1]![0])],
  ]);

  for (const [l, node] of listeners) {
    const pod = pods.get(node) ?? '';
    await t.test(l.name, async (t) => {
      for (const [method, path] of families(pod)) {
        const plain = request(l, method, path);
        const upgrade = request(l, method, path, WS_UPGRADE);
        // In one write, and as two writes sent before the first answer.
        const one = await exchange(l, [plain + upgrade]);
        t.equal(one.statuses.length, 2, `${method} ${path}, one write: two answers, in order (${one.statuses.join(', ')})`);
        const two = await exchange(l, [plain, upgrade]);
        t.equal(two.statuses.length, 2, `${method} ${path}, two writes: two answers (${two.statuses.join(', ')})`);
        t.same(two.statuses[0], one.statuses[0], `${method} ${path}: the same first answer either way`);
      }
      // Several answers ahead of the Upgrade, and the upgrade itself honoured after them.
      const upgradeExec = request(l, 'GET', `/exec/default/${pod}/app?command=true&output=1`, [...WS_UPGRADE, 'Sec-WebSocket-Protocol: v5.channel.k8s.io']);
      const many = await exchange(l, [request(l, 'GET', '/healthz') + request(l, 'GET', '/pods') + request(l, 'GET', '/api/v1/pods') + upgradeExec]);
      t.equal(many.statuses.length, 4, `three answers, then the upgrade's (${many.statuses.join(', ')})`);
      t.same(many.statuses.slice(0, 3), (await exchange(l, [request(l, 'GET', '/healthz') + request(l, 'GET', '/pods') + request(l, 'GET', '/api/v1/pods', ['Connection: close'])])).statuses);
      if (l.name === 'plain HTTP (--insecure-dev)' || l.name === 'HTTPS with a token') t.equal(many.statuses[3], 101, 'the exec upgrade is served once the answers before it are');
      // An answer that closes the connection: nothing after it is served, nothing breaks.
      const closing = await exchange(l, [request(l, 'GET', '/healthz', ['Connection: close']) + upgradeExec]);
      // (Node's parser refuses bytes after a `Connection: close` request: at most its 400 follows.)
      t.notOk(closing.statuses.slice(1).some((s) => s < 400), `after a Connection: close answer the pipelined upgrade is not served (${closing.statuses.join(', ')})`);
      await alive(t, l);
    });
  }
});
