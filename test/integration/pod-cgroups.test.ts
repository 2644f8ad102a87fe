import { readdir, readFile, stat } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import type { Pod } from '../../src/api/types.js';
import type { Summary } from '../../src/stats/types.js';
import { Cgroupfs } from '../../src/cgroups/cgroupfs.js';
import { BUSYBOX, dockerCLI } from '../helpers/docker.js';
import { startTestNode, type TestNode } from '../helpers/nodelet.js';

/**
 * Pod cgroups (`cgroupsPerQOS`) on the real engine and the host's cgroup filesystem: each QoS
 * class's pod below `<cgroupRoot>/kubepods` with the kubelet's values (read from the host's
 * cgroup files and from inside the containers), the burstable class's shares summing its pods,
 * OOM scores by class, `podPidsLimit` stopping a fork, pod-level `spec.resources` bounding a
 * container that has no limit of its own (OOM-killed), and the cgroup gone with the pod.
 */
t.setTimeout(240_000);

const fs = await Cgroupfs.open();
const v1 = fs.mounts.version === 1;
const mount = (controller: string) => fs.mounts.controllers.get(v1 ? controller : '') ?? '';
const read = async (controller: string, path: string, file: string) => (await readFile(join(mount(controller), path, file), 'utf8')).trim();
/** Lowering an OOM score below 0 needs CAP_SYS_RESOURCE; where root lacks it, nodelet sets 0 instead. */
const capBnd = /^CapBnd:\s*([0-9a-f]+)$/m.exec(await readFile('/proc/self/status', 'utf8'))?.[1] ?? '0';
const canLower = ((BigInt(`0x${capBnd}`) >> 24n) & 1n) === 1n; // CAP_SYS_RESOURCE is 24
const floor = (score: number) => (canLower || score >= 0 ? score : 0);

const pod = (name: string, resources: string, extra = '') => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 0
${extra}  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "exec sleep 3600"]
      resources: ${resources}
`;

async function running(node: TestNode, name: string): Promise<Pod> {
  return node.waitFor(`${name} running`, async () => {
    const p = await node.pod(name);
    return p?.status?.containerStatuses?.every((c) => c.state?.running) && p.status.containerStatuses.length ? p : undefined;
  }, 60_000);
}

const idOf = (p: Pod) => p.status?.containerStatuses?.[0]?.containerID?.replace(/^\w+:\/\//, '') ?? '';
const exec = (p: Pod, script: string) => dockerCLI('exec', idOf(p), 'sh', '-c', script);

t.test('each QoS class in its cgroup with the kubelet\'s values; OOM scores; the pod cgroup goes with the pod', async (t) => {
  const node = await startTestNode(t, { podPidsLimit: 50 });
  const kubepods = `/nodelet-test/${node.nodeName}/kubepods`;
  await node.writeManifest('g.yaml', pod('guaranteed', '{ limits: { cpu: 200m, memory: 64Mi } }'));
  await node.writeManifest('b.yaml', pod('burstable', '{ requests: { cpu: 100m, memory: 32Mi }, limits: { memory: 128Mi } }'));
  await node.writeManifest('be.yaml', pod('besteffort', '{}'));
  const [g, b, be] = await Promise.all([running(node, 'guaranteed'), running(node, 'burstable'), running(node, 'besteffort')]);
  t.same([g.status?.qosClass, b.status?.qosClass, be.status?.qosClass], ['Guaranteed', 'Burstable', 'BestEffort'], 'the classes');

  const gPath = `${kubepods}/pod${g.metadata?.uid}`;
  const bPath = `${kubepods}/burstable/pod${b.metadata?.uid}`;
  const bePath = `${kubepods}/besteffort/pod${be.metadata?.uid}`;
  if (v1) {
    t.same(await Promise.all([read('cpu', gPath, 'cpu.shares'), read('cpu', gPath, 'cpu.cfs_quota_us'), read('cpu', gPath, 'cpu.cfs_period_us'), read('memory', gPath, 'memory.limit_in_bytes')]),
      ['204', '20000', '100000', String(64 * 2 ** 20)], 'Guaranteed: shares, quota and period from 200m, the memory limit');
    t.same(await Promise.all([read('cpu', bPath, 'cpu.shares'), read('cpu', bPath, 'cpu.cfs_quota_us'), read('memory', bPath, 'memory.limit_in_bytes')]),
      ['102', '-1', String(128 * 2 ** 20)], 'Burstable: shares from its request, no cpu quota (no cpu limit), its memory limit');
    t.equal(await read('cpu', bePath, 'cpu.shares'), '2', 'BestEffort: the floor of 2 shares');
    t.equal(await read('cpu', `${kubepods}/besteffort`, 'cpu.shares'), '2', 'the besteffort class: 2 shares');
    t.equal(await read('cpu', `${kubepods}/burstable`, 'cpu.shares'), '102', 'the burstable class: the sum of its pods\' requests');
  } else {
    t.same(await Promise.all([read('', gPath, 'cpu.max'), read('', gPath, 'memory.max')]), ['20000 100000', String(64 * 2 ** 20)], 'Guaranteed: cpu.max and memory.max');
    t.equal(await read('', bPath, 'memory.max'), String(128 * 2 ** 20), 'Burstable: its memory limit');
  }
  for (const p of [gPath, bPath, bePath]) t.equal(await read('pids', p, 'pids.max'), '50', `podPidsLimit on ${p.split('/').slice(-1)[0]}`);

  // Inside: each container's own cgroup is below its pod's.
  for (const [p, path] of [[g, gPath], [b, bPath], [be, bePath]] as const) {
    const line = (await exec(p, 'cat /proc/self/cgroup')).split('\n').find((l) => (v1 ? /:memory:/.test(l) : l.startsWith('0::')));
    t.ok(line?.includes(`${path}/`), `${p.metadata?.name}'s container is in ${path} (${line})`);
  }
  const burstableScore = 1000 - Math.floor((1000 * 32 * 2 ** 20) / totalmem());
  t.same(await Promise.all([g, b, be].map(async (p) => Number((await exec(p, 'cat /proc/self/oom_score_adj')).trim()))),
    [floor(-997), Math.min(999, Math.max(3, burstableScore)), 1000], `oom_score_adj by class (host ${canLower ? 'may' : 'may not'} lower scores below 0)`);
  const sandbox = (await dockerCLI('ps', '-q', '--filter', `label=io.kubernetes.pod.uid=${g.metadata?.uid}`, '--filter', 'label=io.kubernetes.docker.type=podsandbox')).trim();
  t.same((await dockerCLI('inspect', '--format', '{{.HostConfig.CgroupParent}} {{.HostConfig.OomScoreAdj}}', sandbox)).trim(), `${gPath} ${floor(-998)}`, 'the sandbox: in the pod cgroup, PodInfraOOMAdj');

  // The pod's processes are bounded by pids.max: sleeps past 50 cannot be forked (the shell's
  // own forks fail too once the sleeps hold them all, so its exit status is not what counts).
  await exec(g, 'for i in $(seq 80); do sleep 300 >/dev/null 2>&1 & done 2>/dev/null; exit 0').catch(() => undefined);
  const current = Number(await read('pids', gPath, 'pids.current'));
  // Which cgroup counts a refused fork depends on the kernel (the forking one's, or the limited one's): all are summed.
  const subtree = [gPath, ...(await readdir(join(mount('pids'), gPath), { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => `${gPath}/${e.name}`)];
  const events = await Promise.all(subtree.map(async (p) => Number(/^max (\d+)$/m.exec(await read('pids', p, 'pids.events'))?.[1] ?? 0)));
  const refused = events.reduce((a, b) => a + b, 0);
  t.ok(current <= 50 && current >= 40, `the pod holds at most 50 processes (${current})`);
  t.ok(refused > 0, `forks past the limit were refused (${refused})`);

  await node.removeManifest('b.yaml');
  await node.waitFor('the burstable pod cgroup removed', async () => ((await stat(join(mount('cpu'), bPath)).catch(() => undefined)) ? undefined : true), 30_000);
  if (v1) t.equal(await read('cpu', `${kubepods}/burstable`, 'cpu.shares'), '2', 'the burstable class back to 2 shares without pods');
  t.ok(await stat(join(mount('memory'), gPath)), 'the other pods keep theirs');
});

t.test('pod-level spec.resources: the pod cgroup\'s limits bound a container without its own (OOM-killed past 48Mi)', async (t) => {
  const node = await startTestNode(t);
  const podLevel = `  resources: { limits: { cpu: 300m, memory: 48Mi } }\n`;
  await node.writeManifest('p.yaml', `apiVersion: v1
kind: Pod
metadata: { name: podlevel }
spec:
  terminationGracePeriodSeconds: 0
  restartPolicy: Never
${podLevel}  containers:
    - name: c
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "sleep 2; head -c 200m /dev/zero | tail"]
`);
  const p = await running(node, 'podlevel');
  t.equal(p.status?.qosClass, 'Guaranteed', 'QoS from the pod-level resources');
  const path = `/nodelet-test/${node.nodeName}/kubepods/pod${p.metadata?.uid}`;
  if (v1) t.same(await Promise.all([read('cpu', path, 'cpu.cfs_quota_us'), read('memory', path, 'memory.limit_in_bytes')]), ['30000', String(48 * 2 ** 20)], 'the pod cgroup has the pod-level limits');
  const done = await node.waitFor('the container ended', async () => (await node.pod('podlevel'))?.status?.containerStatuses?.[0]?.state?.terminated, 60_000);
  t.equal(done.exitCode, 137, `killed by the OOM killer (${done.reason})`);
});

t.test('a restart with the pod running: its cgroups are read for stats and removed with the pod, with no new sandbox', async (t) => {
  const node = await startTestNode(t);
  const kubepods = `/nodelet-test/${node.nodeName}/kubepods`;
  await node.writeManifest('be.yaml', pod('survivor', '{}'));
  const before = await running(node, 'survivor');
  const path = `${kubepods}/besteffort/pod${before.metadata?.uid}`;
  await node.stop();
  await node.restart();
  const summary = await node.waitFor('the summary with the pod\'s process count (read from its cgroup)', async () => {
    const { body } = await node.get<Summary>('/stats/summary');
    const p = body.pods.find((x) => x.podRef.name === `survivor-${node.nodeName}`);
    return p?.process_stats?.process_count ? p : undefined;
  }, 30_000);
  t.equal(idOf(await running(node, 'survivor')), idOf(before), 'the same container: adopted, not restarted');
  t.ok((summary.process_stats?.process_count ?? 0) >= 1, 'processes counted in the pod cgroup');
  const metrics = await (await fetch(`${node.url}/metrics`)).text();
  t.equal(Number(/^kubelet_runtime_operations_total\{operation_type="container_stats"\} (\S+)$/m.exec(metrics)?.[1] ?? 0), 0, 'no container stats asked of the engine: read from the cgroups');
  await node.removeManifest('be.yaml');
  await node.waitFor('the pod cgroup removed', async () => ((await stat(join(mount('memory'), path)).catch(() => undefined)) ? undefined : true), 30_000);
});
