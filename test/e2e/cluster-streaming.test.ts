import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import type { Pod } from '../../src/api/types.js';
import { startClusterNode } from '../helpers/cluster-node.js';
import { startControlPlane, type ControlPlane } from '../helpers/control-plane.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { controlPlaneMinor } from '../helpers/k8s-pin.js';
import { kubectlBinary } from '../helpers/kubectl.js';
import { streamingUpgrades, upgradeDelta, upgradesDuring } from '../helpers/streaming-metrics.js';
import { waitFor } from '../helpers/wait.js';
import { freePort } from '../helpers/net.js';

/**
 * Streaming **through the apiserver**: kubectl (the machine's 1.27 and 1.33, and the pinned one
 * built beside the control plane) talks to a real kube-apiserver (v1.37; v1.34 with
 * NODELET_K8S=1.34), which proxies exec/attach/cp/port-forward/logs to nodelet. The pods are
 * created without nodeName and bound by the real scheduler to the one nodelet node.
 *
 * Which transport reaches nodelet (its `nodelet_streaming_upgrades_total` tells): nodelet declares
 * `ExtendWebSocketsToKubelet` (src/node/declared-features.ts), so a 1.36+ apiserver hands a
 * WebSocket from kubectl (exec/attach since kubectl 1.30, the port-forward tunnel since 1.31)
 * to nodelet untranslated (pkg/registry/core/pod/rest/subresources.go); a 1.34 apiserver
 * translates it to SPDY, and kubectl 1.27 speaks SPDY all the way.
 *
 * The pods opt out of the ServiceAccount token volume (`automountServiceAccountToken: false`):
 * projected volumes are not implemented yet, and these tests are about streaming.
 */

t.setTimeout(260_000);

const PINNED_KUBECTL = controlPlaneMinor();
const VERSIONS = ['1.27', '1.33', PINNED_KUBECTL] as const;
const minor = (version: string) => Number(version.split('.')[1]);
/** The apiserver passes WebSocket upgrades to a node that declares ExtendWebSocketsToKubelet. */
const DIRECT = minor(PINNED_KUBECTL) >= 36;
/** The session nodelet sees for kubectl `version`'s exec or attach through the apiserver. */
const remoteCommandSession = (path: 'exec' | 'attach', version: string) =>
  DIRECT && minor(version) >= 30 ? `${path} websocket v5.channel.k8s.io` : `${path} spdy v4.channel.k8s.io`;
/** The same for port-forward: the SPDY-in-WebSocket tunnel itself, or plain SPDY. */
const portForwardSession = (version: string) =>
  DIRECT && minor(version) >= 31 ? 'portForward websocket SPDY/3.1+portforward.k8s.io' : 'portForward spdy portforward.k8s.io';

const spec = (body: string) => `  automountServiceAccountToken: false
  terminationGracePeriodSeconds: 0
${body}`;

const shell = `apiVersion: v1
kind: Pod
metadata: { name: shell }
spec:
${spec(`  containers:
    - name: app
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sleep", "3600"]
    - name: catter
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["cat"]
      stdin: true
      stdinOnce: true
    - name: printer
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "i=0; while true; do i=$((i+1)); echo beat$i; sleep 0.2; done"]
`)}`;

const chatty = `apiVersion: v1
kind: Pod
metadata: { name: chatty }
spec:
${spec(`  containers:
    - name: app
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "echo boot $(cat /proc/sys/kernel/random/uuid); i=1; while [ $i -le 20 ]; do echo line$i; i=$((i+1)); done; exec sleep 3600"]
`)}`;

/** Prints `ready`, waits until the test creates /tmp/go (by exec), then ticks three times and exits for good. */
const ticker = (name: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  restartPolicy: Never
${spec(`  containers:
    - name: tick
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "echo ready; while [ ! -e /tmp/go ]; do sleep 0.1; done; for i in 1 2 3; do echo tick$i; sleep 1; done"]
`)}`;

/** httpd on 127.0.0.1:8080 in the pod's own netns, serving a 5 MB random file and its digest. */
const web = `apiVersion: v1
kind: Pod
metadata: { name: web }
spec:
${spec(`  containers:
    - name: httpd
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command:
        - sh
        - -c
        - mkdir -p /www && echo hello > /www/index.html && head -c 5242880 /dev/urandom > /www/big.bin && sha256sum /www/big.bin > /www/sum && exec httpd -f -p 8080 -h /www
`)}`;

const sha = (b: Buffer | Uint8Array) => createHash('sha256').update(b).digest('hex');
const lines = (text: string) => text.split('\n').filter((l) => l !== '');
const bootOf = (text: string) => /^boot (\S+)$/m.exec(text)?.[1];
const TIMESTAMPED = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z line\d+$/;


function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<T>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out: ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** The pod as the apiserver has it. */
async function apiPod(cp: ControlPlane, name: string): Promise<Pod | undefined> {
  const r = await cp.kubectl(['get', 'pod', name, '-o', 'json']);
  return r.code === 0 ? (JSON.parse(r.stdout) as Pod) : undefined;
}

/** Waits until the apiserver shows every container of `name` running. */
async function running(cp: ControlPlane, name: string): Promise<Pod> {
  return waitFor(`${name} running (apiserver)`, async () => {
    const p = await apiPod(cp, name);
    const cs = p?.status?.containerStatuses ?? [];
    return cs.length > 0 && cs.length === p?.spec?.containers.length && cs.every((c) => c.state?.running) ? p : undefined;
  });
}

/** The argv of the machine's kubectl `version` against the control plane as admin (for spawn/script). */
function kubectlArgv(cp: ControlPlane, version: string, ...args: string[]): string[] {
  return [kubectlBinary(version), '--kubeconfig', cp.adminKubeconfig, '--cache-dir', join(cp.dir, 'kubectl-cache'), ...args];
}

function spawnKubectl(t: Test, cp: ControlPlane, version: string, ...args: string[]): { child: ChildProcess; out: () => string; err: () => string; exited: Promise<number> } {
  const [cmd, ...rest] = kubectlArgv(cp, version, ...args);
  const child = spawn(cmd ?? '', rest, { env: { ...process.env, HOME: cp.dir } });
  let out = '';
  let err = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number>((resolve) => child.once('close', (code) => resolve(code ?? 128)));
  t.teardown(() => {
    child.kill('SIGKILL');
  });
  return { child, out: () => out, err: () => err, exited };
}

t.test('kubectl through the apiserver to a cluster-mode nodelet', async (t) => {
  const cp = await startControlPlane(t);
  const node = await startClusterNode(t, cp);
  const scratch = await mkdtemp(join(tmpdir(), 'nodelet-cluster-streaming-'));
  t.teardown(() => rm(scratch, { recursive: true, force: true }));

  const tickers = VERSIONS.map((v) => ticker(`ticker-${v.replace('.', '-')}`));
  const applied = await cp.kubectl(['apply', '-f', '-'], { input: [shell, chatty, web, ...tickers].join('---\n') });
  t.equal(applied.code, 0, applied.stderr);

  const pods = ['shell', 'chatty', 'web', ...VERSIONS.map((v) => `ticker-${v.replace('.', '-')}`)];
  for (const name of pods) {
    const p = await running(cp, name);
    t.equal(p.spec?.nodeName, node.nodeName, `${name}: the scheduler bound it to nodelet's node`);
  }
  const bound = await cp.kubectl(['get', 'pod', 'shell', '-o', 'jsonpath={.spec.nodeName}']);
  t.equal(bound.stdout, node.nodeName, 'kubectl get pod -o jsonpath={.spec.nodeName}');

  // Commands that exit 0 whatever the state, so polling logs no failures.
  const execOut = async (pod: string, container: string, cmd: string) => {
    const r = await cp.kubectl(['exec', pod, '-c', container, '--', 'sh', '-c', cmd]);
    return r.code === 0 ? r.stdout : undefined;
  };
  await waitFor('httpd listening', async () => ((await execOut('web', 'httpd', 'netstat -ltn'))?.includes(':8080 ') ? true : undefined));
  const digest = (await execOut('web', 'httpd', 'cat /www/sum'))?.split(' ')[0];
  t.match(digest, /^[0-9a-f]{64}$/);
  const full = await waitFor('chatty logged', async () => {
    const r = await cp.kubectl(['logs', 'chatty']);
    return r.stdout.includes('line20\n') ? r.stdout : undefined;
  });
  t.equal(lines(full).length, 21);

  // nodelet's own count of the sessions the apiserver opened to it, scraped as the apiserver would.
  const scrape = async () => {
    const r = await node.requestLocal<string>('GET', '/metrics');
    if (r.status !== 200) throw new Error(`GET /metrics answered ${r.status}`);
    return r.body;
  };

  const random = randomBytes(1024 * 1024);
  const big = randomBytes(5 * 1024 * 1024);
  await writeFile(join(scratch, 'big.bin'), big);

  for (const version of VERSIONS) {
    await t.test(`kubectl ${version}`, async (t) => {
      const run = (args: string[], input?: Buffer | string) => cp.kubectl(args, { version, ...(input !== undefined ? { input } : {}) });

      await t.test('exec: echo, exit codes, 1 MiB stdin, -it with a resize', async (t) => {
        const session = remoteCommandSession('exec', version);
        const { result: echo, upgrades } = await upgradesDuring(scrape, () => run(['exec', 'shell', '-c', 'app', '--', 'echo', 'hi']));
        t.same(upgrades, { [session]: 1 }, `one session from the apiserver to nodelet: ${session}`);
        t.equal(echo.code, 0, echo.stderr);
        t.equal(echo.stdout, 'hi\n');

        for (const n of [0, 3, 42, 255]) {
          const { result: r, upgrades } = await upgradesDuring(scrape, () => run(['exec', 'shell', '-c', 'app', '--', 'sh', '-c', `echo out; echo err >&2; exit ${n}`]));
          t.same(upgrades, { [session]: 1 }, `exit ${n}: over ${session}`);
          t.equal(r.code, n, `exit ${n}: ${r.stderr}`);
          t.equal(r.stdout, 'out\n');
          t.match(r.stderr, /err\n/);
          if (n !== 0) t.match(r.stderr, `command terminated with exit code ${n}`);
        }

        const { result: cat, upgrades: catUpgrades } = await upgradesDuring(scrape, () => run(['exec', '-i', 'shell', '-c', 'app', '--', 'cat'], random));
        t.same(catUpgrades, { [session]: 1 }, `1 MiB over ${session}`);
        t.equal(cat.code, 0, cat.stderr);
        t.equal(cat.raw.length, random.length, '1 MiB back');
        t.equal(sha(cat.raw), sha(random), 'byte-exact');

        // A real pty: `script` gives kubectl a 30x100 terminal, which kubectl sends as a resize.
        // (Docker API 1.41 has no console size at exec start: see exec-suite.ts for the sleep.)
        const argv = kubectlArgv(cp, version, 'exec', '-it', 'shell', '-c', 'app', '--', 'sh', '-c', 'sleep 0.5; stty size')
          .map((a) => `'${a}'`)
          .join(' ');
        const tty = await new Promise<{ code: number; out: string }>((resolve) => {
          execFile('script', ['-qec', `stty rows 30 cols 100; ${argv}`, '/dev/null'], { env: { ...process.env, HOME: cp.dir }, timeout: 30_000 }, (err, stdout) =>
            resolve({ code: err ? 1 : 0, out: stdout }),
          );
        });
        t.equal(tty.code, 0, `exec -it exits 0: ${tty.out}`);
        t.match(tty.out, /30 100/, 'the terminal size reached the process');
      });

      await t.test('attach: stdin to a `stdin: true, tty: false` container, and a printing one', async (t) => {
        await running(cp, 'shell');
        const { result: attach, upgrades } = await upgradesDuring(scrape, () => run(['attach', '-i', 'shell', '-c', 'catter'], 'hello-attach\n'));
        t.same(upgrades, { [remoteCommandSession('attach', version)]: 1 }, `attach reached nodelet: ${remoteCommandSession('attach', version)}`);
        t.equal(attach.code, 0, attach.stderr);
        t.match(attach.stdout, /hello-attach/);

        // Without -i: kubectl streams what the process prints, until it is stopped.
        const printer = spawnKubectl(t, cp, version, 'attach', 'shell', '-c', 'printer');
        const seen = await waitFor('attach output', async () => {
          if (printer.child.exitCode !== null) throw new Error(`kubectl attach exited: ${printer.err()}`);
          // Whole lines only: the last chunk may end inside a number.
          const beats = (printer.out().match(/beat\d+\n/g) ?? []).map((l) => l.trim());
          return beats.length >= 3 ? beats : undefined;
        }, 15_000);
        const numbers = seen.map((b) => Number(b.slice(4)));
        t.ok(numbers.every((n, i) => i === 0 || n === (numbers[i - 1] ?? 0) + 1), `consecutive beats while attached (${seen.join(' ')})`);
        printer.child.kill('SIGINT');
        await within(printer.exited, 10_000, 'kubectl attach exits on SIGINT');
        await running(cp, 'shell');
      });

      await t.test('cp: 5 MB both ways', async (t) => {
        const inPod = `/tmp/big-${version}.bin`;
        const up = await run(['cp', join(scratch, 'big.bin'), `shell:${inPod}`, '-c', 'app']);
        t.equal(up.code, 0, up.stderr);
        const sum = await run(['exec', 'shell', '-c', 'app', '--', 'sha256sum', inPod]);
        t.equal(sum.stdout.split(' ')[0], sha(big), 'the file in the pod is byte-exact');
        const back = join(scratch, `back-${version}.bin`);
        const down = await run(['cp', `shell:${inPod}`, back, '-c', 'app']);
        t.equal(down.code, 0, down.stderr);
        t.equal(sha(await readFile(back)), sha(big), 'cp round trip of 5 MB is byte-exact');
      });

      await t.test('logs: whole, --tail, --timestamps, -f', async (t) => {
        const all = await run(['logs', 'chatty']);
        t.equal(all.code, 0, all.stderr);
        t.equal(all.stdout, full, 'the whole log, verbatim');

        const tail = await run(['logs', 'chatty', '--tail=5', '--timestamps']);
        t.equal(tail.code, 0, tail.stderr);
        t.equal(lines(tail.stdout).length, 5);
        t.ok(lines(tail.stdout).every((l) => TIMESTAMPED.test(l)), `--timestamps: the nine-digit prefix (${lines(tail.stdout)[0] ?? ''})`);
        t.same(lines(tail.stdout).map((l) => l.slice(31)), lines(full).slice(-5));

        const tail3 = await run(['logs', 'chatty', '--tail=3']);
        t.same(lines(tail3.stdout), ['line18', 'line19', 'line20'], '--tail=3');

        // -f: connected once `ready` arrives; then the container is released and ticks while followed.
        const name = `ticker-${version.replace('.', '-')}`;
        const follow = spawnKubectl(t, cp, version, 'logs', '-f', name);
        const arrivals: { at: number; text: string }[] = [];
        follow.child.stdout?.on('data', (d: Buffer) => arrivals.push({ at: Date.now(), text: d.toString() }));
        await waitFor('logs -f shows ready', async () => {
          if (follow.child.exitCode !== null) throw new Error(`kubectl logs -f exited: ${follow.err()}`);
          return follow.out().includes('ready\n') ? true : undefined;
        }, 15_000);
        const released = Date.now();
        const touched = await run(['exec', name, '--', 'touch', '/tmp/go']);
        t.equal(touched.code, 0, touched.stderr);
        const code = await within(follow.exited, 20_000, 'kubectl logs -f exits when the container exits');
        const ended = Date.now() - released;
        t.equal(code, 0, follow.err());
        t.same(lines(follow.out()), ['ready', 'tick1', 'tick2', 'tick3'], 'every line, once, in order');
        const tick1 = arrivals.find((a) => a.text.includes('tick1'));
        const tick3 = arrivals.find((a) => a.text.includes('tick3'));
        t.ok(tick1 && tick3 && tick3.at - tick1.at >= 1_500, `new lines arrived as written (tick1 → tick3 ${tick1 && tick3 ? tick3.at - tick1.at : '?'} ms)`);
        t.ok(ended < 15_000, `kubectl exited when the container stopped (${ended} ms after release)`);
      });

      await t.test('port-forward: two concurrent connections, 5 MB, a refused port', async (t) => {
        const [local, closed] = [await freePort(), await freePort()];
        // -v=6 logs the upgrade: kubectl ≥ 1.31 tunnels SPDY in a WebSocket to the apiserver, which
        // passes the tunnel on to nodelet (1.36+) or talks SPDY to it; 1.27 speaks SPDY all the way.
        const before = await streamingUpgrades(scrape);
        const fwd = spawnKubectl(t, cp, version, 'port-forward', '-v=6', '--address', '127.0.0.1', 'pod/web', `${local}:8080`, `${closed}:9999`);
        await waitFor(`kubectl ${version} forwarding`, async () => {
          if (fwd.child.exitCode !== null) throw new Error(`kubectl exited: ${fwd.out()} ${fwd.err()}`);
          return (fwd.out().match(/Forwarding from/g) ?? []).length >= 2 ? true : undefined;
        }, 15_000);
        // kubectl 1.33 logs `negotiated protocol: …`, 1.37 (structured) `"Negotiation complete" protocol="…"`.
        if (minor(version) >= 31) t.match(fwd.err(), /tunneling_dialer.*(negotiated protocol: |"Negotiation complete" protocol=")portforward\.k8s\.io/, 'the WebSocket tunnel to the apiserver was accepted');
        else t.notMatch(fwd.err(), /tunneling_dialer/, 'plain SPDY');
        const base = `http://127.0.0.1:${local}`;
        const [a, b, bigGet] = await Promise.all([fetch(`${base}/index.html`), fetch(`${base}/index.html`), fetch(`${base}/big.bin`)]);
        // Answers arrived, so the apiserver's session to nodelet exists.
        t.same(upgradeDelta(before, await streamingUpgrades(scrape)), { [portForwardSession(version)]: 1 }, `one port-forward session from the apiserver to nodelet: ${portForwardSession(version)}`);
        t.equal(await a.text(), 'hello\n', 'first parallel GET');
        t.equal(await b.text(), 'hello\n', 'second parallel GET');
        const bytes = new Uint8Array(await bigGet.arrayBuffer());
        t.equal(bytes.length, 5 * 1024 * 1024, '5 MB');
        t.equal(sha(bytes), digest, "byte-exact (sha256 matches the pod's)");
        const [c, d] = await Promise.all([fetch(`${base}/big.bin`), fetch(`${base}/big.bin`)]);
        const [cb, db] = await Promise.all([c.arrayBuffer(), d.arrayBuffer()]);
        t.ok(sha(new Uint8Array(cb)) === digest && sha(new Uint8Array(db)) === digest, 'two concurrent 5 MB downloads, both byte-exact');

        // Nothing listens on 9999: the error reaches kubectl through the apiserver; it exits 1.
        const sock = connect(closed, '127.0.0.1');
        sock.on('error', () => undefined);
        sock.write('GET / HTTP/1.0\r\n\r\n');
        const code = await within(fwd.exited, 20_000, 'kubectl exit after the error');
        sock.destroy();
        t.equal(code, 1, 'exit 1');
        // kubectl ≤ 1.33: `an error occurred forwarding L -> 9999: …`; 1.37 logs it structured.
        const refused = new RegExp(
          `an error occurred forwarding ${closed} -> 9999: error forwarding port 9999 to pod [0-9a-f]+, uid : .*Connection refused` +
            `|"An error occurred forwarding" err="error forwarding port 9999 to pod [0-9a-f]+, uid : .*Connection refused" localPort=${closed} remotePort=9999`,
        );
        t.match(fwd.out() + fwd.err(), refused, 'the refusal reaches kubectl', { stderr: fwd.err() });
      });
    });
  }

  await t.test('logs --previous after a restart', async (t) => {
    const before = await running(cp, 'chatty');
    const id = before.status?.containerStatuses?.[0]?.containerID?.replace('docker://', '') ?? '';
    t.match(id, /^[0-9a-f]{64}$/, 'the apiserver has the container ID');
    await dockerCLI('kill', id);
    await waitFor('restarted (apiserver)', async () => {
      const c = (await apiPod(cp, 'chatty'))?.status?.containerStatuses?.[0];
      return c?.restartCount === 1 && c.state?.running && c.lastState?.terminated ? true : undefined;
    });
    await waitFor('new instance logged', async () => {
      const r = await cp.kubectl(['logs', 'chatty']);
      return r.stdout.includes('line20\n') ? true : undefined;
    });
    for (const version of VERSIONS) {
      const previous = await cp.kubectl(['logs', 'chatty', '--previous'], { version });
      t.equal(previous.code, 0, previous.stderr);
      t.equal(previous.stdout, full, `${version}: the previous instance's log`);
      const current = await cp.kubectl(['logs', 'chatty'], { version });
      t.equal(current.code, 0, current.stderr);
      t.not(bootOf(current.stdout), bootOf(full), `${version}: the current log is the new instance`);
    }
  });

  await t.test('kubectl debug: an ephemeral container joins the target container\'s processes', async (t) => {
    const debug = await cp.kubectl(['debug', 'shell', `--image=${BUSYBOX}`, '--image-pull-policy=Never', '--target=app', '-c', 'debugger', '--', 'sleep', '3601']);
    t.equal(debug.code, 0, debug.stderr);
    const status = await waitFor('debugger running (apiserver)', async () => {
      const c = (await apiPod(cp, 'shell'))?.status?.ephemeralContainerStatuses?.find((s) => s.name === 'debugger');
      return c?.state?.running ? c : undefined;
    });
    t.match(status.containerID, /^docker:\/\/[0-9a-f]{64}$/);
    const ps = await cp.kubectl(['exec', 'shell', '-c', 'debugger', '--', 'ps', '-o', 'args']);
    t.equal(ps.code, 0, ps.stderr);
    t.match(ps.stdout, /^sleep 3600$/m, "the app's sleep is visible from the debugger (PID namespace of --target)");
    const app = await running(cp, 'shell');
    t.equal(app.status?.containerStatuses?.find((c) => c.name === 'app')?.restartCount, 0, 'the target kept running');
  });

  await waitFor('every session closed', async () => (node.nodelet.sessions.size === 0 ? true : undefined), 10_000).then(
    () => t.pass('every streaming session closed'),
    (err: unknown) => t.fail(String(err)),
  );
});
