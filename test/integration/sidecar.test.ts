import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Event, EventList, Pod } from '../../src/api/types.js';
import { BUSYBOX } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';

/**
 * Sidecars (init containers with `restartPolicy: Always`) against the real engine: the startup
 * probe holds the next init container and the app back, readiness gates the pod's Ready, a failed
 * liveness probe restarts the sidecar and leaves the app alone, postStart and preStop hooks run in
 * the sidecar, and on termination the app stops first, then the sidecars in reverse order of
 * declaration (pkg/kubelet/kuberuntime/kuberuntime_termination_order.go). The memory-backed
 * emptyDir keeps tmpfs's sticky bit under fsGroup (3777).
 */
t.setTimeout(240_000);

const node = await startTestNode(t);

async function run(pod: string, container: string, cmd: string): Promise<string> {
  const res = await fetch(`${node.url}/run/default/${pod}-${node.nodeName}/${container}?cmd=${encodeURIComponent(cmd)}`, { method: 'POST' });
  return res.text();
}
const init = (p: Pod | undefined, name: string) => p?.status?.initContainerStatuses?.find((c) => c.name === name);
const app = (p: Pod | undefined) => p?.status?.containerStatuses?.find((c) => c.name === 'app');
const ready = (p: Pod | undefined) => p?.status?.conditions?.find((c) => c.type === 'Ready')?.status;
async function events(): Promise<Event[]> {
  const { body } = await node.get<EventList>(`/api/v1/namespaces/default/events?fieldSelector=involvedObject.name=side-${node.nodeName}`);
  return body.items;
}

t.test('sidecar probes, hooks and termination order', async (t) => {
  const out = await mkdtemp(join(tmpdir(), 'nodelet-sidecar-'));
  const log = join(out, 'log');
  const say = (what: string) => `echo ${what} >> /out/log`;
  const mounts = `[{ name: out, mountPath: /out }, { name: shared, mountPath: /shared }, { name: mem, mountPath: /mem }]`;
  await node.writeManifest('side.yaml', `apiVersion: v1
kind: Pod
metadata: { name: side }
spec:
  terminationGracePeriodSeconds: 30
  securityContext: { fsGroup: 1234 }
  volumes:
  - { name: out, hostPath: { path: ${out}, type: Directory } }
  - { name: shared, emptyDir: {} }
  - { name: mem, emptyDir: { medium: Memory } }
  initContainers:
  - name: s1
    image: ${BUSYBOX}
    restartPolicy: Always
    command: [sh, -c, "trap 'cat /shared/prestop >> /out/log; ${say('s1-term')}; exit 0' TERM; while true; do sleep 0.2; done"]
    volumeMounts: ${mounts}
    startupProbe: { exec: { command: [test, -f, /tmp/started] }, periodSeconds: 1, failureThreshold: 600 }
    livenessProbe: { exec: { command: [sh, -c, "test ! -f /tmp/sick"] }, periodSeconds: 1, failureThreshold: 1, terminationGracePeriodSeconds: 2 }
    readinessProbe: { exec: { command: [test, -f, /tmp/ready] }, periodSeconds: 1 }
    lifecycle:
      postStart: { exec: { command: [sh, -c, "echo poststart >> /shared/hooks"] } }
      preStop: { exec: { command: [sh, -c, "echo prestop > /shared/prestop"] } }
  - name: s2
    image: ${BUSYBOX}
    restartPolicy: Always
    command: [sh, -c, "trap '${say('s2-term')}; exit 0' TERM; while true; do sleep 0.2; done"]
    volumeMounts: ${mounts}
  containers:
  - name: app
    image: ${BUSYBOX}
    command: [sh, -c, "trap '${say('app-term')}; sleep 1; ${say('app-exit')}; exit 0' TERM; while true; do sleep 0.2; done"]
    volumeMounts: ${mounts}
`);

  // The startup probe fails: s2 and the app wait.
  await node.waitFor('s1 running', async () => (init(await node.pod('side'), 's1')?.state?.running ? true : undefined), 60_000);
  await node.waitFor('two failed startup probes', async () => ((await events()).filter((e) => e.reason === 'Unhealthy' && /^Startup probe failed/.test(e.message ?? '')).reduce((n, e) => n + (e.count ?? 1), 0) >= 2 ? true : undefined), 30_000);
  let p = await node.pod('side');
  t.equal(init(p, 's1')?.started, false, 's1 is not started');
  t.notOk(init(p, 's2')?.state?.running, 's2 waits for s1 to start');
  t.notOk(app(p)?.state?.running, 'the app waits');
  t.equal(await run('side', 's1', 'cat /shared/hooks'), 'poststart\n', 'postStart ran in the sidecar');

  // Started: the next ones run; not ready until the readiness probe passes.
  await run('side', 's1', 'touch /tmp/started');
  p = await node.waitFor('s2 and the app running', async () => {
    const x = await node.pod('side');
    return init(x, 's2')?.state?.running && app(x)?.state?.running ? x : undefined;
  }, 60_000);
  t.equal(init(p, 's1')?.started, true);
  t.equal(init(p, 's1')?.ready, false, 's1 is not ready yet');
  t.equal(ready(p), 'False', 'an unready sidecar keeps the pod not Ready');
  await run('side', 's1', 'touch /tmp/ready');
  p = await node.waitFor('pod Ready', async () => {
    const x = await node.pod('side');
    return ready(x) === 'True' ? x : undefined;
  }, 30_000);
  t.equal(init(p, 's1')?.ready, true);
  t.equal(await run('side', 'app', 'stat -c %a /mem'), '3777\n', 'memory emptyDir with fsGroup: setgid and tmpfs sticky, world-writable');

  // A failing liveness probe restarts s1; the app is untouched.
  const appBefore = app(p);
  await run('side', 's1', 'touch /tmp/sick');
  p = await node.waitFor('s1 restarted by liveness', async () => {
    const x = await node.pod('side');
    return (init(x, 's1')?.restartCount ?? 0) >= 1 && init(x, 's1')?.state?.running ? x : undefined;
  }, 60_000);
  t.equal(app(p)?.restartCount, 0, 'the app did not restart');
  t.equal(app(p)?.containerID, appBefore?.containerID, 'the same app container');
  t.ok((await events()).some((e) => e.reason === 'Killing' && e.message === 'Init container s1 failed liveness probe'), 'Killing event of the sidecar');
  t.equal(await run('side', 's1', 'cat /shared/hooks'), 'poststart\npoststart\n', 'postStart ran again in the new instance');

  // Termination: the app first, then s2, then s1 (after its preStop wrote into the shared emptyDir).
  await run('side', 'app', 'rm -f /shared/prestop');
  await writeFile(log, '');
  await node.removeManifest('side.yaml');
  const text = await node.waitFor('every container stopped', async () => {
    const x = await readFile(log, 'utf8');
    return x.includes('s1-term') ? x : undefined;
  }, 60_000);
  const lines = text.trim().split('\n');
  t.same(lines, ['app-term', 'app-exit', 's2-term', 'prestop', 's1-term'], 'app exits before the sidecars get SIGTERM; s2 before s1; s1 saw its preStop output');
});
