/**
 * The cluster-mode part (`--only cluster`): a control plane of its own (scripts/control-plane.sh
 * through test/helpers/control-plane.ts) and one nodelet in cluster mode as a child process
 * (`node dist/cli.js --kubeconfig … --client-ca-file … --hostname-override bench-cluster`), on
 * the bench's private engine. It measures, each beside the same figure on nodelet's local API:
 *
 * (a) create → Running for N pods through the apiserver (pods/s from the first POST until the
 *     apiserver shows every pod Running), beside the same N pods as static pods seen Running on
 *     nodelet's local `/pods` (from the first manifest written);
 * (b) container death (`docker kill` of one app container through the private engine) → the
 *     apiserver shows it terminated (a watch event), beside the moment nodelet's local `/pods`
 *     (polled every 5 ms) shows it; p50/p99 over ≥ 20 kills, paired (both watch the same kill).
 */
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type Docker from 'dockerode';
import type { Pod, PodList } from 'kubernetes-types/core/v1.js';
import { KubeClient, query, type WatchEvent } from '../../src/apiserver/client.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import { startControlPlane, type ControlPlane } from '../../test/helpers/control-plane.js';
import { BUSYBOX } from './env.js';
import { freePort } from '../../test/helpers/net.js';
import { NodeletProcess } from '../../test/helpers/nodelet-process.js';
import { fmt as f, table, verdict, type Metric as XMetric, type PartResult } from './report.js';
import { median, percentile, round, spread } from './stats.js';
import { waitFor } from '../../test/helpers/wait.js';

type Log = (msg: string) => void;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));


const NODE = 'bench-cluster';
const NS = 'default';

const allRunning = (p: Pod | undefined): boolean => {
  const cs = p?.status?.containerStatuses ?? [];
  return p?.status?.phase === 'Running' && cs.length > 0 && cs.length === (p.spec?.containers.length ?? -1) && cs.every((c) => c.state?.running);
};

/** The bench pod: one busybox `sleep` (plus nodelet's pause sandbox), as a spec shared by both paths. */
function benchPod(name: string, batch: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels: { 'bench-batch': batch } },
    spec: {
      // Projected service-account volumes are not implemented yet; the bench measures pod startup.
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 0,
      containers: [{ name: 'app', image: BUSYBOX, imagePullPolicy: 'Never', command: ['sleep', '2147483647'] }],
    },
  };
}

// ---- nodelet in cluster mode as a child process ----------------------------------------------------

/** What the eviction part changes about the cluster-mode nodelet; the cluster part uses the defaults. */
export interface ClusterNodeletVariant {
  /** `--hostname-override` (default `bench-cluster`). */
  nodeName?: string;
  /** `--node-ip` and `--address` (default 127.0.0.1; the kubelet part uses an address on its netns's `lo`). */
  nodeIP?: string;
  /** `--root-dir` (default `<workDir>/root`). */
  rootDir?: string;
  /** More nodelet flags, after the bench's own. */
  args?: string[];
  /** Another entry point run with node instead of `cli`, taking the same flags; and its environment. */
  entry?: { script: string; env: NodeJS.ProcessEnv };
}

export class ClusterNodelet {
  readonly #agent: HttpsAgent;

  private constructor(
    /** The process (test/helpers/nodelet-process.ts): pid, log, stop. */
    readonly proc: NodeletProcess,
    readonly workDir: string,
    readonly manifests: string,
    cert: Buffer,
    key: Buffer,
  ) {
    // nodelet's serving certificate is self-signed (as the apiserver without
    // --kubelet-certificate-authority accepts it); the client is the apiserver's kubelet client.
    this.#agent = new HttpsAgent({ keepAlive: true, maxSockets: 4, cert, key, rejectUnauthorized: false });
  }

  /** Starts nodelet and resolves once it serves (its Node's registration is the caller's wait). */
  static async start(o: { root: string; cli: string | undefined; dockerHost: string; cp: ControlPlane } & ClusterNodeletVariant): Promise<ClusterNodelet> {
    const workDir = await mkdtemp(join(tmpdir(), 'nodelet-bench-cluster-'));
    const manifests = join(workDir, 'manifests');
    await mkdir(manifests);
    const nodeName = o.nodeName ?? NODE;
    const kubeconfig = await o.cp.nodeKubeconfig(nodeName);
    const port = await freePort();
    // NODELET_BENCH_CPU_PROF=<dir>: a V8 CPU profile of this cluster-mode nodelet (the sealed parts
    // run in a child of their own, where --cpu-prof does not reach), written on its clean exit.
    const profDir = process.env.NODELET_BENCH_CPU_PROF;
    const proc = await NodeletProcess.start(undefined, {
      nodeArgs: profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [],
      entry: o.entry?.script ?? o.cli ?? join(o.root, 'dist/cli.js'),
      ...(o.entry ? { env: o.entry.env } : {}),
      cwd: workDir,
      logFile: join(workDir, 'nodelet.log'),
      url: `https://${o.nodeIP ?? '127.0.0.1'}:${port}`,
      // Any answer (401 to the anonymous probe) is serving; a nodelet that exits first fails here with its log's tail.
      ready: 'serving',
      readyTimeoutMs: 60_000,
      args: [
        '--kubeconfig', kubeconfig,
        '--client-ca-file', o.cp.caFile,
        '--authentication-token-webhook',
        '--authorization-mode', 'Webhook',
        '--hostname-override', nodeName,
        '--node-ip', o.nodeIP ?? '127.0.0.1',
        '--address', o.nodeIP ?? '127.0.0.1',
        '--port', String(port),
        '--docker-endpoint', o.dockerHost,
        '--pod-manifest-path', manifests,
        '--root-dir', o.rootDir ?? join(workDir, 'root'),
        '--file-check-frequency', '1s',
        '--max-pods', '250',
        '--logging-format', 'json',
        '-v', '0',
        ...(o.args ?? []),
      ],
    });
    const cert = readFileSync(o.cp.kubeletClientCert);
    const key = readFileSync(o.cp.kubeletClientKey);
    return new ClusterNodelet(proc, workDir, manifests, cert, key);
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  get url(): string {
    return this.proc.url;
  }

  /** nodelet's stdout and stderr. */
  get logFile(): string {
    return this.proc.logFile;
  }

  /** GET a JSON document from nodelet's own HTTPS API, as the apiserver would. */
  async get<T>(path: string): Promise<T> {
    return JSON.parse(await this.getText(path)) as T;
  }

  /** GET a document's text from nodelet's own HTTPS API, as the apiserver would. */
  getText(path: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = httpsRequest(this.url + path, { agent: this.#agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200) return reject(new Error(`GET ${path}: ${res.statusCode} ${text.slice(0, 200)}`));
          resolve(text);
        });
        res.on('error', reject);
      });
      req.setTimeout(10_000, () => req.destroy(new Error(`GET ${path}: no answer in 10 s`)));
      req.on('error', reject);
      req.end();
    });
  }

  async localPods(): Promise<Pod[]> {
    return (await this.get<PodList>('/pods')).items;
  }

  alive(): void {
    this.proc.alive('the cluster-mode nodelet');
  }

  /** SIGTERM, then SIGKILL after 10 s; resolves once it is gone. */
  async stop(): Promise<void> {
    this.#agent.destroy();
    await this.proc.stop(10_000);
  }
}

// ---- the apiserver's view: one watch over the bench's pods --------------------------------------------

/** Every pod labelled `bench-batch`, as the apiserver's watch delivers them, with arrival times. */
export class ApiPods {
  readonly pods = new Map<string, Pod>();
  readonly #listeners = new Set<(pod: Pod, type: WatchEvent<Pod>['type'], at: number) => void>();
  readonly #abort = new AbortController();
  #loop: Promise<void> | undefined;
  #rv = '';
  #failure: unknown;

  constructor(readonly client: KubeClient) {}

  async start(): Promise<void> {
    const list = await this.client.request<PodList>('GET', `/api/v1/namespaces/${NS}/pods${query({ labelSelector: 'bench-batch' })}`);
    for (const p of list.items) this.pods.set(p.metadata?.name ?? '', p);
    this.#rv = list.metadata?.resourceVersion ?? '';
    this.#loop = this.#run();
  }

  async #run(): Promise<void> {
    while (!this.#abort.signal.aborted) {
      try {
        const path = `/api/v1/namespaces/${NS}/pods${query({ labelSelector: 'bench-batch', watch: 1, resourceVersion: this.#rv, allowWatchBookmarks: true, timeoutSeconds: 600 })}`;
        await this.client.watch<Pod>(path, (e) => this.#event(e), { signal: this.#abort.signal, idleTimeoutMs: 660_000 });
      } catch (err) {
        if (this.#abort.signal.aborted) return;
        this.#failure = err;
        return;
      }
    }
  }

  #event(e: WatchEvent<Pod>): void {
    const at = performance.now();
    const rv = e.object.metadata?.resourceVersion;
    if (rv) this.#rv = rv;
    if (e.type === 'BOOKMARK') return;
    const name = e.object.metadata?.name ?? '';
    if (e.type === 'DELETED') this.pods.delete(name);
    else this.pods.set(name, e.object);
    for (const l of this.#listeners) l(e.object, e.type, at);
  }

  /** Calls `fn` on every event until it returns true; resolves then (or rejects after `timeoutMs`). */
  until(what: string, fn: (pod: Pod, type: WatchEvent<Pod>['type'], at: number) => boolean, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#listeners.delete(l);
        reject(new Error(`apiserver: ${what} not seen within ${timeoutMs} ms${this.#failure ? ` (watch failed: ${String(this.#failure)})` : ''}`));
      }, timeoutMs);
      const l = (pod: Pod, type: WatchEvent<Pod>['type'], at: number) => {
        if (fn(pod, type, at)) {
          clearTimeout(timer);
          this.#listeners.delete(l);
          resolve();
        }
      };
      this.#listeners.add(l);
    });
  }

  batch(batch: string): Pod[] {
    return [...this.pods.values()].filter((p) => p.metadata?.labels?.['bench-batch'] === batch);
  }

  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#loop;
  }
}


// ---- (a) N pods: through the apiserver vs static -------------------------------------------------

interface BatchResult {
  /** ms from the first POST / manifest to the last pod Running. */
  totalMs: number;
  /** ms until every POST returned (api) / every manifest was in place (static). */
  createdMs: number;
  /** Per pod: ms from the start to it first being seen Running. */
  perPodMs: number[];
  /** Static batches: ms until the apiserver showed every mirror pod Running. */
  mirrorsMs?: number;
}

const names = (batch: string, n: number) => Array.from({ length: n }, (_, i) => `${batch}-${String(i).padStart(3, '0')}`);

async function apiBatch(client: KubeClient, api: ApiPods, batch: string, n: number, timeoutMs: number): Promise<BatchResult> {
  const wanted = new Set(names(batch, n));
  const seen = new Map<string, number>();
  const t0 = performance.now();
  const done = api.until(`${n} pods of ${batch} Running`, (pod, type, at) => {
    const name = pod.metadata?.name ?? '';
    if (type !== 'DELETED' && wanted.has(name) && !seen.has(name) && allRunning(pod)) seen.set(name, at - t0);
    return seen.size === n;
  }, timeoutMs);
  done.catch(() => undefined);
  await Promise.all([...wanted].map((name) => client.request('POST', `/api/v1/namespaces/${NS}/pods`, { body: benchPod(name, batch) })));
  const createdMs = performance.now() - t0;
  await done;
  return { totalMs: Math.max(...seen.values()), createdMs, perPodMs: [...seen.values()] };
}

const staticManifest = (name: string, batch: string): string => {
  const pod = benchPod(name, batch);
  delete pod.metadata!.namespace;
  return JSON.stringify(pod);
};

async function staticBatch(nodelet: ClusterNodelet, api: ApiPods, batch: string, n: number, timeoutMs: number): Promise<BatchResult> {
  const list = names(batch, n);
  // Written as dotfiles (which the file source ignores) and renamed into place, so no scan sees half a file.
  await Promise.all(list.map((name) => writeFile(join(nodelet.manifests, `.${name}.json`), staticManifest(name, batch))));
  const local = new Set(list.map((name) => `${name}-${NODE}`));
  const mirrorsSeen = new Set<string>();
  let mirrorsAt = Number.NaN;
  const t0 = performance.now();
  const mirrors = api.until(`${n} mirror pods of ${batch} Running`, (pod, type, at) => {
    const name = pod.metadata?.name ?? '';
    if (type !== 'DELETED' && local.has(name) && allRunning(pod)) mirrorsSeen.add(name);
    if (mirrorsSeen.size === n) mirrorsAt = at - t0;
    return mirrorsSeen.size === n;
  }, timeoutMs);
  mirrors.catch(() => undefined);
  await Promise.all(list.map((name) => rename(join(nodelet.manifests, `.${name}.json`), join(nodelet.manifests, `${name}.json`))));
  const createdMs = performance.now() - t0;
  const seen = new Map<string, number>();
  await waitFor(`${n} static pods of ${batch} Running on /pods`, async () => {
    nodelet.alive();
    const pods = await nodelet.localPods();
    const at = performance.now() - t0;
    for (const p of pods) {
      const name = p.metadata?.name ?? '';
      if (local.has(name) && !seen.has(name) && allRunning(p)) seen.set(name, at);
    }
    return seen.size === n ? true : undefined;
  }, timeoutMs, 50);
  const totalMs = Math.max(...seen.values());
  await mirrors.catch(() => undefined);
  return { totalMs, createdMs, perPodMs: [...seen.values()], mirrorsMs: mirrorsAt };
}

/** Removes a batch (either kind) and waits until nodelet, the engine and the apiserver are clean. */
async function clearBatch(o: { client: KubeClient; api: ApiPods; nodelet: ClusterNodelet; docker: Docker }, batch: string, kind: 'api' | 'static', n: number): Promise<void> {
  if (kind === 'api') {
    await o.client.request('DELETE', `/api/v1/namespaces/${NS}/pods${query({ labelSelector: `bench-batch=${batch}` })}`, { body: { gracePeriodSeconds: 0 } });
  } else {
    await Promise.all(names(batch, n).map((name) => unlink(join(o.nodelet.manifests, `${name}.json`))));
  }
  await waitFor(`${batch} removed`, async () => {
    o.nodelet.alive();
    const local = (await o.nodelet.localPods()).filter((p) => p.metadata?.labels?.['bench-batch'] === batch);
    const containers = await o.docker.listContainers({ all: true, filters: { label: [`io.nodelet.node=${NODE}`] } });
    return local.length === 0 && containers.length === 0 && o.api.batch(batch).length === 0 ? true : undefined;
  }, 180_000, 250);
}

// ---- (b) container death → terminated, apiserver vs local -----------------------------------------

const DEATH_POD = 'deaths';

function deathPod(kills: number): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: DEATH_POD, namespace: NS, labels: { 'bench-batch': DEATH_POD } },
    spec: {
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 0,
      // Never: each kill is one terminated container, with no crash-loop back-off in the way.
      restartPolicy: 'Never',
      containers: Array.from({ length: kills }, (_, i) => ({ name: `k${i}`, image: BUSYBOX, imagePullPolicy: 'Never', command: ['sleep', '2147483647'] })),
    },
  };
}

interface DeathSample {
  apiMs: number;
  localMs: number;
  killCallMs: number;
}

async function deaths(o: { client: KubeClient; api: ApiPods; nodelet: ClusterNodelet; docker: Docker; log: Log }, kills: number): Promise<DeathSample[]> {
  const running = o.api.until(`${DEATH_POD} Running`, (pod) => pod.metadata?.name === DEATH_POD && allRunning(pod), 120_000);
  await o.client.request('POST', `/api/v1/namespaces/${NS}/pods`, { body: deathPod(kills) });
  await running;
  const samples: DeathSample[] = [];
  for (let i = 0; i < kills; i++) {
    const name = `k${i}`;
    const status = (p: Pod | undefined) => p?.status?.containerStatuses?.find((c) => c.name === name);
    const id = status(o.api.pods.get(DEATH_POD))?.containerID?.replace(/^docker:\/\//, '');
    if (!id) throw new Error(`${DEATH_POD}/${name} has no container ID on the apiserver`);
    // A random phase, so samples do not lock onto a periodic relist or status batch.
    await sleep(50 + Math.random() * 450);
    let apiAt = Number.NaN;
    const t0 = performance.now();
    const api = o.api.until(`${name} terminated`, (pod, _type, at) => {
      if (pod.metadata?.name !== DEATH_POD || !status(pod)?.state?.terminated) return false;
      apiAt = at - t0;
      return true;
    }, 30_000);
    let killCallMs = Number.NaN;
    const killed = o.docker.getContainer(id).kill().then(() => (killCallMs = performance.now() - t0));
    const localMs = await waitFor(`${name} terminated on /pods`, async () => {
      const pod = (await o.nodelet.localPods()).find((p) => p.metadata?.name === DEATH_POD);
      return status(pod)?.state?.terminated ? performance.now() - t0 : undefined;
    }, 30_000, 5);
    await Promise.all([api, killed]);
    samples.push({ apiMs: apiAt, localMs, killCallMs });
  }
  o.log(`cluster: death → terminated (apiserver) ${samples.map((s) => s.apiMs.toFixed(0)).join(', ')} ms`);
  return samples;
}

// ---- the part --------------------------------------------------------------------------------------

export interface ClusterOptions {
  root: string;
  dockerHost: string;
  docker: Docker;
  cli: string | undefined;
  pods: number;
  kills: number;
  rounds: number;
  keepLogs: boolean;
  log: Log;
  /** Registers a cleanup with the bench (runs on failure and on SIGINT/SIGTERM too). */
  defer: (fn: () => Promise<void>) => void;
}

export async function clusterPart(o: ClusterOptions): Promise<PartResult> {
  const { log } = o;
  const cp = await startControlPlane({ teardown: (stop) => o.defer(async () => await stop()) }, { log });
  log(`cluster: kube-apiserver ${cp.k8sVersion} at ${cp.server}`);
  const client = new KubeClient(loadKubeconfig(cp.adminKubeconfig), { maxSockets: 32, userAgent: 'nodelet-bench' });
  const nodelet = await ClusterNodelet.start({ root: o.root, cli: o.cli, dockerHost: o.dockerHost, cp });
  let stopped = false;
  const stopAll = async () => {
    if (stopped) return;
    stopped = true;
    await nodelet.stop();
    client.close();
    await cp.stop();
    if (o.keepLogs) log(`cluster-mode nodelet log kept: ${nodelet.logFile}`);
    else await rm(nodelet.workDir, { recursive: true, force: true });
  };
  o.defer(stopAll);
  const api = new ApiPods(client);
  try {
    log(`cluster: nodelet pid ${nodelet.pid} (node ${NODE}) on ${nodelet.url}; waiting for its Node to be Ready`);
    await waitFor('Node Ready', async () => {
      nodelet.alive();
      const n = await client.request<{ status?: { conditions?: { type: string; status: string }[] } }>('GET', `/api/v1/nodes/${NODE}`);
      return n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' ? true : undefined;
    }, 60_000, 200);
    // The default ServiceAccount must exist before the apiserver admits pods.
    await waitFor('default ServiceAccount', () => client.request('GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`), 60_000, 200);
    await api.start();
    const ctx = { client, api, nodelet, docker: o.docker, log };
    const timeoutMs = 60_000 + o.pods * 2_000;

    log('cluster: warm-up (5 pods each way, not recorded)');
    await apiBatch(client, api, 'warm-a', 5, 60_000);
    await clearBatch(ctx, 'warm-a', 'api', 5);
    await staticBatch(nodelet, api, 'warm-s', 5, 60_000);
    await clearBatch(ctx, 'warm-s', 'static', 5);

    const apiRuns: BatchResult[] = [];
    const staticRuns: BatchResult[] = [];
    for (let r = 0; r < o.rounds; r++) {
      // Alternate which path goes first, so neither always meets a freshly cleaned engine.
      const order = r % 2 === 0 ? (['api', 'static'] as const) : (['static', 'api'] as const);
      for (const kind of order) {
        const batch = `${kind === 'api' ? 'a' : 's'}${r}`;
        const res = kind === 'api' ? await apiBatch(client, api, batch, o.pods, timeoutMs) : await staticBatch(nodelet, api, batch, o.pods, timeoutMs);
        (kind === 'api' ? apiRuns : staticRuns).push(res);
        log(`cluster round ${r + 1}/${o.rounds} ${kind}: ${o.pods} pods Running in ${res.totalMs.toFixed(0)} ms (${(o.pods / (res.totalMs / 1000)).toFixed(1)} pods/s; created in ${res.createdMs.toFixed(0)} ms${res.mirrorsMs !== undefined ? `; mirror pods Running on the apiserver at ${res.mirrorsMs.toFixed(0)} ms` : ''})`);
        await clearBatch(ctx, batch, kind, o.pods);
      }
    }

    log(`cluster: ${o.kills} × docker kill → terminated`);
    const dead = await deaths(ctx, o.kills);
    await clearBatch(ctx, DEATH_POD, 'api', 1);
    return report(o, apiRuns, staticRuns, dead, cp.k8sVersion);
  } finally {
    await api.stop();
    await stopAll();
  }
}

function report(o: ClusterOptions, apiRuns: BatchResult[], staticRuns: BatchResult[], dead: DeathSample[], k8s: string): PartResult {
  const rate = (r: BatchResult) => o.pods / (r.totalMs / 1000);
  const apiRate = apiRuns.map(rate);
  const staticRate = staticRuns.map(rate);
  const ratios = apiRate.map((x, i) => x / staticRate[i]!);
  const a = spread(apiRate);
  const s = spread(staticRate);
  const rs = spread(ratios);
  const rounds = apiRuns.length;
  const p50 = (r: BatchResult) => median(r.perPodMs);
  const first = (r: BatchResult) => Math.min(...r.perPodMs);
  const startup: XMetric = {
    metric: 'cluster_pods_to_running',
    variant: 'apiserver (POST → apiserver shows Running)',
    value: round(a.median, 2),
    unit: 'pods/s',
    baseline: round(s.median, 2),
    baseline_variant: 'static pods (manifest → local /pods shows Running)',
    ratio: round(rs.median, 3),
    min: round(a.min, 2),
    max: round(a.max, 2),
    rounds,
    pods: o.pods,
    per_round: apiRate.map((x) => round(x, 2)),
    baseline_per_round: staticRate.map((x) => round(x, 2)),
    total_ms: apiRuns.map((r) => round(r.totalMs, 0)),
    baseline_total_ms: staticRuns.map((r) => round(r.totalMs, 0)),
    created_ms: apiRuns.map((r) => round(r.createdMs, 0)),
    first_running_ms: apiRuns.map((r) => round(first(r), 0)),
    baseline_first_running_ms: staticRuns.map((r) => round(first(r), 0)),
    per_pod_p50_ms: apiRuns.map((r) => round(p50(r), 0)),
    baseline_per_pod_p50_ms: staticRuns.map((r) => round(p50(r), 0)),
    mirror_pods_running_ms: staticRuns.map((r) => round(r.mirrorsMs ?? Number.NaN, 0)),
    target: 0.8,
    target_op: '>=',
    target_of: 'ratio',
    pass: rs.median >= 0.8,
  };
  const apiMs = dead.map((d) => d.apiMs);
  const localMs = dead.map((d) => d.localMs);
  const lag = dead.map((d) => d.apiMs - d.localMs);
  const death: XMetric = {
    metric: 'cluster_death_to_apiserver',
    variant: 'apiserver watch shows terminated',
    value: round(percentile(apiMs, 99), 1),
    unit: 'ms (p99)',
    baseline: round(percentile(localMs, 99), 1),
    baseline_variant: 'local /pods (polled every 5 ms) shows terminated, same kill',
    ratio: null,
    min: round(Math.min(...apiMs), 1),
    max: round(Math.max(...apiMs), 1),
    rounds: 1,
    p50: round(percentile(apiMs, 50), 1),
    baseline_p50: round(percentile(localMs, 50), 1),
    lag_p50_ms: round(percentile(lag, 50), 1),
    lag_p99_ms: round(percentile(lag, 99), 1),
    kill_call_ms: round(median(dead.map((d) => d.killCallMs)), 1),
    samples: apiMs.map((x) => round(x, 1)),
    baseline_samples: localMs.map((x) => round(x, 1)),
    target: 1000,
    target_op: '<=',
    target_of: 'value',
    pass: percentile(apiMs, 99) <= 1000,
  };
  const perPod = (runs: BatchResult[]) => f(median(runs.map(p50)), 0);
  const firstOf = (runs: BatchResult[]) => f(median(runs.map(first)), 0);
  const rows1 = [
    [`cluster mode (kube-apiserver ${k8s}), ${o.pods} pods → all Running, ${rounds} round(s) — pods/s`, 'median', '[min–max]', 'first Running ms', 'per-pod p50 ms', 'all Running ms', '÷static', '[min–max]', 'target'],
    ['  static pods, manifests → local /pods (polled every 50 ms)', f(s.median, 1), `[${f(s.min, 1)}–${f(s.max, 1)}]`, firstOf(staticRuns), perPod(staticRuns), f(median(staticRuns.map((r) => r.totalMs)), 0), '1.00', '', ''],
    ['  apiserver, POST ×N (32 in flight) → apiserver watch shows Running', f(a.median, 1), `[${f(a.min, 1)}–${f(a.max, 1)}]`, firstOf(apiRuns), perPod(apiRuns), f(median(apiRuns.map((r) => r.totalMs)), 0), f(rs.median), `[${f(rs.min)}–${f(rs.max)}]`, verdict(startup)],
  ];
  const rows2 = [
    [`container death, ${dead.length} × docker kill → terminated — ms`, 'p50', 'p99', '[min–max]', 'target'],
    ['  nodelet local /pods (polled every 5 ms)', f(percentile(localMs, 50), 0), f(percentile(localMs, 99), 0), `[${f(Math.min(...localMs), 0)}–${f(Math.max(...localMs), 0)}]`, ''],
    ['  apiserver (watch event)', f(percentile(apiMs, 50), 0), f(percentile(apiMs, 99), 0), `[${f(Math.min(...apiMs), 0)}–${f(Math.max(...apiMs), 0)}]`, verdict(death)],
    ['  apiserver − local, same kill', f(percentile(lag, 50), 0), f(percentile(lag, 99), 0), `[${f(Math.min(...lag), 0)}–${f(Math.max(...lag), 0)}]`, ''],
  ];
  const mirrors = staticRuns.map((r) => r.mirrorsMs ?? Number.NaN);
  return {
    metrics: [startup, death],
    lines: [
      table(rows1),
      `  (created: the POSTs all returned after ${f(median(apiRuns.map((r) => r.createdMs)), 0)} ms; the static runs' mirror pods were all Running on the apiserver after ${f(median(mirrors), 0)} ms)`,
      '',
      table(rows2),
      '',
    ],
  };
}
