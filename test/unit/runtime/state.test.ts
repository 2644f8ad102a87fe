import t from 'tap';
import type Docker from 'dockerode';
import { containerFromListEntry, sandboxFromListEntry } from '../../../src/runtime/docker/state.js';

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
  t.same(sandboxFromListEntry(entry('running', 'Up'), { ...name, container: 'POD' }), { id: 'abc', attempt: 2, ready: true, createdAt: new Date(1_800_000_000_000), ips: [] });
  t.equal(sandboxFromListEntry(entry('created', 'Created'), name).ready, false);
});
