import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { BUSYBOX, removeNodeContainers, testDocker, testDockerHost } from '../helpers/docker.js';
import { freePort } from '../helpers/net.js';
import { NODELET_CLI as cli, NodeletProcess } from '../helpers/nodelet-process.js';
import { waitFor } from '../helpers/wait.js';

// The built CLI (`cli`), exactly as `npx nodelet` runs it (`npm test` builds first).

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('node', [cli, ...args], { timeout: 20_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}

t.before(() => {
  if (!existsSync(cli)) throw new Error(`${cli} is missing: run \`npm run build\` (npm test does)`);
});

t.test('--help lists the kubelet flags', async (t) => {
  const { code, stdout } = await run(['--help']);
  t.equal(code, 0);
  for (const flag of ['--address', '--port', '--pod-manifest-path', '--file-check-frequency', '--hostname-override', '--node-ip', '--docker-endpoint', '--pod-infra-container-image', '--root-dir', '--config', '--v', '--logging-format']) {
    t.match(stdout, flag);
  }
});

t.test('bad flags fail fast with one line and exit code 2', async (t) => {
  for (const args of [['--bogus'], ['--port', 'abc'], ['--port=70000'], ['--logging-format=xml'], ['--file-check-frequency=soon'], ['--address=0.0.0.0'], ['--config=/nonexistent.yaml']]) {
    const { code, stderr } = await run(args);
    t.equal(code, 2, args.join(' '));
    t.equal(stderr.trim().split('\n').length, 1, `one line for ${args.join(' ')}: ${stderr}`);
  }
});

t.test('an eviction threshold nodelet cannot parse stops it at start with exit code 2 and the reason', async (t) => {
  const { code, stdout, stderr } = await run(['--eviction-hard=memory.available<lots', '--eviction-soft=memory.available<1Gi']);
  t.equal(code, 2);
  t.match(stdout + stderr, /invalid eviction settings: /);
});

t.test('the CLI serves static pods from a --config file, flags overriding it', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-cli-'));
  const node = `cli${process.pid}`;
  t.teardown(async () => {
    await removeNodeContainers(testDocker(), node);
    await rm(dir, { recursive: true, force: true });
  });
  await writeFile(join(dir, 'pod.yaml'), `apiVersion: v1\nkind: Pod\nmetadata: {name: hello}\nspec:\n  terminationGracePeriodSeconds: 0\n  containers: [{name: c, image: ${BUSYBOX}, imagePullPolicy: Never, command: [sleep, "600"]}]\n`);
  await writeFile(join(dir, 'kubelet.yaml'), `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: ${dir}\nport: 1\naddress: 127.0.0.1\n`);
  const port = await freePort();
  // Plain HTTP and anonymous requests, so fetch needs no credentials (secure-defaults.test.ts covers the default).
  const nodelet = await NodeletProcess.start(t, {
    url: `http://127.0.0.1:${port}`,
    // A dotfile: `dir` is also the static pod path, whose file source skips dotfiles.
    logFile: join(dir, '.nodelet.log'),
    args: ['--config', join(dir, 'kubelet.yaml'), '--port', String(port), '--hostname-override', node, '--docker-endpoint', testDockerHost(), '--insecure-dev', '--logging-format=json', '-v=2'],
  });
  const phase = await waitFor(
    `hello-${node} Running`,
    async () => {
      const res = await fetch(`http://127.0.0.1:${port}/pods`);
      const list = (await res.json()) as { items: { metadata: { name: string }; status?: { phase?: string } }[] };
      const p = list.items.find((p) => p.metadata.name === `hello-${node}`)?.status?.phase;
      return p === 'Running' ? p : undefined;
    },
    30_000,
    200,
  ).catch((err: unknown) => String(err));
  t.equal(phase, 'Running', nodelet.logTail(2000));
  t.equal(await nodelet.stop(), 0, 'SIGTERM stops nodelet cleanly');
  t.match(nodelet.log(), /"msg":"nodelet is serving"/);
});
