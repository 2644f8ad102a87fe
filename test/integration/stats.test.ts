import t from 'tap';
import type { PodMetrics, Summary } from '../../src/stats/types.js';
import { BUSYBOX } from '../helpers/docker.js';
import { startTestNode } from '../helpers/nodelet.js';

const pod = (name: string, command: string) => `apiVersion: v1
kind: Pod
metadata: { name: ${name} }
spec:
  terminationGracePeriodSeconds: 0
  containers:
    - { name: main, image: ${BUSYBOX}, imagePullPolicy: Never, command: ["sh", "-c", "${command}"] }
`;

t.test('stats from Docker, sampled in the background and served from memory', async (t) => {
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
    node.nodelet.kubelet.pleg.getPods().filter((p) => p.containers.some((c) => c.state === 'running')).length === 2 ? true : undefined,
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
  const callsBefore = await statsCalls();
  t.equal(callsBefore, 8, 'two rounds of two sandboxes and two containers');

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
  await node.waitFor('idle gone from the runtime', () => (node.nodelet.kubelet.pleg.getPods().some((p) => p.name === idle) ? undefined : true), 30_000);
  await node.nodelet.stats.sampleNow();
  const after = await node.get<Summary>('/stats/summary');
  t.same(after.body.pods.map((p) => p.podRef.name), [burn]);
});
