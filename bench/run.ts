/**
 * `npm run bench`: nodelet's exec relay measured beside its limits, in the same run, on this machine.
 *
 * Starts a private Docker engine (scripts/docker-engine.sh) and nodelet as a child process with one
 * static busybox pod, then measures in interleaved rounds:
 * - exec stdout throughput (1 GiB from `dd`) over WebSocket v5 and SPDY v4, vs the direct path (the
 *   best in-process consumer of the same Docker exec stream) and vs the `docker exec` CLI;
 * - exec stdin throughput (512 MiB into `cat >/dev/null`) over WebSocket and SPDY vs direct (and CLI);
 * - nodelet's CPU-seconds per GiB relayed (/proc/PID/stat of the nodelet process);
 * - exec session setup latency (request → first output byte of `echo x`, and → exit status).
 * Prints a table (stdout), or with `--json` one JSON object per metric per line (the table then
 * goes to stderr). Traffic goes only to 127.0.0.1 and the engine's unix socket, except for the
 * pod-network parts (`cni`, `podnet`): they run in a child process inside a sealed network
 * namespace of their own (bench/lib/pod-network.ts), where the pod IPs and the bridge exist.
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, release } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { dockerClient } from '../src/runtime/docker/client.js';
import { cleanupsOnExit } from './lib/cleanups.js';
import { repoRoot } from '../test/helpers/repo-root.js';
import { Engine, GC_HOOK_ARGS, BenchNodelet } from './lib/env.js';
import { CliPath, DirectPath, SpdyPath, WebSocketPath, type ExecPath, type LatencySample } from './lib/paths.js';
import { CpuMeter, findShimPid } from './lib/proc.js';
import { median, rotated, round, spread } from './lib/stats.js';
import { extraManifests } from './lib/part-pods.js';
import { ensureWrk, httpServing } from './lib/http-serving.js';
import { freshness } from './lib/freshness.js';
import { portForward } from './lib/port-forward.js';
import { slowReader } from './lib/slow-reader.js';
import { idleSessions } from './lib/sessions.js';
import { raiseFdLimit, scaleSessions } from './lib/scale.js';
import { TARGETS, fmt, markdownSummary, svgChart, table, target, verdict, verdictOf, type Metric, type PartResult } from './lib/report.js';
import { clusterPart } from './lib/cluster.js';
import { watchPart } from './lib/watch.js';
import { evictionPart } from './lib/eviction.js';
import { idle110Part } from './lib/idle110.js';
import { nodes3Part } from './lib/nodes3.js';
import { NETNS_PARTS, sealedParts, type SealedResult } from './lib/pod-network.js';
import { buildKubelet } from './lib/kubelet-peer.js';
import { KUBELET_PART_ADDRS } from './lib/vs-kubelet.js';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;
const MB = 1e6;

interface Options {
  rounds: number;
  quick: boolean;
  json: boolean;
  samples: number;
  stdoutBytes: number;
  stdinBytes: number;
  stdinChunk: number;
  only: Set<string>;
  /** The paths measured, in ORDER (ratios need `direct`, and `cli` for ÷CLI). */
  paths: PathName[];
  cpuProfDir: string | undefined;
  /** Where nodelet writes a heap snapshot after each forced GC (bench/lib/gc-hook.ts). */
  heapSnapshotDir: string | undefined;
  nodeletCli: string | undefined;
  nodeletNodeArgs: string[];
  wsZeroMask: boolean;
  traceGc: boolean;
  keepLogs: boolean;
  httpSeconds: number;
  freshnessSamples: number;
  sessions: number;
  slowSeconds: number;
  slowMib: number;
  pfMib: number;
  clusterPods: number;
  clusterKills: number;
  clusterRounds: number;
  watchers: number;
  watchChanges: number;
  scaleSessions: number;
  cniPods: number;
  cniRounds: number;
  podnetMib: number;
  evictionRounds: number;
  idlePods: number;
  idleMinutes: number;
  kubeletPods: number[];
  kubeletRounds: number;
  kubeletKills: number;
  kubeletIdleSeconds: number;
  kubeletIdlePods: number[];
  kubeletExecMib: number;
  kubeletLogMib: number;
  kubeletEchoSamples: number;
  nodes3Pods: number;
  /** Where the chart goes ('' = nowhere). */
  svg: string;
}

const EXEC_PARTS = ['stdout', 'stdin', 'setup'];
const EXTRA_PARTS = ['http', 'freshness', 'portforward', 'slowreader', 'sessions', 'scale', 'cluster', 'watch', 'eviction', 'idle110', 'nodes3'];
/** Parts run in the sealed network namespace: the pod-network ones and the kubelet peer (bench/lib/vs-kubelet.ts). */
const SEALED_PARTS: readonly string[] = [...NETNS_PARTS, 'kubelet'];
/** Every part; SEALED_PARTS run first, in a sealed network namespace of their own. */
const ALL_PARTS: readonly string[] = [...EXEC_PARTS, ...EXTRA_PARTS, ...SEALED_PARTS];

const USAGE = `usage: npm run bench -- [options]
  --rounds N          interleaved rounds (default 5; 1 with --quick)
  --quick             smoke run: 1 round, 256 MiB stdout, 128 MiB stdin, 5 latency samples
  --json              one JSON object per metric per line on stdout (the table goes to stderr)
  --samples N         session-setup samples per variant per round (default 20)
  --stdout-mib N      stdout transfer size in MiB (default 1024)
  --stdin-mib N       stdin transfer size in MiB (default 512)
  --stdin-chunk N     bytes per stdin write/message (default 32768, kubectl's io.Copy buffer)
  --only LIST         comma-separated subset of stdout,stdin,setup,http,freshness,portforward,slowreader,sessions,scale,cluster,watch,
                      eviction,idle110,nodes3,cni,podnet,kubelet (the last three run in a sealed network namespace of their own,
                      see bench/README.md)
  --http-seconds N    wrk duration per /pods, /podInfo measurement (default 3; 1 with --quick, no warm-up)
  --freshness-samples N  docker kill → status samples (default 12; 10 with --quick)
  --sessions N        idle exec sessions opened for the RSS figure (default 1000; 100 with --quick)
  --scale-sessions N  idle exec sessions of the scale part, nodelet run with --max-streaming-sessions N
                      (default 10000; 1000 with --quick)
  --svg PATH          write the chart there (default bench/results.svg for a run of every part;
                      with --only, no chart unless given; --svg '' never)
  --slow-seconds N    how long the slow reader reads at 1 MB/s (default 30; 5 with --quick)
  --slow-mib N        size of the slow reader's stream in MiB (default 256)
  --pf-mib N          size of the port-forwarded download in MiB (default 256; 32 with --quick)
  --cluster-pods N    pods per batch in the cluster part, through the apiserver and as static pods (default 100)
  --cluster-kills N   docker kills for the cluster part's death → apiserver figure (default 24; 20 with --quick)
  --cluster-rounds N  rounds of the cluster part's two batches (default 2; 1 with --quick)
  --watchers N        concurrent pod watchers in the watch part (default 1000; 200 with --quick)
  --watch-changes N   status changes per burst in the watch part (default 300)
  --cni-pods N        static pods per batch in the cni part, started with CNI and without (default 50)
  --cni-rounds N      rounds of the cni part (default 2; 1 with --quick): per variant, N pods one at a time, then all at once
  --podnet-mib N      MiB per pod-network TCP transfer in the podnet part (default 1024; 256 with --quick);
                      its rounds are --rounds
  --eviction-rounds N evictions per monitoring period in the eviction part (default 5; 2 with --quick)
  --idle-pods N       static pods of the idle110 part (default 110, the default --max-pods; more raise it)
  --idle-minutes N    how long the idle110 part samples nodelet, every 30 s (default 10; 2 with --quick)
  --kubelet-pods LIST pod batch sizes of the kubelet part's pod-start figure (default 1,30,100; 1,30 with --quick)
  --kubelet-rounds N  rounds of the kubelet part's pod starts and kubectl execs (default 2; 1 with --quick)
  --kubelet-kills N   container kills per node for the kubelet part's status freshness (default 20; 10 with --quick)
  --kubelet-idle-seconds N  each idle window of the kubelet part's cost figure (default 300; 20 with --quick)
  --kubelet-idle-pods LIST  pods per node of the kubelet part's idle windows after the empty one, ascending
                      (default 30,110; 30 with --quick)
  --kubelet-exec-mib N  MiB per kubectl exec stdout and stdin transfer and port-forward GET in the kubelet part
                      (default 256; 64 with --quick)
  --kubelet-log-mib N MiB of the kubelet part's kubectl logs figure (default 100, at most 1024; 16 with --quick)
  --kubelet-echo-samples N  kubectl exec 'echo x' first-byte samples per node per kubectl round (default 15; 5 with --quick)
  --nodes3-pods N     pods per node of the nodes3 part (default 110, the kubelet's default maxPods; 30 with --quick)
  --paths LIST        comma-separated subset of direct,cli,websocket,spdy (for profiling one path)
  --cpu-prof DIR      run nodelet under node --cpu-prof, profiles written to DIR at the end
  --heap-snapshots DIR  a V8 heap snapshot of nodelet after each forced GC (memory figures), in DIR;
                      compare two with node dist-bench/bench/lib/heap-diff.js A B [sessions]
  --keep-logs         keep nodelet's log and work directory
  --no-trace-gc       do not run nodelet with --trace-gc (by default its full GCs per transfer are counted)
  --ws-zero-mask      diagnostic: WebSocket stdin frames with a zero mask key, which the server
                      does not unmask (shows what unmasking costs; not what kubectl does)
  --nodelet-cli PATH  run this build of nodelet instead of dist/cli.js (A/B experiments)
  --nodelet-node-args="ARGS"  extra node flags for the nodelet child, e.g. =--initial-old-space-size=256
`;

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      rounds: { type: 'string' },
      quick: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      samples: { type: 'string' },
      'stdout-mib': { type: 'string' },
      'stdin-mib': { type: 'string' },
      'stdin-chunk': { type: 'string' },
      only: { type: 'string' },
      paths: { type: 'string' },
      'cpu-prof': { type: 'string' },
      'heap-snapshots': { type: 'string' },
      'keep-logs': { type: 'boolean', default: false },
      'nodelet-cli': { type: 'string' },
      'nodelet-node-args': { type: 'string' },
      'ws-zero-mask': { type: 'boolean', default: false },
      'trace-gc': { type: 'boolean', default: true },
      'http-seconds': { type: 'string' },
      'freshness-samples': { type: 'string' },
      sessions: { type: 'string' },
      'slow-seconds': { type: 'string' },
      'slow-mib': { type: 'string' },
      'pf-mib': { type: 'string' },
      'cluster-pods': { type: 'string' },
      'cluster-kills': { type: 'string' },
      'cluster-rounds': { type: 'string' },
      watchers: { type: 'string' },
      'watch-changes': { type: 'string' },
      'scale-sessions': { type: 'string' },
      'cni-pods': { type: 'string' },
      'cni-rounds': { type: 'string' },
      'podnet-mib': { type: 'string' },
      'eviction-rounds': { type: 'string' },
      'idle-pods': { type: 'string' },
      'idle-minutes': { type: 'string' },
      'kubelet-pods': { type: 'string' },
      'kubelet-rounds': { type: 'string' },
      'kubelet-kills': { type: 'string' },
      'kubelet-idle-seconds': { type: 'string' },
      'kubelet-idle-pods': { type: 'string' },
      'kubelet-exec-mib': { type: 'string' },
      'kubelet-log-mib': { type: 'string' },
      'kubelet-echo-samples': { type: 'string' },
      'nodes3-pods': { type: 'string' },
      svg: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowNegative: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const int = (v: string | undefined, def: number, what: string): number => {
    if (v === undefined) return def;
    const n = Number(v);
    if (!Number.isInteger(n) || n <= 0) throw new Error(`--${what} must be a positive integer`);
    return n;
  };
  const ascending = (xs: number[], what: string): number[] => {
    if (xs.some((x, i) => i > 0 && x <= xs[i - 1]!)) throw new Error(`--${what} must be ascending`);
    return xs;
  };
  const quick = values.quick ?? false;
  const only = new Set((values.only ?? ALL_PARTS.join(',')).split(',').map((s) => s.trim()).filter(Boolean));
  for (const o of only) if (!ALL_PARTS.includes(o)) throw new Error(`--only: unknown part "${o}"`);
  const paths = (values.paths ?? ORDER.join(',')).split(',').map((s) => s.trim()).filter(Boolean) as PathName[];
  for (const p of paths) if (!ORDER.includes(p)) throw new Error(`--paths: unknown path "${p}"`);
  const stdinChunk = int(values['stdin-chunk'], 32 * 1024, 'stdin-chunk');
  const stdinBytes = int(values['stdin-mib'], quick ? 128 : 512, 'stdin-mib') * MiB;
  if (stdinBytes % stdinChunk !== 0) throw new Error('--stdin-mib must be a multiple of --stdin-chunk');
  return {
    rounds: int(values.rounds, quick ? 1 : 5, 'rounds'),
    quick,
    json: values.json ?? false,
    samples: int(values.samples, quick ? 5 : 20, 'samples'),
    stdoutBytes: int(values['stdout-mib'], quick ? 256 : 1024, 'stdout-mib') * MiB,
    stdinBytes,
    stdinChunk,
    only,
    paths: ORDER.filter((p) => paths.includes(p)),
    cpuProfDir: values['cpu-prof'],
    heapSnapshotDir: values['heap-snapshots'],
    nodeletCli: values['nodelet-cli'],
    wsZeroMask: values['ws-zero-mask'] ?? false,
    traceGc: values['trace-gc'] ?? true,
    nodeletNodeArgs: (values['nodelet-node-args'] ?? '').split(/\s+/).filter(Boolean),
    keepLogs: values['keep-logs'] ?? false,
    httpSeconds: int(values['http-seconds'], quick ? 1 : 3, 'http-seconds'),
    freshnessSamples: int(values['freshness-samples'], 10 + (quick ? 0 : 2), 'freshness-samples'),
    sessions: int(values.sessions, quick ? 100 : 1000, 'sessions'),
    slowSeconds: int(values['slow-seconds'], quick ? 5 : 30, 'slow-seconds'),
    slowMib: int(values['slow-mib'], 256, 'slow-mib'),
    pfMib: int(values['pf-mib'], quick ? 32 : 256, 'pf-mib'),
    clusterPods: int(values['cluster-pods'], 100, 'cluster-pods'),
    clusterKills: int(values['cluster-kills'], quick ? 20 : 24, 'cluster-kills'),
    clusterRounds: int(values['cluster-rounds'], quick ? 1 : 2, 'cluster-rounds'),
    watchers: int(values.watchers, quick ? 200 : 1000, 'watchers'),
    watchChanges: int(values['watch-changes'], 300, 'watch-changes'),
    scaleSessions: int(values['scale-sessions'], quick ? 1000 : 10_000, 'scale-sessions'),
    cniPods: int(values['cni-pods'], 50, 'cni-pods'),
    cniRounds: int(values['cni-rounds'], quick ? 1 : 2, 'cni-rounds'),
    podnetMib: int(values['podnet-mib'], quick ? 256 : 1024, 'podnet-mib'),
    evictionRounds: int(values['eviction-rounds'], quick ? 2 : 5, 'eviction-rounds'),
    idlePods: int(values['idle-pods'], 110, 'idle-pods'),
    idleMinutes: int(values['idle-minutes'], quick ? 2 : 10, 'idle-minutes'),
    kubeletPods: (values['kubelet-pods'] ?? (quick ? '1,30' : '1,30,100')).split(',').map((x) => int(x.trim(), 1, 'kubelet-pods')),
    kubeletRounds: int(values['kubelet-rounds'], quick ? 1 : 2, 'kubelet-rounds'),
    kubeletKills: int(values['kubelet-kills'], quick ? 10 : 20, 'kubelet-kills'),
    kubeletIdleSeconds: int(values['kubelet-idle-seconds'], quick ? 20 : 300, 'kubelet-idle-seconds'),
    kubeletIdlePods: ascending((values['kubelet-idle-pods'] ?? (quick ? '30' : '30,110')).split(',').map((x) => int(x.trim(), 1, 'kubelet-idle-pods')), 'kubelet-idle-pods'),
    kubeletExecMib: int(values['kubelet-exec-mib'], quick ? 64 : 256, 'kubelet-exec-mib'),
    kubeletLogMib: Math.min(int(values['kubelet-log-mib'], quick ? 16 : 100, 'kubelet-log-mib'), 1024),
    kubeletEchoSamples: Math.max(1, int(values['kubelet-echo-samples'], quick ? 5 : 15, 'kubelet-echo-samples')),
    nodes3Pods: int(values['nodes3-pods'], quick ? 30 : 110, 'nodes3-pods'),
    svg: values.svg ?? (values.only === undefined ? join(repoRoot(), 'bench/results.svg') : ''),
  };
}

/** `dd` writes 64 KiB blocks: one write per block, ≈ 16 KB Docker frames. */
const stdoutCommand = (bytes: number): string[] => {
  if (bytes % 65536 !== 0) throw new Error('stdout size must be a multiple of 64 KiB');
  return ['sh', '-c', `dd if=/dev/zero bs=65536 count=${bytes / 65536} 2>/dev/null`];
};
const STDIN_COMMAND = ['sh', '-c', 'cat >/dev/null'];

type PathName = 'direct' | 'cli' | 'websocket' | 'spdy';
const ORDER: readonly PathName[] = ['direct', 'cli', 'websocket', 'spdy'];
const RELAYS: readonly PathName[] = ['websocket', 'spdy'];
const LABEL: Record<PathName, string> = {
  direct: 'direct (dockerode hijack + StdcopyParser)',
  cli: 'docker exec CLI',
  websocket: 'nodelet WebSocket v5.channel.k8s.io',
  spdy: 'nodelet SPDY/3.1 v4.channel.k8s.io',
};

interface TransferRound {
  mbps: number;
  /** nodelet's mark-compact GCs during the transfer (NaN without --trace-gc). */
  fullGcs: number;
  /** CPU-seconds per GiB moved, per process: nodelet, client (this process), dockerd, shim. */
  cpuPerGiB: Record<string, number>;
}

interface Results {
  stdout: Record<PathName, TransferRound[]>;
  stdin: Record<PathName, TransferRound[]>;
  /**
   * Per round: the medians of that round's samples, and the median of the paired differences to
   * the direct sample taken in the same iteration (adjacent in time, so slow drifts cancel).
   */
  setup: Record<PathName, { firstByteMs: number; exitMs: number; overFirstMs: number; overExitMs: number }[]>;
}

const emptyByPath = <T>(): Record<PathName, T[]> => ({ direct: [], cli: [], websocket: [], spdy: [] });

// ---- output ----------------------------------------------------------------------------------

// ---- main ------------------------------------------------------------------------------------

async function main(): Promise<void> {
  let opts: Options;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n${USAGE}`);
    process.exit(2);
  }
  const root = repoRoot();
  const log = (msg: string): void => void process.stderr.write(`bench: ${msg}\n`);
  const started = Date.now();
  const loadAtStart = loadavg().map((x) => x.toFixed(2)).join(' ');
  if (loadavg()[0]! > cpus().length) {
    log(`warning: load average ${loadAtStart} on ${cpus().length} CPUs — other work competes for the CPUs; figures will be noisy (see the "rest" CPU column)`);
  }

  // Cleanup runs once: on success, on failure, and on SIGINT/SIGTERM.
  const cleanups = cleanupsOnExit(log, 'stopping nodelet and the private engine');

  // The scale part holds every session's sockets in this process, nodelet and dockerd: raise the
  // descriptor limit before they start (children inherit it).
  if (opts.only.has('scale')) await raiseFdLimit(8 * opts.scaleSessions, log);

  try {
    // The pod-network parts first, in a sealed network namespace of their own (bench/lib/pod-network.ts),
    // before this process's engine starts: the two engines never compete for the CPUs.
    const netnsParts: string[] = SEALED_PARTS.filter((p) => opts.only.has(p));
    let sealed: SealedResult | undefined;
    if (netnsParts.length > 0) {
      // The kubelet is built here, outside the sealed namespace (Go may need its module cache).
      const kubeletBin = opts.only.has('kubelet') ? await buildKubelet(root) : '';
      if (kubeletBin) log(`kubelet part: ${kubeletBin}`);
      sealed = await sealedParts({
        root,
        loAddrs: opts.only.has('kubelet') ? KUBELET_PART_ADDRS : [],
        job: {
          parts: netnsParts,
          cniPods: opts.cniPods,
          cniRounds: opts.cniRounds,
          podnetBytes: opts.podnetMib * MiB,
          podnetRounds: opts.rounds,
          cli: opts.nodeletCli,
          keepLogs: opts.keepLogs,
          ...(kubeletBin
            ? {
                kubelet: {
                  kubeletBin,
                  podCounts: opts.kubeletPods,
                  rounds: opts.kubeletRounds,
                  kills: opts.kubeletKills,
                  idleSeconds: opts.kubeletIdleSeconds,
                  idlePods: opts.kubeletIdlePods,
                  execMib: opts.kubeletExecMib,
                  logMib: opts.kubeletLogMib,
                  echoSamples: opts.kubeletEchoSamples,
                },
              }
            : {}),
        },
        log,
        defer: (fn) => void cleanups.push(fn),
      });
    }
    let dockerVersion = sealed?.docker ?? '';
    let nodeArgs: string[] = [];
    const results: Results = { stdout: emptyByPath(), stdin: emptyByPath(), setup: emptyByPath() };
    const extra: PartResult[] = [];
    if ([...opts.only].some((p) => !netnsParts.includes(p))) {
      const engine = await Engine.start(root, log, (dir) =>
        cleanups.push(async () => {
          log('stopping the private Docker engine');
          await Engine.stopDir(root, dir);
        }),
      );
      dockerVersion = await engine.version();

      // The nodelet child inherits the environment: gc-hook.ts reads this.
      if (opts.heapSnapshotDir) process.env.NODELET_BENCH_HEAP_SNAPSHOTS = resolve(opts.heapSnapshotDir);
      nodeArgs = [
        ...(opts.traceGc ? ['--trace-gc'] : []),
        // Memory figures are taken after a forced GC (SIGUSR2, see bench/lib/gc-hook.ts).
        ...GC_HOOK_ARGS,
        ...opts.nodeletNodeArgs,
        ...(opts.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', opts.cpuProfDir] : []),
      ];
      const nodelet = await BenchNodelet.start({
        root,
        dockerHost: engine.host,
        nodeArgs,
        cli: opts.nodeletCli,
        args: [
          ...(opts.only.has('scale') ? ['--max-streaming-sessions', String(Math.max(opts.scaleSessions, 1000))] : []),
          // The watch part's W watchers are one (anonymous) user: the per-user cap (default 100) must admit them.
          ...(opts.only.has('watch') ? ['--max-watches', String(Math.max(opts.watchers, 1000)), '--max-watches-per-user', String(opts.watchers)] : []),
        ],
        extraManifests: extraManifests(opts.only, { freshnessSamples: opts.freshnessSamples, pfBytes: opts.pfMib * MiB }),
      });
      cleanups.push(async () => {
        await nodelet.stop();
        await nodelet.cleanup(opts.keepLogs);
        if (opts.keepLogs) log(`nodelet log kept: ${nodelet.logFile}`);
      });
      log(`nodelet pid ${nodelet.pid} on ${nodelet.url}; waiting for the bench pod`);
      const { containerId, pod } = await nodelet.waitForPod();
      const shimPid = findShimPid(containerId);
      if (!shimPid) log('containerd-shim of the pod not found: shim CPU is not reported');
      const meter = new CpuMeter({ nodelet: nodelet.pid, dockerd: engine.pid, shim: shimPid });

      const docker = dockerClient(engine.host);
      const paths: Record<PathName, ExecPath> = {
        direct: new DirectPath(docker, containerId),
        cli: new CliPath(containerId, engine.env()),
        websocket: new WebSocketPath(nodelet.port, pod, opts.wsZeroMask),
        spdy: new SpdyPath(nodelet.port, pod),
      };

      const transfer = async (kind: 'stdout' | 'stdin', p: PathName, bytes: number): Promise<TransferRound> => {
        const gcBefore = nodelet.markCompacts();
        const stop = meter.start();
        const r =
          kind === 'stdout'
            ? await paths[p].stdout(stdoutCommand(bytes), bytes)
            : await paths[p].stdin(STDIN_COMMAND, bytes, opts.stdinChunk);
        const cpu = stop();
        const fullGcs = nodelet.markCompacts() - gcBefore;
        const cpuPerGiB: Record<string, number> = {};
        for (const [k, v] of Object.entries(cpu)) cpuPerGiB[k] = v / (r.bytes / GiB);
        return { mbps: r.bytes / MB / (r.ms / 1000), cpuPerGiB, fullGcs };
      };

      // Warm-up (not recorded): JIT, connection pools, the engine's first execs.
      log('warm-up');
      for (const p of opts.paths) {
        if (opts.only.has('stdout')) await transfer('stdout', p, (opts.quick ? 8 : 64) * MiB);
        if (opts.only.has('stdin')) await transfer('stdin', p, (opts.quick ? 8 : 32) * MiB);
        if (opts.only.has('setup')) for (let i = 0; i < 3; i++) await paths[p].latency();
      }

      for (let r = 0; r < opts.rounds; r++) {
        const order = rotated(opts.paths, r);
        if (opts.only.has('stdout')) {
          for (const p of order) {
            const t = await transfer('stdout', p, opts.stdoutBytes);
            results.stdout[p].push(t);
            log(`round ${r + 1}/${opts.rounds} stdout ${p}: ${t.mbps.toFixed(0)} MB/s, nodelet ${fmt(t.cpuPerGiB.nodelet)} CPU-s/GiB (${t.fullGcs} full GCs), rest of system ${fmt(t.cpuPerGiB.rest)}`);
          }
        }
        if (opts.only.has('stdin')) {
          for (const p of order) {
            const t = await transfer('stdin', p, opts.stdinBytes);
            results.stdin[p].push(t);
            log(`round ${r + 1}/${opts.rounds} stdin ${p}: ${t.mbps.toFixed(0)} MB/s, nodelet ${fmt(t.cpuPerGiB.nodelet)} CPU-s/GiB (${t.fullGcs} full GCs), rest of system ${fmt(t.cpuPerGiB.rest)}`);
          }
        }
        if (opts.only.has('setup')) {
          const samples = emptyByPath<LatencySample>();
          for (let i = 0; i < opts.samples; i++) {
            for (const p of rotated(opts.paths, r + i)) samples[p].push(await paths[p].latency());
          }
          const d = samples.direct;
          for (const p of opts.paths) {
            const s = samples[p];
            results.setup[p].push({
              firstByteMs: median(s.map((x) => x.firstByteMs)),
              exitMs: median(s.map((x) => x.exitMs)),
              overFirstMs: median(s.map((x, i) => x.firstByteMs - (d[i]?.firstByteMs ?? Number.NaN))),
              overExitMs: median(s.map((x, i) => x.exitMs - (d[i]?.exitMs ?? Number.NaN))),
            });
          }
          log(`round ${r + 1}/${opts.rounds} setup first byte (ms): ` + opts.paths.map((p) => `${p} ${fmt(results.setup[p].at(-1)!.firstByteMs, 1)}`).join(', '));
        }
      }

      // The figures beyond the exec relay (each beside its own baseline).
      if (opts.only.has('http')) {
        if (await ensureWrk(log)) {
          log('HTTP serving: /pods and /podInfo vs a bare Fastify server; /podInfo latency with 10 vs 1000 pods');
          extra.push(await httpServing(nodelet, nodelet.workDir, { rounds: opts.rounds, seconds: opts.httpSeconds, warmup: !opts.quick, log }));
        } else {
          log('wrk is missing and cannot be installed: the HTTP serving part is skipped');
          extra.push({ metrics: [], lines: ['HTTP serving: SKIPPED (no wrk)', ''] });
        }
      }
      if (opts.only.has('freshness')) {
        log(`status freshness: ${opts.freshnessSamples} × docker kill`);
        extra.push(await freshness(nodelet, docker, { samples: opts.freshnessSamples, log }));
      }
      if (opts.only.has('portforward')) {
        log('port-forward throughput (SPDY) vs a direct connection inside the pod netns');
        extra.push(await portForward(nodelet, docker, { rounds: opts.rounds, bytes: opts.pfMib * MiB, log }));
      }
      if (opts.only.has('slowreader')) {
        log(`slow reader: ${opts.slowMib} MiB at 1 MB/s for ${opts.slowSeconds} s, WebSocket then SPDY`);
        extra.push(await slowReader(nodelet, { bytes: opts.slowMib * MiB, seconds: opts.slowSeconds, rateBps: 1e6, log }));
      }
      if (opts.only.has('sessions')) {
        log(`idle sessions: opening ${opts.sessions}`);
        extra.push(await idleSessions(nodelet, { sessions: opts.sessions, log }));
      }
      if (opts.only.has('scale')) {
        log(`scale: opening ${opts.scaleSessions} idle exec sessions (nodelet --max-streaming-sessions ${Math.max(opts.scaleSessions, 1000)})`);
        extra.push(await scaleSessions(nodelet, { sessions: opts.scaleSessions, dockerdPid: engine.pid, log }));
      }
      if (opts.only.has('cluster')) {
        log(`cluster mode: own control plane + nodelet --kubeconfig; ${opts.clusterPods} pods via the apiserver vs static, ${opts.clusterKills} kills`);
        extra.push(
          await clusterPart({
            root,
            dockerHost: engine.host,
            docker,
            cli: opts.nodeletCli,
            pods: opts.clusterPods,
            kills: opts.clusterKills,
            rounds: opts.clusterRounds,
            keepLogs: opts.keepLogs,
            log,
            defer: (fn) => void cleanups.push(fn),
          }),
        );
      }

      if (opts.only.has('watch')) {
        log(`watch: ${opts.watchers} pod watchers, bursts of ${opts.watchChanges} status changes`);
        extra.push(await watchPart({ nodelet, workDir: nodelet.workDir, watchers: opts.watchers, changes: opts.watchChanges, rounds: opts.quick ? 1 : 3, log }));
      }

      if (opts.only.has('eviction')) {
        log(`eviction: own control plane + nodelet --kubeconfig on a small tmpfs root dir; ${opts.evictionRounds} evictions per monitoring period (10 s, 1 s)`);
        extra.push(await evictionPart({ root, dockerHost: engine.host, cli: opts.nodeletCli, rounds: opts.evictionRounds, keepLogs: opts.keepLogs, log, defer: (fn) => void cleanups.push(fn) }));
      }

      if (opts.only.has('idle110')) {
        log(`idle110: a second nodelet with ${opts.idlePods} idle static pods, CPU and RSS over ${opts.idleMinutes} min`);
        extra.push(await idle110Part({ root, dockerHost: engine.host, cli: opts.nodeletCli, pods: opts.idlePods, minutes: opts.idleMinutes, keepLogs: opts.keepLogs, log, defer: (fn) => void cleanups.push(fn) }));
      }

      if (opts.only.has('nodes3')) {
        log(`nodes3: own control plane + 3 nodelet nodes; ${opts.nodes3Pods} pods on one node, then on each of the three`);
        extra.push(await nodes3Part({ root, dockerHost: engine.host, cli: opts.nodeletCli, podsPerNode: opts.nodes3Pods, idleSeconds: opts.quick ? 10 : 60, keepLogs: opts.keepLogs, log, defer: (fn) => void cleanups.push(fn) }));
      }

    }
    if (sealed) extra.push(...sealed.parts);

    const meta = {
      date: new Date().toISOString(),
      cpu: `${cpus().length}× ${cpus()[0]?.model ?? '?'}`,
      kernel: release(),
      node: process.version,
      docker: dockerVersion,
      ...(sealed ? { sealed_netns: sealed.netns, sealed_netns_docker: sealed.docker } : {}),
      load_at_start: loadAtStart,
      load_at_end: loadavg().map((x) => x.toFixed(2)).join(' '),
      rounds: opts.rounds,
      stdout_bytes: opts.stdoutBytes,
      stdin_bytes: opts.stdinBytes,
      stdin_chunk: opts.stdinChunk,
      setup_samples: opts.samples,
      ws_zero_mask: opts.wsZeroMask ? 'yes (diagnostic)' : 'no',
      nodelet_cli: opts.nodeletCli ?? 'dist/cli.js',
      nodelet_node_args: nodeArgs.join(' '),
      duration_s: 0,
    };
    await cleanups.run();
    meta.duration_s = Math.round((Date.now() - started) / 1000);
    report(results, meta, opts, extra);
  } catch (err) {
    await cleanups.run();
    throw err;
  }
}

// ---- report ----------------------------------------------------------------------------------

function report(res: Results, meta: Record<string, string | number>, opts: Options, extra: PartResult[]): void {
  const metrics: Metric[] = [];
  const lines: string[] = [];
  const rounds = opts.rounds;

  lines.push(
    `nodelet exec bench — ${meta.date}`,
    `${meta.cpu}, kernel ${meta.kernel}, Node ${meta.node}, Docker ${meta.docker}; load average at start ${meta.load_at_start}, at end ${meta.load_at_end}`,
    `${rounds} interleaved round(s), ${meta.duration_s} s. Values: median over rounds [min–max]; ratios are taken within each round (paired), then the median.`,
  );
  if (opts.nodeletCli || opts.nodeletNodeArgs.length > 0) {
    lines.push(`EXPERIMENT: nodelet = node ${meta.nodelet_node_args} ${meta.nodelet_cli}`);
  }
  if (opts.wsZeroMask) lines.push('DIAGNOSTIC RUN: WebSocket stdin sent with a zero mask key (the server skips unmasking; kubectl never does this).');
  lines.push('');

  // Throughput and CPU.
  for (const kind of ['stdout', 'stdin'] as const) {
    if (!opts.only.has(kind)) continue;
    const data = res[kind];
    const size = kind === 'stdout' ? opts.stdoutBytes : opts.stdinBytes;
    const ratioTarget = kind === 'stdout' ? TARGETS.stdoutRatio : TARGETS.stdinRatio;
    const direct = data.direct.map((t) => t.mbps);
    const cli = data.cli.map((t) => t.mbps);
    const title =
      kind === 'stdout'
        ? `exec stdout, ${size / MiB} MiB (dd bs=64k) — MB/s`
        : `exec stdin, ${size / MiB} MiB in ${opts.stdinChunk} B messages into \`cat >/dev/null\`, to exit status — MB/s`;
    const rows: string[][] = [[title, 'median', '[min–max]', '÷direct', '[min–max]', '÷CLI', 'target']];
    for (const p of opts.paths) {
      const v = data[p].map((t) => t.mbps);
      const s = spread(v);
      const ratios = v.map((x, i) => x / direct[i]!);
      const ratiosCli = v.map((x, i) => x / cli[i]!);
      const rs = spread(ratios);
      const m: Metric = {
        metric: `exec_${kind}_throughput`,
        variant: p,
        value: round(s.median, 1),
        unit: 'MB/s',
        baseline: round(median(direct), 1),
        baseline_variant: 'direct',
        ratio: round(rs.median, 3),
        ratio_min: round(rs.min, 3),
        ratio_max: round(rs.max, 3),
        cli_baseline: round(median(cli), 1),
        ratio_cli: round(median(ratiosCli), 3),
        min: round(s.min, 1),
        max: round(s.max, 1),
        rounds,
        per_round: v.map((x) => round(x, 1)),
        bytes: size,
      };
      if (RELAYS.includes(p)) Object.assign(m, target(ratioTarget, '>=', 'ratio', rs.median, rs));
      metrics.push(m);
      rows.push([
        `  ${LABEL[p]}`,
        fmt(s.median, 0),
        `[${fmt(s.min, 0)}–${fmt(s.max, 0)}]`,
        fmt(rs.median),
        `[${fmt(rs.min)}–${fmt(rs.max)}]`,
        fmt(median(ratiosCli)),
        verdict(m),
      ]);
    }
    lines.push(table(rows), '');

    // CPU per GiB: nodelet's is the target; the others explain where the machine's 2 cores go.
    const directConsumer = data.direct.map((t) => t.cpuPerGiB.client!);
    const cpuRows: string[][] = [[`${kind}: CPU-seconds per GiB (median [min–max])`, 'nodelet', '[min–max]', 'full GCs', 'client', 'dockerd', 'shim', 'rest', 'target']];
    for (const p of opts.paths) {
      const col = (k: string) => data[p].map((t) => t.cpuPerGiB[k] ?? Number.NaN);
      const nodeletCpu = spread(col('nodelet'));
      // This process is the consumer on the direct path, the WS/SPDY client on the relays, and only
      // spawns the CLI (whose own CPU is not measured).
      const client = p === 'cli' ? Number.NaN : median(col('client'));
      let verdictText = '';
      if (RELAYS.includes(p)) {
        const m: Metric = {
          metric: `exec_${kind}_server_cpu`,
          variant: p,
          value: round(nodeletCpu.median, 3),
          unit: 'CPU-s/GiB',
          baseline: round(median(directConsumer), 3),
          baseline_variant: 'direct consumer (in-process, no relay)',
          ratio: round(nodeletCpu.median / median(directConsumer), 3),
          min: round(nodeletCpu.min, 3),
          max: round(nodeletCpu.max, 3),
          rounds,
          per_round: col('nodelet').map((x) => round(x, 3)),
          client_cpu_per_gib: round(client, 3),
          dockerd_cpu_per_gib: round(median(col('dockerd')), 3),
          shim_cpu_per_gib: round(median(col('shim')), 3),
          rest_of_system_cpu_per_gib: round(median(col('rest')), 3),
          nodelet_full_gcs: round(median(data[p].map((t) => t.fullGcs)), 1),
          nodelet_full_gcs_per_round: data[p].map((t) => round(t.fullGcs, 0)),
          ...target(TARGETS.cpuPerGiB, '<=', 'value', nodeletCpu.median, nodeletCpu),
        };
        metrics.push(m);
        verdictText = verdict(m);
      }
      cpuRows.push([
        `  ${LABEL[p]}`,
        p === 'direct' || p === 'cli' ? '–' : fmt(nodeletCpu.median),
        p === 'direct' || p === 'cli' ? '' : `[${fmt(nodeletCpu.min)}–${fmt(nodeletCpu.max)}]`,
        p === 'direct' || p === 'cli' ? '' : fmt(median(data[p].map((t) => t.fullGcs)), 0),
        fmt(client),
        fmt(median(col('dockerd'))),
        fmt(median(col('shim'))),
        fmt(median(col('rest'))),
        verdictText,
      ]);
    }
    lines.push(table(cpuRows), '');
  }

  // Session setup.
  if (opts.only.has('setup')) {
    const d = res.setup.direct;
    const rows: string[][] = [
      [`exec setup, \`echo x\`, ${opts.samples} samples/round — ms`, 'first byte', '[min–max]', '+direct', '[min–max]', 'exit status', '+direct', 'target'],
    ];
    for (const p of opts.paths) {
      const first = res.setup[p].map((x) => x.firstByteMs);
      const exit = res.setup[p].map((x) => x.exitMs);
      const over = spread(res.setup[p].map((x) => x.overFirstMs));
      const overExit = spread(res.setup[p].map((x) => x.overExitMs));
      const fs = spread(first);
      const base = {
        unit: 'ms',
        baseline: round(median(d.map((x) => x.firstByteMs)), 2),
        baseline_variant: 'direct',
        rounds,
      };
      metrics.push({
        metric: 'exec_setup_first_byte',
        variant: p,
        value: round(fs.median, 2),
        ratio: round(median(first.map((x, i) => x / (d[i]?.firstByteMs ?? Number.NaN))), 3),
        min: round(fs.min, 2),
        max: round(fs.max, 2),
        per_round: first.map((x) => round(x, 2)),
        ...base,
      });
      const es = spread(exit);
      metrics.push({
        metric: 'exec_setup_exit_status',
        variant: p,
        value: round(es.median, 2),
        ...base,
        baseline: round(median(d.map((x) => x.exitMs)), 2),
        ratio: round(median(exit.map((x, i) => x / (d[i]?.exitMs ?? Number.NaN))), 3),
        min: round(es.min, 2),
        max: round(es.max, 2),
        per_round: exit.map((x) => round(x, 2)),
      });
      let verdictText = '';
      if (RELAYS.includes(p)) {
        const m: Metric = {
          metric: 'exec_setup_overhead',
          variant: p,
          value: round(over.median, 2),
          ...base,
          ratio: round(median(first.map((x, i) => x / (d[i]?.firstByteMs ?? Number.NaN))), 3),
          min: round(over.min, 2),
          max: round(over.max, 2),
          per_round: res.setup[p].map((x) => round(x.overFirstMs, 2)),
          exit_overhead: round(overExit.median, 2),
          ...target(TARGETS.setupOverheadMs, '<=', 'value', over.median, over),
        };
        metrics.push(m);
        verdictText = verdict(m);
      }
      rows.push([
        `  ${LABEL[p]}`,
        fmt(fs.median, 1),
        `[${fmt(fs.min, 1)}–${fmt(fs.max, 1)}]`,
        p === 'direct' ? '' : `${over.median >= 0 ? '+' : ''}${fmt(over.median, 1)}`,
        p === 'direct' ? '' : `[${fmt(over.min, 1)}–${fmt(over.max, 1)}]`,
        fmt(median(exit), 1),
        p === 'direct' ? '' : `${overExit.median >= 0 ? '+' : ''}${fmt(overExit.median, 1)}`,
        verdictText,
      ]);
    }
    lines.push(table(rows));
    lines.push(
      '  (CLI: the whole `docker exec` process, its first byte seen through a pipe. +direct: per round, the median',
      '   of the paired differences to the direct sample taken right next to it; then the median over rounds.)',
      '',
    );
  }

  for (const part of extra) {
    metrics.push(...(part.metrics as Metric[]));
    lines.push(...part.lines);
  }

  const targets = metrics.filter((m) => m.target !== undefined);
  const missed = targets.filter((m) => verdictOf(m) !== 'PASS');
  lines.push(
    `targets: ${targets.length - missed.length}/${targets.length} met over every round` +
      (missed.length ? `; not met: ${missed.map((m) => `${m.metric}[${m.variant}]${verdictOf(m) === 'UNSETTLED' ? ' (unsettled)' : ''}`).join(', ')}` : ''),
  );
  const summary = markdownSummary(metrics);
  if (summary) lines.push('', 'Summary figures (markdown, for bench/README.md):', '', summary);
  if (opts.svg) {
    const chart = svgChart(metrics, `nodelet bench ${String(meta.date).slice(0, 16).replace('T', ' ')} UTC, ${meta.cpu}; load ${meta.load_at_start} → ${meta.load_at_end}`);
    if (chart) {
      writeFileSync(opts.svg, chart);
      lines.push('', `chart written: ${opts.svg}`);
    }
  }

  const text = lines.join('\n') + '\n';
  if (opts.json) {
    process.stderr.write(text);
    const info: Metric = { metric: 'bench_run', variant: 'exec', value: Number(meta.duration_s), unit: 's', baseline: null, baseline_variant: null, ratio: null, min: null, max: null, rounds, ...meta };
    for (const m of [info, ...metrics]) process.stdout.write(JSON.stringify(m) + '\n');
  } else {
    process.stdout.write(text);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench: FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
