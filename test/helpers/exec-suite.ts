import { createHash, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { BUSYBOX } from './docker.js';
import { kubectlFor } from './kubectl.js';
import { startTestNode, type TestNode } from './nodelet.js';
import { upgradesDuring } from './streaming-metrics.js';

/** One kubectl binary with one transport choice (its default, or forced by env). */
export interface Variant {
  version: string;
  /**
   * The transport kubectl must end up on, checked against nodelet's
   * `nodelet_streaming_upgrades_total` (kubectl falls back from WebSocket to SPDY silently).
   */
  transport: 'spdy' | 'websocket';
  env?: Record<string, string>;
}

export const execPodManifest = `apiVersion: v1
kind: Pod
metadata: { name: shell }
spec:
  terminationGracePeriodSeconds: 0
  containers:
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
`;

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** Waits until every container of the exec pod runs (the attach test ends `catter`, which restarts). */
async function podReady(node: TestNode): Promise<string> {
  return node.waitFor('exec pod running', async () => {
    const pod = await node.pod('shell');
    return pod?.status?.containerStatuses?.every((c) => c.state?.running) ? pod.metadata?.name : undefined;
  }, 30_000);
}

/**
 * The remote-command contract kubectl relies on, run with one kubectl per variant against a real
 * nodelet and Docker: echo, 1 MiB stdin round trip (sha256), exit codes, a TTY with resize,
 * attach, and `cp` of 5 MB both ways.
 */
export async function runExecSuite(t: Test, variants: Variant[]): Promise<void> {
  const node = await startTestNode(t);
  await node.writeManifest('shell.yaml', execPodManifest);
  const pod = await podReady(node);
  const scratch = await mkdtemp(join(tmpdir(), 'nodelet-exec-'));
  t.teardown(() => rm(scratch, { recursive: true, force: true }));
  const random = randomBytes(1024 * 1024);
  const big = randomBytes(5 * 1024 * 1024);
  await writeFile(join(scratch, 'big.bin'), big);

  for (const v of variants) {
    await t.test(`kubectl ${v.version} over ${v.transport}`, async (t) => {
      const kubectl = await kubectlFor(t, v.version, node.url);
      const env = v.env ?? {};
      const run = (opts: { input?: Buffer | string }, ...args: string[]) => kubectl.runWith({ env, ...opts }, ...args);
      // The sessions each call opens, as nodelet counted them: WebSocket is v5 (kubectl offers
      // only v5 there); over SPDY nodelet answers v4 whatever newer version kubectl offers.
      const counted = async <R>(path: 'exec' | 'attach', call: () => Promise<R>, sessions = 1): Promise<R> => {
        const { result, upgrades } = await upgradesDuring(node.url, call);
        t.same(upgrades, { [`${path} ${v.transport} ${v.transport === 'websocket' ? 'v5' : 'v4'}.channel.k8s.io`]: sessions }, `${path} used ${v.transport}`);
        return result;
      };

      const echo = await counted('exec', () => run({}, 'exec', pod, '-c', 'app', '--', 'echo', 'hi'));
      t.equal(echo.code, 0, echo.stderr);
      t.equal(echo.stdout, 'hi\n');

      const cat = await run({ input: random }, 'exec', '-i', pod, '-c', 'app', '--', 'cat');
      t.equal(cat.code, 0, cat.stderr);
      t.equal(cat.raw.length, random.length, '1 MiB back');
      t.equal(sha(cat.raw), sha(random), 'byte-exact');

      for (const n of [0, 3, 42, 255]) {
        const r = await run({}, 'exec', pod, '-c', 'app', '--', 'sh', '-c', `echo out; echo err >&2; exit ${n}`);
        t.equal(r.code, n, `exit ${n}: ${r.stderr}`);
        t.equal(r.stdout, 'out\n');
        t.match(r.stderr, /err\n/);
        if (n !== 0) t.match(r.stderr, `command terminated with exit code ${n}`);
      }

      // A real pty: `script` gives kubectl a terminal of 30x100, which kubectl sends as a resize.
      // Docker API 1.41 has no console size at exec start, so a process that asks for its size
      // the instant it starts races the resize — `docker exec -it c stty size` fails the same
      // way — hence the short sleep before asking.
      const argv = kubectl.argv('exec', '-it', pod, '-c', 'app', '--', 'sh', '-c', 'sleep 0.5; stty size').map((a) => `'${a}'`).join(' ');
      const tty = await new Promise<{ code: number; out: string }>((resolve) => {
        execFile('script', ['-qec', `stty rows 30 cols 100; ${argv}`, '/dev/null'], { env: { ...process.env, ...env, HOME: scratch }, timeout: 30_000 }, (err, stdout) =>
          resolve({ code: err ? 1 : 0, out: stdout }),
        );
      });
      t.equal(tty.code, 0, 'exec -it exits 0');
      t.match(tty.out, /30 100/, 'the terminal size reached the process');

      await podReady(node);
      const attach = await counted('attach', () => run({ input: 'hello-attach\n' }, 'attach', '-i', pod, '-c', 'catter'));
      t.equal(attach.code, 0, attach.stderr);
      t.match(attach.stdout, /hello-attach/);
      await podReady(node);

      const inPod = `/tmp/big-${v.version}-${v.transport}.bin`;
      // An upload is two execs: kubectl checks the destination (`test -d`), then runs `tar`.
      const up = await counted('exec', () => run({}, 'cp', join(scratch, 'big.bin'), `${pod}:${inPod}`, '-c', 'app'), 2);
      t.equal(up.code, 0, up.stderr);
      const back = join(scratch, `back-${v.version}-${v.transport}.bin`);
      const down = await run({}, 'cp', `${pod}:${inPod}`, back, '-c', 'app');
      t.equal(down.code, 0, down.stderr);
      t.equal(sha(await readFile(back)), sha(big), 'cp round trip of 5 MB is byte-exact');
    });
  }
  t.equal(node.nodelet.sessions.size, 0, 'every session closed');
}
