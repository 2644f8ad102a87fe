import t from 'tap';
import type { Event, EventList, Pod } from '../../src/api/types.js';
import { BUSYBOX } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';

/**
 * The pod lifecycle against the real engine: liveness restarts with an Unhealthy event,
 * readiness flipping READY, httpGet and tcpSocket probes reaching busybox httpd on the pod's own
 * loopback (network none), init containers in order before the app (and their failures under
 * each restart policy), postStart and preStop hooks, termination messages, CPU shares and
 * OOMKilled.
 */
t.setTimeout(240_000);

const node = await startTestNode(t);

async function run(pod: string, container: string, cmd: string): Promise<string> {
  const res = await fetch(`${node.url}/run/default/${pod}-${node.nodeName}/${container}?cmd=${encodeURIComponent(cmd)}`, { method: 'POST' });
  return res.text();
}
const status = (p: Pod | undefined, name = 'main') => p?.status?.containerStatuses?.find((c) => c.name === name);
async function events(name: string): Promise<Event[]> {
  const { body } = await node.get<EventList>(`/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=${name}-${node.nodeName}`);
  return body.items;
}

const pod = (name: string, spec: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 1
${spec}`;

t.test('a failing liveness probe restarts the container and records Unhealthy with the output', async (t) => {
  await node.writeManifest('live.yaml', pod('live', `  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, "sleep 3600"]
    livenessProbe:
      exec: { command: [sh, -c, "if [ -f /tmp/sick ]; then echo feeling-sick; exit 1; fi"] }
      periodSeconds: 1
      failureThreshold: 2
`));
  const first = await node.waitFor('live running', async () => (status(await node.pod('live'))?.state?.running ? await node.pod('live') : undefined), 60_000);
  t.equal(status(first)?.restartCount, 0);
  await run('live', 'main', 'touch /tmp/sick');
  const restarted = await node.waitFor('restarted by liveness', async () => {
    const p = await node.pod('live');
    return (status(p)?.restartCount ?? 0) >= 1 && status(p)?.state?.running ? p : undefined;
  }, 60_000);
  t.not(status(restarted)?.containerID, status(first)?.containerID, 'a new container instance');
  const evs = await events('live');
  t.ok(evs.some((e) => e.reason === 'Unhealthy' && /^Liveness probe failed: feeling-sick/.test(e.message ?? '')), 'Unhealthy event with the probe output');
  t.ok(evs.some((e) => e.reason === 'Killing' && /failed liveness probe, will be restarted/.test(e.message ?? '')), 'Killing event names the probe');
  await node.removeManifest('live.yaml');
});

// The probes' verdicts are what this test is about, not their speed: the default timeoutSeconds
// (1 s) covers a Docker exec round trip (exec probe) or the first in-namespace relay of the pod (a
// helper process spawned on demand, httpGet and tcpSocket) on a quiet machine, not on a loaded 2-core
// CI machine, where a probe that timed out counts as failed: three in a row would restart `web` (its
// tcpSocket liveness probe), and `main` might never read ready. A probe that really fails (no file,
// nothing listening) fails at once, whatever its timeout. The `closed` pod keeps its 5 s: a tcpSocket
// probe that times out while dialing must read as failed (it once read as passed, and that pod went
// ready on a loaded machine; src/kubelet/prober/runtime-io.ts).
const PROBE_TIMEOUT_S = 15;

t.test('readiness: READY follows the probe; httpGet and tcpSocket probes reach httpd on the pod loopback', async (t) => {
  await node.writeManifest('ready.yaml', pod('ready', `  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, "sleep 3600"]
    readinessProbe:
      exec: { command: [test, -f, /tmp/ready] }
      periodSeconds: 1
      timeoutSeconds: ${PROBE_TIMEOUT_S}
  - name: web
    image: ${BUSYBOX}
    command: [sh, -c, "mkdir -p /www && echo ok > /www/healthz && httpd -f -p 127.0.0.1:8080 -h /www"]
    ports: [{ name: http, containerPort: 8080 }]
    readinessProbe:
      httpGet: { path: /healthz, port: http }
      periodSeconds: 1
      timeoutSeconds: ${PROBE_TIMEOUT_S}
    livenessProbe:
      tcpSocket: { port: 8080 }
      periodSeconds: 1
      timeoutSeconds: ${PROBE_TIMEOUT_S}
`));
  const notReady = await node.waitFor('web ready, main not', async () => {
    const p = await node.pod('ready');
    return status(p, 'web')?.ready === true && status(p, 'main')?.state?.running ? p : undefined;
  }, 60_000);
  t.equal(status(notReady, 'main')?.ready, false, 'main is not ready before its probe passes');
  t.equal(notReady.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  t.equal(notReady.status?.conditions?.find((c) => c.type === 'ContainersReady')?.status, 'False');
  await run('ready', 'main', 'touch /tmp/ready');
  const ready = await node.waitFor('main ready', async () => {
    const p = await node.pod('ready');
    return status(p, 'main')?.ready ? p : undefined;
  }, 30_000);
  t.equal(ready.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
  await run('ready', 'main', 'rm /tmp/ready');
  await node.waitFor('main unready again (after failureThreshold 3)', async () => (status(await node.pod('ready'), 'main')?.ready === false ? true : undefined), 30_000);
  const web = status(await node.pod('ready'), 'web');
  t.equal(web?.restartCount, 0, 'the tcpSocket liveness probe kept passing');
  t.equal(web?.ready, true, 'the httpGet readiness probe kept passing');
  await node.removeManifest('ready.yaml');

  await node.writeManifest('closed.yaml', pod('closed', `  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, "sleep 3600"]
    readinessProbe:
      tcpSocket: { port: 9999 }
      periodSeconds: 1
      timeoutSeconds: 5
`));
  const refused = await node.waitFor('a refused tcpSocket probe recorded', async () => {
    const evs = await events('closed');
    return evs.find((e) => e.reason === 'Unhealthy' && /^Readiness probe failed: .*Connection refused/.test(e.message ?? ''));
  }, 60_000);
  t.ok(refused, 'a tcpSocket probe of a port nothing listens on fails, and says why');
  t.equal(status(await node.pod('closed'))?.ready, false);
  await node.removeManifest('closed.yaml');
});

t.test('init containers run in order, to completion, before the app', async (t) => {
  await node.writeManifest('init.yaml', pod('init', `  volumes: [{ name: work, emptyDir: {} }]
  initContainers:
  - name: first
    image: ${BUSYBOX}
    command: [sh, -c, "echo one >> /work/log"]
    volumeMounts: [{ name: work, mountPath: /work }]
  - name: second
    image: ${BUSYBOX}
    command: [sh, -c, "sleep 1; echo two >> /work/log"]
    volumeMounts: [{ name: work, mountPath: /work }]
  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, "echo app >> /work/log; sleep 3600"]
    volumeMounts: [{ name: work, mountPath: /work }]
`));
  const p = await node.waitFor('app running', async () => (status(await node.pod('init'))?.state?.running ? await node.pod('init') : undefined), 60_000);
  t.same(p.status?.initContainerStatuses?.map((s) => [s.name, s.state?.terminated?.exitCode, s.state?.terminated?.reason]), [
    ['first', 0, 'Completed'],
    ['second', 0, 'Completed'],
  ]);
  t.equal(p.status?.conditions?.find((c) => c.type === 'Initialized')?.status, 'True');
  t.equal(await run('init', 'main', 'cat /work/log'), 'one\ntwo\napp\n', 'in order, the app last');
  await node.removeManifest('init.yaml');
});

t.test('a failing init container under restartPolicy Never fails the pod; the app never starts', async (t) => {
  await node.writeManifest('bad-init.yaml', pod('badinit', `  restartPolicy: Never
  initContainers:
  - name: setup
    image: ${BUSYBOX}
    command: [sh, -c, "exit 7"]
  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, "sleep 3600"]
`));
  const failed = await node.waitFor('pod Failed', async () => {
    const p = await node.pod('badinit');
    return p?.status?.phase === 'Failed' ? p : undefined;
  }, 60_000);
  t.equal(failed.status?.initContainerStatuses?.[0]?.state?.terminated?.exitCode, 7);
  t.equal(status(failed)?.state?.waiting?.reason, 'PodInitializing', 'the app container waits and never runs');
  t.equal(status(failed)?.restartCount, 0);
  await node.removeManifest('bad-init.yaml');
});

t.test('a failing init container under restartPolicy Always is retried with back-off', async (t) => {
  await node.writeManifest('retry-init.yaml', pod('retryinit', `  volumes: [{ name: work, emptyDir: {} }]
  initContainers:
  - name: setup
    image: ${BUSYBOX}
    command: [sh, -c, "echo x >> /work/tries; [ $(wc -l < /work/tries) -ge 2 ]"]
    volumeMounts: [{ name: work, mountPath: /work }]
  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, "sleep 3600"]
`));
  const p = await node.waitFor('app running after the second try', async () => (status(await node.pod('retryinit'))?.state?.running ? await node.pod('retryinit') : undefined), 60_000);
  t.equal(p.status?.initContainerStatuses?.[0]?.restartCount, 1, 'one retry');
  t.equal(p.status?.initContainerStatuses?.[0]?.lastState?.terminated?.exitCode, 1, 'the failed first attempt is the last state');
  await node.removeManifest('retry-init.yaml');
});

t.test('postStart runs right after the start; a failing postStart kills the container, which restarts', async (t) => {
  await node.writeManifest('hooks.yaml', pod('hooks', `  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, "sleep 3600"]
    lifecycle:
      postStart: { exec: { command: [sh, -c, "echo hook-ran > /tmp/poststart"] } }
  - name: broken
    image: ${BUSYBOX}
    command: [sh, -c, "sleep 3600"]
    lifecycle:
      postStart: { exec: { command: [sh, -c, "echo no-good; exit 5"] } }
`));
  await node.waitFor('main running', async () => (status(await node.pod('hooks'))?.state?.running ? true : undefined), 60_000);
  t.equal(await run('hooks', 'main', 'cat /tmp/poststart'), 'hook-ran\n');
  await node.waitFor('broken restarted after its hook failed', async () => ((status(await node.pod('hooks'), 'broken')?.restartCount ?? 0) >= 1 ? true : undefined), 60_000);
  const evs = await events('hooks');
  t.ok(evs.some((e) => e.reason === 'FailedPostStartHook' && /for Container "broken" failed - error: no-good/.test(e.message ?? '')), 'FailedPostStartHook with the output');
  await node.removeManifest('hooks.yaml');
});

t.test('preStop runs before SIGTERM when the pod goes away', async (t) => {
  const { mkdtemp, readFile } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const shared = await mkdtemp(join(tmpdir(), 'nodelet-prestop-'));
  await node.writeManifest('prestop.yaml', pod('prestop', `  volumes: [{ name: out, hostPath: { path: ${shared}, type: Directory } }]
  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, "trap 'echo term >> /out/log; exit 0' TERM; while true; do sleep 0.2; done"]
    volumeMounts: [{ name: out, mountPath: /out }]
    lifecycle:
      preStop: { exec: { command: [sh, -c, "echo prestop >> /out/log"] } }
`));
  await node.waitFor('prestop running', async () => (status(await node.pod('prestop'))?.state?.running ? true : undefined), 60_000);
  await node.removeManifest('prestop.yaml');
  const log = await node.waitFor('hook and SIGTERM recorded', async () => {
    const text = await readFile(join(shared, 'log'), 'utf8').catch(() => '');
    return text.includes('term') ? text : undefined;
  }, 60_000);
  t.equal(log, 'prestop\nterm\n', 'the hook first, then SIGTERM');
});

t.test('termination messages: the file, and the log tail with FallbackToLogsOnError', async (t) => {
  await node.writeManifest('msg.yaml', pod('msg', `  restartPolicy: Never
  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, "printf 'all done' > /dev/termination-log; exit 3"]
  - name: custom
    image: ${BUSYBOX}
    command: [sh, -c, "echo custom-path > /tmp/my-message"]
    terminationMessagePath: /tmp/my-message
  - name: fallback
    image: ${BUSYBOX}
    command: [sh, -c, "echo oops-from-log; exit 4"]
    terminationMessagePolicy: FallbackToLogsOnError
`));
  const done = await node.waitFor('all three exited', async () => {
    const p = await node.pod('msg');
    return p?.status?.containerStatuses?.every((c) => c.state?.terminated) ? p : undefined;
  }, 60_000);
  t.same([status(done)?.state?.terminated?.exitCode, status(done)?.state?.terminated?.message], [3, 'all done']);
  t.equal(status(done, 'custom')?.state?.terminated?.message, 'custom-path\n');
  t.equal(status(done, 'fallback')?.state?.terminated?.message, 'oops-from-log\n');
  t.equal(done.status?.phase, 'Failed');
  await node.removeManifest('msg.yaml');
});

t.test('resources: CPU requests become shares; a container over its memory limit is OOMKilled', async (t) => {
  const { testDocker } = await import('../helpers/docker.js');
  await node.writeManifest('res.yaml', pod('res', `  restartPolicy: Never
  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, "sleep 3600"]
    resources: { requests: { cpu: 250m }, limits: { cpu: 500m, memory: 64Mi } }
  - name: hog
    image: ${BUSYBOX}
    command: [sh, -c, "x=$(head -c 200000000 /dev/zero | tr '\\\\0' a); sleep 3600"]
    resources: { limits: { memory: 32Mi } }
`));
  const p = await node.waitFor('hog terminated', async () => {
    const got = await node.pod('res');
    return status(got, 'hog')?.state?.terminated && status(got)?.state?.running ? got : undefined;
  }, 60_000);
  // Podman 4.3.1 here does not notice the OOM kill (runtime/docker/engine.ts, reportsOOMKilled).
  t.equal(status(p, 'hog')?.state?.terminated?.reason, node.nodelet.runtime.currentEngine?.quirks.reportsOOMKilled === false ? 'Error' : 'OOMKilled');
  t.equal(status(p, 'hog')?.state?.terminated?.exitCode, 137);
  const id = status(p)?.containerID?.replace('docker://', '') ?? '';
  const info = await testDocker().getContainer(id).inspect();
  t.same([info.HostConfig.CpuShares, info.HostConfig.NanoCpus, info.HostConfig.Memory], [256, 500_000_000, 64 * 1024 * 1024]);
  await node.removeManifest('res.yaml');
});

t.test('activeDeadlineSeconds: the pod fails with DeadlineExceeded, its containers stop and do not restart', async (t) => {
  await node.writeManifest('deadline.yaml', pod('deadline', `  activeDeadlineSeconds: 2
  containers:
  - name: main
    image: ${BUSYBOX}
    command: [sh, -c, "sleep 3600"]
`));
  const failed = await node.waitFor('deadline exceeded', async () => {
    const p = await node.pod('deadline');
    return p?.status?.phase === 'Failed' && status(p)?.state?.terminated ? p : undefined;
  }, 60_000);
  t.same([failed.status?.reason, failed.status?.message], ['DeadlineExceeded', 'Pod was active on the node longer than the specified deadline']);
  t.equal(status(failed)?.restartCount, 0, 'not restarted');
  t.ok((await events('deadline')).some((e) => e.reason === 'DeadlineExceeded'), 'DeadlineExceeded event');
  await node.removeManifest('deadline.yaml');
});

t.test("a liveness kill uses the probe's terminationGracePeriodSeconds over the pod's", async (t) => {
  await node.writeManifest('probe-grace.yaml', `apiVersion: v1
kind: Pod
metadata: { name: probe-grace }
spec:
  terminationGracePeriodSeconds: 600
  volumes: [{ name: work, emptyDir: {} }]
  containers:
  - name: main
    image: ${BUSYBOX}
    # The first instance ignores SIGTERM; the one the probe restarts exits on it, so the pod's
    # removal at the end does not wait out the 600 s.
    command: [sh, -c, "if [ -f /work/once ]; then trap 'exit 0' TERM; else touch /work/once; trap '' TERM; fi; sleep 3600 & wait; sleep 3600"]
    volumeMounts: [{ name: work, mountPath: /work }]
    livenessProbe:
      exec: { command: [sh, -c, "test ! -f /tmp/sick"] }
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 1
`);
  await node.waitFor('probe-grace running', async () => (status(await node.pod('probe-grace'))?.state?.running ? true : undefined), 60_000);
  await run('probe-grace', 'main', 'touch /tmp/sick');
  // SIGTERM is ignored: only the probe's 1 s grace period (not the pod's 600 s) lets it restart.
  const restarted = await node.waitFor('restarted after the probe grace period', async () => {
    const p = await node.pod('probe-grace');
    return (status(p)?.restartCount ?? 0) >= 1 ? p : undefined;
  }, 60_000);
  t.equal(status(restarted)?.lastState?.terminated?.exitCode, 137, 'killed by SIGKILL once the probe grace period ran out');
  await node.removeManifest('probe-grace.yaml');
  const { testDocker } = await import('../helpers/docker.js');
  const second = testDocker().getContainer(status(restarted)?.containerID?.replace('docker://', '') ?? '');
  await node.waitFor('the second instance stopped (it exits on SIGTERM)', async () => ((await second.inspect().then((i) => i.State.Running, () => false)) ? undefined : true), 60_000);
});
