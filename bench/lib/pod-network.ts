/**
 * The pod networking parts (`--network-plugin=cni`, src/network/cni):
 *
 * - `cni`: N static pods (busybox `sleep` + the pause sandbox) → Running, on a nodelet with CNI
 *   (Debian's bridge + host-local + portmap in /usr/lib/cni) beside the same pods on a nodelet
 *   without a network plugin (sandboxes on Docker's `none`), both alive on the same engine, in
 *   rounds that alternate which goes first. Per pod: its manifest renamed into place → the event
 *   on nodelet's pod watch showing all its containers running. Twice per round and variant: one
 *   pod at a time (per-pod p50 and p99) and all N at once (the total to the last Running, and the
 *   per-pod figures under that contention). Ratios CNI ÷ none, paired per round.
 * - `podnet`: TCP throughput from pod A to pod B's pod IP across the CNI bridge (two veths and
 *   the bridge), beside the same transfer over loopback inside pod B's own netns (sender and
 *   receiver in one pod), with the same two Node processes (podnet-peer.ts), timed on the
 *   receiving side.
 *
 * THE NETWORK RULE: pod IPs may exist only inside a sealed network namespace the bench creates.
 * So these parts never run in the bench's own process: `sealedParts` creates the namespace
 * (test/helpers/netns.ts `createSealedNetns`: `lo` only, no route, checked), runs
 * `netns-child.js` under `nsenter --net` there, and deletes the namespace afterwards; the child
 * starts its own private engine, the nodelets and (through nodelet) the CNI plugins, all of which
 * inherit the namespace, so the bridge, the veths and every pod IP exist only in it.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { request, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import type Docker from 'dockerode';
import type { Pod, PodList } from '../../src/api/types.js';
import { createSealedNetns, deleteNetns, nsenterArgv } from '../../test/helpers/netns.js';
import { waitFor } from '../../test/helpers/wait.js';
import { BUSYBOX, BenchNodelet } from './env.js';
import type { VsKubeletJob } from './vs-kubelet.js';
import { fmt as f, table, type Metric, type PartResult } from './report.js';
import { median, percentile, round, spread } from './stats.js';

const run = promisify(execFile);
type Log = (msg: string) => void;
const MiB = 1024 ** 2;

export const NETNS_PARTS = ['cni', 'podnet'] as const;

/** What the parent hands the child (JSON in NODELET_BENCH_NETNS_JOB). */
export interface SealedJob {
  parts: string[];
  cniPods: number;
  cniRounds: number;
  podnetBytes: number;
  podnetRounds: number;
  /** nodelet's entry point (`--nodelet-cli`), default dist/cli.js. */
  cli: string | undefined;
  keepLogs: boolean;
  /** The `kubelet` part's job (bench/lib/vs-kubelet.ts), when it is selected. */
  kubelet?: VsKubeletJob;
  /** Where the child writes its `SealedResult` (JSON). */
  out: string;
}

export interface SealedResult {
  parts: PartResult[];
  docker: string;
  netns: string;
}

export const NETNS_ENV = 'NODELET_BENCH_NETNS';
export const JOB_ENV = 'NODELET_BENCH_NETNS_JOB';

// ---- the parent: a sealed namespace, the child in it, the namespace gone afterwards -------------

/**
 * Runs `job.parts` in a child process inside a fresh sealed network namespace and returns their
 * results. `defer` registers the cleanup (stop the child, delete the namespace and the result
 * file) with the bench, so a failure or SIGINT/SIGTERM of the bench removes them too; it also runs
 * here once the child is done.
 */
export async function sealedParts(o: { root: string; job: Omit<SealedJob, 'out'>; loAddrs?: readonly string[]; log: Log; defer: (fn: () => Promise<void>) => void }): Promise<SealedResult> {
  const name = `nodelet-b${process.pid}`;
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-bench-netns-'));
  const out = join(dir, 'result.json');
  let child: ChildProcess | undefined;
  let exited: Promise<number> = Promise.resolve(0);
  let done = false;
  const cleanup = async () => {
    if (done) return;
    done = true;
    if (child && child.exitCode === null && child.signalCode === null) {
      // The child stops its nodelets and its engine on SIGTERM; it is only killed if it hangs.
      child.kill('SIGTERM');
      const timer = setTimeout(() => child?.kill('SIGKILL'), 180_000);
      await exited;
      clearTimeout(timer);
    }
    deleteNetns(name);
    await rm(dir, { recursive: true, force: true });
    o.log(`sealed netns ${name} deleted`);
  };
  o.defer(cleanup);
  deleteNetns(name);
  createSealedNetns(name, { loAddrs: o.loAddrs ?? [] });
  o.log(`sealed netns ${name}: lo only${o.loAddrs?.length ? ` (with ${o.loAddrs.join(', ')})` : ''}, no route (checked); running ${o.job.parts.join(', ')} inside it`);
  const [cmd, args] = nsenterArgv(name, [process.execPath, join(import.meta.dirname, 'netns-child.js')]);
  const job: SealedJob = { ...o.job, out };
  child = spawn(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, [NETNS_ENV]: name, [JOB_ENV]: JSON.stringify(job) } });
  const c = child;
  exited = new Promise((resolve) => c.once('close', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
  const code = await exited;
  if (code !== 0) {
    await cleanup();
    throw new Error(`the sealed-netns parts (${o.job.parts.join(', ')}) failed: exit code ${code}`);
  }
  const result = JSON.parse(readFileSync(out, 'utf8')) as SealedResult;
  await cleanup();
  return result;
}

// ---- inside: the pod network and the nodelets -----------------------------------------------------

interface CniNet {
  confDir: string;
  cacheDir: string;
  /** host-local's dataDir: one file per leased IP below `<dataDir>/<network>`. */
  dataDir: string;
  subnet: string;
  bridge: string;
}

const NET_NAME = 'benchnet';

/**
 * The conflist of test/integration/pod-network.test.ts `nodeNet()`: bridge `net.bridge` as the
 * pods' gateway with hairpin mode, host-local with its own dataDir and `net.subnet`, then portmap.
 * Shared with the kubelet peer's network (bench/lib/kubelet-peer.ts), so both nodes run the same.
 */
export function bridgeConflist(name: string, net: Pick<CniNet, 'bridge' | 'dataDir' | 'subnet'>): string {
  return JSON.stringify({
    cniVersion: '1.0.0',
    name,
    plugins: [
      {
        type: 'bridge',
        bridge: net.bridge,
        isGateway: true,
        hairpinMode: true,
        ipam: { type: 'host-local', dataDir: net.dataDir, ranges: [[{ subnet: net.subnet }]], routes: [{ dst: '0.0.0.0/0' }] },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
    ],
  });
}

/**
 * The bridge network of test/integration/pod-network.test.ts `nodeNet()`: bridge `cni<n>` as the
 * pods' gateway, hairpin mode, host-local with its own dataDir and 10.244.<n>.0/24, then portmap
 * (for hostPorts; with none it passes the result through).
 */
async function writeCniNetwork(root: string, n: number): Promise<CniNet> {
  const net: CniNet = { confDir: join(root, 'net.d'), cacheDir: join(root, 'cache'), dataDir: join(root, 'leases'), subnet: `10.244.${n}.0/24`, bridge: `cni${n}` };
  await mkdir(net.confDir, { recursive: true });
  await writeFile(join(net.confDir, '10-bench.conflist'), bridgeConflist(NET_NAME, net));
  return net;
}

const leases = (net: CniNet): string[] => {
  const dir = join(net.dataDir, NET_NAME);
  return existsSync(dir) ? readdirSync(dir).filter((x) => /^\d+\.\d+\.\d+\.\d+$/.test(x)) : [];
};
const cachedAttachments = (net: CniNet): string[] => {
  const dir = join(net.cacheDir, 'results');
  return existsSync(dir) ? readdirSync(dir).filter((x) => x.startsWith(`${NET_NAME}-`)) : [];
};
async function veths(): Promise<number> {
  const { stdout } = await run('ip', ['-o', 'link', 'show', 'type', 'veth']);
  return stdout.split('\n').filter(Boolean).length;
}

/**
 * The namespace still has no way out once the bridge and the pods exist: no default route (IPv4
 * or IPv6), and every IPv4 route is the bridge's own subnet. Checked in each part while its pods
 * run; a failure stops the part.
 */
async function assertNoWayOut(net: CniNet): Promise<string> {
  const v4 = (await run('ip', ['-o', '-4', 'route', 'show', 'table', 'main'])).stdout.trim().split('\n').filter(Boolean);
  const def4 = (await run('ip', ['-4', 'route', 'show', 'default'])).stdout.trim();
  const def6 = (await run('ip', ['-6', 'route', 'show', 'default'])).stdout.trim();
  const foreign = v4.filter((r) => !r.startsWith(`${net.subnet} dev ${net.bridge} `));
  if (def4 || def6 || foreign.length > 0) throw new Error(`the sealed netns has a way out: ${JSON.stringify({ def4, def6, foreign })}`);
  return v4.join('; ');
}

/** `GET /api/v1/pods?watch=true` on one nodelet, from a list's resourceVersion, with arrival times. */
class PodWatch {
  readonly pods = new Map<string, Pod>();
  readonly #listeners = new Set<(pod: Pod, type: string, at: number) => void>();
  #req: ClientRequest | undefined;
  #failure: string | undefined;

  private constructor(readonly nodelet: BenchNodelet) {}

  static async open(nodelet: BenchNodelet): Promise<PodWatch> {
    const w = new PodWatch(nodelet);
    const list = (await (await fetch(`${nodelet.url}/api/v1/pods`)).json()) as PodList;
    for (const p of list.items) w.pods.set(p.metadata?.name ?? '', p);
    const rv = list.metadata?.resourceVersion ?? '';
    await new Promise<void>((resolve, reject) => {
      w.#req = request({ host: '127.0.0.1', port: nodelet.port, path: `/api/v1/pods?watch=true&resourceVersion=${rv}&timeoutSeconds=3600`, agent: false }, (res) => {
        if (res.statusCode !== 200) return reject(new Error(`watch answered ${res.statusCode}`));
        res.setEncoding('utf8');
        let rest = '';
        res.on('data', (chunk: string) => {
          const at = performance.now();
          const lines = (rest + chunk).split('\n');
          rest = lines.pop() ?? '';
          for (const line of lines) if (line) w.#event(JSON.parse(line) as { type: string; object: Pod }, at);
        });
        res.on('end', () => (w.#failure = 'the watch ended'));
        res.on('error', (err) => (w.#failure = String(err)));
        resolve();
      });
      w.#req.on('error', (err) => {
        w.#failure = String(err);
        reject(err);
      });
      w.#req.end();
    });
    return w;
  }

  #event(e: { type: string; object: Pod }, at: number): void {
    if (e.type === 'BOOKMARK' || e.type === 'ERROR') return;
    const name = e.object.metadata?.name ?? '';
    if (e.type === 'DELETED') this.pods.delete(name);
    else this.pods.set(name, e.object);
    for (const l of this.#listeners) l(e.object, e.type, at);
  }

  /** Calls `fn` on every event until it returns true; resolves then (or rejects after `timeoutMs`). */
  until(what: string, fn: (pod: Pod, type: string, at: number) => boolean, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#listeners.delete(l);
        reject(new Error(`${this.nodelet.nodeName}: ${what} not seen within ${timeoutMs} ms${this.#failure ? ` (${this.#failure})` : ''}; see ${this.nodelet.logFile}`));
      }, timeoutMs);
      const l = (pod: Pod, type: string, at: number) => {
        if (fn(pod, type, at)) {
          clearTimeout(timer);
          this.#listeners.delete(l);
          resolve();
        }
      };
      this.#listeners.add(l);
    });
  }

  close(): void {
    this.#req?.destroy();
  }
}

const allRunning = (p: Pod | undefined): boolean => {
  const cs = p?.status?.containerStatuses ?? [];
  return p?.status?.phase === 'Running' && cs.length > 0 && cs.length === (p.spec?.containers.length ?? -1) && cs.every((c) => c.state?.running);
};

/** A nodelet of these parts, with its pod watch; `net` when it runs with --network-plugin=cni. */
interface Node {
  nodelet: BenchNodelet;
  watch: PodWatch;
  net: CniNet | undefined;
  label: string;
}

async function startNode(o: { root: string; dockerHost: string; cli: string | undefined; nodeName: string; net: CniNet | undefined; label: string; keepLogs: boolean; log: Log; defer: (fn: () => Promise<void>) => void }): Promise<Node> {
  const nodelet = await BenchNodelet.start({
    root: o.root,
    dockerHost: o.dockerHost,
    cli: o.cli,
    nodeName: o.nodeName,
    sleeper: false,
    args: [
      // Enough room for a batch beside the podnet pods.
      '--max-pods', '250',
      ...(o.net ? ['--network-plugin=cni', '--cni-bin-dir', '/usr/lib/cni', '--cni-conf-dir', o.net.confDir, '--cni-cache-dir', o.net.cacheDir] : []),
    ],
  });
  let watch: PodWatch | undefined;
  o.defer(async () => {
    watch?.close();
    await nodelet.stop();
    await nodelet.cleanup(o.keepLogs);
    if (o.keepLogs) o.log(`${o.nodeName} log kept: ${nodelet.logFile}`);
  });
  await nodelet.proc.waitReady('healthy', 60_000);
  watch = await PodWatch.open(nodelet);
  o.log(`${o.nodeName} (${o.label}): pid ${nodelet.pid} on ${nodelet.url}`);
  return { nodelet, watch, net: o.net, label: o.label };
}

// ---- cni: N pods → Running, with CNI vs without ------------------------------------------------------

/**
 * How a batch starts: `serial` writes one manifest, waits for that pod to be Running, then the
 * next (the latency of one pod start on a node that fills up to N pods); `burst` writes all N
 * manifests at once (N pod workers competing for dockerd, the plugins and the 2 CPUs: the total is
 * the figure, and each pod's own time is close to it).
 */
type Mode = 'serial' | 'burst';

interface Batch {
  /** Per pod: ms from its manifest in place to the watch event showing it Running. */
  perPodMs: number[];
  /** ms from the first manifest in place to the last pod Running. */
  totalMs: number;
  /** Per pod: ms from its manifest in place to its first event on the watch (file source + admission). */
  seenMs: number[];
}

const batchPod = (name: string, batch: string): string =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels: { 'bench-batch': batch } },
    spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'app', image: BUSYBOX, imagePullPolicy: 'Never', command: ['sleep', '2147483647'] }] },
  });

const batchNames = (batch: string, n: number) => Array.from({ length: n }, (_, i) => `${batch}-${String(i).padStart(3, '0')}`);

/**
 * Starts `names` (all at once, or one after another) and resolves when each is Running, with the
 * watch's arrival times. Manifests are written as dotfiles (which the file source ignores) and
 * renamed into place, so no scan sees half a file; a pod's clock starts at its rename.
 */
async function startPods(node: Node, batch: string, names: string[], timeoutMs: number): Promise<{ placed: number[]; seen: number[]; running: { at: number; ip: string | undefined }[] }> {
  const dir = node.nodelet.manifestDir;
  await Promise.all(names.map((name) => writeFile(join(dir, `.${name}.json`), batchPod(name, batch))));
  const index = new Map(names.map((name, i) => [`${name}-${node.nodelet.nodeName}`, i]));
  const placed: number[] = [];
  const seen: number[] = [];
  const running: { at: number; ip: string | undefined }[] = [];
  let count = 0;
  const all = node.watch.until(`${names.length} pods of ${batch} Running`, (pod, type, at) => {
    const i = index.get(pod.metadata?.name ?? '');
    if (i === undefined || type === 'DELETED') return false;
    seen[i] ??= at;
    if (running[i] === undefined && allRunning(pod)) {
      running[i] = { at, ip: pod.status?.podIP };
      count++;
    }
    return count === names.length;
  }, timeoutMs);
  all.catch(() => undefined);
  await Promise.all(names.map(async (name, i) => {
    await rename(join(dir, `.${name}.json`), join(dir, `${name}.json`));
    placed[i] = performance.now();
  }));
  await all;
  return { placed, seen, running };
}

async function startBatch(node: Node, batch: string, n: number, mode: Mode, timeoutMs: number): Promise<Batch> {
  const names = batchNames(batch, n);
  const placed: number[] = [];
  const seen: number[] = [];
  const running: { at: number; ip: string | undefined }[] = [];
  if (mode === 'burst') {
    const r = await startPods(node, batch, names, timeoutMs);
    placed.push(...r.placed);
    seen.push(...r.seen);
    running.push(...r.running);
  } else {
    for (const name of names) {
      const r = await startPods(node, batch, [name], timeoutMs);
      placed.push(r.placed[0]!);
      seen.push(r.seen[0]!);
      running.push(r.running[0]!);
    }
  }
  if (node.net) {
    // Every pod on the bridge network, each with an IP of its own from the subnet.
    const prefix = node.net.subnet.replace(/0\/24$/, '');
    const ips = running.map((r) => r.ip ?? '');
    if (ips.some((ip) => !ip.startsWith(prefix)) || new Set(ips).size !== n) throw new Error(`${batch}: pod IPs not unique in ${node.net.subnet}: ${ips.join(' ')}`);
  }
  const t0 = Math.min(...placed);
  return {
    perPodMs: running.map((r, i) => r.at - placed[i]!),
    totalMs: Math.max(...running.map((r) => r.at)) - t0,
    seenMs: seen.map((at, i) => at - placed[i]!),
  };
}

/** Removes a batch and waits until nodelet, the engine and (with CNI) the leases, cache and veths are clean. */
async function clearBatch(node: Node, docker: Docker, batch: string, n: number): Promise<void> {
  const names = batchNames(batch, n);
  const local = (name: string) => `${name}-${node.nodelet.nodeName}`;
  const gone = new Set<string>();
  const deleted = node.watch.until(`${batch} deleted`, (pod, type) => {
    if (type === 'DELETED' && names.some((x) => local(x) === pod.metadata?.name)) gone.add(pod.metadata?.name ?? '');
    return gone.size === n;
  }, 180_000);
  deleted.catch(() => undefined);
  await Promise.all(names.map((name) => unlink(join(node.nodelet.manifestDir, `${name}.json`))));
  await deleted;
  await waitFor(`${batch}'s containers${node.net ? ', leases and veths' : ''} gone`, async () => {
    const containers = await docker.listContainers({ all: true, filters: { label: [`io.nodelet.node=${node.nodelet.nodeName}`] } });
    if (containers.length > 0) return undefined;
    if (node.net && (leases(node.net).length > 0 || cachedAttachments(node.net).length > 0 || (await veths()) > 0)) return undefined;
    return true;
  }, 180_000, 100);
}

type CniVariant = 'none' | 'cni';

async function cniPart(o: { nodes: Record<CniVariant, Node>; docker: Docker; pods: number; rounds: number; log: Log }): Promise<PartResult> {
  const { log, nodes } = o;
  const timeoutMs = 60_000 + o.pods * 3_000;
  log('cni: warm-up (5 pods each way, not recorded)');
  for (const v of ['none', 'cni'] as const) {
    await startBatch(nodes[v], `warm-${v}`, 5, 'burst', 60_000);
    await clearBatch(nodes[v], o.docker, `warm-${v}`, 5);
  }
  const res: Record<Mode, Record<CniVariant, Batch[]>> = { serial: { none: [], cni: [] }, burst: { none: [], cni: [] } };
  let routes = '';
  for (let r = 0; r < o.rounds; r++) {
    for (const mode of ['serial', 'burst'] as const) {
      // Alternate which variant goes first, so neither always meets a freshly cleaned engine.
      for (const v of r % 2 === 0 ? (['none', 'cni'] as const) : (['cni', 'none'] as const)) {
        const batch = `${v}${mode[0]}${r}`;
        const b = await startBatch(nodes[v], batch, o.pods, mode, timeoutMs);
        res[mode][v].push(b);
        if (nodes[v].net) routes = await assertNoWayOut(nodes[v].net);
        const t = performance.now();
        await clearBatch(nodes[v], o.docker, batch, o.pods);
        log(`cni round ${r + 1}/${o.rounds} ${v} ${mode}: ${o.pods} pods Running in ${b.totalMs.toFixed(0)} ms; per pod p50 ${percentile(b.perPodMs, 50).toFixed(0)} ms, p99 ${percentile(b.perPodMs, 99).toFixed(0)} ms; removed in ${(performance.now() - t).toFixed(0)} ms`);
      }
    }
  }
  log(`cni: the netns's routes with ${o.pods} pods on the bridge: ${routes}`);

  const figures = [
    { metric: 'cni_pod_start_p50', mode: 'serial', head: 'one at a time: p50', of: (b: Batch) => percentile(b.perPodMs, 50), unit: 'ms (p50 per pod, one at a time)' },
    { metric: 'cni_pod_start_p99', mode: 'serial', head: 'p99', of: (b: Batch) => percentile(b.perPodMs, 99), unit: 'ms (p99 per pod, one at a time)' },
    { metric: 'cni_pods_total', mode: 'burst', head: `${o.pods} at once: all Running`, of: (b: Batch) => b.totalMs, unit: `ms (${o.pods} pods at once, to the last Running)` },
    { metric: 'cni_burst_pod_p50', mode: 'burst', head: 'per-pod p50', of: (b: Batch) => percentile(b.perPodMs, 50), unit: `ms (p50 per pod, ${o.pods} at once)` },
    { metric: 'cni_burst_pod_p99', mode: 'burst', head: 'p99', of: (b: Batch) => percentile(b.perPodMs, 99), unit: `ms (p99 per pod, ${o.pods} at once)` },
  ] as const;
  const metrics: Metric[] = [];
  const ratioCells: string[] = [];
  for (const fig of figures) {
    const c = res[fig.mode].cni.map(fig.of);
    const n = res[fig.mode].none.map(fig.of);
    const ratios = c.map((x, i) => x / n[i]!);
    const s = spread(c);
    const rs = spread(ratios);
    metrics.push({
      metric: fig.metric,
      variant: 'cni (bridge + host-local + portmap)',
      value: round(s.median, 1),
      unit: fig.unit,
      baseline: round(median(n), 1),
      baseline_variant: 'no network plugin (sandbox on network none)',
      ratio: round(rs.median, 3),
      ratio_min: round(rs.min, 3),
      ratio_max: round(rs.max, 3),
      min: round(s.min, 1),
      max: round(s.max, 1),
      rounds: o.rounds,
      pods: o.pods,
      start: fig.mode === 'serial' ? 'one at a time' : 'all at once',
      per_round: c.map((x) => round(x, 1)),
      baseline_per_round: n.map((x) => round(x, 1)),
      ratio_per_round: ratios.map((x) => round(x, 3)),
    });
    ratioCells.push(`${f(rs.median)} [${f(rs.min)}–${f(rs.max)}]`);
  }
  const seenP50 = (v: CniVariant) => median(res.serial[v].map((b) => percentile(b.seenMs, 50)));
  const row = (v: CniVariant, label: string) => [
    `  ${label}`,
    ...figures.map((fig) => {
      const s = spread(res[fig.mode][v].map(fig.of));
      return o.rounds === 1 ? f(s.median, 0) : `${f(s.median, 0)} [${f(s.min, 0)}–${f(s.max, 0)}]`;
    }),
    f(seenP50(v), 0),
  ];
  const rows = [
    [`pod start → Running, ${o.pods} static pods, ${o.rounds} round(s) — ms${o.rounds > 1 ? ', median [min–max] over rounds' : ''}`, ...figures.map((x) => x.head), 'seen p50'],
    row('none', 'no network plugin (sandboxes on network none)'),
    row('cni', 'CNI: bridge + host-local + portmap (/usr/lib/cni)'),
    ['  ratio CNI ÷ none (paired per round)', ...ratioCells, ''],
  ];
  return {
    metrics,
    lines: [
      table(rows),
      '  (per pod: its manifest renamed into place → the pod watch\'s event showing it Running. one at a time: the next',
      '   manifest once the previous pod runs, the node filling up to N pods; at once: N manifests, the total to the last',
      '   Running. seen: manifest → the pod\'s first watch event, one at a time. Busybox `sleep` + the pause sandbox.)',
      '',
    ],
  };
}

// ---- podnet: pod → pod IP over the bridge vs loopback inside one pod -------------------------------

const PEER_A = 'podnet-a';
const PEER_B = 'podnet-b';

const peerPod = (name: string, image: string): string =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'peer', image, imagePullPolicy: 'Never', command: ['sleep', '2147483647'] }] },
  });

/** `docker exec ID node --input-type=module -e <podnet-peer.js> ARGS` against the sealed engine. */
function peer(env: NodeJS.ProcessEnv, id: string, source: string, args: string[]): ChildProcess {
  return spawn('docker', ['exec', id, 'node', '--input-type=module', '-e', source, ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
}

/** The lines a child prints, one promise per expected line. */
function lines(child: ChildProcess): () => Promise<string> {
  let buf = '';
  const queue: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  let ended = false;
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (c: string) => {
    buf += c;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      const w = waiting.shift();
      if (w) w(line);
      else queue.push(line);
    }
  });
  child.on('close', () => {
    ended = true;
    for (const w of waiting.splice(0)) w('');
  });
  return () => (queue.length > 0 ? Promise.resolve(queue.shift()!) : ended ? Promise.resolve('') : new Promise((r) => waiting.push(r)));
}

const exitOf = (child: ChildProcess): Promise<number> =>
  child.exitCode !== null ? Promise.resolve(child.exitCode) : new Promise((r) => child.once('close', (code) => r(code ?? 1)));

async function transfer(env: NodeJS.ProcessEnv, source: string, o: { receiverId: string; senderId: string; listen: string; dial: string; port: number; bytes: number }): Promise<{ bytes: number; ms: number }> {
  const recv = peer(env, o.receiverId, source, ['recv', o.listen, String(o.port)]);
  const next = lines(recv);
  const ready = await next();
  if (ready !== 'LISTENING') throw new Error(`podnet receiver did not listen (${JSON.stringify(ready)}, exit ${await exitOf(recv)})`);
  const send = peer(env, o.senderId, source, ['send', o.dial, String(o.port), String(o.bytes)]);
  const [sendCode, result, recvCode] = await Promise.all([exitOf(send), next(), exitOf(recv)]);
  if (sendCode !== 0 || recvCode !== 0) throw new Error(`podnet transfer to ${o.dial}:${o.port}: sender exit ${sendCode}, receiver exit ${recvCode}`);
  const r = JSON.parse(result) as { bytes: number; ms: number };
  if (r.bytes !== o.bytes) throw new Error(`podnet transfer to ${o.dial}:${o.port}: ${r.bytes} B received of ${o.bytes}`);
  return r;
}

async function podnetPart(o: { node: Node; image: string; dockerEnv: NodeJS.ProcessEnv; bytes: number; rounds: number; log: Log }): Promise<PartResult> {
  const { node, log } = o;
  const dir = node.nodelet.manifestDir;
  const local = (name: string) => `${name}-${node.nodelet.nodeName}`;
  const up = new Map<string, Pod>();
  const bothUp = node.watch.until(`${PEER_A} and ${PEER_B} Running`, (pod, type) => {
    const name = pod.metadata?.name ?? '';
    if (type !== 'DELETED' && (name === local(PEER_A) || name === local(PEER_B)) && allRunning(pod) && pod.status?.podIP) up.set(name, pod);
    return up.size === 2;
  }, 120_000);
  bothUp.catch(() => undefined);
  for (const name of [PEER_A, PEER_B]) {
    await writeFile(join(dir, `.${name}.json`), peerPod(name, o.image));
    await rename(join(dir, `.${name}.json`), join(dir, `${name}.json`));
  }
  await bothUp;
  const idOf = (name: string) => up.get(local(name))!.status!.containerStatuses![0]!.containerID!.replace(/^docker:\/\//, '');
  const a = idOf(PEER_A);
  const b = idOf(PEER_B);
  const ipA = up.get(local(PEER_A))!.status!.podIP!;
  const ipB = up.get(local(PEER_B))!.status!.podIP!;
  const routes = await assertNoWayOut(node.net!);
  log(`podnet: ${PEER_A} ${ipA} → ${PEER_B} ${ipB} over ${node.net!.bridge}; routes: ${routes}`);
  const source = readFileSync(join(import.meta.dirname, 'podnet-peer.js'), 'utf8');
  const variants = {
    bridge: { receiverId: b, senderId: a, listen: '0.0.0.0', dial: ipB, port: 5201 },
    loopback: { receiverId: b, senderId: b, listen: '127.0.0.1', dial: '127.0.0.1', port: 5202 },
  } as const;
  type V = keyof typeof variants;
  // Warm-up (not recorded): the first exec of each pod, the page cache of node.
  for (const v of ['bridge', 'loopback'] as const) await transfer(o.dockerEnv, source, { ...variants[v], bytes: Math.min(o.bytes, 64 * MiB) });
  const res: Record<V, number[]> = { bridge: [], loopback: [] };
  for (let r = 0; r < o.rounds; r++) {
    for (const v of r % 2 === 0 ? (['bridge', 'loopback'] as const) : (['loopback', 'bridge'] as const)) {
      const t = await transfer(o.dockerEnv, source, { ...variants[v], bytes: o.bytes });
      res[v].push(t.bytes / MiB / (t.ms / 1000));
    }
    log(`podnet round ${r + 1}/${o.rounds}: bridge ${f(res.bridge.at(-1), 0)} MiB/s, loopback ${f(res.loopback.at(-1), 0)} MiB/s`);
  }
  for (const name of [PEER_A, PEER_B]) await unlink(join(dir, `${name}.json`));

  const ratios = res.bridge.map((x, i) => x / res.loopback[i]!);
  const s = spread(res.bridge);
  const l = spread(res.loopback);
  const rs = spread(ratios);
  const m: Metric = {
    metric: 'podnet_tcp_throughput',
    variant: 'bridge: pod A → pod B\'s IP (veth, bridge, veth)',
    value: round(s.median, 1),
    unit: 'MiB/s',
    baseline: round(l.median, 1),
    baseline_variant: 'loopback: 127.0.0.1 inside pod B\'s netns (sender and receiver in one pod)',
    ratio: round(rs.median, 3),
    ratio_min: round(rs.min, 3),
    ratio_max: round(rs.max, 3),
    min: round(s.min, 1),
    max: round(s.max, 1),
    rounds: o.rounds,
    bytes: o.bytes,
    per_round: res.bridge.map((x) => round(x, 1)),
    baseline_per_round: res.loopback.map((x) => round(x, 1)),
    ratio_per_round: ratios.map((x) => round(x, 3)),
  };
  const rows = [
    [`pod network TCP, ${o.bytes / MiB} MiB, one connection, Node sender → Node receiver (timed by the receiver) — MiB/s`, 'median', '[min–max]', '÷loopback', '[min–max]'],
    ['  loopback inside pod B\'s netns (127.0.0.1)', f(l.median, 0), `[${f(l.min, 0)}–${f(l.max, 0)}]`, '1.00', ''],
    [`  pod A → pod B's IP over the CNI bridge ${node.net!.bridge}`, f(s.median, 0), `[${f(s.min, 0)}–${f(s.max, 0)}]`, f(rs.median), `[${f(rs.min)}–${f(rs.max)}]`],
  ];
  return { metrics: [m], lines: [table(rows), '  (ms from the receiver\'s accepted connection to its end of stream; the sender writes 1 MiB buffers honouring backpressure.)', ''] };
}

// ---- the child's whole job --------------------------------------------------------------------------

/** Inside the sealed namespace: the nodelets the selected parts need, then the parts in order. */
export async function runPodNetworkParts(o: { root: string; job: SealedJob; dockerHost: string; docker: Docker; nodeImage: () => Promise<string>; log: Log; defer: (fn: () => Promise<void>) => void }): Promise<PartResult[]> {
  const { job, log } = o;
  const work = await mkdtemp(join(tmpdir(), 'nodelet-bench-cni-'));
  o.defer(() => rm(work, { recursive: true, force: true }));
  const net = await writeCniNetwork(work, 1);
  const base = { root: o.root, dockerHost: o.dockerHost, cli: job.cli, keepLogs: job.keepLogs, log, defer: o.defer };
  const cni = await startNode({ ...base, nodeName: 'bench-cni', net, label: `--network-plugin=cni, bridge ${net.bridge}, ${net.subnet}` });
  const out: PartResult[] = [];
  if (job.parts.includes('cni')) {
    const none = await startNode({ ...base, nodeName: 'bench-nonet', net: undefined, label: 'no network plugin' });
    log(`cni: ${job.cniPods} pods per batch, ${job.cniRounds} round(s), with CNI vs without`);
    out.push(await cniPart({ nodes: { none, cni }, docker: o.docker, pods: job.cniPods, rounds: job.cniRounds, log }));
  }
  if (job.parts.includes('podnet')) {
    const image = await o.nodeImage();
    log(`podnet: ${job.podnetBytes / MiB} MiB pod → pod over the bridge vs loopback in one pod, ${job.podnetRounds} round(s) (image ${image})`);
    out.push(await podnetPart({ node: cni, image, dockerEnv: { ...process.env, DOCKER_HOST: o.dockerHost }, bytes: job.podnetBytes, rounds: job.podnetRounds, log }));
  }
  return out;
}
