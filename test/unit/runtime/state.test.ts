import t from 'tap';
import type Docker from 'dockerode';
import { containerFromListEntry, sandboxFromInspect, sandboxFromListEntry } from '../../../src/runtime/docker/state.js';
import { sandboxLabels } from '../../../src/runtime/docker/labels.js';

const entry = (state: string, status: string, labels: Record<string, string> = {}): Docker.ContainerInfo =>
  ({ Id: 'abc', Names: ['/k8s_main_p_ns_uid_2'], Image: 'busybox', ImageID: 'sha256:1', Created: 1_800_000_000, State: state, Status: status, Labels: labels }) as unknown as Docker.ContainerInfo;
const name = { container: 'main', pod: 'p', namespace: 'ns', uid: 'uid', attempt: 2 };

t.test('a container from its list entry when Docker is too busy to inspect it', async (t) => {
  const running = containerFromListEntry(entry('running', 'Up 3 seconds', { 'annotation.io.kubernetes.container.restartCount': '2', 'annotation.io.kubernetes.container.hash': 'h' }), name);
  t.same(
    { state: running.state, attempt: running.attempt, restartCount: running.restartCount, hash: running.hash, image: running.image, imageID: running.imageID },
    { state: 'running', attempt: 2, restartCount: 2, hash: 'h', image: 'busybox', imageID: 'sha256:1' },
  );
  t.same(running.createdAt, new Date(1_800_000_000_000));
  t.same(running.startedAt, running.createdAt, 'start time approximated by the creation time');
  const exited = containerFromListEntry(entry('exited', 'Exited (137) 2 seconds ago'), name);
  t.same([exited.state, exited.exitCode, exited.reason], ['exited', 137, 'Error']);
  const done = containerFromListEntry(entry('exited', 'Exited (0) 1 second ago'), name);
  t.same([done.exitCode, done.reason], [0, 'Completed']);
  const created = containerFromListEntry(entry('created', 'Created'), name);
  t.same([created.state, created.startedAt, created.exitCode], ['created', undefined, undefined]);
  t.equal(containerFromListEntry(entry('dead', 'Dead'), name).state, 'exited');
  t.same(sandboxFromListEntry(entry('running', 'Up'), { ...name, container: 'POD' }), { id: 'abc', attempt: 2, ready: true, running: true, createdAt: new Date(1_800_000_000_000), ips: [] });
  t.equal(sandboxFromListEntry(entry('created', 'Created'), name).ready, false);
});

t.test("a sandbox carries the pod start time its label recorded, read back on adoption", async (t) => {
  const recorded = '2026-12-05T02:59:59.000Z';
  const labels = sandboxLabels({ metadata: { name: 'p', namespace: 'ns', uid: 'uid' } }, 'node-a', new Date(recorded));
  t.equal(labels['io.nodelet.pod.start-time'], recorded, 'written as RFC 3339 at creation');
  const fromList = sandboxFromListEntry(entry('running', 'Up', labels), { ...name, container: 'POD' });
  t.same(fromList.podStartTime, new Date(recorded), 'from a list entry');
  const info = { Id: 'abc', Created: '2026-12-05T03:00:00.9Z', State: { Running: true }, Config: { Labels: labels }, NetworkSettings: { Networks: {} } } as unknown as Docker.ContainerInspectInfo;
  const fromInspect = sandboxFromInspect(info, { ...name, container: 'POD' });
  t.same(fromInspect.podStartTime, new Date(recorded), 'from an inspection, whatever the creation time');
  t.notOk('podStartTime' in sandboxFromListEntry(entry('running', 'Up', { 'io.nodelet.pod.start-time': 'yesterday' }), name), 'an invalid label is no start time');
  t.notOk('io.nodelet.pod.start-time' in sandboxLabels({ metadata: { name: 'p' } }, 'node-a'), 'no label without a start time');
});
