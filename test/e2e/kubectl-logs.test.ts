import { spawn } from 'node:child_process';
import { Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import t from 'tap';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { kubectlFor } from '../helpers/kubectl.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';

/** `kubectl logs` (1.27 and 1.33) and client-node's `Log` against nodelet's pods/log subresource. */

const VERSIONS = ['1.27', '1.33'] as const;

const chatty = `apiVersion: v1
kind: Pod
metadata: { name: chatty }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - name: app
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "echo boot $(cat /proc/sys/kernel/random/uuid); i=1; while [ $i -le 20 ]; do echo line$i; i=$((i+1)); done; exec sleep 3600"]
`;

// One per kubectl version: a line a second, then the container exits for good.
const ticker = (name: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 0
  containers:
    - name: tick
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "for i in 1 2 3; do echo tick$i; sleep 1; done"]
`;

const TIMESTAMPED = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z line\d+$/;
const lines = (text: string) => text.split('\n').filter((l) => l !== '');
const bootOf = (text: string) => /^boot (\S+)$/m.exec(text)?.[1];

async function running(node: TestNode, name: string): Promise<string> {
  return node.waitFor(`${name} running`, async () => {
    const p = await node.pod(name);
    return p?.status?.containerStatuses?.every((c) => c.state?.running) ? (p.metadata?.name ?? '') : undefined;
  });
}

t.test('kubectl logs and client-node Log', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('chatty.yaml', chatty);
  const pod = await running(node, 'chatty');
  const full = await node.waitFor('chatty logged', async () => {
    const text = await (await fetch(`${node.url}/containerLogs/default/${pod}/app`)).text();
    return text.includes('line20\n') ? text : undefined;
  });
  t.equal(lines(full).length, 21);

  for (const version of VERSIONS) {
    t.test(`kubectl ${version}`, async (t) => {
      const kubectl = await kubectlFor(t, version, node.url);

      const all = await kubectl.run('logs', pod);
      t.equal(all.code, 0, all.stderr);
      t.equal(all.stdout, full, 'logs: the whole log, verbatim');

      const tail = await kubectl.run('logs', pod, '--tail=5', '--timestamps');
      t.equal(tail.code, 0, tail.stderr);
      t.equal(lines(tail.stdout).length, 5);
      t.ok(lines(tail.stdout).every((l) => TIMESTAMPED.test(l)), '--timestamps: the nine-digit prefix');
      t.same(lines(tail.stdout).map((l) => l.slice(31)), lines(full).slice(-5));

      const since = await kubectl.run('logs', pod, '-c', 'app', '--since=1m');
      t.equal(since.code, 0, since.stderr);
      t.equal(since.stdout, full, '--since=1m: all of it was logged within the minute');

      const limited = await kubectl.run('logs', pod, '--limit-bytes=100');
      t.equal(limited.code, 0, limited.stderr);
      t.equal(limited.raw.length, 100);
      t.equal(limited.stdout, full.slice(0, 100));

      const noPrevious = await kubectl.run('logs', pod, '--previous');
      t.equal(noPrevious.code, 1);
      t.match(noPrevious.stderr, /previous terminated container "app" in pod .* not found/);

      const missing = await kubectl.run('logs', 'nopod');
      t.equal(missing.code, 1);
      t.match(missing.stderr, /pods "nopod" not found/);

      // logs -f: lines appear as the container writes them; kubectl exits when it stops.
      const name = `ticker-${version.replace('.', '-')}`;
      await node.writeManifest(`${name}.yaml`, ticker(name));
      const tickerPod = await running(node, name);
      const [cmd, ...args] = kubectl.argv('logs', '-f', tickerPod);
      const started = Date.now();
      const child = spawn(cmd ?? kubectl.bin, args);
      const arrivals: { at: number; text: string }[] = [];
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => arrivals.push({ at: Date.now() - started, text: d.toString() }));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      const ended = Date.now() - started;
      t.equal(code, 0, stderr);
      t.same(lines(arrivals.map((a) => a.text).join('')), ['tick1', 'tick2', 'tick3']);
      const tick3 = arrivals.find((a) => a.text.includes('tick3'));
      const firstAt = arrivals[0]?.at ?? Infinity;
      t.ok(tick3 && tick3.at - firstAt >= 900, `lines arrived while written (first ${firstAt} ms, tick3 ${tick3?.at} ms)`);
      t.ok(ended < 15_000, `kubectl exited when the container stopped (${ended} ms)`);
    });
  }

  t.test('client-node Log with tailLines', async (t) => {
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'nodelet', server: node.url, skipTLSVerify: true }],
      users: [{ name: 'nodelet' }],
      contexts: [{ name: 'nodelet', cluster: 'nodelet', user: 'nodelet' }],
      currentContext: 'nodelet',
    });
    const chunks: Buffer[] = [];
    const finished = new Promise<void>((resolve) => {
      const sink = new Writable({
        write(chunk: Buffer, _e, done) {
          chunks.push(Buffer.from(chunk));
          done();
        },
        final(done) {
          resolve();
          done();
        },
      });
      void new k8s.Log(kc).log('default', pod, 'app', sink, { follow: false, tailLines: 3 });
    });
    await finished;
    t.same(lines(Buffer.concat(chunks).toString()), ['line18', 'line19', 'line20']);
  });

  t.test('--previous after a restart shows the killed instance', async (t) => {
    const id = (await node.pod('chatty'))?.status?.containerStatuses?.[0]?.containerID?.replace('docker://', '') ?? '';
    await dockerCLI('kill', id);
    await node.waitFor('restarted', async () => {
      const c = (await node.pod('chatty'))?.status?.containerStatuses?.[0];
      return c?.restartCount === 1 && c.state?.running ? true : undefined;
    }, 30_000);
    await node.waitFor('new instance logged', async () => {
      const text = await (await fetch(`${node.url}/containerLogs/default/${pod}/app`)).text();
      return text.includes('line20\n') ? text : undefined;
    });
    for (const version of VERSIONS) {
      const kubectl = await kubectlFor(t, version, node.url);
      const previous = await kubectl.run('logs', pod, '--previous');
      t.equal(previous.code, 0, previous.stderr);
      t.equal(previous.stdout, full, `${version}: the previous instance's log`);
      const current = await kubectl.run('logs', pod);
      t.not(bootOf(current.stdout), bootOf(full), `${version}: the current log is the new instance`);
    }
  });
});
