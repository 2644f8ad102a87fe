/**
 * The `kubelet` part: nodelet beside the real kubelet (with containerd), in one cluster, on one
 * machine, in one run. Runs inside the bench's sealed network namespace (netns-child.js), where
 * both nodes' CNI bridges and pod IPs exist:
 *
 * - a control plane of its own (test/helpers/control-plane.ts), on 127.0.0.1 of the namespace;
 * - node `bench-nodelet`: nodelet in cluster mode on the bench's private Docker engine, with CNI
 *   (bridge `cni1`, 10.244.1.0/24), node IP 10.200.0.1;
 * - node `bench-kubelet`: kubelet of the same pin on containerd's CRI plugin (bridge `cni2`,
 *   10.244.2.0/24), node IP 10.200.0.2 (bench/lib/kubelet-peer.ts).
 *
 * Every workload is pinned by `spec.nodeName`, the same pod spec on both, and every figure is
 * what the apiserver shows (one admin watch over the bench's pods), so both agents are measured
 * by the same clock and the same observer:
 * 1. pod start: N pods POSTed at once → Running and Ready; per pod and the total; then their
 *    deletion (graceful, the pods exit on SIGTERM) → gone from the apiserver;
 * 2. status freshness: a container's main process SIGKILLed behind the agent's back → the
 *    apiserver shows it terminated;
 * 3. agent cost: CPU-seconds and RSS of the agent, its runtime daemons and the shims, idle with 0,
 *    30 and 110 pods, and per pod start — the agent process alone and the whole node (agent,
 *    runtime, shims and every child process they ran: the CNI plugins run under nodelet's helper
 *    processes on one side and under containerd on the other);
 * 4. kubectl through the apiserver to each node (bench/lib/vs-kubelet-kubectl.ts): `exec` stdout
 *    and stdin throughput and first-byte latency, `logs`, `port-forward` throughput.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type Docker from 'dockerode';
import type { Pod } from 'kubernetes-types/core/v1.js';
import { KubeClient, query } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { waitFor } from '../../test/helpers/wait.js';
import { ApiPods, ClusterNodelet } from './cluster.js';
import { startControlPlane } from '../../test/helpers/control-plane.js';
import { BUSYBOX } from './env.js';
import { rssOf } from '../../test/helpers/proc.js';
import { ContainerdPeer, KubeletPeer, processes, pssOf, shimPids, writeBridgeNet } from './kubelet-peer.js';
import { cpuTimesOf } from './proc.js';
import { execEcho, execStdin, execStdout, httpPod, logs, logsPod, mbps, portForwardGet } from './vs-kubelet-kubectl.js';
import { fmt as f, table, type Metric, type PartResult } from './report.js';
import { median, percentile, round, spread } from './stats.js';

type Log = (msg: string) => void;
const NS = 'default';
const MiB = 1024 ** 2;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The node IPs on the sealed namespace's `lo` (sealedParts adds them for this part). */
export const KUBELET_PART_ADDRS = ['10.200.0.1', '10.200.0.2'] as const;
/** Both nodes' containerLogMaxSize: above the `kubectl logs` figure's log (`--kubelet-log-mib`, at most 1024). */
const LOG_MAX_SIZE = '2Gi';
/** The pause image of the bench's engine (scripts/docker-engine.sh `images`), nodelet's default too. */
const PAUSE = 'registry.k8s.io/pause:3.10';

/** What the parent hands the sealed child for this part. */
export interface VsKubeletJob {
  kubeletBin: string;
  /** Batch sizes of the pod-start figure, e.g. [1, 30, 100]. */
  podCounts: number[];
  rounds: number;
  kills: number;
  /** Seconds per idle window of the cost figure. */
  idleSeconds: number;
  /** Pods of the idle windows with pods, ascending (a window at 0 pods comes first). */
  idlePods: number[];
  /** MiB per `kubectl exec` stdout and stdin transfer and per `kubectl port-forward` GET (0: skip the kubectl figures). */
  execMib: number;
  /** MiB of the `kubectl logs` figure's log. */
  logMib: number;
  /** `kubectl exec … echo x` first-byte samples per node per kubectl round (each one recorded). */
  echoSamples: number;
}

type AgentName = 'nodelet' | 'kubelet';
const AGENTS: readonly AgentName[] = ['nodelet', 'kubelet'];

/** One node as the part drives it: its agent, runtime daemons, shims and containers. */
interface Agent {
  name: AgentName;
  node: string;
  agentPid(): number | undefined;
  /** The runtime daemons serving it (nodelet: dockerd + its containerd; kubelet: containerd). */
  runtimePids(): number[];
  shims(): number[];
  /** The host pid of a container's main process, from its `containerID` (`docker://…`, `containerd://…`). */
  containerPid(containerID: string): Promise<number>;
  /** Containers (sandboxes included) still running for this node. */
  runningContainers(): Promise<number>;
  alive(): void;
  /** Helper processes of the agent counted as the agent (nodelet's CNI plugin spawners, `src/network/cni/plugin-spawner.ts`). */
  helperPids?(): number[];
  /** The agent's own request counters (nodelet's /metrics: Docker Engine API and apiserver requests), when it has them. */
  requestCounts?(): Promise<Map<string, number>>;
}

/** Docker and apiserver request counters of nodelet's /metrics, keyed `docker GET /containers/{id}/json`, `apiserver PATCH pods/status`. */
export function requestCountsOf(metricsText: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const line of metricsText.split('\n')) {
    const m = /^nodelet_(docker_api|apiserver)_requests_total\{(.*)\} (\d+(?:\.\d+)?)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1]!, x[2]!]));
    const key = m[1] === 'docker_api' ? `docker ${labels.method} ${labels.endpoint}` : `apiserver ${labels.verb} ${labels.resource}`;
    counts.set(key, Number(m[3]));
  }
  return counts;
}

/** `after - before` per key, the keys that grew only, per pod, formatted `key ×n` largest first. */
function perPodRequests(before: Map<string, number>, after: Map<string, number>, pods: number): string {
  const rows = [...after].map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / pods] as const).filter(([, d]) => d > 0).sort((a, b) => b[1] - a[1]);
  const sum = (prefix: string) => rows.filter(([k]) => k.startsWith(prefix)).reduce((a, [, d]) => a + d, 0);
  return `docker ${sum('docker ').toFixed(1)}/pod, apiserver ${sum('apiserver ').toFixed(1)}/pod: ${rows.map(([k, d]) => `${k} ×${d.toFixed(2)}`).join(', ')}`;
}

export const allReady = (p: Pod | undefined): boolean => {
  const cs = p?.status?.containerStatuses ?? [];
  return (
    p?.status?.phase === 'Running' &&
    cs.length > 0 &&
    cs.length === (p.spec?.containers.length ?? -1) &&
    cs.every((c) => c.state?.running && c.ready) &&
    (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
  );
};

/** The bench pod of this part (and nodes3's): busybox that exits on SIGTERM (so deletion is not padded by a grace period it would ignore). */
export function benchPod(name: string, batch: string, node: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels: { 'bench-batch': batch } },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 5,
      containers: [{ name: 'app', image: BUSYBOX, imagePullPolicy: 'Never', command: ['sh', '-c', 'trap "exit 0" TERM; sleep 2147483647 & wait'] }],
    },
  };
}

const podNames = (batch: string, n: number) => Array.from({ length: n }, (_, i) => `${batch}-${String(i).padStart(3, '0')}`);

// ---- CPU and RSS of an agent's processes ------------------------------------------------------------

interface Usage {
  /** The agent process alone. */
  agentSelf: number;
  /**
   * The agent, its helper processes and every child either waited for (nodelet: its CNI plugin
   * spawners and the plugins they ran; a helper that ended is in nodelet's children's time).
   */
  agent: number;
  /** The runtime daemons and their waited-for children (the CRI containerd runs the CNI plugins; both containerds, the shims' `start`). */
  runtime: number;
  /** The shims and their waited-for children (runc). */
  shims: number;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
/** CPU seconds of processes with their waited-for children; one that ended between listing and reading counts 0. */
const withChildren = (pids: number[]) => sum(pids.map((p) => cpuTimesOf(p).withChildren).filter(Number.isFinite));

function cpuNow(a: Agent): Usage {
  const agent = cpuTimesOf(a.agentPid());
  return { agentSelf: agent.self, agent: agent.withChildren + withChildren(a.helperPids?.() ?? []), runtime: withChildren(a.runtimePids()), shims: withChildren(a.shims()) };
}

/** RSS (agent with its helpers, daemons) and PSS (shims); `agentSelf` the agent process alone. */
function rssNow(a: Agent): Usage {
  const self = rssOf(a.agentPid());
  return { agentSelf: self, agent: self + sum((a.helperPids?.() ?? []).map(rssOf)), runtime: sum(a.runtimePids().map(rssOf)), shims: sum(a.shims().map(pssOf)) };
}

const minus = (x: Usage, y: Usage): Usage => ({ agentSelf: x.agentSelf - y.agentSelf, agent: x.agent - y.agent, runtime: x.runtime - y.runtime, shims: x.shims - y.shims });

// ---- 1. pod start and deletion ------------------------------------------------------------------------

interface StartResult {
  /** Per pod: ms from the first POST to the watch showing it Running and Ready. */
  perPodMs: number[];
  totalMs: number;
  /** CPU-seconds during the batch (shims: those alive at its end, all born in it). */
  cpu: Usage;
  /** Per pod: ms from the DELETE to the watch's DELETED event. */
  deletePerPodMs: number[];
  deleteTotalMs: number;
  /** The agent's requests per pod during the start and during the deletion (`perPodRequests`), when it counts them. */
  requests?: { start: string; delete: string };
}

async function startAndDelete(client: KubeClient, api: ApiPods, a: Agent, batch: string, n: number): Promise<StartResult> {
  const names = podNames(batch, n);
  const wanted = new Set(names);
  const ready = new Map<string, number>();
  const timeoutMs = 60_000 + n * 3_000;
  const requests0 = await a.requestCounts?.();
  const before = cpuNow(a);
  const t0 = performance.now();
  const done = api.until(`${n} pods of ${batch} Running and Ready on ${a.node}`, (pod, type, at) => {
    const name = pod.metadata?.name ?? '';
    if (type !== 'DELETED' && wanted.has(name) && !ready.has(name) && allReady(pod)) ready.set(name, at - t0);
    return ready.size === n;
  }, timeoutMs);
  done.catch(() => undefined);
  // 32 in flight, as cluster.ts (kubectl apply of new objects) sends them.
  for (let i = 0; i < names.length; i += 32) {
    await Promise.all(names.slice(i, i + 32).map((name) => client.request('POST', `/api/v1/namespaces/${NS}/pods`, { body: benchPod(name, batch, a.node) })));
  }
  await done;
  const cpu = minus(cpuNow(a), before);
  const requests1 = await a.requestCounts?.();

  const gone = new Map<string, number>();
  const t1 = performance.now();
  const deleted = api.until(`${batch} deleted from ${a.node}`, (pod, type, at) => {
    const name = pod.metadata?.name ?? '';
    if (type === 'DELETED' && wanted.has(name)) gone.set(name, at - t1);
    return gone.size === n;
  }, timeoutMs);
  deleted.catch(() => undefined);
  // The default grace (the pods' 5 s, which they cut short by exiting on SIGTERM): the agent
  // kills the containers and then deletes the object itself (grace 0), as the kubelet's status manager does.
  await client.request('DELETE', `/api/v1/namespaces/${NS}/pods${query({ labelSelector: `bench-batch=${batch}` })}`);
  await deleted;
  await waitFor(`${a.node}'s containers of ${batch} stopped`, async () => {
    a.alive();
    return (await a.runningContainers()) === 0 ? true : undefined;
  }, 120_000, 100);
  const requests2 = await a.requestCounts?.();
  const requests = requests0 && requests1 && requests2 ? { start: perPodRequests(requests0, requests1, n), delete: perPodRequests(requests1, requests2, n) } : undefined;
  return { perPodMs: names.map((x) => ready.get(x)!), totalMs: Math.max(...ready.values()), cpu, ...(requests ? { requests } : {}), deletePerPodMs: names.map((x) => gone.get(x)!), deleteTotalMs: Math.max(...gone.values()) };
}

// ---- 2. status freshness ------------------------------------------------------------------------------

function deathPod(name: string, node: string, kills: number): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels: { 'bench-batch': name } },
    spec: {
      nodeName: node,
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 0,
      // Never: each kill is one terminated container, with no crash-loop back-off in the way.
      restartPolicy: 'Never',
      containers: Array.from({ length: kills }, (_, i) => ({ name: `k${i}`, image: BUSYBOX, imagePullPolicy: 'Never', command: ['sleep', '2147483647'] })),
    },
  };
}

async function freshness(client: KubeClient, api: ApiPods, agents: Record<AgentName, Agent>, kills: number, log: Log): Promise<Record<AgentName, number[]>> {
  const pods: Record<AgentName, string> = { nodelet: 'deaths-nodelet', kubelet: 'deaths-kubelet' };
  const up = AGENTS.map((n) => api.until(`${pods[n]} Running`, (pod) => pod.metadata?.name === pods[n] && allReady(pod), 180_000));
  // Awaited below; a failing POST must not leave them rejecting unobserved.
  for (const p of up) p.catch(() => undefined);
  for (const n of AGENTS) await client.request('POST', `/api/v1/namespaces/${NS}/pods`, { body: deathPod(pods[n], agents[n].node, kills) });
  await Promise.all(up);
  const out: Record<AgentName, number[]> = { nodelet: [], kubelet: [] };
  for (let i = 0; i < kills; i++) {
    const name = `k${i}`;
    // Alternate which node's container dies first.
    for (const n of i % 2 === 0 ? AGENTS : [...AGENTS].reverse()) {
      const status = (p: Pod | undefined) => p?.status?.containerStatuses?.find((c) => c.name === name);
      const id = status(api.pods.get(pods[n]))?.containerID;
      if (!id) throw new Error(`${pods[n]}/${name} has no container ID on the apiserver`);
      const pid = await agents[n].containerPid(id);
      // A random phase, so samples do not lock onto a periodic relist or status batch.
      await sleep(50 + Math.random() * 450);
      let at = Number.NaN;
      const seen = api.until(`${pods[n]}/${name} terminated`, (pod, _type, when) => {
        if (pod.metadata?.name !== pods[n] || !status(pod)?.state?.terminated) return false;
        at = when;
        return true;
      }, 30_000);
      seen.catch(() => undefined);
      const t0 = performance.now();
      process.kill(pid, 'SIGKILL');
      await seen;
      out[n].push(at - t0);
    }
  }
  for (const n of AGENTS) log(`kubelet part: kill → apiserver shows terminated, ${n}: ${out[n].map((x) => x.toFixed(0)).join(', ')} ms`);
  for (const n of AGENTS) {
    const gone = api.until(`${pods[n]} deleted`, (pod, type) => pod.metadata?.name === pods[n] && type === 'DELETED', 120_000);
    gone.catch(() => undefined);
    await client.request('DELETE', `/api/v1/namespaces/${NS}/pods/${pods[n]}`);
    await gone;
  }
  return out;
}

// ---- 3. idle cost ---------------------------------------------------------------------------------------

interface IdleResult {
  /** CPU-seconds per minute. */
  cpuPerMin: Usage;
  /** Bytes, the median of 5 samples at the window's end: RSS of the agent and the daemons, PSS summed over the shims. */
  rss: Usage;
}

async function idleWindow(agents: Record<AgentName, Agent>, seconds: number): Promise<Record<AgentName, IdleResult>> {
  const before = { nodelet: cpuNow(agents.nodelet), kubelet: cpuNow(agents.kubelet) };
  const t0 = performance.now();
  // The measurement window itself (a duration, not a wait for a condition).
  await sleep(seconds * 1000);
  const min = (performance.now() - t0) / 60_000;
  const out = {} as Record<AgentName, IdleResult>;
  for (const n of AGENTS) {
    const d = minus(cpuNow(agents[n]), before[n]);
    const rss: Usage[] = [];
    for (let i = 0; i < 5; i++) {
      rss.push(rssNow(agents[n]));
      await sleep(100);
    }
    out[n] = {
      cpuPerMin: { agentSelf: d.agentSelf / min, agent: d.agent / min, runtime: d.runtime / min, shims: d.shims / min },
      rss: { agentSelf: median(rss.map((r) => r.agentSelf)), agent: median(rss.map((r) => r.agent)), runtime: median(rss.map((r) => r.runtime)), shims: median(rss.map((r) => r.shims)) },
    };
  }
  return out;
}

// ---- 4. kubectl through the apiserver ---------------------------------------------------------------------

/** Per node, per recorded round: MB/s of each transfer and ms to `echo x`'s first byte. */
type KubectlFigures = Record<AgentName, { stdout: number[]; stdin: number[]; firstByteMs: number[]; logs: number[]; portForward: number[] }>;

/**
 * The order of `count` paired samples of the two nodes, the pair's order alternating (A B, B A,
 * A B, …): both nodes see the same load drift, and neither always runs right after the other
 * (kubectl's own start, ≈ 45 ms of an `echo x` sample here, varies most with the load).
 */
export function interleavedPairs<T>(order: readonly T[], count: number): T[] {
  const out: T[] = [];
  for (let i = 0; i < count; i++) out.push(...(i % 2 === 0 ? order : [...order].reverse()));
  return out;
}

/** One sample as `83`, more as `median [min–max] of N`. */
function echoText(ms: number[]): string {
  return ms.length === 1 ? ms[0]!.toFixed(0) : `${median(ms).toFixed(0)} [${Math.min(...ms).toFixed(0)}–${Math.max(...ms).toFixed(0)}] of ${ms.length}`;
}

/** POSTs the pods and waits until the watch shows each one `Ready` (Running, all ready) or `Succeeded` (its containers exited 0). */
async function createAndWait(client: KubeClient, api: ApiPods, pods: Pod[], until: 'Ready' | 'Succeeded', timeoutMs: number): Promise<void> {
  const want = new Set(pods.map((p) => p.metadata!.name!));
  const seen = new Set<string>();
  let failed = '';
  const done = api.until(`${pods.length} pod(s) ${until}`, (pod, type) => {
    const name = pod.metadata?.name ?? '';
    if (type === 'DELETED' || !want.has(name)) return false;
    if (pod.status?.phase === 'Failed') failed = name;
    else if (until === 'Ready' ? allReady(pod) : pod.status?.phase === 'Succeeded') seen.add(name);
    return failed !== '' || seen.size === want.size;
  }, timeoutMs);
  done.catch(() => undefined);
  for (let i = 0; i < pods.length; i += 32) await Promise.all(pods.slice(i, i + 32).map((body) => client.request('POST', `/api/v1/namespaces/${NS}/pods`, { body })));
  await done;
  if (failed) throw new Error(`pod ${failed} failed: ${JSON.stringify(api.pods.get(failed)?.status?.containerStatuses?.[0]?.state)}`);
}

async function deleteAndWait(client: KubeClient, api: ApiPods, names: string[]): Promise<void> {
  const left = new Set(names);
  const gone = api.until(`${names.join(', ')} deleted`, (pod, type) => {
    if (type === 'DELETED') left.delete(pod.metadata?.name ?? '');
    return left.size === 0;
  }, 120_000);
  gone.catch(() => undefined);
  for (const name of names) await client.request('DELETE', `/api/v1/namespaces/${NS}/pods/${name}`);
  await gone;
}

/**
 * The kubectl figures, a warm-up round (not recorded) and then `job.rounds`, alternating which node
 * goes first: exec stdout, stdin and `echo x` to an idle pod, `logs` of a finished logs pod,
 * `port-forward` to an httpd pod (both made here, on each node, and deleted after).
 */
async function kubectlFigures(client: KubeClient, api: ApiPods, agents: Record<AgentName, Agent>, o: { kubectl: string; kubeconfig: string; execPod: (n: AgentName) => string; job: VsKubeletJob; log: Log }): Promise<KubectlFigures> {
  const { job, kubectl, kubeconfig } = o;
  const bytes = job.execMib * MiB;
  const logBytes = job.logMib * MiB;
  const logsName = (n: AgentName) => `logs-${n}`;
  const pfName = (n: AgentName) => `pf-${n}`;
  o.log(`kubelet part: kubectl through the apiserver: exec ${job.execMib} MiB stdout and stdin, 'echo x', logs of ${job.logMib} MiB, port-forward ${job.execMib} MiB; ${job.rounds + 1} rounds (the first not recorded)`);
  await createAndWait(client, api, AGENTS.map((n) => logsPod(logsName(n), NS, agents[n].node, logBytes)), 'Succeeded', 300_000);
  await createAndWait(client, api, AGENTS.map((n) => httpPod(pfName(n), NS, agents[n].node, bytes)), 'Ready', 120_000);
  const out: KubectlFigures = { nodelet: { stdout: [], stdin: [], firstByteMs: [], logs: [], portForward: [] }, kubelet: { stdout: [], stdin: [], firstByteMs: [], logs: [], portForward: [] } };
  for (let r = 0; r <= job.rounds; r++) {
    const order = r % 2 === 0 ? AGENTS : [...AGENTS].reverse();
    for (const n of order) {
      const pod = o.execPod(n);
      const so = await execStdout(kubectl, kubeconfig, pod, bytes);
      const si = await execStdin(kubectl, kubeconfig, pod, bytes);
      const lg = await logs(kubectl, kubeconfig, logsName(n), logBytes);
      const pfMs = await portForwardGet(kubectl, kubeconfig, pfName(n), bytes);
      o.log(`kubelet part: kubectl round ${r}${r === 0 ? ' (warm-up)' : ''} on ${n}: exec stdout ${mbps(bytes, so.totalMs).toFixed(1)} MB/s, stdin ${mbps(bytes, si.totalMs).toFixed(1)} MB/s, logs ${mbps(logBytes, lg.totalMs).toFixed(1)} MB/s, port-forward ${mbps(bytes, pfMs).toFixed(1)} MB/s`);
      if (r === 0) continue;
      out[n].stdout.push(mbps(bytes, so.totalMs));
      out[n].stdin.push(mbps(bytes, si.totalMs));
      out[n].logs.push(mbps(logBytes, lg.totalMs));
      out[n].portForward.push(mbps(bytes, pfMs));
    }
    const echo: Record<AgentName, number[]> = { nodelet: [], kubelet: [] };
    for (const n of interleavedPairs(order, job.echoSamples)) echo[n].push((await execEcho(kubectl, kubeconfig, o.execPod(n))).firstByteMs);
    o.log(`kubelet part: kubectl round ${r}${r === 0 ? ' (warm-up)' : ''}: 'echo x' first byte (ms), ` + AGENTS.map((n) => `${n} ${echoText(echo[n])}`).join(', '));
    if (r > 0) for (const n of AGENTS) out[n].firstByteMs.push(...echo[n]);
  }
  await deleteAndWait(client, api, AGENTS.flatMap((n) => [logsName(n), pfName(n)]));
  return out;
}

// ---- the part ------------------------------------------------------------------------------------------

export interface VsKubeletOptions {
  root: string;
  job: VsKubeletJob;
  cli: string | undefined;
  keepLogs: boolean;
  /** The sealed child's private engine: nodelet's runtime. */
  engine: { host: string; pid: number | undefined; dir: string };
  docker: Docker;
  log: Log;
  defer: (fn: () => Promise<void>) => void;
}

export async function vsKubeletPart(o: VsKubeletOptions): Promise<PartResult> {
  const { log, job } = o;
  const loadStart = loadavg().map((x) => x.toFixed(2)).join(' ');
  const cp = await startControlPlane({ teardown: (stop) => o.defer(async () => await stop()) }, { log });
  log(`kubelet part: kube-apiserver ${cp.k8sVersion} at ${cp.server}`);
  const client = new KubeClient(loadKubeconfig(cp.adminKubeconfig), { maxSockets: 32, userAgent: 'nodelet-bench' });
  o.defer(async () => client.close());

  // nodelet: cluster mode, CNI bridge cni1.
  const work = await mkdtemp(join(tmpdir(), 'nodelet-bench-vs-kubelet-'));
  o.defer(() => rm(work, { recursive: true, force: true }));
  const nodeletNet = await writeBridgeNet(work, 'nodeletnet', 1);
  const nodelet = await ClusterNodelet.start({
    root: o.root,
    cli: o.cli,
    dockerHost: o.engine.host,
    cp,
    nodeName: 'bench-nodelet',
    nodeIP: KUBELET_PART_ADDRS[0],
    // Logs rotate past the `kubectl logs` figure's size on both nodes (the default is 10Mi on both).
    args: ['--network-plugin=cni', '--cni-bin-dir', '/usr/lib/cni', '--cni-conf-dir', nodeletNet.confDir, '--cni-cache-dir', nodeletNet.cacheDir, '--container-log-max-size', LOG_MAX_SIZE],
  });
  o.defer(async () => {
    await nodelet.stop();
    if (o.keepLogs) log(`kubelet part: nodelet log kept: ${nodelet.logFile}`);
    else await rm(nodelet.workDir, { recursive: true, force: true });
  });

  // The kubelet: containerd (CRI, bridge cni2) with the bench's images, then the kubelet.
  const containerd = await ContainerdPeer.start({ sandboxImage: PAUSE, bridgeIndex: 2, log });
  o.defer(() => containerd.stop(o.keepLogs, log));
  await containerd.importImages(o.engine.host, [BUSYBOX, PAUSE]);
  const kubelet = await KubeletPeer.start({ bin: job.kubeletBin, cp, containerd, nodeName: 'bench-kubelet', nodeIP: KUBELET_PART_ADDRS[1], maxPods: 250, containerLogMaxSize: LOG_MAX_SIZE, log });
  // The kubelet first, then containerd (which kills the tasks the kubelet left), then the
  // kubelet's cgroups, which only empty cgroups leave.
  o.defer(async () => {
    await kubelet.stop(o.keepLogs, log);
    await containerd.stop(o.keepLogs, log);
    kubelet.removeCgroups(log);
  });

  // Docker's own containerd (a child of dockerd) and its socket, whose shims serve nodelet's pods.
  const dockerContainerd = () => [...processes()].find(([, p]) => p.ppid === o.engine.pid && p.comm === 'containerd')?.[0];
  const dockerCtdAddress = join(readFileSync(join(o.engine.dir, 'execroot'), 'utf8').trim(), 'containerd/containerd.sock');
  const agents: Record<AgentName, Agent> = {
    nodelet: {
      name: 'nodelet',
      node: 'bench-nodelet',
      agentPid: () => nodelet.pid,
      runtimePids: () => [o.engine.pid, dockerContainerd()].filter((x): x is number => x !== undefined),
      shims: () => shimPids(dockerCtdAddress),
      containerPid: async (id) => (await o.docker.getContainer(id.replace(/^docker:\/\//, '')).inspect()).State.Pid,
      runningContainers: async () => (await o.docker.listContainers({ filters: { label: ['io.nodelet.node=bench-nodelet'], status: ['running'] } })).length,
      alive: () => nodelet.alive(),
      requestCounts: async () => requestCountsOf(await nodelet.getText('/metrics')),
      helperPids: () => [...processes()].filter(([, p]) => p.ppid === nodelet.pid && p.argv.includes('--nodelet-cni-plugin-spawner')).map(([pid]) => pid),
    },
    kubelet: {
      name: 'kubelet',
      node: 'bench-kubelet',
      agentPid: () => kubelet.pid,
      runtimePids: () => [containerd.pid].filter((x): x is number => x !== undefined),
      shims: () => shimPids(containerd.address),
      containerPid: async (id) => {
        const t = (await containerd.tasks()).get(id.replace(/^containerd:\/\//, ''));
        if (!t) throw new Error(`containerd has no task ${id}`);
        return t.pid;
      },
      runningContainers: async () => [...(await containerd.tasks()).values()].filter((t) => t.status === 'RUNNING').length,
      alive: () => kubelet.alive(),
    },
  };

  const api = new ApiPods(client);
  try {
    for (const a of Object.values(agents)) {
      await waitFor(`node ${a.node} Ready`, async () => {
        a.alive();
        const n = await client.request<{ status?: { conditions?: { type: string; status: string }[]; declaredFeatures?: string[] } }>('GET', `/api/v1/nodes/${a.node}`);
        if (n.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True') return undefined;
        // ExtendWebSocketsToKubelet decides whether the apiserver hands kubectl's WebSocket to the
        // node as is or translates it to SPDY (pkg/registry/core/pod/rest/subresources.go).
        log(`kubelet part: node ${a.node} Ready, declared features: ${(n.status.declaredFeatures ?? []).join(', ') || 'none'}`);
        return true;
      }, 120_000, 200);
    }
    await waitFor('default ServiceAccount', () => client.request('GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`), 60_000, 200);
    await api.start();
    log('kubelet part: both nodes Ready; warm-up (3 pods on each, not recorded)');
    for (const n of AGENTS) await startAndDelete(client, api, agents[n], `warm-${n}`, 3);

    // Idle, 0 pods (both nodes empty, measured over the same window).
    log(`kubelet part: idle window, 0 pods, ${job.idleSeconds} s`);
    const idle0 = await idleWindow(agents, job.idleSeconds);

    // 1. Pod start and deletion, rounds alternating which node goes first.
    const starts = new Map<number, Record<AgentName, StartResult[]>>();
    for (const n of job.podCounts) starts.set(n, { nodelet: [], kubelet: [] });
    for (let r = 0; r < job.rounds; r++) {
      for (const n of job.podCounts) {
        for (const name of r % 2 === 0 ? AGENTS : [...AGENTS].reverse()) {
          const res = await startAndDelete(client, api, agents[name], `${name[0]}${r}n${n}`, n);
          starts.get(n)![name].push(res);
          log(`kubelet part round ${r + 1}/${job.rounds}, ${n} pod(s) on ${name}: all Ready in ${res.totalMs.toFixed(0)} ms (p50 ${percentile(res.perPodMs, 50).toFixed(0)}), deleted in ${res.deleteTotalMs.toFixed(0)} ms; CPU agent ${res.cpu.agent.toFixed(2)} s, runtime ${res.cpu.runtime.toFixed(2)} s`);
          if (res.requests) log(`  requests per pod start: ${res.requests.start}\n  requests per pod deletion: ${res.requests.delete}`);
        }
      }
    }

    // 2. Status freshness.
    log(`kubelet part: ${job.kills} × SIGKILL of a container's process → apiserver shows terminated, each node`);
    const fresh = await freshness(client, api, agents, job.kills, log);

    // 3. Idle with pods: both nodes hold the same number of pods during the same window, 30 then 110.
    const idleName = (n: AgentName, i: number) => `idle-${n}-${String(i).padStart(3, '0')}`;
    const idleN: { pods: number; result: Record<AgentName, IdleResult> }[] = [];
    let held = 0;
    for (const count of job.idlePods) {
      log(`kubelet part: ${count} idle pods on each node, window ${job.idleSeconds} s`);
      const added = AGENTS.flatMap((n) => Array.from({ length: count - held }, (_, i) => [n, idleName(n, held + i)] as const));
      await createAndWait(client, api, added.map(([n, name]) => benchPod(name, `idle-${n}`, agents[n].node)), 'Ready', 60_000 + (count - held) * 3_000);
      held = count;
      idleN.push({ pods: count, result: await idleWindow(agents, job.idleSeconds) });
    }

    // 4. kubectl through the apiserver to each node.
    const kc = job.execMib > 0 && held > 0 ? await kubectlFigures(client, api, agents, { kubectl: join(dirname(job.kubeletBin), 'kubectl'), kubeconfig: cp.adminKubeconfig, execPod: (n) => idleName(n, 0), job, log }) : undefined;
    for (const n of AGENTS) {
      const gone = api.until(`idle pods of ${n} deleted`, (pod, type) => type === 'DELETED' && api.batch(`idle-${n}`).length === 0, 300_000);
      gone.catch(() => undefined);
      await client.request('DELETE', `/api/v1/namespaces/${NS}/pods${query({ labelSelector: `bench-batch=idle-${n}` })}`);
      await gone;
    }
    const loadEnd = loadavg().map((x) => x.toFixed(2)).join(' ');
    return report(job, { starts, fresh, idle: [{ pods: 0, result: idle0 }, ...idleN], kubectl: kc }, { k8s: cp.k8sVersion, loadStart, loadEnd });
  } finally {
    await api.stop();
  }
}

// ---- report ---------------------------------------------------------------------------------------------

interface Figures {
  starts: Map<number, Record<AgentName, StartResult[]>>;
  fresh: Record<AgentName, number[]>;
  /** The idle windows, 0 pods first. */
  idle: { pods: number; result: Record<AgentName, IdleResult> }[];
  kubectl: KubectlFigures | undefined;
}

/**
 * One comparison line: nodelet's per-round values beside the kubelet's, the ratio nodelet ÷
 * kubelet paired per round (the median of the ratios), and which direction is better.
 */
export function compare(metric: string, unit: string, better: 'higher' | 'lower', nodelet: number[], kubelet: number[], extra: Record<string, unknown> = {}, digits = 1): Metric {
  const n = spread(nodelet);
  const k = spread(kubelet);
  const ratios = nodelet.map((x, i) => x / kubelet[i]!);
  const rs = spread(ratios);
  return {
    metric,
    variant: 'nodelet',
    value: round(n.median, digits),
    unit,
    baseline: round(k.median, digits),
    baseline_variant: 'kubelet',
    ratio: round(rs.median, 3),
    better,
    min: round(n.min, digits),
    max: round(n.max, digits),
    baseline_min: round(k.min, digits),
    baseline_max: round(k.max, digits),
    ratio_min: round(rs.min, 3),
    ratio_max: round(rs.max, 3),
    rounds: nodelet.length,
    per_round: nodelet.map((x) => round(x, digits)),
    baseline_per_round: kubelet.map((x) => round(x, digits)),
    ...extra,
  };
}

function report(job: VsKubeletJob, fig: Figures, meta: { k8s: string; loadStart: string; loadEnd: string }): PartResult {
  const metrics: Metric[] = [];
  const rows: string[][] = [[`nodelet vs the kubelet ${meta.k8s} + containerd 1.6 (same control plane, same machine, same run)`, 'nodelet', '[min–max]', 'kubelet', '[min–max]', 'nodelet÷kubelet', 'better']];
  const cell = (xs: number[], d: number) => {
    const s = spread(xs);
    return [f(s.median, d), xs.length > 1 ? `[${f(s.min, d)}–${f(s.max, d)}]` : ''];
  };
  const add = (label: string, m: Metric, nodelet: number[], kubelet: number[], d: number) => {
    metrics.push(m);
    rows.push([`  ${label}`, ...cell(nodelet, d), ...cell(kubelet, d), `${f(m.ratio)}${nodelet.length > 1 ? ` [${f(m.ratio_min as number)}–${f(m.ratio_max as number)}]` : ''}`, m.better as string]);
  };
  const by = <T,>(rs: Record<AgentName, T[]>, fn: (x: T) => number) => ({ nodelet: rs.nodelet.map(fn), kubelet: rs.kubelet.map(fn) });

  for (const [n, rs] of fig.starts) {
    const rows3: [string, string, (x: StartResult) => number][] = [
      [`vs_kubelet_start_p50_n${n}`, `${n} pod(s) POSTed at once → Running+Ready, per-pod p50 (ms)`, (x) => percentile(x.perPodMs, 50)],
      ...(n > 1
        ? ([
            [`vs_kubelet_start_p99_n${n}`, `  per-pod p99 (ms)`, (x) => percentile(x.perPodMs, 99)],
            [`vs_kubelet_start_total_n${n}`, `  all ${n} Running+Ready (ms)`, (x) => x.totalMs],
          ] as [string, string, (x: StartResult) => number][])
        : []),
      [`vs_kubelet_delete_total_n${n}`, `  DELETE → all ${n} gone from the apiserver (ms)`, (x) => x.deleteTotalMs],
    ];
    for (const [metric, label, fn] of rows3) {
      const v = by(rs, fn);
      add(label, compare(metric, 'ms', 'lower', v.nodelet, v.kubelet, { pods: n }, 0), v.nodelet, v.kubelet, 0);
    }
    if (n > 1) {
      const cpuRows: [string, string, (u: Usage) => number][] = [
        [`vs_kubelet_agent_process_cpu_per_pod_start_n${n}`, `  agent process alone: CPU per pod start (CPU-ms)`, (u) => u.agentSelf],
        [`vs_kubelet_agent_cpu_per_pod_start_n${n}`, `  agent with its child processes (nodelet: + CNI spawners and plugins) (CPU-ms)`, (u) => u.agent],
        [`vs_kubelet_runtime_cpu_per_pod_start_n${n}`, `  runtime: daemons + shims + their children (CRI: + CNI plugins) (CPU-ms)`, (u) => u.runtime + u.shims],
        [`vs_kubelet_node_cpu_per_pod_start_n${n}`, `  whole node: agent + runtime, every child included (CPU-ms)`, (u) => u.agent + u.runtime + u.shims],
      ];
      for (const [metric, label, fn] of cpuRows) {
        const v = by(rs, (x) => (fn(x.cpu) / n) * 1000);
        add(label, compare(metric, 'CPU-ms per pod', 'lower', v.nodelet, v.kubelet, { pods: n }), v.nodelet, v.kubelet, 1);
      }
    }
  }

  // Freshness: all samples of each node (one "round"); the ratio of the percentiles.
  for (const p of [50, 99]) {
    const nv = percentile(fig.fresh.nodelet, p);
    const kv = percentile(fig.fresh.kubelet, p);
    const m = compare(`vs_kubelet_status_freshness_p${p}`, `ms (p${p})`, 'lower', [nv], [kv], { samples: fig.fresh.nodelet.map((x) => round(x, 1)), baseline_samples: fig.fresh.kubelet.map((x) => round(x, 1)) }, 0);
    add(`container SIGKILLed → apiserver shows terminated, p${p} of ${fig.fresh.nodelet.length} (ms)`, m, [nv], [kv], 0);
  }

  for (const { pods, result: idle } of fig.idle) {
    const label = `${pods} pods`;
    const one = (fn: (r: IdleResult) => number) => ({ nodelet: [fn(idle.nodelet)], kubelet: [fn(idle.kubelet)] });
    const items: [string, string, string, (r: IdleResult) => number, number][] = [
      [`vs_kubelet_idle_agent_cpu_${pods}`, `idle, ${label}: agent CPU (CPU-s per min)`, 'CPU-s/min', (r) => r.cpuPerMin.agent, 3],
      [`vs_kubelet_idle_runtime_cpu_${pods}`, `  runtime daemons CPU (CPU-s per min)`, 'CPU-s/min', (r) => r.cpuPerMin.runtime, 3],
      [`vs_kubelet_idle_shims_cpu_${pods}`, `  shims CPU (CPU-s per min)`, 'CPU-s/min', (r) => r.cpuPerMin.shims, 3],
      [`vs_kubelet_idle_agent_rss_${pods}`, `  agent RSS (MiB; nodelet: + its CNI spawners while they run)`, 'MiB', (r) => r.rss.agent / MiB, 1],
      [`vs_kubelet_idle_runtime_rss_${pods}`, `  runtime daemons RSS (MiB)`, 'MiB', (r) => r.rss.runtime / MiB, 1],
      [`vs_kubelet_idle_shims_pss_${pods}`, `  shims PSS, summed (MiB)`, 'MiB', (r) => r.rss.shims / MiB, 1],
    ];
    for (const [metric, l, unit, fn, d] of items) {
      const v = one(fn);
      add(l, compare(metric, unit, 'lower', v.nodelet, v.kubelet, { pods, window_s: job.idleSeconds }, d), v.nodelet, v.kubelet, d);
    }
  }

  if (fig.kubectl) {
    const k = fig.kubectl;
    const kubectlRows: [string, string, string, 'higher' | 'lower', (x: KubectlFigures[AgentName]) => number[], number][] = [
      ['vs_kubelet_exec_stdout_throughput', `kubectl exec via the apiserver: ${job.execMib} MiB stdout (MB/s, kubectl start included)`, 'MB/s', 'higher', (x) => x.stdout, 1],
      ['vs_kubelet_exec_stdin_throughput', `  ${job.execMib} MiB stdin into 'wc -c' (MB/s, kubectl start included)`, 'MB/s', 'higher', (x) => x.stdin, 1],
      ['vs_kubelet_exec_first_byte', `  'echo x' first byte (ms, kubectl start included${job.echoSamples > 1 ? `; ${job.echoSamples} interleaved pairs per round` : ''})`, 'ms', 'lower', (x) => x.firstByteMs, 0],
      ['vs_kubelet_logs_throughput', `kubectl logs of ${job.logMib} MiB, 128-byte lines (MB/s, kubectl start included)`, 'MB/s', 'higher', (x) => x.logs, 1],
      ['vs_kubelet_port_forward_throughput', `kubectl port-forward: GET of ${job.execMib} MiB from busybox httpd (MB/s)`, 'MB/s', 'higher', (x) => x.portForward, 1],
    ];
    for (const [metric, label, unit, better, fn, d] of kubectlRows) {
      const v = { nodelet: fn(k.nodelet), kubelet: fn(k.kubelet) };
      // The first-byte figure's "rounds" are its samples (paired), `echo_samples_per_round` per round.
      const extra = metric === 'vs_kubelet_exec_first_byte' && job.echoSamples > 1 ? { echo_samples_per_round: job.echoSamples } : {};
      add(label, compare(metric, unit, better, v.nodelet, v.kubelet, extra), v.nodelet, v.kubelet, d);
    }
  }

  return {
    metrics,
    lines: [
      table(rows),
      `  (${job.rounds} round(s) where it says [min–max], alternating which node goes first; ratios paired per round. Agent: the nodelet`,
      '   process / the kubelet process; "with its child processes" adds what they ran and waited for (nodelet: the CNI plugin',
      '   spawners and the plugins; the CRI containerd runs the plugins, so the kubelet\'s are in the runtime line). Runtime daemons:',
      '   dockerd + its containerd / the CRI containerd. Shims: containerd-shim-runc-v2 of each containerd (docker: one per container;',
      `   CRI: one per pod). Load average at the part's start ${meta.loadStart}, at its end ${meta.loadEnd}.)`,
      '',
    ],
  };
}
