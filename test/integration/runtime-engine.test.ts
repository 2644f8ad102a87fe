import t from 'tap';
import type { Node } from 'kubernetes-types/core/v1.js';
import { BUSYBOX, containersOfNode, testDocker } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';
import { parseProcLimits, readHostLimits } from '../../src/runtime/docker/engine.js';

/** The engine scripts/test.sh started (NODELET_TEST_ENGINE), which nodelet must detect by itself. */
const expected = process.env.NODELET_TEST_ENGINE === 'podman' ? 'podman' : 'docker';

const POD = `apiVersion: v1
kind: Pod
metadata: { name: lim }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: main, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sh", "-c", "cat /proc/self/limits; sleep 600"] }
`;

t.test(`the engine is detected as ${expected}: Node, /metrics and the rlimits its containers get`, async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('lim.yaml', POD);
  await node.waitFor('pod running', async () => ((await node.pod('lim'))?.status?.phase === 'Running' ? true : undefined));

  const engine = await node.nodelet.runtime.engine();
  t.equal(engine.name, expected);
  const n = await node.get<Node>(`/api/v1/nodes/${node.nodeName}`);
  t.equal(n.body.status?.nodeInfo?.containerRuntimeVersion, `${expected}://${engine.version}`);
  t.match(engine.version, /^\d+\.\d+/);

  const metrics = await (await fetch(`${node.url}/metrics`)).text();
  const info = metrics.split('\n').filter((l) => l.startsWith('nodelet_container_runtime_info'));
  t.same(info, [`nodelet_container_runtime_info{runtime="${expected}",version="${engine.version}"} 1`]);

  // What the container runs with: the log holds its /proc/self/limits.
  const logs = await node.waitFor('limits in the log', async () => {
    const res = await fetch(`${node.url}/containerLogs/default/lim-${node.nodeName}/main`);
    const text = await res.text();
    return /Max open files/.test(text) ? text : undefined;
  });
  const inside = parseProcLimits(logs);
  const host = await readHostLimits();
  const docker = testDocker();
  const [entry] = (await containersOfNode(docker, node.nodeName)).filter((c) => c.Labels['io.kubernetes.container.name'] === 'main');
  t.ok(entry, 'the app container is listed');
  const ulimits = (await docker.getContainer(entry?.Id ?? '').inspect()).HostConfig.Ulimits ?? [];
  if (expected === 'podman') {
    // Within nodelet's own hard limits (and pid_max for nproc), not Podman's 1048576.
    const nofile = Math.min(1048576, host.own.nofile?.hard === -1 ? 1048576 : (host.own.nofile?.hard ?? 1048576));
    t.same(inside.nofile, { soft: nofile, hard: nofile });
    t.ok((inside.nproc?.hard ?? Infinity) <= Math.min(1048576, host.pidMax ?? 1048576), 'nproc within pid_max');
  } else {
    // Docker: nodelet sets none, so the container has what the engine gives any container.
    t.same(ulimits, [], 'no HostConfig.Ulimits on Docker');
    // A TTY, so the log is raw text (not stdcopy frames).
    const plain = await docker.createContainer({ Image: BUSYBOX, Cmd: ['cat', '/proc/self/limits'], Tty: true, HostConfig: { NetworkMode: 'none' } });
    t.teardown(() => plain.remove({ force: true }).catch(() => undefined));
    await plain.start();
    await plain.wait();
    const out = (await plain.logs({ stdout: true, stderr: true })).toString('latin1');
    t.same(inside.nofile, parseProcLimits(out).nofile, 'the same nofile as a plain docker run');
    t.same(inside.nproc, parseProcLimits(out).nproc, 'the same nproc as a plain docker run');
  }
});

t.test('--container-ulimits sets exactly the given limits, on either engine', async (t) => {
  const node = await startTestNode(t, { containerUlimits: 'nofile=512:1024,core=0' });
  await node.writeManifest('lim.yaml', POD);
  const logs = await node.waitFor('limits in the log', async () => {
    const res = await fetch(`${node.url}/containerLogs/default/lim-${node.nodeName}/main`);
    const text = res.status === 200 ? await res.text() : '';
    return /Max open files/.test(text) ? text : undefined;
  });
  const inside = parseProcLimits(logs);
  t.same(inside.nofile, { soft: 512, hard: 1024 });
  t.same(inside.core, { soft: 0, hard: 0 });
});
