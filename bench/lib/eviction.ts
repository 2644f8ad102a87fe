/**
 * The eviction part (`--only eviction`): how long nodelet's eviction manager takes from a
 * threshold crossing to the eviction, as the apiserver shows it.
 *
 * A control plane of its own (test/helpers/control-plane.ts) and a nodelet in cluster mode
 * (`ClusterNodelet` of bench/lib/cluster.ts) with `--root-dir` on a small tmpfs the bench mounts,
 * `--eviction-hard nodefs.available<40%` and a short `--eviction-pressure-transition-period`. The
 * evicted pod comes from the apiserver: static pods are critical and never evicted
 * (`kubelettypes.IsCriticalPod`, pkg/kubelet/eviction/eviction_manager.go). Each round, one pod
 * writes past the threshold in one `dd` into an emptyDir on that tmpfs and then touches a stamp
 * file in a hostPath directory of the bench (outside the tmpfs, so it survives the eviction's
 * cleanup): the stamp's mtime is the instant the write finished. The clock stops when the
 * apiserver watch delivers the pod `Failed` with reason `Evicted`.
 *
 * The manager reads the node once per monitoring period (the kubelet's `evictionMonitoringPeriod`,
 * 10 s, a constant of pkg/kubelet/kubelet.go, not a flag), so the figure is bounded by that period
 * plus one pass, the kill (hard thresholds: 1 s grace at most) and the status write. The part
 * measures at that default and, as a second line, at 1 s: nodelet's internal start option
 * `evictionMonitoringPeriodMs`, which no flag sets, so that nodelet runs through this file as its
 * entry point (see the end of the file) with the same flags.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { Node, Pod } from 'kubernetes-types/core/v1.js';
import { ApiError, KubeClient } from '../../src/apiserver/client.js';
import type * as ConfigModule from '../../src/config/index.js';
import { loadKubeconfig } from '../../src/config/kubeconfig.js';
import type * as LoggingModule from '../../src/logging/index.js';
import type * as NodeletModule from '../../src/nodelet.js';
import { waitFor } from '../../test/helpers/wait.js';
import { ApiPods, ClusterNodelet } from './cluster.js';
import { startControlPlane } from '../../test/helpers/control-plane.js';
import { BUSYBOX } from './env.js';
import { fmt, table, type Metric, type PartResult } from './report.js';
import { percentile, round } from './stats.js';

type Log = (msg: string) => void;
const run = promisify(execFile);

const NS = 'default';
/** The label ApiPods watches (bench/lib/cluster.ts) and its value for this part's pods. */
const BATCH = 'evict';
/** Size of the tmpfs under `--root-dir`, and of the one write: 48 of 64 MiB leaves 25 % free. */
const TMPFS_MIB = 64;
const FILL_MIB = 48;
const THRESHOLD = 'nodefs.available<40%';
/** Short, so DiskPressure clears soon after each eviction and the next pod is admitted. */
const TRANSITION = '5s';
/** The kubelet's default evictionMonitoringPeriod (pkg/kubelet/kubelet.go). */
const DEFAULT_PERIOD_MS = 10_000;
/** The environment variable that makes this file a nodelet entry point with that monitoring period. */
const PERIOD_ENV = 'NODELET_BENCH_EVICTION_MONITORING_MS';
/** ...and the build it runs: the directory of nodelet's `cli.js` (`dist/`, or that of `--nodelet-cli`). */
const DIST_ENV = 'NODELET_BENCH_EVICTION_DIST';

export interface EvictionOptions {
  root: string;
  dockerHost: string;
  cli: string | undefined;
  /** Evictions measured per monitoring period. */
  rounds: number;
  keepLogs: boolean;
  log: Log;
  /** Registers a cleanup with the bench (runs on failure and on SIGINT/SIGTERM too). */
  defer: (fn: () => Promise<void>) => void;
}

interface Variant {
  label: string;
  periodMs: number;
  /** undefined: nodelet's own CLI (`--nodelet-cli` or dist/cli.js). */
  entry: { script: string; env: NodeJS.ProcessEnv } | undefined;
}

interface Sample {
  /** ms from the stamp (the write finished) to the watch event showing the pod Failed/Evicted. */
  ms: number;
  message: string;
}

const load = (): string => loadavg().map((x) => x.toFixed(2)).join(' ');

/** A tmpfs of `mib` MiB on a new temp directory; the returned function unmounts (lazily) and removes it. */
async function mountTmpfs(mib: number): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'nodelet-bench-evict-root-'));
  try {
    await run('mount', ['-t', 'tmpfs', '-o', `size=${mib}m,mode=0755`, 'nodelet-bench-evict', dir]);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`cannot mount a ${mib} MiB tmpfs on ${dir} (the eviction part needs root): ${err instanceof Error ? err.message : String(err)}`);
  }
  let removed = false;
  return {
    dir,
    remove: async () => {
      if (removed) return;
      removed = true;
      // Lazily: a container's bind of an emptyDir may still hold it for a moment.
      await run('umount', ['-l', dir]).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The pod that crosses the threshold: one `dd` of FILL_MIB MiB, then the stamp; it stops at once on SIGTERM. */
function fillerPod(name: string, nodeName: string, stampDir: string): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: NS, labels: { 'bench-batch': BATCH } },
    spec: {
      nodeName,
      automountServiceAccountToken: false,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      volumes: [
        { name: 'data', emptyDir: {} },
        { name: 'stamp', hostPath: { path: stampDir, type: 'Directory' } },
      ],
      containers: [
        {
          name: 'fill',
          image: BUSYBOX,
          imagePullPolicy: 'Never',
          volumeMounts: [
            { name: 'data', mountPath: '/data' },
            { name: 'stamp', mountPath: '/stamp' },
          ],
          // One write() of the whole size (bs = the size, count 1); the trap ends the pod at the
          // eviction's SIGTERM instead of after its grace period (sh as PID 1 ignores SIGTERM).
          command: ['sh', '-c', `trap 'exit 0' TERM; dd if=/dev/zero of=/data/fill bs=${FILL_MIB}M count=1 2>/dev/null && touch /stamp/${name}; while true; do sleep 1 & wait $!; done`],
        },
      ],
    },
  };
}

export async function evictionPart(o: EvictionOptions): Promise<PartResult> {
  const { log } = o;
  const loadStart = load();
  const cp = await startControlPlane({ teardown: (stop) => o.defer(async () => await stop()) }, { log });
  log(`eviction: kube-apiserver ${cp.k8sVersion} at ${cp.server}`);
  const client = new KubeClient(loadKubeconfig(cp.adminKubeconfig), { maxSockets: 8, userAgent: 'nodelet-bench' });
  o.defer(async () => client.close());
  await waitFor('default ServiceAccount', () => client.request('GET', `/api/v1/namespaces/${NS}/serviceaccounts/default`), 60_000, 200);
  const api = new ApiPods(client);
  await api.start();
  o.defer(() => api.stop());
  const stampDir = await mkdtemp(join(tmpdir(), 'nodelet-bench-evict-stamps-'));
  o.defer(() => rm(stampDir, { recursive: true, force: true }));

  const self = fileURLToPath(import.meta.url);
  const variants: Variant[] = [
    { label: `monitoring period ${DEFAULT_PERIOD_MS / 1000} s (the kubelet's default)`, periodMs: DEFAULT_PERIOD_MS, entry: undefined },
    {
      label: 'monitoring period 1 s (nodelet start option evictionMonitoringPeriodMs)',
      periodMs: 1000,
      entry: { script: self, env: { ...process.env, [PERIOD_ENV]: '1000', [DIST_ENV]: dirname(resolve(o.cli ?? join(o.root, 'dist/cli.js'))) } },
    },
  ];
  const results: { variant: Variant; samples: Sample[]; attempts: number; load: string }[] = [];
  for (const variant of variants) {
    const tmpfs = await mountTmpfs(TMPFS_MIB);
    o.defer(tmpfs.remove);
    const nodeName = `bench-evict-${variant.periodMs / 1000}s`;
    const nodelet = await ClusterNodelet.start({
      root: o.root,
      cli: o.cli,
      dockerHost: o.dockerHost,
      cp,
      nodeName,
      rootDir: tmpfs.dir,
      args: ['--eviction-hard', THRESHOLD, '--eviction-pressure-transition-period', TRANSITION, ...(process.env.NODELET_BENCH_EVICTION_V ? ['-v', process.env.NODELET_BENCH_EVICTION_V] : [])],
      entry: variant.entry,
    });
    let stopped = false;
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      await nodelet.stop();
      if (o.keepLogs) log(`eviction: nodelet log kept: ${nodelet.logFile}`);
      else await rm(nodelet.workDir, { recursive: true, force: true });
    };
    o.defer(stop);
    try {
      log(`eviction: nodelet pid ${nodelet.pid} (node ${nodeName}, ${variant.label}), root dir on a ${TMPFS_MIB} MiB tmpfs; waiting for its Node to be Ready`);
      await waitFor(`${nodeName} Ready without DiskPressure`, async () => {
        nodelet.alive();
        const status = async (node: Promise<Node>, type: string) => (await node).status?.conditions?.find((c) => c.type === type)?.status;
        const ready = await status(client.request<Node>('GET', `/api/v1/nodes/${nodeName}`), 'Ready');
        const pressure = await status(nodelet.get<Node>(`/api/v1/nodes/${nodeName}`), 'DiskPressure');
        return ready === 'True' && pressure === 'False' ? true : undefined;
      }, 90_000, 250);
      const res = await rounds({ client, api, nodelet, nodeName, rootDir: tmpfs.dir, stampDir, variant, rounds: o.rounds, log });
      results.push({ variant, ...res, load: load() });
    } finally {
      await stop();
      await tmpfs.remove();
    }
  }
  return report(results, { rounds: o.rounds, k8s: cp.k8sVersion, loadStart, loadEnd: load() });
}

async function rounds(o: {
  client: KubeClient;
  api: ApiPods;
  nodelet: ClusterNodelet;
  nodeName: string;
  rootDir: string;
  stampDir: string;
  variant: Variant;
  rounds: number;
  log: Log;
}): Promise<{ samples: Sample[]; attempts: number }> {
  const samples: Sample[] = [];
  // A pass that lands inside the dd evicts the pod before the stamp: that round is repeated.
  const maxAttempts = o.rounds * 2;
  let attempts = 0;
  while (samples.length < o.rounds) {
    if (attempts >= maxAttempts) throw new Error(`eviction: only ${samples.length} of ${o.rounds} rounds gave a stamp in ${attempts} attempts`);
    const name = `${o.nodeName}-${attempts}`;
    attempts++;
    const stampFile = join(o.stampDir, name);
    let evictedAt = Number.NaN;
    let message = '';
    let reason = '';
    let uid = '';
    const failed = o.api.until(`${name} Failed`, (pod, type, at) => {
      if (type === 'DELETED' || pod.metadata?.name !== name || pod.status?.phase !== 'Failed') return false;
      evictedAt = performance.timeOrigin + at;
      reason = pod.status.reason ?? '';
      uid = pod.metadata?.uid ?? '';
      message = pod.status.message ?? '';
      return true;
    }, 180_000);
    failed.catch(() => undefined);
    // A random phase against the manager's loop: without it every round starts right after the
    // pass that cleared the previous pressure, and the figure locks onto one point of the period.
    await new Promise((r) => setTimeout(r, Math.random() * o.variant.periodMs));
    await o.client.request('POST', `/api/v1/namespaces/${NS}/pods`, { body: fillerPod(name, o.nodeName, o.stampDir) });
    await failed;
    if (reason !== 'Evicted') throw new Error(`eviction: ${name} failed without an eviction (reason ${JSON.stringify(reason)}: ${message}); see ${o.nodelet.logFile}`);
    const stamp = await stat(stampFile, { bigint: true }).catch(() => undefined);
    const stampMs = stamp ? Number(stamp.mtimeNs / 1000n) / 1000 : Number.NaN;
    if (!stamp || stampMs > evictedAt) {
      o.log(`eviction: ${name} was evicted before its write finished (a pass inside the dd); the round is repeated`);
    } else {
      samples.push({ ms: evictedAt - stampMs, message });
      o.log(`eviction round ${samples.length}/${o.rounds} (${o.variant.periodMs / 1000} s period): write finished → apiserver shows Evicted in ${(evictedAt - stampMs).toFixed(0)} ms`);
    }
    // nodelet frees the evicted pod's emptyDir itself once its containers stopped; only then is the
    // pod deleted from the apiserver. (Deleting it while nodelet still stops it leaves the kill
    // path's promise unresolved and the eviction manager without another pass: a defect of
    // src/kubelet/kubelet.ts evictPod, which has no timeout like the kubelet's killPodNow.)
    const fill = join(o.rootDir, 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'data', 'fill');
    await waitFor(`${name}'s emptyDir freed by nodelet`, async () => {
      o.nodelet.alive();
      return (await stat(fill).then(() => false, () => true)) ? true : undefined;
    }, 120_000, 250);
    // The evicted pod goes, and the pressure with it, before the next pod can be admitted. The
    // condition is read from nodelet's own node object: the apiserver's copy lags by up to the node
    // status update period and may never show a pressure that lasted less than that.
    await o.client.request('DELETE', `/api/v1/namespaces/${NS}/pods/${name}`, { body: { gracePeriodSeconds: 0 } }).catch((err: unknown) => {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    });
    let last = '';
    await waitFor(`${name} gone and DiskPressure False on ${o.nodeName}`, async () => {
      o.nodelet.alive();
      const node = await o.nodelet.get<Node>(`/api/v1/nodes/${o.nodeName}`);
      const pressure = node.status?.conditions?.find((c) => c.type === 'DiskPressure')?.status;
      last = `DiskPressure ${pressure ?? 'not reported'}, pod ${o.api.pods.has(name) ? `still on the apiserver (${o.api.pods.get(name)?.status?.phase ?? '?'})` : 'gone'}`;
      return pressure === 'False' && !o.api.pods.has(name) ? true : undefined;
    }, 180_000, 250).catch((err: unknown) => {
      throw new Error(`${String(err)}: ${last}; see ${o.nodelet.logFile}`);
    });
  }
  return { samples, attempts };
}

function report(
  results: { variant: Variant; samples: Sample[]; attempts: number; load: string }[],
  meta: { rounds: number; k8s: string; loadStart: string; loadEnd: string },
): PartResult {
  const metrics: Metric[] = [];
  const rows: string[][] = [
    [`eviction (kube-apiserver ${meta.k8s}): one dd of ${FILL_MIB} MiB into a ${TMPFS_MIB} MiB tmpfs root dir, ${THRESHOLD} → apiserver watch shows Failed/Evicted — ms`, 'p50', 'p99', '[min–max]', 'rounds', 'load after'],
  ];
  for (const { variant, samples, attempts, load: loadAfter } of results) {
    const ms = samples.map((s) => s.ms);
    const lo = Math.min(...ms);
    const hi = Math.max(...ms);
    metrics.push({
      metric: 'eviction_threshold_to_evicted',
      variant: `monitoring period ${variant.periodMs / 1000} s`,
      value: round(percentile(ms, 50), 0),
      unit: 'ms (p50)',
      baseline: variant.periodMs,
      baseline_variant: 'the monitoring period (bounds the figure: one pass per period)',
      ratio: null,
      min: round(lo, 0),
      max: round(hi, 0),
      rounds: samples.length,
      p50: round(percentile(ms, 50), 0),
      p99: round(percentile(ms, 99), 0),
      monitoring_period_ms: variant.periodMs,
      attempts,
      samples: ms.map((x) => round(x, 0)),
      threshold: THRESHOLD,
      tmpfs_mib: TMPFS_MIB,
      fill_mib: FILL_MIB,
      pressure_transition_period: TRANSITION,
      eviction_message: samples[0]?.message ?? '',
      load_at_start: meta.loadStart,
      load_after: loadAfter,
    });
    rows.push([
      `  ${variant.label}`,
      fmt(percentile(ms, 50), 0),
      fmt(percentile(ms, 99), 0),
      `[${fmt(lo, 0)}–${fmt(hi, 0)}]`,
      attempts > samples.length ? `${samples.length} (${attempts} tried)` : String(samples.length),
      loadAfter,
    ]);
  }
  return {
    metrics,
    lines: [
      table(rows),
      '  (the manager reads the node once per monitoring period, so a crossing waits up to one period for the next pass;',
      '   then the pass, the kill (1 s grace at most; the pod stops at SIGTERM) and the status write to the apiserver.',
      `   p99 is the nearest rank over ${meta.rounds} rounds, i.e. the largest. Load average at the part's start ${meta.loadStart}, at its end ${meta.loadEnd}.)`,
      '',
    ],
  };
}

// ---- nodelet with another monitoring period --------------------------------------------------------

/**
 * `node eviction.js <nodelet flags>` with PERIOD_ENV and DIST_ENV set: nodelet's build in DIST_ENV
 * started as its src/cli.ts starts it, plus `evictionMonitoringPeriodMs` (a start option no flag
 * sets, as the kubelet's period is a constant). The build is imported at run time: the bench's
 * own compile of src/ (dist-bench/src) is not a runnable nodelet (src/version.ts reads the
 * package.json next to its build directory).
 */
async function nodeletEntry(argv: string[]): Promise<void> {
  const periodMs = Number(process.env[PERIOD_ENV]);
  const dist = process.env[DIST_ENV] ?? '';
  if (!Number.isInteger(periodMs) || periodMs <= 0 || dist === '') {
    process.stderr.write(`Error: ${PERIOD_ENV} must be a positive integer (ms) and ${DIST_ENV} nodelet's build directory; got ${JSON.stringify(process.env[PERIOD_ENV] ?? '')}, ${JSON.stringify(dist)}\n`);
    process.exit(2);
  }
  const fromBuild = async <T>(path: string): Promise<T> => (await import(pathToFileURL(join(dist, path)).href)) as T;
  const { buildConfig, ConfigError } = await fromBuild<typeof ConfigModule>('config/index.js');
  const { createLogger } = await fromBuild<typeof LoggingModule>('logging/index.js');
  const { startNodelet } = await fromBuild<typeof NodeletModule>('nodelet.js');
  let built: ReturnType<typeof buildConfig>;
  try {
    built = buildConfig(argv, process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Error: ${err.message}\n`);
      process.exit(err.exitCode);
    }
    throw err;
  }
  if ('help' in built) {
    process.stdout.write(built.help);
    return;
  }
  const { config } = built;
  const log = createLogger({ verbosity: config.verbosity, format: config.loggingFormat });
  for (const warning of built.warnings) log.warn(warning);
  log.info({ evictionMonitoringPeriodMs: periodMs }, 'bench: nodelet with another eviction monitoring period');
  const nodelet = await startNodelet(config, { log, evictionMonitoringPeriodMs: periodMs });
  const stop = () => void nodelet.close().then(() => process.exit(0), () => process.exit(1));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await nodeletEntry(process.argv.slice(2));
