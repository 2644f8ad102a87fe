import t from 'tap';
import type { Pod } from '../../src/api/types.js';
import { BUSYBOX, containersOfNode, testDocker } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';

/**
 * `restartPolicyRules[].action: RestartAllContainers` (RestartAllContainersOnContainerExits) on the
 * real engine, through a static pod shaped like the first spec of test/e2e/common/node/
 * container_restart_policy.go: when the source container exits 42, every container (init, sidecar,
 * regular) is killed and removed and the pod starts over in the same sandbox, its emptyDir kept.
 */
t.setTimeout(180_000);

type Ev = { reason?: string; message?: string; involvedObject?: { fieldPath?: string } };

t.test('a regular container exiting with a matching code restarts every container of the pod, once, in the same sandbox', async (t) => {
  const node = await startTestNode(t);
  // init appends a line per run; other marks it is up, and the source exits 42 once it saw that
  // (the first time only: the emptyDir keeps its marker across the restart).
  await node.writeManifest('all.yaml', `apiVersion: v1
kind: Pod
metadata: { name: all }
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 30
  volumes: [{ name: state, emptyDir: {} }]
  initContainers:
    - { name: init, image: ${BUSYBOX}, imagePullPolicy: Never, volumeMounts: [{ name: state, mountPath: /state }], command: ["sh", "-c", "echo run >> /state/init-runs; cat /state/init-runs"] }
    - { name: sidecar, image: ${BUSYBOX}, imagePullPolicy: Never, restartPolicy: Always, command: ["sleep", "3600"] }
  containers:
    - name: source
      image: ${BUSYBOX}
      imagePullPolicy: Never
      restartPolicy: Never
      restartPolicyRules: [{ action: RestartAllContainers, exitCodes: { operator: In, values: [42] } }]
      volumeMounts: [{ name: state, mountPath: /state }]
      command: ["sh", "-c", "if [ -e /state/restarted ]; then exec sleep 3600; fi; while [ ! -e /state/other-up ]; do sleep 0.1; done; touch /state/restarted; exit 42"]
    - { name: other, image: ${BUSYBOX}, imagePullPolicy: Never, volumeMounts: [{ name: state, mountPath: /state }], command: ["sh", "-c", "touch /state/other-up; exec sleep 3600"] }
`);
  const restarted: Pod = await node.waitFor('every container running again after one restart', async () => {
    const p = await node.pod('all');
    const statuses = [...(p?.status?.initContainerStatuses ?? []), ...(p?.status?.containerStatuses ?? [])];
    const sidecarAndRegular = statuses.filter((s) => s.name !== 'init');
    const again = statuses.length === 4 && statuses.every((s) => s.restartCount === 1) && sidecarAndRegular.every((s) => s.state?.running);
    return again ? p : undefined;
  }, 120_000);
  const status = restarted.status!;
  for (const s of [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]) {
    t.equal(s.lastState?.terminated?.reason, 'RestartingAllContainers', `${s.name}: its last termination is the reset's`);
    t.equal(s.lastState?.terminated?.exitCode, 137, `${s.name}: exit code 137`);
  }
  t.equal(status.initContainerStatuses?.[0]?.state?.terminated?.exitCode, 0, 'init ran again, to completion');
  t.equal(status.phase, 'Running');
  t.equal(status.conditions?.find((c) => c.type === 'AllContainersRestarting')?.status, 'False', 'the reset is over');
  t.equal(status.conditions?.find((c) => c.type === 'Initialized')?.status, 'True');

  // The init container's log: the emptyDir kept the first run's line.
  const log = (await node.get<string>(`/containerLogs/default/all-${node.nodeName}/init`)).body;
  t.same(log.trim().split('\n'), ['run', 'run'], 'init ran twice on the same emptyDir');

  // The engine holds one instance of each container (the old ones were removed) and the one sandbox.
  const containers = (await containersOfNode(testDocker(), node.nodeName)).filter((c) => c.Labels['io.kubernetes.pod.name'] === `all-${node.nodeName}`);
  const byName = (name: string) => containers.filter((c) => c.Labels['io.kubernetes.container.name'] === name);
  t.equal(containers.filter((c) => c.Labels['io.kubernetes.docker.type'] === 'podsandbox').length, 1, 'the sandbox stayed');
  for (const name of ['init', 'sidecar', 'source', 'other']) t.equal(byName(name).length, 1, `${name}: one instance left`);
  const ids = new Map([...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])].map((s) => [s.name, s.containerID?.replace('docker://', '')]));
  t.equal(byName('other')[0]?.Id, ids.get('other'), 'other runs as a new instance, the one reported');

  const events = (await node.get<{ items: Ev[] }>('/api/v1/events')).body.items;
  const killed = events.filter((e) => e.reason === 'Killing' && e.message === 'killing').map((e) => e.involvedObject?.fieldPath).sort();
  t.same(killed, ['spec.containers{other}', 'spec.containers{sidecar}'], 'the running ones were killed by the reset');

  // No loop: once the source has run for 3 s, each container has still restarted once.
  const later = await node.waitFor('source running for 3 s', async () => {
    const p = await node.pod('all');
    const since = p?.status?.containerStatuses?.find((s) => s.name === 'source')?.state?.running?.startedAt;
    return since && Date.now() - Date.parse(since) > 3000 ? p : undefined;
  }, 30_000);
  t.same(later.status?.containerStatuses?.map((s) => s.restartCount), [1, 1]);
  t.same(later.status?.initContainerStatuses?.map((s) => s.restartCount), [1, 1]);
});
