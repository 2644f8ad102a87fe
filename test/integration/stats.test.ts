import { readFile, stat, statfs } from 'node:fs/promises';
import t from 'tap';
import { Cgroupfs } from '../../src/cgroups/cgroupfs.js';
import type { PodMetrics, Summary } from '../../src/stats/types.js';
import { BUSYBOX, containersOfNode, testDocker } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';

const pod = (name: string, command: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: main, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sh", "-c", "${command}"] }
`;

t.test('stats from the containers\' cgroups (or the engine), sampled in the background and served from memory', async (t) => {
  const node = await startTestNode(t);
  await node.writeManifest('burn.yaml', pod('burn', 'while :; do :; done'));
  await node.writeManifest('idle.yaml', pod('idle', 'sleep 600'));
  for (const name of ['burn', 'idle']) {
    await node.waitFor(`${name} running`, async () => ((await node.pod(name))?.status?.phase === 'Running' ? true : undefined), 60_000);
  }
  const burn = `burn-${node.nodeName}`;
  const idle = `idle-${node.nodeName}`;
  // The default period is 10 s: stop the timer and drive two rounds 1.5 s apart by hand, so
  // the Docker call counts below are exact.
  await node.nodelet.stats.stop();
  await node.waitFor('the PLEG sees both pods running', () =>
    node.nodelet.kubelet.runtimePods().filter((p) => p.containers.some((c) => c.state === 'running')).length === 2 ? true : undefined,
  );
  await node.nodelet.stats.sampleNow();
  // A measurement interval, not synchronisation: the rates compare CPU counters 1.5 s apart,
  // long enough for the burner's share of a core to stand far above the idle pod's noise.
  await new Promise((r) => setTimeout(r, 1500));
  await node.nodelet.stats.sampleNow();

  const statsCalls = async () => {
    const text = await (await fetch(`${node.url}/metrics`)).text();
    return Number(/^kubelet_runtime_operations_total\{operation_type="container_stats"\} (\S+)$/m.exec(text)?.[1] ?? 0);
  };
  // A container whose cgroup is `<pod cgroup>/<its ID>` (Docker's cgroupfs layout under the
  // CgroupParent nodelet gives it) is read from its cgroup; any other (another engine's layout)
  // from the engine's stats, once per round.
  const own = await Promise.all(
    (await containersOfNode(testDocker(), node.nodeName)).map(async (c) => {
      const pid = (await testDocker().getContainer(c.Id).inspect()).State.Pid;
      const cgroups = await readFile(`/proc/${pid}/cgroup`, 'utf8');
      return cgroups.split('\n').some((l) => /^\d+:(memory)?:.*\/kubepods\/.*\/pod[^/]+\/([0-9a-f]{64})$/.exec(l)?.[2] === c.Id);
    }),
  );
  t.equal(own.length, 4, 'two sandboxes and two containers');
  if (process.env.NODELET_TEST_ENGINE !== 'podman') t.equal(own.filter(Boolean).length, 4, 'on Docker, each in its own cgroup below the pod\'s');
  const callsBefore = await statsCalls();
  t.equal(callsBefore, 2 * own.filter((x) => !x).length, 'two rounds, the engine asked only for the containers without a cgroup of their own');

  const { status, body: summary } = await node.get<Summary>('/stats/summary');
  t.equal(status, 200);
  t.equal(summary.node.nodeName, node.nodeName);
  t.ok((summary.node.cpu?.usageCoreNanoSeconds ?? 0) > 0, 'node CPU from /proc/stat');
  t.ok((summary.node.memory?.workingSetBytes ?? 0) > 0, 'node memory from /proc/meminfo');
  const byName = new Map(summary.pods.map((p) => [p.podRef.name, p]));
  const nanoCores: Record<string, number> = {};
  for (const name of [burn, idle]) {
    const p = byName.get(name);
    t.ok(p, `${name} is in the summary`);
    t.match(p?.podRef, { namespace: 'default', uid: /.+/ });
    t.same(p?.containers.map((c) => c.name), ['main'], 'the sandbox is not listed as a container');
    const c = p?.containers[0];
    t.ok((c?.cpu?.usageCoreNanoSeconds ?? 0) > 0, `${name}: usageCoreNanoSeconds > 0`);
    t.ok((c?.memory?.workingSetBytes ?? 0) > 0, `${name}: workingSetBytes > 0`);
    t.ok((p?.cpu?.usageCoreNanoSeconds ?? 0) >= (c?.cpu?.usageCoreNanoSeconds ?? 0), `${name}: the pod includes its container`);
    t.type(c?.cpu?.usageNanoCores, 'number', `${name}: a rate after two samples`);
    nanoCores[name] = c?.cpu?.usageNanoCores ?? 0;
  }
  const burnRate = nanoCores[burn] ?? 0;
  const idleRate = nanoCores[idle] ?? 0;
  t.ok(burnRate > 50_000_000, `the burner uses a visible share of a core (${burnRate} nanocores)`);
  t.ok(burnRate > 10 * idleRate + 1_000_000, `the burner is far busier than the idle pod (${burnRate} vs ${idleRate})`);

  const resource = await fetch(`${node.url}/metrics/resource`);
  t.equal(resource.status, 200);
  const text = await resource.text();
  const series = new RegExp(`^container_cpu_usage_seconds_total\\{container="main",namespace="default",pod="${burn}"\\} (\\S+) \\d+$`, 'm').exec(text);
  t.ok(series && Number(series[1]) > 0, 'container_cpu_usage_seconds_total for the burner');
  t.match(text, new RegExp(`^container_memory_working_set_bytes\\{container="main",namespace="default",pod="${idle}"\\} \\d+`, 'm'));
  t.match(text, new RegExp(`^pod_cpu_usage_seconds_total\\{namespace="default",pod="${burn}"\\} `, 'm'));
  t.match(text, /^node_cpu_usage_seconds_total \S+ \d+$/m);
  t.match(text, /^resource_scrape_error 0$/m);

  const metrics = await node.get<PodMetrics>(`/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/${burn}`);
  t.equal(metrics.status, 200);
  t.match(metrics.body, { kind: 'PodMetrics', metadata: { name: burn, namespace: 'default' }, containers: [{ name: 'main', usage: { cpu: /^\d+[num]?$/, memory: /^\d+(Ki|Mi)?$/ } }] });
  const missing = await node.get<{ message: string }>('/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/nope');
  t.equal(missing.status, 404);
  t.equal(missing.body.message, 'podmetrics.metrics.k8s.io "nope" not found');

  t.equal(await statsCalls(), callsBefore, 'no request above called Docker for stats');

  // A stopped pod drops out at the next round.
  await node.removeManifest('idle.yaml');
  await node.waitFor('idle gone from the runtime', () => (node.nodelet.kubelet.runtimePods().some((p) => p.name === idle) ? undefined : true), 30_000);
  await node.nodelet.stats.sampleNow();
  const after = await node.get<Summary>('/stats/summary');
  t.same(after.body.pods.map((p) => p.podRef.name), [burn]);
});

t.test('the summary\'s disks, processes, rlimit and pressure on the real engine, refreshed in the background', async (t) => {
  // Short periods, so the background refreshes (not a request) bring the write in quickly.
  const node = await startTestNode(t, {}, { statsPeriodMs: 500, diskStatsPeriodMs: 500 });
  await node.writeManifest('writer.yaml', `apiVersion: v1
kind: Pod
metadata: { name: writer }
spec:
  terminationGracePeriodSeconds: 0
  volumes: [{ name: scratch, emptyDir: {} }]
  containers:
    - name: main
      image: ${BUSYBOX}
      imagePullPolicy: Never
      command: ["sh", "-c", "dd if=/dev/urandom of=/scratch/blob bs=1048576 count=5 && sync && echo written && exec sleep 600"]
      volumeMounts: [{ name: scratch, mountPath: /scratch }]
      resources: { limits: { memory: 64Mi } }
`);
  const writer = `writer-${node.nodeName}`;
  const MiB5 = 5 * 1048576;
  const summaryOf = async () => (await node.get<Summary>('/stats/summary')).body;
  const pod = await node.waitFor('the 5 MiB write shows in the writer\'s volume stats', async () => {
    const p = (await summaryOf()).pods.find((x) => x.podRef.name === writer);
    const scratch = p?.volume?.find((v) => v.name === 'scratch');
    return (scratch?.usedBytes ?? 0) >= MiB5 && (p?.containers[0]?.logs?.usedBytes ?? 0) > 0 ? p : undefined;
  }, 60_000);
  // Pod cgroups exist where the engine uses the cgroupfs driver (the test node's cgroupRoot is its own).
  const cgroupfs = await Cgroupfs.open().catch(() => undefined);
  const podCgroups = cgroupfs !== undefined && (await stat(cgroupfs.dirOf('memory', ['nodelet-test', node.nodeName, 'kubepods'])).then(() => true, () => false));
  const scratch = pod.volume?.find((v) => v.name === 'scratch');
  t.ok((scratch?.inodesUsed ?? 0) >= 2, `the volume's directory and its file (${scratch?.inodesUsed} inodes)`);
  t.ok((scratch?.capacityBytes ?? 0) > 0 && (scratch?.availableBytes ?? -1) >= 0, 'the volume\'s filesystem figures');
  const eph = pod['ephemeral-storage'];
  const main = pod.containers[0];
  t.ok((eph?.usedBytes ?? 0) >= MiB5, `ephemeral-storage includes the volume (${eph?.usedBytes} bytes)`);
  t.equal(eph?.usedBytes, (scratch?.usedBytes ?? 0) + (main?.rootfs?.usedBytes ?? 0) + (main?.logs?.usedBytes ?? 0), 'ephemeral-storage: the volume + rootfs + logs');
  t.equal(main?.rootfs?.inodesUsed, 0, 'rootfs: no inode count from the engine');
  t.ok((main?.logs?.inodesUsed ?? 0) >= 1, 'logs: the json-file log');
  if (podCgroups) {
    const withProcesses = await node.waitFor('process_count from the pod cgroup', async () => (await summaryOf()).pods.find((x) => x.podRef.name === writer && x.process_stats));
    t.ok((withProcesses.process_stats?.process_count ?? 0) >= 1, `process_count from the pod cgroup (${withProcesses.process_stats?.process_count})`);
    // The pod's memory is its cgroup's, which carries the 64Mi limit nodelet wrote.
    const available = withProcesses.memory?.availableBytes ?? -1;
    t.ok(available > 0 && available <= 64 * 1048576, `pod memory.availableBytes is the pod cgroup's limit less its working set (${available})`);
  } else {
    t.notOk(pod.process_stats ?? pod.memory?.availableBytes, 'no pod cgroups: no process count, the pod\'s figures summed from its containers');
  }
  t.ok((pod.cpu?.usageCoreNanoSeconds ?? 0) >= (main?.cpu?.usageCoreNanoSeconds ?? 0), 'the pod cgroup\'s CPU includes its container');
  t.ok(main?.cpu?.usageNanoCores !== undefined || main?.cpu?.usageCoreNanoSeconds !== undefined, 'containers keep their CPU figures');

  const summary = await summaryOf();
  const st = await statfs(node.manifestDir);
  t.equal(summary.node.fs?.capacityBytes, st.blocks * st.bsize, 'node.fs capacity is statfs of --root-dir');
  t.equal(summary.node.fs?.inodes, st.files, 'node.fs inodes is statfs of --root-dir');
  t.ok((summary.node.runtime?.imageFs?.capacityBytes ?? 0) > 0, 'imageFs: the engine\'s data root');
  t.ok((summary.node.runtime?.imageFs?.usedBytes ?? 0) > 0, 'imageFs usedBytes: the images');
  const [pidMax, threadsMax] = await Promise.all(['/proc/sys/kernel/pid_max', '/proc/sys/kernel/threads-max'].map(async (f) => Number(await readFile(f, 'utf8'))));
  t.equal(summary.node.rlimit?.maxpid, Math.min(pidMax ?? 0, threadsMax ?? 0), 'rlimit.maxpid: min(pid_max, threads-max)');
  t.ok((summary.node.rlimit?.curproc ?? 0) > 0, 'rlimit.curproc');
  const hasPSI = await readFile('/proc/pressure/io', 'utf8').then(() => true, () => false);
  if (hasPSI) {
    t.match(summary.node.io, { time: String, psi: { some: { avg10: Number, total: Number }, full: { total: Number } } }, 'node IO pressure from /proc/pressure/io');
    t.ok(summary.node.cpu?.psi && summary.node.memory?.psi, 'node CPU and memory pressure');
  } else {
    t.notOk(summary.node.io, 'a kernel without PSI: no pressure fields');
  }

  const short = (await node.get<Summary>('/stats/summary?only_cpu_and_memory=true')).body;
  const shortPod = short.pods.find((x) => x.podRef.name === writer);
  t.notOk(short.node.fs ?? short.node.rlimit ?? shortPod?.volume ?? shortPod?.['ephemeral-storage'], 'the short form has no disks');
  t.ok(shortPod?.memory?.workingSetBytes, 'the short form keeps memory');
});
