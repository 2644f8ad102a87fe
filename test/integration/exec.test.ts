import { spawn } from 'node:child_process';
import t from 'tap';
import { BUSYBOX, testDocker } from '../helpers/docker.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';
import { rawRequest } from '../helpers/raw-http.js';

const manifest = `apiVersion: v1
kind: Pod
metadata: { name: box }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: app, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sleep", "3600"] }
`;

async function boxNode(t: Parameters<typeof startTestNode>[0], overrides: Parameters<typeof startTestNode>[1] = {}): Promise<{ node: TestNode; pod: string }> {
  const node = await startTestNode(t, overrides);
  await node.writeManifest('box.yaml', manifest);
  const pod = await node.waitFor('box running', async () => {
    const p = await node.pod('box');
    return p?.status?.containerStatuses?.[0]?.state?.running ? (p.metadata?.name ?? '') : undefined;
  });
  return { node, pod };
}

const upgradeHeaders = {
  spdy: (extra: string[] = []) => ['Connection: Upgrade', 'Upgrade: SPDY/3.1', ...extra],
  ws: (protocol: string) => ['Connection: Upgrade', 'Upgrade: websocket', 'Sec-WebSocket-Version: 13', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', `Sec-WebSocket-Protocol: ${protocol}`],
};

t.test('bad exec requests are refused before any upgrade, with a Status', async (t) => {
  const { node, pod } = await boxNode(t);
  const get = async (path: string) => {
    const res = await fetch(node.url + path);
    return { status: res.status, body: (await res.json()) as { reason?: string; message?: string } };
  };
  const cases: [string, number, RegExp][] = [
    ['/exec/default/nopod/app?command=ls&output=1', 404, /pod does not exist/],
    [`/exec/default/${pod}/nope?command=ls&output=1`, 404, /container "nope" not found/],
    [`/exec/default/${pod}/app?command=ls`, 400, /you must specify at least 1 of stdin, stdout, stderr/],
    [`/exec/default/${pod}/app?output=1`, 400, /command/],
    [`/exec/default/${pod}/app?command=ls&output=1`, 400, /Upgrade request required/],
    [`/attach/default/${pod}/app?output=1`, 400, /Upgrade request required/],
    [`/api/v1/namespaces/default/pods/${pod}/exec?command=ls&stdout=true`, 400, /Upgrade request required/],
    [`/api/v1/namespaces/default/pods/nopod/exec?command=ls&stdout=true`, 404, /pods "nopod" not found/],
    ['/exec/default/..%2F..%2Fetc/app?command=ls&output=1', 400, /./],
    ['/exec/default/BAD_NAME/app?command=ls&output=1', 400, /./],
  ];
  for (const [path, code, message] of cases) {
    const r = await get(path);
    t.equal(r.status, code, path);
    t.match(r.body.message, message, path);
  }
  const cmd = (await fetch(`${node.url}/exec/default/${pod}/app?command=ls&output=1`, { method: 'POST', redirect: 'manual' })).status;
  t.equal(cmd, 400, 'POST is accepted as a method, still needs an upgrade');

  const noVersion = await rawRequest(node.url, [`POST /exec/default/${pod}/app?command=ls&output=1 HTTP/1.1`, 'Host: x', ...upgradeHeaders.spdy()]);
  t.equal(noVersion.status, 400);
  t.match(noVersion.body, /X-Stream-Protocol-Version is required/);

  const unknown = await rawRequest(node.url, [`POST /exec/default/${pod}/app?command=ls&output=1 HTTP/1.1`, 'Host: x', ...upgradeHeaders.spdy(['X-Stream-Protocol-Version: v9.channel.k8s.io'])]);
  t.equal(unknown.status, 403);
  t.same(unknown.headers['x-accepted-stream-protocol-versions'], ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io']);

  const v5 = await rawRequest(node.url, [`POST /exec/default/${pod}/app?command=true&output=1 HTTP/1.1`, 'Host: x', ...upgradeHeaders.spdy(['X-Stream-Protocol-Version: v5.channel.k8s.io', 'X-Stream-Protocol-Version: v4.channel.k8s.io'])]);
  t.equal(v5.status, 101, 'a v5 offer over SPDY resolves to v4');
  t.same(v5.headers['x-stream-protocol-version'], ['v4.channel.k8s.io']);

  const ws = await rawRequest(node.url, [`GET /exec/default/${pod}/app?command=ls&output=1 HTTP/1.1`, 'Host: x', ...upgradeHeaders.ws('v9.channel.k8s.io')]);
  t.equal(ws.status, 403, 'an offer nodelet cannot serve is refused without a 101, so kubectl falls back');

  const missingPod = await rawRequest(node.url, [`GET /exec/default/nopod/app?command=ls&output=1 HTTP/1.1`, 'Host: x', ...upgradeHeaders.ws('v5.channel.k8s.io')]);
  t.equal(missingPod.status, 404, 'upgrade requests get the same answers');
  await node.waitFor('sessions closed', () => (node.nodelet.sessions.size === 0 ? true : undefined));
});

t.test('POST /run splits cmd on spaces and never uses a shell', async (t) => {
  const { node, pod } = await boxNode(t);
  const run = async (cmd: string) => {
    const res = await fetch(`${node.url}/run/default/${pod}/app?cmd=${encodeURIComponent(cmd)}`, { method: 'POST' });
    return { status: res.status, body: await res.text() };
  };
  t.same(await run('echo a b'), { status: 200, body: 'a b\n' });
  t.same(await run('echo ;touch /tmp/x'), { status: 200, body: ';touch /tmp/x\n' });
  t.same(await run('echo $(touch /tmp/y)'), { status: 200, body: '$(touch /tmp/y)\n' });
  t.equal((await run('ls /tmp/x')).status, 500, 'no marker file was created');
  t.equal((await run('ls /tmp/y')).status, 500);
  const failed = await run('sh -c exit');
  t.equal(failed.status, 200, '`sh -c exit` exits 0');
  const bad = await run('false');
  t.equal(bad.status, 500);
  t.match(bad.body, /exited with 1/);
  t.equal((await fetch(`${node.url}/run/default/${pod}/app?cmd=ls`)).status, 405, 'GET is not allowed');
  t.equal((await fetch(`${node.url}/run/default/nopod/app?cmd=ls`, { method: 'POST' })).status, 404);
});

t.test('the session cap answers 429 with Retry-After before upgrading', async (t) => {
  const { node, pod } = await boxNode(t, { maxStreamingSessions: 1 });
  const first = await rawRequest(node.url, [`GET /exec/default/${pod}/app?command=sleep&command=30&output=1 HTTP/1.1`, 'Host: x', ...upgradeHeaders.ws('v5.channel.k8s.io')], 2000, { keepOpen: true });
  t.equal(first.status, 101);
  await node.waitFor('session tracked', () => (node.nodelet.sessions.size === 1 ? true : undefined));
  const second = await rawRequest(node.url, [`GET /exec/default/${pod}/app?command=ls&output=1 HTTP/1.1`, 'Host: x', ...upgradeHeaders.ws('v5.channel.k8s.io')]);
  t.equal(second.status, 429);
  t.same(second.headers['retry-after'], ['60']);
  first.close();
  await node.waitFor('first session closed after its client left', () => (node.nodelet.sessions.size === 0 ? true : undefined));
});

t.test('a killed client ends the Docker exec and the session', async (t) => {
  const { node, pod } = await boxNode(t);
  const docker = testDocker();
  for (const [version, env] of [['1.33', {}], ['1.27', {}]] as const) {
    const kubectl = await kubectlFor(t, version, node.url);
    // Silent after its first line: only nodelet's kill can end it (no SIGPIPE from a closed stream).
    const [cmd, ...args] = kubectl.argv('exec', pod, '-c', 'app', '--', 'sh', '-c', 'echo started; exec sleep 600');
    const child = spawn(cmd ?? '', args, { env: { ...process.env, ...env } });
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    t.equal(node.nodelet.sessions.size, 1, `${version}: one session open`);
    const id = (await node.pod('box'))?.status?.containerStatuses?.[0]?.containerID?.replace('docker://', '') ?? '';
    // Docker lists only live execs in ExecIDs, Podman finished ones too: ask each exec.
    const liveExecs = async () => {
      const ids = (await docker.getContainer(id).inspect()).ExecIDs ?? [];
      return (await Promise.all(ids.map(async (e) => (await docker.getExec(e).inspect()).Running))).filter(Boolean).length;
    };
    t.equal(await liveExecs(), 1, `${version}: the exec runs`);
    child.kill('SIGKILL');
    await node.waitFor(`${version}: session closed`, () => (node.nodelet.sessions.size === 0 ? true : undefined), 10_000);
    await node.waitFor(`${version}: exec killed after the grace period (1 s in tests)`, async () => ((await liveExecs()) === 0 ? true : undefined), 15_000);
    t.pass(`${version}: the abandoned exec is gone`);
  }
});
