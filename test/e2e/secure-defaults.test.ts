import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { parseKubeconfig } from '../../src/config/kubeconfig.js';
import { freePort } from '../helpers/net.js';
import { BUSYBOX, removeNodeContainers, testDocker, testDockerHost } from '../helpers/docker.js';
import { kubectlBinary } from '../helpers/kubectl.js';
import { unmountUnder } from '../helpers/nodelet.js';
import { NODELET_CLI as cli, NodeletProcess } from '../helpers/nodelet-process.js';
import { waitFor } from '../helpers/wait.js';

/**
 * Secure by default on loopback too: the built CLI on its defaults (no credential
 * flag) serves HTTPS only, refuses anonymous requests, and writes `<root-dir>/kubeconfig` that a
 * real kubectl uses as it is; a restart reuses the CA and the token; `--insecure-dev` brings the
 * plain-HTTP development posture back, with a warning.
 */

const KUBECTL = '1.33';

interface Running {
  nodelet: NodeletProcess;
  port: number;
  /** The fields of the `nodelet is serving` line. */
  serving: { url: string; tls: boolean; adminKubeconfig?: string; anonymousAuth: boolean };
  /** Every JSON log line so far. */
  readonly lines: { level: number; msg: string; [k: string]: unknown }[];
  stop(): Promise<number | null>;
}

/** nodelet's JSON log lines (other lines skipped). */
function jsonLines(text: string): Running['lines'] {
  const lines: Running['lines'] = [];
  for (const line of text.split('\n')) {
    try {
      lines.push(JSON.parse(line) as Running['lines'][number]);
    } catch {
      continue;
    }
  }
  return lines;
}

/** Starts the CLI and resolves with its `nodelet is serving` line (rejects if it exits first). */
async function startCli(t: Test, rootDir: string, manifests: string, node: string, extra: string[] = []): Promise<Running> {
  const port = await freePort();
  const scheme = extra.includes('--insecure-dev') ? 'http' : 'https';
  const nodelet = await NodeletProcess.start(t, {
    url: `${scheme}://127.0.0.1:${port}`,
    // One log per start, beside the root dir (which the tests inspect file by file).
    logFile: `${rootDir}.${port}.log`,
    args: ['--root-dir', rootDir, '--pod-manifest-path', manifests, '--file-check-frequency', '1s', '--port', String(port), '--hostname-override', node, '--docker-endpoint', testDockerHost(), '--logging-format=json', '-v=2', ...extra],
  });
  // /healthz may answer a moment before the line is written (it follows the start of every part).
  const serving = await waitFor('the `nodelet is serving` line', () => {
    nodelet.alive();
    return jsonLines(nodelet.log()).find((l) => l.msg === 'nodelet is serving');
  });
  return {
    nodelet,
    port,
    serving: serving as unknown as Running['serving'],
    get lines() {
      return jsonLines(nodelet.log());
    },
    stop: () => nodelet.stop(),
  };
}

/** GET over HTTPS trusting only `ca`. */
function httpsGet(url: string, ca: Buffer, token?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, headers: token ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function kubectl(kubeconfig: string, home: string, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    // Only KUBECONFIG tells kubectl where to go: no --kubeconfig, no --server.
    const child = spawn(kubectlBinary(KUBECTL), args, {
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, KUBECONFIG: kubeconfig },
      // No terminal: kubectl answers a 401 with its error instead of prompting for a password.
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

const mode = (path: string) => statSync(path).mode & 0o777;

t.before(() => {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run \`npm run build\` (npm test does)`);
});

t.test('the defaults: HTTPS only, anonymous 401, a kubeconfig kubectl uses at once, reused across a restart', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-secure-'));
  const node = `sec${process.pid}`;
  const rootDir = join(dir, 'root');
  const manifests = join(dir, 'manifests');
  await mkdir(manifests);
  await writeFile(join(manifests, 'hello.yaml'), `apiVersion: v1\nkind: Pod\nmetadata: {name: hello}\nspec:\n  terminationGracePeriodSeconds: 0\n  containers: [{name: c, image: ${BUSYBOX}, imagePullPolicy: Never, command: [sleep, "600"]}]\n`);
  t.teardown(async () => {
    await removeNodeContainers(testDocker(), node);
    await unmountUnder(dir);
    await rm(dir, { recursive: true, force: true });
  });

  const first = await startCli(t, rootDir, manifests, node);
  const kubeconfigPath = join(rootDir, 'kubeconfig');
  t.equal(first.serving.tls, true, 'TLS served');
  t.equal(first.serving.anonymousAuth, false, 'anonymous off');
  t.equal(first.serving.url, `https://127.0.0.1:${first.port}`);
  t.equal(first.serving.adminKubeconfig, kubeconfigPath, 'the kubeconfig is <root-dir>/kubeconfig');
  const printed = first.lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('Admin kubeconfig: '));
  t.equal(printed?.msg, `Admin kubeconfig: KUBECONFIG=${kubeconfigPath} kubectl get pods`, 'its path is printed at start');
  t.notOk(first.lines.some((l) => /INSECURE/.test(l.msg)), 'no insecure warning');

  const pki = join(rootDir, 'pki');
  for (const secret of [kubeconfigPath, join(pki, 'nodelet-ca.key'), join(pki, 'nodelet-server.key'), join(pki, 'admin-token')]) {
    t.equal(mode(secret), 0o600, `${secret} is 0600`);
  }
  const conn = parseKubeconfig(readFileSync(kubeconfigPath, 'utf8'), rootDir);
  t.equal(conn.server, `https://127.0.0.1:${first.port}`);
  t.equal(conn.insecureSkipTLSVerify, false, 'the CA is verified, not skipped');
  const ca = conn.ca ?? Buffer.alloc(0);
  const token = conn.token ?? '';
  t.same(ca, readFileSync(join(pki, 'nodelet-ca.crt')), 'the kubeconfig embeds the generated CA');
  t.equal(token, readFileSync(join(pki, 'admin-token'), 'utf8').trim(), 'and the generated token');

  // Plain HTTP is not served: the TLS listener drops a clear-text request without an answer.
  const plain = await fetch(`http://127.0.0.1:${first.port}/healthz`).then(
    (res) => `answered ${res.status}`,
    (err: unknown) => (err instanceof Error ? 'refused' : String(err)),
  );
  t.equal(plain, 'refused', 'no plain-HTTP answer');
  t.same(await httpsGet(`${conn.server}/pods`, ca), { status: 401, body: 'Unauthorized\n' }, 'anonymous: 401 (the server certificate verifies against the CA)');
  t.equal((await httpsGet(`${conn.server}/pods`, ca, 'not-the-token')).status, 401, 'another token: 401');
  await waitFor('the static pod listed', async () => {
    const res = await httpsGet(`${conn.server}/pods`, ca, token);
    return res.status === 200 && res.body.includes(`"hello-${node}"`) ? true : undefined;
  });

  const home = join(dir, 'home');
  await mkdir(home);
  const got = await kubectl(kubeconfigPath, home, 'get', 'pods', '-o', 'name');
  t.equal(got.code, 0, `KUBECONFIG=… kubectl get pods: ${got.stderr}`);
  t.match(got.stdout, new RegExp(`^pod/hello-${node}$`, 'm'));
  const denied = await kubectl(join(dir, 'none'), home, 'get', 'pods', '--server', conn.server, '--insecure-skip-tls-verify', '--token', 'not-the-token');
  t.not(denied.code, 0, 'kubectl with another token is refused');
  t.match(denied.stderr, /Unauthorized|provide credentials/);

  t.equal(await first.stop(), 0, 'SIGTERM stops nodelet cleanly');
  const caBefore = readFileSync(join(pki, 'nodelet-ca.crt'));
  const servingBefore = readFileSync(join(pki, 'nodelet-server.crt'));

  const second = await startCli(t, rootDir, manifests, node);
  t.not(second.port, first.port, 'another port this time');
  const conn2 = parseKubeconfig(readFileSync(kubeconfigPath, 'utf8'), rootDir);
  t.equal(conn2.server, `https://127.0.0.1:${second.port}`, 'the kubeconfig follows the new port');
  t.same(conn2.ca, ca, 'the same CA');
  t.equal(conn2.token, token, 'the same token');
  t.same(readFileSync(join(pki, 'nodelet-ca.crt')), caBefore, 'the CA file is not regenerated');
  t.same(readFileSync(join(pki, 'nodelet-server.crt')), servingBefore, 'nor the serving certificate');
  t.notOk(second.lines.some((l) => /^Generated|^Issued/.test(l.msg)), 'nothing generated on restart');
  const again = await kubectl(kubeconfigPath, home, 'get', 'pods', '-o', 'name');
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, `pod/hello-${node}`);
  t.equal(await second.stop(), 0);
});

t.test('--insecure-dev: plain HTTP, anonymous requests allowed, a loud warning, no credentials written', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-insecure-'));
  const node = `insec${process.pid}`;
  t.teardown(async () => {
    await removeNodeContainers(testDocker(), node);
    await rm(dir, { recursive: true, force: true });
  });
  const rootDir = join(dir, 'root');
  const manifests = join(dir, 'manifests');
  await mkdir(manifests);
  const dev = await startCli(t, rootDir, manifests, node, ['--insecure-dev']);
  t.equal(dev.serving.tls, false);
  t.equal(dev.serving.anonymousAuth, true);
  t.equal(dev.serving.url, `http://127.0.0.1:${dev.port}`);
  const warning = dev.lines.find((l) => l.level === 40 && /^INSECURE: --insecure-dev serves plain HTTP/.test(l.msg));
  t.ok(warning, 'the warning is logged at warn level');
  const pods = await fetch(`http://127.0.0.1:${dev.port}/pods`);
  t.equal(pods.status, 200, 'anonymous /pods over plain HTTP');
  t.match(await pods.json(), { kind: 'PodList' });
  // /healthz turns ok after the first relist.
  await waitFor('healthz ok over plain HTTP', async () => {
    const res = await fetch(`http://127.0.0.1:${dev.port}/healthz`);
    return res.status === 200 && (await res.text()) === 'ok' ? true : undefined;
  });
  t.notOk(existsSync(join(rootDir, 'kubeconfig')), 'no kubeconfig written');
  t.notOk(existsSync(join(rootDir, 'pki', 'admin-token')), 'no token generated');
  t.equal(await dev.stop(), 0);
});
