/**
 * The `nodes3` part: scale through one apiserver. Three nodelet nodes in cluster mode (a control
 * plane of its own, test/helpers/control-plane.ts; each node a `ClusterNodelet` on the bench's
 * private engine, pods without a pod network), and the kubelet's default `maxPods`, 110, on each:
 *
 * 1. baseline: 110 pods on one node (`spec.nodeName`), the other two idle — POSTed at once (32 in
 *    flight), until the apiserver's watch shows every one Running and Ready; then an idle window
 *    with them held; then their deletion until the watch shows them gone;
 * 2. the same with 110 pods on each of the three nodes (330 through the one apiserver).
 *
 * Each figure of (2) is reported beside the same figure of (1) from the same run: pods started per
 * second, per-pod start latency, the agents' CPU per pod start (every nodelet process of the batch
 * with its children), and per node with 110 pods: CPU per minute and RSS over the idle window. On
 * one machine the three nodes share its CPUs, so pods per second cannot grow with the nodes; what
 * the ratios show is whether a node's own cost grows with the cluster (its watches are of its own
 * pods: `spec.nodeName` field selectors).
 */
import { rm } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { KubeClient, query } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { startControlPlane } from '../../test/helpers/control-plane.js';
import { rssOf } from '../../test/helpers/proc.js';
import { waitFor } from '../../test/helpers/wait.js';
import { ApiPods, ClusterNodelet } from './cluster.js';
import { cpuTimesOf } from './proc.js';
import { allReady, benchPod } from './vs-kubelet.js';
import { fmt as f, table, type Metric, type PartResult } from './report.js';
import { median, percentile, round } from './stats.js';

type Log = (msg: string) => void;
const NS = 'default';
const MiB = 1024 ** 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Nodes3Options {
  root: string;
  dockerHost: string;
  cli: string | undefined;
  /** Pods per node (default 110, the kubelet's default `maxPods`). */
  podsPerNode: number;
  /** Seconds of each idle window. */
  idleSeconds: number;
  keepLogs: boolean;
  log: Log;
  defer: (fn: () => Promise<void>) => void;
}

interface BatchResult {
  perPodMs: number[];
  totalMs: number;
  /** CPU-seconds of the loaded nodes' nodelet processes (with their children) during the start. */
  agentCpu: number;
  /** Per loaded node over the idle window: CPU-seconds per minute, and RSS (bytes) at its end. */
  idleCpuPerMin: number[];
  idleRss: number[];
  deleteMs: number;
}

async function batch(client: KubeClient, api: ApiPods, nodes: ClusterNodelet[], names: string[], perNode: number, idleSeconds: number, tag: string): Promise<BatchResult> {
  const pods = nodes.flatMap((_, n) => Array.from({ length: perNode }, (_x, i) => benchPod(`${tag}-${n}-${String(i).padStart(3, '0')}`, tag, names[n]!)));
  const want = new Set(pods.map((p) => p.metadata!.name!));
  const at = new Map<string, number>();
  const cpu = () => nodes.reduce((a, x) => a + cpuTimesOf(x.pid).withChildren, 0);
  const cpu0 = cpu();
  const t0 = performance.now();
  const up = api.until(`${pods.length} pods of ${tag} Running and Ready`, (p, type, when) => {
    const name = p.metadata?.name ?? '';
    if (type !== 'DELETED' && want.has(name) && !at.has(name) && allReady(p)) at.set(name, when - t0);
    return at.size === pods.length;
  }, 120_000 + pods.length * 2_000);
  up.catch(() => undefined);
  for (let i = 0; i < pods.length; i += 32) await Promise.all(pods.slice(i, i + 32).map((body) => client.request('POST', `/api/v1/namespaces/${NS}/pods`, { body })));
  await up;
  const agentCpu = cpu() - cpu0;
  const perPodMs = [...at.values()];

  // Idle with the pods held: each loaded node's CPU and RSS.
  const idle0 = nodes.map((x) => cpuTimesOf(x.pid).withChildren);
  const i0 = performance.now();
  // The measurement window itself (a duration, not a wait for a condition).
  await sleep(idleSeconds * 1000);
  const minutes = (performance.now() - i0) / 60_000;
  const idleCpuPerMin = nodes.map((x, n) => (cpuTimesOf(x.pid).withChildren - idle0[n]!) / minutes);
  const idleRss = nodes.map((x) => rssOf(x.pid));

  const t1 = performance.now();
  let gone = 0;
  const deleted = api.until(`${tag} deleted`, (p, type) => {
    if (type === 'DELETED' && want.has(p.metadata?.name ?? '')) gone++;
    return gone === pods.length;
  }, 120_000 + pods.length * 2_000);
  deleted.catch(() => undefined);
  await client.request('DELETE', `/api/v1/namespaces/${NS}/pods${query({ labelSelector: `bench-batch=${tag}` })}`);
  await deleted;
  return { perPodMs, totalMs: Math.max(...perPodMs), agentCpu, idleCpuPerMin, idleRss, deleteMs: performance.now() - t1 };
}

export async function nodes3Part(o: Nodes3Options): Promise<PartResult> {
  const { log } = o;
  const cp = await startControlPlane({ teardown: (stop) => o.defer(async () => await stop()) }, { log });
  log(`nodes3: kube-apiserver ${cp.k8sVersion} at ${cp.server}`);
  const client = new KubeClient(loadKubeconfig(cp.adminKubeconfig), { maxSockets: 32, userAgent: 'nodelet-bench' });
  o.defer(async () => client.close());
  const names = ['bench-n1', 'bench-n2', 'bench-n3'];
  const nodes: ClusterNodelet[] = [];
  for (const nodeName of names) {
    const node = await ClusterNodelet.start({ root: o.root, cli: o.cli, dockerHost: o.dockerHost, cp, nodeName });
    nodes.push(node);
    o.defer(async () => {
      await node.stop();
      if (o.keepLogs) log(`nodes3: ${nodeName}'s log kept: ${node.logFile}`);
      else await rm(node.workDir, { recursive: true, force: true });
    });
  }
  const api = new ApiPods(client);
  try {
    for (const [i, node] of nodes.entries()) {
      await waitFor(`node ${names[i]} Ready`, async () => {
        node.alive();
        const n = await client.request<{ status?: { conditions?: { type: string; status: string }[] } }>('GET', `/api/v1/nodes/${names[i]}`);
        return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined;
      }, 120_000, 200);
    }
    await waitFor('default ServiceAccount', () => client.request('GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`), 60_000, 200);
    await api.start();
    log('nodes3: warm-up (3 pods on each node, not recorded)');
    await batch(client, api, nodes, names, 3, 0, 'n3warm');
    log(`nodes3: ${o.podsPerNode} pods on one node, idle window ${o.idleSeconds} s`);
    const one = await batch(client, api, nodes.slice(0, 1), names, o.podsPerNode, o.idleSeconds, 'n3one');
    log(`nodes3: all ${o.podsPerNode} Running+Ready in ${one.totalMs.toFixed(0)} ms; deleted in ${one.deleteMs.toFixed(0)} ms`);
    log(`nodes3: ${o.podsPerNode} pods on each of 3 nodes, idle window ${o.idleSeconds} s`);
    const three = await batch(client, api, nodes, names, o.podsPerNode, o.idleSeconds, 'n3all');
    log(`nodes3: all ${3 * o.podsPerNode} Running+Ready in ${three.totalMs.toFixed(0)} ms; deleted in ${three.deleteMs.toFixed(0)} ms`);
    return report(o, one, three);
  } finally {
    await api.stop();
  }
}

function report(o: Nodes3Options, one: BatchResult, three: BatchResult): PartResult {
  const n = o.podsPerNode;
  const metrics: Metric[] = [];
  const rows: string[][] = [[`nodes3: ${n} pods on each of 3 nodelet nodes, beside ${n} on one (same cluster, same run)`, '3 nodes', '1 node', '3 ÷ 1', 'better']];
  const add = (metric: string, label: string, unit: string, better: 'higher' | 'lower', v3: number, v1: number, d: number) => {
    const ratio = v1 === 0 ? null : round(v3 / v1, 3);
    metrics.push({ metric, variant: 'nodes3', value: round(v3, d), unit, baseline: round(v1, d), baseline_variant: 'nodes1', ratio, min: null, max: null, rounds: 1, better, pods_per_node: n });
    rows.push([`  ${label}`, f(v3, d), f(v1, d), ratio === null ? '–' : f(ratio), better]);
  };
  add('nodes3_pods_per_second', 'pods Running+Ready per second (POST of the first to the last Ready)', 'pods/s', 'higher', (3 * n) / (three.totalMs / 1000), n / (one.totalMs / 1000), 1);
  add('nodes3_start_p50', 'per-pod start → Running+Ready, p50 (ms)', 'ms', 'lower', percentile(three.perPodMs, 50), percentile(one.perPodMs, 50), 0);
  add('nodes3_start_p99', '  p99 (ms)', 'ms', 'lower', percentile(three.perPodMs, 99), percentile(one.perPodMs, 99), 0);
  add('nodes3_agent_cpu_per_pod_start', 'nodelet CPU per pod start, its children included (CPU-ms)', 'CPU-ms per pod', 'lower', (three.agentCpu / (3 * n)) * 1000, (one.agentCpu / n) * 1000, 1);
  add('nodes3_idle_agent_cpu', `a node with ${n} pods, idle: nodelet CPU (CPU-s per min, median of the nodes)`, 'CPU-s/min', 'lower', median(three.idleCpuPerMin), median(one.idleCpuPerMin), 3);
  add('nodes3_idle_agent_rss', `  nodelet RSS at the window's end (MiB, the largest node)`, 'MiB', 'lower', Math.max(...three.idleRss) / MiB, Math.max(...one.idleRss) / MiB, 1);
  add('nodes3_delete_total', 'DELETE of the collection → all gone from the apiserver (ms)', 'ms', 'lower', three.deleteMs, one.deleteMs, 0);
  return {
    metrics,
    lines: [table(rows), `  (one round; idle windows of ${o.idleSeconds} s; the three nodes share the machine's CPUs and Docker engine.)`, ''],
  };
}
