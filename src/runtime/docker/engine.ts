import { readFile } from 'node:fs/promises';
import type Docker from 'dockerode';
import { parseContainerUlimits, type Ulimit, type UlimitName } from '../../config/ulimits.js';
import type { Logger } from '../../logging/index.js';

/**
 * Which engine answers the Docker Engine API, and every way it behaves differently from dockerd
 * that nodelet must handle or document. This file is the one place for such differences: the
 * rest of src/runtime/docker speaks the Docker API only, and asks `quirks` where engines differ.
 *
 * Measured with Debian 12's docker.io 20.10 and podman 4.3.1 (`podman system service`, runc,
 * cgroupfs), by the integration and kubectl e2e suites (docs/running.md, "Runtimes").
 */
export type EngineName = 'docker' | 'podman';

export interface EngineQuirks {
  /**
   * Rlimits nodelet sets itself under `--container-ulimits=auto`, as functions of nodelet's own
   * hard limits; empty = none (the engine's own limits apply).
   *
   * Docker sets no rlimit of its own: a container inherits dockerd's (or its `--default-ulimit`),
   * exactly what the kubelet's containers get, so nodelet sets none.
   *
   * Podman sets RLIMIT_NOFILE and RLIMIT_NPROC on every container that does not name them, to
   * 1048576 (its `RLimitDefaultValue`) whatever its own limits are. Where the engine may not raise
   * a hard limit (no CAP_SYS_RESOURCE, as in a container or a VM sandbox) every start then fails
   * with `setrlimit RLIMIT_NOFILE: operation not permitted` (crun) or `error setting rlimit type
   * 7` (runc). Podman also lowers its own nproc to kernel.pid_max at start, so nproc must stay
   * within that too. nodelet names both, within its own hard limits: the largest values this host
   * lets a process like nodelet keep.
   */
  readonly autoUlimits: readonly UlimitName[];
  /**
   * Names nodelet fills in (from `autoUlimits`) when an explicit `--container-ulimits` list leaves
   * them out, because the engine's fallback for them is the one that fails (Podman's 1048576).
   */
  readonly ulimitsAlwaysNamed: readonly UlimitName[];
  /**
   * The logs API stamps lines to the whole second. Podman 4.3's handler formats `time.RFC3339`
   * (its compat and libpod endpoints alike), though its k8s-file log holds nanoseconds. So
   * `timestamps=true` shows `.000000000`, and `sinceTime`/`sinceSeconds` are applied to the
   * second: a line stamped T was written in [T, T+1), so it is kept when T >= the second of
   * `since` (a superset by at most one second, never a lost line). Docker stamps nanoseconds.
   */
  readonly logTimestampsWholeSeconds: boolean;
  /**
   * A container killed by the memory cgroup is reported `OOMKilled`. Podman 4.3.1 (conmon 2.1.6,
   * runc, cgroup v1 as on this test machine) reports `OOMKilled: false`, exit code 137, so the
   * status says `Error` (137) rather than `OOMKilled`: nodelet does not guess from the exit code,
   * which a plain SIGKILL gives too.
   */
  readonly reportsOOMKilled: boolean;
  /**
   * Docker-API answers that differ only in form, which nodelet never reads back (kept for the
   * tests that inspect containers): Podman's container inspect lists finished exec sessions in
   * `ExecIDs` too (Docker only live ones; an exec's own inspect says `Running` on both), and
   * gives `HostConfig.CapDrop` as the dropped capabilities one by one instead of `ALL`.
   */
  readonly inspectForm: 'docker' | 'podman';
  /**
   * A container with a network namespace of its own (`NetworkMode: none` included) is started
   * through libnetwork: the OCI spec gets a prestart hook that runs the daemon's own binary
   * (`/proc/<dockerd>/exe libnetwork-setkey …`, moby `daemon/oci_linux.go` `withLibnetwork`),
   * which calls back into the daemon to configure the namespace. That fork and exec of dockerd's
   * binary is most of a sandbox start here (≈ 260–350 ms against ≈ 110–150 ms without it, on a
   * loaded 2-core machine). `Config.NetworkDisabled` skips the hook and libnetwork's sandbox
   * alike: runc still makes the namespace (the default spec has one), with `lo` down, no
   * resolv.conf or hosts file from the engine. Podman configures the namespace itself, no hook.
   */
  readonly netnsByHook: boolean;
}

const QUIRKS: Record<EngineName, EngineQuirks> = {
  docker: { autoUlimits: [], ulimitsAlwaysNamed: [], logTimestampsWholeSeconds: false, reportsOOMKilled: true, inspectForm: 'docker', netnsByHook: true },
  podman: { autoUlimits: ['nofile', 'nproc'], ulimitsAlwaysNamed: ['nofile', 'nproc'], logTimestampsWholeSeconds: true, reportsOOMKilled: false, inspectForm: 'podman', netnsByHook: false },
};

export interface Engine {
  readonly name: EngineName;
  /** The engine's own version (`20.10.24+dfsg1`, `4.3.1`). */
  readonly version: string;
  /** The Docker API version it serves (`1.41`). */
  readonly apiVersion: string;
  /** The Node's `containerRuntimeVersion`: `docker://20.10.24+dfsg1`, `podman://4.3.1`. */
  readonly runtimeVersion: string;
  readonly quirks: EngineQuirks;
}

interface VersionComponent {
  Name?: string;
  Version?: string;
}

/**
 * The engine behind a `/version` answer. Podman names itself in `Components` (`Podman Engine`,
 * beside `Conmon` and `OCI Runtime (…)`), and its `Version` is Podman's; `Platform.Name` is the
 * OS (`linux/amd64/debian-12`), so it is only a fallback. Docker lists `Engine`, `containerd`,
 * `runc`, `docker-init`, with `Platform.Name` empty or `Docker Engine - Community`.
 */
export function engineOf(version: Docker.DockerVersion): Engine {
  const v = version as Docker.DockerVersion & { Components?: VersionComponent[]; Platform?: { Name?: string } };
  const podman = (v.Components ?? []).find((c) => /podman/i.test(c.Name ?? ''));
  const isPodman = podman !== undefined || /podman/i.test(v.Platform?.Name ?? '');
  const name: EngineName = isPodman ? 'podman' : 'docker';
  const engineVersion = (isPodman ? podman?.Version : undefined) ?? v.Version ?? '';
  return { name, version: engineVersion, apiVersion: v.ApiVersion ?? '', runtimeVersion: `${name}://${engineVersion}`, quirks: QUIRKS[name] };
}

/** Asks the engine's `/version` once it answers; a failed ask is retried on the next call. */
export class EngineProbe {
  readonly #docker: Docker;
  #engine: Engine | undefined;
  #pending: Promise<Engine> | undefined;

  constructor(docker: Docker) {
    this.#docker = docker;
  }

  /** The engine, when known (for metrics: no sample until it answered). */
  get current(): Engine | undefined {
    return this.#engine;
  }

  get(): Promise<Engine> {
    if (this.#engine) return Promise.resolve(this.#engine);
    this.#pending ??= this.#docker.version().then(
      (v) => {
        this.#engine = engineOf(v);
        this.#pending = undefined;
        return this.#engine;
      },
      (err: unknown) => {
        this.#pending = undefined;
        throw err;
      },
    );
    return this.#pending;
  }
}

/** Soft and hard limits of one resource; -1 = unlimited. */
export interface OwnLimit {
  readonly soft: number;
  readonly hard: number;
}

/** /proc/<pid>/limits rows, by the names Docker uses for them. */
const PROC_LIMIT_ROWS: Record<string, UlimitName> = {
  'Max cpu time': 'cpu',
  'Max file size': 'fsize',
  'Max data size': 'data',
  'Max stack size': 'stack',
  'Max core file size': 'core',
  'Max resident set': 'rss',
  'Max processes': 'nproc',
  'Max open files': 'nofile',
  'Max locked memory': 'memlock',
  'Max file locks': 'locks',
  'Max pending signals': 'sigpending',
  'Max msgqueue size': 'msgqueue',
  'Max nice priority': 'nice',
  'Max realtime priority': 'rtprio',
  'Max realtime timeout': 'rttime',
};

/** Parses /proc/self/limits (Node has no getrlimit). */
export function parseProcLimits(text: string): Partial<Record<UlimitName, OwnLimit>> {
  const out: Partial<Record<UlimitName, OwnLimit>> = {};
  const num = (s: string): number => (s === 'unlimited' ? -1 : Number(s));
  for (const line of text.split('\n')) {
    const m = /^(Max [a-z ]+?)\s{2,}(\d+|unlimited)\s+(\d+|unlimited)/.exec(line);
    const name = m ? PROC_LIMIT_ROWS[m[1] ?? ''] : undefined;
    if (m && name) out[name] = { soft: num(m[2] ?? ''), hard: num(m[3] ?? '') };
  }
  return out;
}

/** The limits `auto` may use: nodelet's own hard limits, and kernel.pid_max for nproc. */
export interface HostLimits {
  readonly own: Partial<Record<UlimitName, OwnLimit>>;
  readonly pidMax?: number;
}

export async function readHostLimits(): Promise<HostLimits> {
  const [limits, pidMax] = await Promise.all([readFile('/proc/self/limits', 'utf8').catch(() => ''), readFile('/proc/sys/kernel/pid_max', 'utf8').catch(() => '')]);
  const pid = Number(pidMax.trim());
  return { own: parseProcLimits(limits), ...(pid > 0 ? { pidMax: pid } : {}) };
}

/** Podman's (and the kernel's fs.nr_open default) ceiling: `auto` never goes above it. */
export const AUTO_ULIMIT_CEILING = 1_048_576;

function autoValue(name: UlimitName, host: HostLimits): number {
  let v = AUTO_ULIMIT_CEILING;
  const hard = host.own[name]?.hard;
  if (hard !== undefined && hard !== -1) v = Math.min(v, hard);
  if (name === 'nproc' && host.pidMax !== undefined) v = Math.min(v, host.pidMax);
  return v;
}

/** Docker's `HostConfig.Ulimits` entry. */
export interface DockerUlimit {
  Name: UlimitName;
  Soft: number;
  Hard: number;
}

/**
 * The `HostConfig.Ulimits` for a container of `engine` under `--container-ulimits=setting`;
 * undefined = set none. Explicit values are passed as given (the engine may be allowed more than
 * nodelet is); `aboveOwnLimits` names those above nodelet's own hard limits, for a warning.
 */
export function containerUlimits(setting: string, engine: Engine, host: HostLimits): { ulimits?: DockerUlimit[]; aboveOwnLimits: UlimitName[] } {
  const parsed = parseContainerUlimits(setting);
  if (parsed.mode === 'none') return { aboveOwnLimits: [] };
  const given: Ulimit[] = parsed.mode === 'explicit' ? [...parsed.limits] : [];
  const fill = parsed.mode === 'auto' ? engine.quirks.autoUlimits : engine.quirks.ulimitsAlwaysNamed;
  for (const name of fill) {
    if (!given.some((l) => l.name === name)) {
      const v = autoValue(name, host);
      given.push({ name, soft: v, hard: v });
    }
  }
  const aboveOwnLimits = given
    .filter((l) => {
      const hard = host.own[l.name]?.hard;
      return hard !== undefined && hard !== -1 && (l.hard === -1 || l.hard > hard);
    })
    .map((l) => l.name);
  return given.length ? { ulimits: given.map((l) => ({ Name: l.name, Soft: l.soft, Hard: l.hard })), aboveOwnLimits } : { aboveOwnLimits };
}

/**
 * The engine and the rlimits nodelet sets on its containers and sandboxes (`--container-ulimits`),
 * detected on first use (retried while the engine does not answer) and logged once.
 */
export class EngineDetection {
  readonly #probe: EngineProbe;
  readonly #containerUlimits: string;
  readonly #log: Logger;
  /** The engine and the rlimits for its containers, once known; retried while it does not answer. */
  #detected: Promise<{ engine: Engine; ulimits: DockerUlimit[] }> | undefined;

  constructor(docker: Docker, containerUlimits: string | undefined, log: Logger) {
    this.#probe = new EngineProbe(docker);
    this.#containerUlimits = containerUlimits ?? 'auto';
    this.#log = log;
  }

  /** The engine, once it answered `/version` (no waiting). */
  get current(): Engine | undefined {
    return this.#probe.current;
  }

  /** The engine and the rlimits for its containers; the first answer is logged. */
  detect(): Promise<{ engine: Engine; ulimits: DockerUlimit[] }> {
    if (this.#detected) return this.#detected;
    const detected = (async () => {
      const [engine, host] = await Promise.all([this.#probe.get(), readHostLimits()]);
      const { ulimits = [], aboveOwnLimits } = containerUlimits(this.#containerUlimits, engine, host);
      const ulimitText = ulimits.map((u) => `${u.Name}=${u.Soft}:${u.Hard}`).join(',') || 'engine defaults';
      this.#log.info({ runtime: engine.name, version: engine.version, apiVersion: engine.apiVersion, ulimits: ulimitText }, 'Container runtime');
      if (aboveOwnLimits.length) {
        this.#log.warn({ ulimits: aboveOwnLimits }, '--container-ulimits above nodelet\'s own hard limits: containers fail to start unless the engine may raise them');
      }
      return { engine, ulimits };
    })();
    this.#detected = detected;
    detected.catch(() => {
      if (this.#detected === detected) this.#detected = undefined;
    });
    return detected;
  }

  /** The engine's quirks, detected first if need be. */
  async quirks(): Promise<EngineQuirks> {
    return (await this.detect()).engine.quirks;
  }

  /** `HostConfig.Ulimits` for a new container or sandbox, or nothing (the engine's defaults). */
  async ulimitsConfig(): Promise<{ Ulimits?: DockerUlimit[] }> {
    const { ulimits } = await this.detect();
    return ulimits.length ? { Ulimits: ulimits.map((u) => ({ ...u })) } : {};
  }
}
