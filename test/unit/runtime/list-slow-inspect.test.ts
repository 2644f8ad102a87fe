import type Docker from 'dockerode';
import t from 'tap';
import { createLogger } from '../../../src/logging/index.js';
import { DockerRuntime } from '../../../src/runtime/docker/runtime.js';

/**
 * `listPods` when Docker is slow to answer an inspect (after an engine restart, in a burst of
 * starts): the relist goes on with what the list and the last inspection say. A fake engine whose
 * inspects answer at once or never.
 */

const labels = (type: 'podsandbox' | 'container') => ({
  'io.nodelet.node': 'n1',
  'io.kubernetes.pod.uid': 'uid1',
  'io.kubernetes.pod.name': 'p',
  'io.kubernetes.pod.namespace': 'ns',
  'io.kubernetes.docker.type': type,
});
const sandbox = { id: 'sb1', name: '/k8s_POD_p_ns_uid1_0', type: 'podsandbox' as const };
const app = { id: 'c1', name: '/k8s_main_p_ns_uid1_0', type: 'container' as const };

function fakeEngine() {
  const state = new Map<string, 'running' | 'exited'>([[sandbox.id, 'running'], [app.id, 'running']]);
  let hang = false;
  const info = (c: typeof sandbox | typeof app) => {
    const running = state.get(c.id) === 'running';
    return {
      Id: c.id,
      Created: '2026-12-01T10:00:00Z',
      Image: 'sha256:1',
      Config: { Image: 'busybox', Labels: labels(c.type) },
      HostConfig: { NetworkMode: 'none' },
      NetworkSettings: { Networks: {} },
      State: { Running: running, Pid: running ? 42 : 0, ExitCode: running ? 0 : 137, OOMKilled: false, Error: '', StartedAt: '2026-12-01T10:00:01Z', FinishedAt: running ? '0001-01-01T00:00:00Z' : '2026-12-01T10:05:00Z' },
    };
  };
  const docker = {
    listContainers: () =>
      Promise.resolve(
        [sandbox, app].map((c) => ({ Id: c.id, Names: [c.name], Image: 'busybox', ImageID: 'sha256:1', Created: 1_796_000_000, State: state.get(c.id), Status: state.get(c.id) === 'running' ? 'Up 5 minutes' : 'Exited (137) 1 second ago', Labels: labels(c.type), HostConfig: { NetworkMode: 'none' } })),
      ),
    getContainer: (id: string) => ({ inspect: () => (hang ? new Promise(() => {}) : Promise.resolve(info(id === sandbox.id ? sandbox : app))) }),
  } as unknown as Docker;
  return { docker, state, slow: () => (hang = true) };
}

t.test('an inspect too slow: a container the list shows exited since its last inspection is reported exited, not running from that inspection', async (t) => {
  const engine = fakeEngine();
  const runtime = new DockerRuntime({ docker: engine.docker, nodeName: 'n1', infraImage: 'pause', podNetwork: 'none', log: createLogger({ verbosity: 0, format: 'json' }) });
  const [first] = await runtime.listPods();
  t.same([first?.sandboxes[0]?.ready, first?.containers[0]?.state], [true, 'running'], 'inspected: running');

  // The engine stopped both (as dockerd does when it restarts without live-restore) and is slow.
  engine.state.set(sandbox.id, 'exited');
  engine.state.set(app.id, 'exited');
  engine.slow();
  const [second] = await runtime.listPods();
  t.equal(second?.sandboxes[0]?.ready, false, 'the sandbox is not ready');
  t.same([second?.containers[0]?.state, second?.containers[0]?.exitCode], ['exited', 137], 'the container exited, with the list\'s exit code');
  await runtime.close();
});
