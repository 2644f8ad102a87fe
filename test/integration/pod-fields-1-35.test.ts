import t from 'tap';
import type { Pod } from '../../src/api/types.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';

/**
 * Pod-spec fields newer kubelets turned on, through static pods on the real engine:
 * `hostnameOverride` (the UTS hostname, no domain), `lifecycle.stopSignal` (the engine stops the
 * container with it), `env[].valueFrom.fileKeyRef` (read from an env file an init container
 * wrote), and the refusals: the apiserver's validation of each, and restart rules the kubelet would
 * never read. `RestartAllContainers` has its own file (restart-all-containers.test.ts).
 */
t.setTimeout(180_000);

type Ev = { reason?: string; message?: string };
const events = async (node: TestNode) => (await node.get<{ items: Ev[] }>('/api/v1/events')).body.items;
const logs = async (node: TestNode, pod: string, container: string) => (await node.get<string>(`/containerLogs/default/${pod}-${node.nodeName}/${container}`)).body;

/** The node's FailedValidation event refusing the static pod `name`. */
async function refusal(node: TestNode, name: string) {
  const refused = new RegExp(`pod ${name}-`);
  return node.waitFor(`${name} refused`, async () => (await events(node)).find((e) => e.reason === 'FailedValidation' && refused.test(e.message ?? '')));
}

async function terminated(node: TestNode, name: string) {
  return node.waitFor(`${name} terminated`, async () => (await node.pod(name))?.status?.containerStatuses?.[0]?.state?.terminated, 60_000);
}

t.test('hostnameOverride: the hostname as given, no domain; refused beside hostNetwork', async (t) => {
  const node = await startTestNode(t, { clusterDomain: 'cluster.local' });
  await node.writeManifest('h.yaml', `apiVersion: v1
kind: Pod
metadata: { name: named }
spec:
  restartPolicy: Never
  hostname: ignored
  subdomain: sub
  hostnameOverride: my-override.example
  containers:
    - { name: c, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sh", "-c", "hostname; cat /etc/hosts"] }
`);
  await terminated(node, 'named');
  const out = await logs(node, 'named', 'c');
  t.equal(out.split('\n')[0], 'my-override.example', 'the UTS hostname is the override');
  t.notMatch(out, /sub\.default\.svc/, 'no FQDN: the override has no domain');
  t.notMatch(out, /\bignored\b/, 'spec.hostname does not count');

  await node.writeManifest('bad.yaml', `apiVersion: v1
kind: Pod
metadata: { name: bad-override }
spec:
  hostNetwork: true
  hostnameOverride: x
  containers:
    - { name: c, image: ${BUSYBOX}, imagePullPolicy: Never }
`);
  const ev = await refusal(node, 'bad-override');
  t.match(ev.message, /spec\.hostnameOverride: Forbidden: may not be specified when hostNetwork is true/);
});

t.test('lifecycle.stopSignal: the engine stops the container with it; refused without spec.os.name', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('s.yaml', `apiVersion: v1
kind: Pod
metadata: { name: usr1 }
spec:
  restartPolicy: Never
  os: { name: linux }
  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      lifecycle: { stopSignal: SIGUSR1 }
      # TERM is ignored: only USR1 ends it at once, with 0.
      command: ["sh", "-c", "trap 'echo got USR1 > /dev/termination-log; exit 0' USR1; trap '' TERM; echo up; while true; do sleep 0.2; done"]
`);
  const pod: Pod = await node.waitFor('usr1 running', async () => {
    const p = await node.pod('usr1');
    return p?.status?.containerStatuses?.[0]?.state?.running ? p : undefined;
  }, 60_000);
  const id = pod.status?.containerStatuses?.[0]?.containerID?.replace(/^\w+:\/\//, '') ?? '';
  t.equal((await dockerCLI('inspect', '--format', '{{.Config.StopSignal}}', id)).trim(), 'SIGUSR1', 'the container\'s stop signal');
  await node.waitFor('the trap set', async () => ((await logs(node, 'usr1', 'c')).includes('up') ? true : undefined));
  const started = Date.now();
  await dockerCLI('stop', '-t', '30', id);
  const done = await terminated(node, 'usr1');
  t.same([done.exitCode, done.message?.trim()], [0, 'got USR1'], 'stopped by SIGUSR1, not SIGTERM then SIGKILL (137)');
  t.ok(Date.now() - started < 25_000, 'well within the 30 s a SIGTERM would have waited');

  await node.writeManifest('nos.yaml', `apiVersion: v1
kind: Pod
metadata: { name: no-os }
spec:
  containers:
    - { name: c, image: ${BUSYBOX}, imagePullPolicy: Never, lifecycle: { stopSignal: SIGUSR1 } }
`);
  const ev = await refusal(node, 'no-os');
  t.match(ev.message, /spec\.containers\[0\]\.lifecycle\.stopSignal: Forbidden: may not be set for containers with empty `spec\.os\.name`/);
});

t.test('fileKeyRef: values from an env file an init container wrote; a missing key refused, an optional one skipped', async (t) => {
  const node = await startTestNode(t);
  const envFile = "DB='postgres://db:5432/app' # the database\\nMULTI='line one\\nline two'\\nEMPTY= 'x'\\n";
  await node.writeManifest('f.yaml', `apiVersion: v1
kind: Pod
metadata: { name: envfile }
spec:
  restartPolicy: Never
  volumes: [{ name: config, emptyDir: {} }]
  initContainers:
    - name: write
      image: ${BUSYBOX}
      imagePullPolicy: Never
      volumeMounts: [{ name: config, mountPath: /config }]
      command: ["sh", "-c", "printf \\"${envFile}\\" > /config/app.env"]
  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "echo \\"DB=$DB\\"; echo \\"MULTI=$MULTI\\"; echo \\"OPT=\${OPT-unset}\\""]
      env:
        - { name: DB, valueFrom: { fileKeyRef: { volumeName: config, path: app.env, key: DB } } }
        - { name: MULTI, valueFrom: { fileKeyRef: { volumeName: config, path: app.env, key: MULTI } } }
        - { name: OPT, valueFrom: { fileKeyRef: { volumeName: config, path: app.env, key: EMPTY, optional: true } } }
`);
  const done = await terminated(node, 'envfile');
  t.equal(done.exitCode, 0);
  t.equal(await logs(node, 'envfile', 'c'), 'DB=postgres://db:5432/app\nMULTI=line one\nline two\nOPT=unset\n', 'quoted values taken literally, a comment after the quote dropped, the newline kept; the empty key skipped as optional');

  await node.writeManifest('m.yaml', `apiVersion: v1
kind: Pod
metadata: { name: missing }
spec:
  volumes: [{ name: config, emptyDir: {} }]
  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      env: [{ name: X, valueFrom: { fileKeyRef: { volumeName: config, path: none.env, key: X } } }]
`);
  const waiting = await node.waitFor('CreateContainerConfigError', async () => {
    const w = (await node.pod('missing'))?.status?.containerStatuses?.[0]?.state?.waiting;
    return w?.reason === 'CreateContainerConfigError' ? w : undefined;
  }, 30_000);
  t.equal(waiting.message, 'couldn\'t parse env file', 'a file that is not there: the kubelet\'s message');

  await node.writeManifest('v.yaml', `apiVersion: v1
kind: Pod
metadata: { name: not-emptydir }
spec:
  volumes: [{ name: host, hostPath: { path: /tmp } }]
  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      env: [{ name: X, valueFrom: { fileKeyRef: { volumeName: host, path: ../etc/passwd, key: root } } }]
`);
  const ev = await refusal(node, 'not-emptydir');
  t.match(ev.message, /fileKeyRef\.volumeName: Invalid value: "host": referenced volume must be of type emptyDir/);
  t.match(ev.message, /fileKeyRef\.path: Invalid value: "\.\.\/etc\/passwd": must not contain '\.\.'/);
});

t.test('container restart rules: the container\'s own restartPolicy and restartPolicyRules decide (ContainerRestartRules)', async (t) => {
  const node = await startTestNode(t);
  // Exits 42 the first time (the rule restarts it although the pod and the container say Never), 0 the second.
  await node.writeManifest('retry.yaml', `apiVersion: v1
kind: Pod
metadata: { name: retry }
spec:
  restartPolicy: Never
  volumes: [{ name: state, emptyDir: {} }]
  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      restartPolicy: Never
      restartPolicyRules: [{ action: Restart, exitCodes: { operator: In, values: [42] } }]
      volumeMounts: [{ name: state, mountPath: /state }]
      command: ["sh", "-c", "if [ -e /state/ran ]; then exit 0; fi; touch /state/ran; exit 42"]
`);
  // Its own Never in a pod that says Always: one run, and the pod is done.
  await node.writeManifest('once.yaml', `apiVersion: v1
kind: Pod
metadata: { name: once }
spec:
  restartPolicy: Always
  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      restartPolicy: Never
      command: ["sh", "-c", "exit 3"]
`);
  const retry = await node.waitFor('retry Succeeded', async () => {
    const p = await node.pod('retry');
    return p?.status?.phase === 'Succeeded' ? p : undefined;
  }, 60_000);
  const rs = retry.status?.containerStatuses?.[0];
  t.equal(rs?.restartCount, 1, 'restarted once, by the rule');
  t.equal(rs?.lastState?.terminated?.exitCode, 42);
  t.equal(rs?.state?.terminated?.exitCode, 0);
  const once = await node.waitFor('once Failed', async () => {
    const p = await node.pod('once');
    return p?.status?.phase === 'Failed' ? p : undefined;
  }, 60_000);
  t.equal(once.status?.containerStatuses?.[0]?.restartCount, 0, 'the container\'s Never beats the pod\'s Always');
  t.equal(once.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 3);

  await node.writeManifest('bad.yaml', `apiVersion: v1
kind: Pod
metadata: { name: bad }
spec:
  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      restartPolicyRules: [{ action: Restart, exitCodes: { operator: In, values: [1] } }]
      command: ["sleep", "3600"]
`);
  const waiting = await node.waitFor('refused', async () => {
    const w = (await node.pod('bad'))?.status?.containerStatuses?.[0]?.state?.waiting;
    return w?.reason === 'CreateContainerConfigError' ? w : undefined;
  }, 30_000);
  t.match(waiting.message, /container "c": restartPolicyRules need the container's own restartPolicy/, 'rules upstream would never read are refused, not ignored');
});
