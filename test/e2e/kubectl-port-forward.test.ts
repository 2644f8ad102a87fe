import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { PassThrough, Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import t, { type Test } from 'tap';
import { BUSYBOX } from '../helpers/docker.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';
import { upgradesDuring } from '../helpers/streaming-metrics.js';
import { freePort } from '../helpers/net.js';

/** httpd on 8080 serving a 5 MB random file and its digest; nothing listens on 9999. */
const manifest = `apiVersion: v1
kind: Pod
metadata: { name: web }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: httpd
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command:
        - sh
        - -c
        - mkdir -p /www && echo hello > /www/index.html && head -c 5242880 /dev/urandom > /www/big.bin && sha256sum /www/big.bin > /www/sum && exec httpd -f -p 8080 -h /www
`;

const variants: { version: string; transport: string; tunnel: boolean; env: Record<string, string> }[] = [
  { version: '1.27', transport: 'SPDY', tunnel: false, env: {} },
  { version: '1.29', transport: 'SPDY', tunnel: false, env: {} },
  { version: '1.33', transport: 'SPDY tunnelled in WebSocket', tunnel: true, env: {} },
  { version: '1.33', transport: 'SPDY (KUBECTL_PORT_FORWARD_WEBSOCKETS=false)', tunnel: false, env: { KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false' } },
];

const sha = (b: Buffer | Uint8Array) => createHash('sha256').update(b).digest('hex');

interface Forward {
  child: ChildProcess;
  output(): string;
  exited: Promise<number>;
}

/** `kubectl port-forward`, resolved once it prints `Forwarding from` for every port. */
async function portForward(t: Test, node: TestNode, v: (typeof variants)[number], pod: string, ...mappings: string[]): Promise<Forward> {
  const kubectl = await kubectlFor(t, v.version, node.url);
  // -v=6 logs the upgrade, so the test can tell which transport was really used.
  const [cmd, ...args] = kubectl.argv('port-forward', '-v=6', '--address', '127.0.0.1', `pod/${pod}`, ...mappings);
  const child = spawn(cmd ?? '', args, { env: { ...process.env, ...v.env } });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? 128)));
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  await node.waitFor(`kubectl ${v.version} forwarding`, async () => {
    if (child.exitCode !== null) throw new Error(`kubectl exited: ${out}`);
    return (out.match(/Forwarding from/g) ?? []).length >= mappings.length ? true : undefined;
  });
  return { child, output: () => out, exited };
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

t.test('kubectl port-forward and client-node PortForward against real Docker', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('web.yaml', manifest);
  const pod = await node.waitFor('web running', async () => {
    const p = await node.pod('web');
    return p?.status?.containerStatuses?.[0]?.state?.running ? (p.metadata?.name ?? '') : undefined;
  }, 30_000);
  const run = async (cmd: string) => {
    const res = await fetch(`${node.url}/run/default/${pod}/httpd?cmd=${encodeURIComponent(cmd)}`, { method: 'POST' });
    return res.status === 200 ? res.text() : undefined;
  };
  // Commands that exit 0 whatever the state, so polling logs no failures.
  await node.waitFor('httpd listening', async () => ((await run('netstat -ltn'))?.includes(':8080 ') ? true : undefined));
  const digest = (await run('cat /www/sum'))?.split(' ')[0];
  t.match(digest, /^[0-9a-f]{64}$/);

  for (const v of variants) {
    await t.test(`kubectl ${v.version}, ${v.transport}`, async (t) => {
      const [local, closed] = [await freePort(), await freePort()];
      // kubectl dials (the 101) before it prints `Forwarding from`: the session is counted by then.
      const { result: fwd, upgrades } = await upgradesDuring(node.url, () => portForward(t, node, v, pod, `${local}:8080`, `${closed}:9999`));
      t.same(upgrades, v.tunnel ? { 'portForward websocket SPDY/3.1+portforward.k8s.io': 1 } : { 'portForward spdy portforward.k8s.io': 1 }, 'nodelet saw the expected transport');
      if (v.tunnel) t.match(fwd.output(), /tunneling_dialer.*negotiated protocol: portforward\.k8s\.io/, 'the WebSocket tunnel was accepted (no fallback)');
      else t.notMatch(fwd.output(), /tunneling_dialer/, 'plain SPDY');
      const base = `http://127.0.0.1:${local}`;
      const [a, b, big] = await Promise.all([fetch(`${base}/index.html`), fetch(`${base}/index.html`), fetch(`${base}/big.bin`)]);
      t.equal(await a.text(), 'hello\n', 'first parallel GET');
      t.equal(await b.text(), 'hello\n', 'second parallel GET');
      const bytes = new Uint8Array(await big.arrayBuffer());
      t.equal(bytes.length, 5 * 1024 * 1024, '5 MB');
      t.equal(sha(bytes), digest, 'byte-exact (sha256 matches the pod\'s)');

      // A port nothing listens on: the error goes on that pair's error stream; kubectl reports it and exits 1.
      const sock = connect(closed, '127.0.0.1');
      sock.on('error', () => undefined);
      sock.write('GET / HTTP/1.0\r\n\r\n');
      const code = await within(fwd.exited, 20_000, 'kubectl exit after the error');
      sock.destroy();
      t.equal(code, 1, 'exit 1');
      t.match(fwd.output(), new RegExp(`an error occurred forwarding ${closed} -> 9999: error forwarding port 9999 to pod [0-9a-f]+, uid : .*Connection refused`));
      await node.waitFor('session closed', () => (node.nodelet.sessions.size === 0 ? true : undefined), 10_000);
    });
  }

  await t.test('@kubernetes/client-node PortForward (WebSocket channel mode, ?ports=)', async (t) => {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'nodelet', server: node.url, skipTLSVerify: true }],
      users: [{ name: 'nodelet' }],
      contexts: [{ name: 'nodelet', cluster: 'nodelet', user: 'nodelet' }],
      currentContext: 'nodelet',
    });
    const forward = async (port: number, request: string) => {
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      const sink = (into: Buffer[]) => new Writable({ write: (c: Buffer, _e, done) => (into.push(Buffer.from(c)), done()) });
      const input = new PassThrough();
      const ws = (await new k8s.PortForward(kc).portForward('default', pod, [port], sink(out), sink(err), input)) as { once(e: 'close', cb: () => void): void };
      const closed = new Promise<void>((resolve) => ws.once('close', () => resolve()));
      input.write(request);
      // The pod closes the connection; a moment later nodelet closes the WebSocket (every port done).
      await within(closed, 20_000, 'client-node WebSocket close');
      return { out: Buffer.concat(out), err: Buffer.concat(err).toString() };
    };
    const { result: page, upgrades } = await upgradesDuring(node.url, () => forward(8080, 'GET /index.html HTTP/1.0\r\n\r\n'));
    t.same(upgrades, { 'portForward websocket v4.channel.k8s.io': 1 }, 'WebSocket channel mode, as nodelet counted it');
    t.match(page.out.toString(), /^HTTP\/1\.[01] 200 OK\r\n[^]*\r\n\r\nhello\n$/, 'the answer arrives on output');
    t.equal(page.err, '', 'nothing on the error channel');
    const big = await forward(8080, 'GET /big.bin HTTP/1.0\r\n\r\n');
    const body = big.out.subarray(big.out.indexOf('\r\n\r\n') + 4);
    t.equal(sha(body), digest, '5 MB through channel mode, byte-exact');
    const refused = await forward(9999, 'GET / HTTP/1.0\r\n\r\n');
    t.match(refused.err, /^error forwarding port 9999 to pod .*Connection refused$/, 'the error channel carries the reason');
    await node.waitFor('sessions closed', () => (node.nodelet.sessions.size === 0 ? true : undefined), 10_000);
  });

  await t.test('removing the pod ends every forward: kubectl exits', async (t) => {
    const forwards = await Promise.all(variants.map(async (v) => [v, await portForward(t, node, v, pod, `${await freePort()}:8080`)] as const));
    await node.waitFor('every session open', () => (node.nodelet.sessions.size === variants.length ? true : undefined));
    await node.removeManifest('web.yaml');
    for (const [v, f] of forwards) {
      const code = await within(f.exited, 20_000, `kubectl ${v.version} exit`);
      t.pass(`kubectl ${v.version} ${v.transport} exited (${code})`);
    }
    await node.waitFor('sessions closed', () => (node.nodelet.sessions.size === 0 ? true : undefined), 10_000);
  });
});
