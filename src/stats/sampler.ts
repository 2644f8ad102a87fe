import type { Logger } from '../logging/index.js';
import type { ContainerStatsSample, Runtime, RuntimePod } from '../runtime/types.js';
import type { CgroupReading } from './cgroup-stats.js';
import type { HostReading } from './host.js';
import type { NodeReading } from './node.js';
import type { PressureReading } from './psi.js';
import { usageNanoCores } from './rate.js';
import type { NodeSample, PodCgroupSample, SampledContainer, StatsSnapshot, StatsSource, StatsTarget } from './types.js';
import { Coalescer } from '../async/coalescer.js';

export interface StatsSamplerOptions {
  runtime: Pick<Runtime, 'containerStats'>;
  /** The PLEG's newest snapshot: which containers and sandboxes run now (no Docker call). */
  pods: () => readonly RuntimePod[];
  log: Logger;
  /** Time between the starts of two rounds; the kubelet's cadvisor housekeeping is ~10 s. */
  periodMs?: number;
  /** Stats calls in flight at once, so a node full of pods does not burst the Docker API. */
  concurrency?: number;
  /** Node-wide reading (src/stats/node.ts); omitted, the node has no CPU or memory figures. */
  readNode?: () => Promise<NodeReading>;
  /** Node filesystems, rlimit and pressure (src/stats/host.ts); omitted, the node has none. */
  readHost?: () => Promise<HostReading>;
  /**
   * The pod's own cgroup (src/stats/cgroup-stats.ts): undefined for a pod without one, whose
   * figures are then the sum of its containers. A rejection counts as undefined.
   */
  readPodCgroup?: (uid: string) => Promise<CgroupReading | undefined>;
  /**
   * A container's (or sandbox's) own cgroup, read from its files as cadvisor reads them for the
   * kubelet (pkg/kubelet/stats/cadvisor_stats_provider.go), in place of the engine's
   * `GET /containers/{id}/stats`: each of those costs dockerd a round trip to containerd and the
   * container's shim (≈ 2 ms of dockerd CPU), every container every period. Undefined: not known
   * yet (a pod whose class nodelet has not learnt since it started), the engine's figures this
   * round. A rejection: the container has no cgroup where nodelet looks (another engine's
   * layout), and its figures come from the engine from then on, without pressure (the engine's
   * stats have none). A reading's `psi` (cgroup v2) is the container's pressure.
   */
  readContainerCgroup?: (uid: string, containerID: string) => Promise<CgroupReading | undefined>;
}

type OptionalReaders = 'readNode' | 'readHost' | 'readPodCgroup' | 'readContainerCgroup';

interface Tracked {
  target: StatsTarget;
  latest: ContainerStatsSample;
  previous?: ContainerStatsSample;
}

/**
 * Reads every running container's and sandbox's counters in the background, so the stats routes
 * answer from memory and never call Docker. Keeps the last two samples per container for the CPU
 * rate, forgets containers the PLEG no longer reports, and never runs two rounds at once: a
 * `sampleNow()` during a round shares one follow-up round, like the PLEG's relist.
 */
export class StatsSampler implements StatsSource {
  readonly #o: Required<Omit<StatsSamplerOptions, OptionalReaders>> & Pick<StatsSamplerOptions, OptionalReaders>;
  #tracked = new Map<string, Tracked>();
  #node: { latest: NodeReading; previous?: NodeReading } | undefined;
  #host: HostReading | undefined;
  /** Pod cgroup readings by pod UID, the last two for the CPU rate. */
  #podCgroups = new Map<string, { latest: CgroupReading; previous?: CgroupReading }>();
  #pressure = new Map<string, PressureReading>();
  /** Containers whose cgroup could not be read: their figures come from the engine. */
  #engineOnly = new Set<string>();
  #snapshot: StatsSnapshot = { containers: [] };
  #timer: NodeJS.Timeout | undefined;
  readonly #sampling = new Coalescer(() => this.#round());
  #stopped = true;
  #generation = 0;
  #rounds = 0;
  #errors = 0;

  constructor(opts: StatsSamplerOptions) {
    this.#o = { periodMs: 10_000, concurrency: 4, ...opts };
  }

  /** Samples at once, then every period. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    const generation = ++this.#generation;
    const tick = () => {
      const started = Date.now();
      void this.sampleNow().finally(() => {
        if (this.#stopped || generation !== this.#generation) return;
        this.#timer = setTimeout(tick, Math.max(0, this.#o.periodMs - (Date.now() - started)));
        this.#timer.unref();
      });
    };
    tick();
  }

  /** Stops the timer and waits for a round in flight, so no stats call outlives the node. */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#sampling.idle();
  }

  /** Runs a round; resolves once a round that started after this call has finished. */
  sampleNow(): Promise<void> {
    return this.#sampling.run();
  }

  snapshot(): StatsSnapshot {
    return this.#snapshot;
  }

  /** Rounds run and stats calls that failed, for tests and debugging. */
  counts(): { rounds: number; errors: number } {
    return { rounds: this.#rounds, errors: this.#errors };
  }

  async #round(): Promise<void> {
    const takenAt = new Date();
    const targets = targetsOf(this.#o.pods());
    const live = new Set(targets.map((t) => t.id));
    for (const id of this.#tracked.keys()) if (!live.has(id)) this.#tracked.delete(id);
    for (const id of this.#engineOnly) if (!live.has(id)) this.#engineOnly.delete(id);
    for (const id of this.#pressure.keys()) if (!live.has(id)) this.#pressure.delete(id);

    let read = 0;
    let lastError: unknown;
    const node = this.#sampleNode();
    const host = this.#sampleHost();
    await forEachLimited(targets, this.#o.concurrency, async (target) => {
      try {
        const sample = await this.#readContainer(target);
        read++;
        const before = this.#tracked.get(target.id);
        // A reading no newer than the last (Docker's cache) is no second point for a rate.
        if (before && sample.timestamp.getTime() <= before.latest.timestamp.getTime()) this.#tracked.set(target.id, { ...before, target });
        else this.#tracked.set(target.id, { target, latest: sample, ...(before ? { previous: before.latest } : {}) });
      } catch (err) {
        // Usually a container that stopped since the PLEG listed it; the next relist drops it.
        this.#errors++;
        lastError = err;
        const key = { pod: `${target.namespace}/${target.podName}`, podUID: target.podUID, container: target.name || 'POD', containerID: target.id, err };
        this.#o.log.debug(key, 'Reading container stats failed');
      }
    });
    // Pod cgroups after their containers: the counters only grow, so a pod's reading taken later
    // than its containers' is never below their sum.
    await this.#samplePodCgroups(targets);
    await Promise.all([node, host]);
    this.#rounds++;

    const containers: SampledContainer[] = [];
    for (const t of this.#tracked.values()) {
      const rate = usageNanoCores(t.previous, t.latest);
      containers.push({ target: t.target, latest: t.latest, ...(t.previous ? { previous: t.previous } : {}), ...(rate !== undefined ? { usageNanoCores: rate } : {}) });
    }
    const failed = read === 0 && targets.length > 0;
    this.#snapshot = {
      takenAt,
      containers,
      ...(this.#node ? { node: nodeSample(this.#node.latest, this.#node.previous) } : {}),
      ...(this.#host ? { host: this.#host } : {}),
      ...(this.#o.readPodCgroup ? { podCgroups: podCgroupSamples(this.#podCgroups) } : {}),
      ...(this.#o.readContainerCgroup ? { containerPressure: new Map(this.#pressure) } : {}),
      ...(failed ? { failure: `no container stats could be read: ${lastError instanceof Error ? lastError.message : String(lastError)}` } : {}),
    };
  }

  async #sampleHost(): Promise<void> {
    if (!this.#o.readHost) return;
    try {
      this.#host = await this.#o.readHost();
    } catch (err) {
      this.#errors++;
      this.#o.log.debug({ err }, 'Reading node filesystem and pressure stats failed');
    }
  }

  /**
   * One container's counters: from its cgroup when it has one where nodelet looks (with its
   * pressure, on v2), else from the engine (no pressure).
   */
  async #readContainer(t: StatsTarget): Promise<ContainerStatsSample> {
    const readCgroup = this.#o.readContainerCgroup;
    if (readCgroup && !this.#engineOnly.has(t.id)) {
      const r = await readCgroup(t.podUID, t.id).catch(() => {
        this.#engineOnly.add(t.id);
        return undefined;
      });
      if (r) {
        if (r.psi && !t.sandbox) this.#pressure.set(t.id, r.psi);
        else this.#pressure.delete(t.id);
        return sampleOfCgroup(r);
      }
    }
    this.#pressure.delete(t.id);
    return this.#o.runtime.containerStats(t.id);
  }

  /** Each pod's own cgroup; pods gone are forgotten. */
  async #samplePodCgroups(targets: readonly StatsTarget[]): Promise<void> {
    const readPod = this.#o.readPodCgroup;
    if (!readPod) return;
    const uids = [...new Set(targets.map((t) => t.podUID))];
    for (const uid of this.#podCgroups.keys()) if (!uids.includes(uid)) this.#podCgroups.delete(uid);
    await forEachLimited(uids, this.#o.concurrency, async (uid) => {
      const latest = await readPod(uid).catch((err: unknown) => {
        this.#o.log.debug({ podUID: uid, err }, 'Reading pod cgroup stats failed');
        return undefined;
      });
      const before = this.#podCgroups.get(uid);
      if (!latest) this.#podCgroups.delete(uid);
      else this.#podCgroups.set(uid, { latest, ...(before ? { previous: before.latest } : {}) });
    });
  }

  async #sampleNode(): Promise<void> {
    if (!this.#o.readNode) return;
    try {
      const latest = await this.#o.readNode();
      this.#node = { latest, ...(this.#node ? { previous: this.#node.latest } : {}) };
    } catch (err) {
      this.#errors++;
      this.#o.log.debug({ err }, 'Reading node stats failed');
    }
  }
}

/** The running sandbox and containers of every pod, from the runtime snapshot. */
export function targetsOf(pods: readonly RuntimePod[]): StatsTarget[] {
  const out: StatsTarget[] = [];
  for (const p of pods) {
    const sandbox = p.sandboxes.find((s) => s.ready);
    const running = p.containers.filter((c) => c.state === 'running');
    if (!sandbox && running.length === 0) continue;
    const podStartTime = sandbox?.createdAt ?? new Date(Math.min(...running.map((c) => c.createdAt.getTime())));
    const base = { podUID: p.uid, podName: p.name, namespace: p.namespace, podStartTime };
    if (sandbox) out.push({ ...base, id: sandbox.id, name: '', sandbox: true, startTime: sandbox.createdAt });
    // Lists are newest first, so a name seen twice keeps the newest instance.
    const seen = new Set<string>();
    for (const c of running) {
      if (seen.has(c.name)) continue;
      seen.add(c.name);
      out.push({ ...base, id: c.id, name: c.name, sandbox: false, startTime: c.createdAt });
    }
  }
  return out;
}

/** A cgroup reading as the engine's stats would give it (the same files, the same arithmetic). */
function sampleOfCgroup(r: CgroupReading): ContainerStatsSample {
  return {
    timestamp: r.timestamp,
    cpuUsageCoreNanoSeconds: r.cpuUsageCoreNanoSeconds,
    memoryUsageBytes: r.memoryUsageBytes,
    memoryWorkingSetBytes: r.memoryWorkingSetBytes,
    ...(r.memoryRssBytes !== undefined ? { memoryRssBytes: r.memoryRssBytes } : {}),
    ...(r.pageFaults !== undefined ? { pageFaults: r.pageFaults } : {}),
    ...(r.majorPageFaults !== undefined ? { majorPageFaults: r.majorPageFaults } : {}),
  };
}

function nodeSample(latest: NodeReading, previous: NodeReading | undefined): NodeSample {
  const rate = usageNanoCores(previous, latest);
  return {
    ...latest,
    ...(rate !== undefined && previous ? { usageNanoCores: rate, windowMs: latest.timestamp.getTime() - previous.timestamp.getTime() } : {}),
  };
}

function podCgroupSamples(readings: ReadonlyMap<string, { latest: CgroupReading; previous?: CgroupReading }>): Map<string, PodCgroupSample> {
  const out = new Map<string, PodCgroupSample>();
  for (const [uid, r] of readings) {
    const rate = usageNanoCores(r.previous, r.latest);
    out.set(uid, {
      latest: r.latest,
      ...(rate !== undefined && r.previous ? { usageNanoCores: rate, windowMs: r.latest.timestamp.getTime() - r.previous.timestamp.getTime() } : {}),
    });
  }
  return out;
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
export async function forEachLimited<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
}
