import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { execEcho, execStdin, execStdout, httpPod, logsPod, mbps, runKubectl } from '../../../bench/lib/vs-kubelet-kubectl.js';
import { parseCpuTimes } from '../../../bench/lib/proc.js';

// A stand-in for kubectl: a shell script that answers as `kubectl exec`/`logs` would (its
// arguments after `--kubeconfig K` decide), so the checks of every transfer run without a cluster.
async function fakeKubectl(t: Test, script: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-fake-kubectl-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const bin = join(dir, 'kubectl');
  await writeFile(bin, `#!/bin/sh\nshift 2\n${script}\n`);
  await chmod(bin, 0o755);
  return bin;
}

t.test('runKubectl feeds stdin exactly, counts stdout and keeps its tail', async (t) => {
  const bin = await fakeKubectl(t, 'wc -c');
  const r = await runKubectl(bin, '/k', ['exec', '-i', 'p'], 3 * 65536 + 5);
  t.equal(r.tail.trim(), String(3 * 65536 + 5));
  t.equal(r.bytes, r.tail.length);
  t.ok(r.totalMs >= r.firstByteMs, 'first byte before exit');
});

t.test('runKubectl rejects a non-zero exit with its stderr', async (t) => {
  const bin = await fakeKubectl(t, 'echo "error: pod not found" >&2; exit 1');
  await t.rejects(runKubectl(bin, '/k', ['exec', 'p']), /exited with 1: error: pod not found/);
});

t.test('each figure checks its byte count: a short transfer fails instead of measuring', async (t) => {
  const exact = await fakeKubectl(t, 'case "$1" in exec) [ "$2" = -i ] && exec wc -c; [ "$6" = echo ] && exec echo x; exec head -c 131072 /dev/zero;; logs) exec head -c 1000 /dev/zero;; esac');
  t.equal((await execStdout(exact, '/k', 'p', 131072)).bytes, 131072);
  t.equal((await execStdin(exact, '/k', 'p', 70000)).tail.trim(), '70000');
  t.equal((await execEcho(exact, '/k', 'p')).tail, 'x\n');
  await t.rejects(execStdout(exact, '/k', 'p', 262144), /131072 B of stdout, expected 262144/);
  const lossy = await fakeKubectl(t, 'cat >/dev/null; echo 12');
  await t.rejects(execStdin(lossy, '/k', 'p', 70000), /counted "12" B of stdin, expected 70000/);
  await t.rejects(execEcho(lossy, '/k', 'p'), /printed "12\\n"/);
});

t.test('MB/s is 10^6 bytes per second', async (t) => {
  t.equal(mbps(50e6, 500), 100);
});

t.test('the logs pod writes whole 128-byte lines and exits; the httpd pod is Ready once it listens', async (t) => {
  const l = logsPod('logs-x', 'default', 'n1', 100 * 2 ** 20);
  t.equal(l.spec?.nodeName, 'n1');
  t.equal(l.spec?.restartPolicy, 'Never');
  const cmd = l.spec!.containers[0]!.command!.join(' ');
  const m = /yes (x+) \| head -c (\d+)/.exec(cmd);
  t.ok(m, cmd.slice(0, 40));
  t.equal(m![1]!.length + 1, 128, '127 characters and the newline');
  t.equal(Number(m![2]) % 128, 0, 'whole lines');
  const h = httpPod('pf-x', 'default', 'n2', 2 ** 20);
  t.match(h.spec!.containers[0]!.command!.join(' '), /count=16 .*httpd -f -p 8080 -h \/www/);
  t.same(h.spec!.containers[0]!.readinessProbe?.tcpSocket, { port: 8080 });
});

t.test('CPU times from /proc/PID/stat: own, and with the waited-for children', async (t) => {
  // Fields 14–17 (utime stime cutime cstime) after a command name with spaces and parentheses.
  const stat = '4242 (node (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 700 300 20 0 11 0 1000 0 0';
  t.same(parseCpuTimes(stat, 100), { self: 3, withChildren: 13 });
});
