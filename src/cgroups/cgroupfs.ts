import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sharesToWeight, type CgroupResources } from './pod-resources.js';

/**
 * The node's cgroup filesystem as the kubelet's `cgroupfs` driver writes it
 * (pkg/kubelet/cm/cgroup_manager_linux.go, through runc's libcontainer `fs` and `fs2`): a cgroup is
 * a path of names below the hierarchy's root, one directory per v1 controller mount or one
 * directory in the v2 unified hierarchy.
 *
 * Only the controllers nodelet writes are created here (cpu, memory, pids); the engine's runc
 * creates the pod's directories in the other controllers when it places a container below it,
 * and `remove` takes those away too.
 */
export interface CgroupMounts {
  readonly version: 1 | 2;
  /** v1: the mount point of each controller (co-mounted ones share it); v2: `''` → the unified mount. */
  readonly controllers: ReadonlyMap<string, string>;
  /** Every cgroup mount point: where a cgroup's directories are looked for when it is removed. */
  readonly mountPoints: readonly string[];
}

/** The controllers whose files a pod's and the QoS classes' cgroups are given. */
const WRITTEN = ['cpu', 'memory', 'pids'] as const;

/**
 * The cgroup mounts of `/proc/self/mountinfo` (proc(5)): v1 when a v1 mount holds the cpu or
 * memory controller (a hybrid host's empty `unified` mount is not what runc uses), else v2.
 * Throws, naming what is missing, where nodelet cannot place pods: a controller it writes is not
 * mounted, or a mount shows only part of its hierarchy (nodelet in a container of its own, whose
 * cgroup paths the engine on the host would not see the same way).
 */
export function cgroupMountsOf(mountinfo: string): CgroupMounts {
  const v1 = new Map<string, string>();
  const all: string[] = [];
  let unified: string | undefined;
  for (const line of mountinfo.split('\n')) {
    const [before, after] = line.split(' - ');
    if (!before || !after) continue;
    const fields = before.split(' ');
    const [fstype, , superOptions = ''] = after.split(' ');
    const root = fields[3];
    const mountPoint = fields[4];
    if (!mountPoint || (fstype !== 'cgroup' && fstype !== 'cgroup2')) continue;
    if (root !== '/') throw new Error(`the cgroup mount ${mountPoint} shows ${root} of its hierarchy, not its root: nodelet runs inside another cgroup namespace than the engine`);
    all.push(mountPoint);
    if (fstype === 'cgroup2') unified = mountPoint;
    else for (const opt of superOptions.split(',')) if (!v1.has(opt)) v1.set(opt, mountPoint);
  }
  if (v1.has('cpu') || v1.has('memory')) {
    const missing = WRITTEN.filter((c) => !v1.has(c));
    if (missing.length) throw new Error(`cgroup v1 controllers ${missing.join(', ')} are not mounted`);
    return { version: 1, controllers: v1, mountPoints: all };
  }
  if (unified === undefined) throw new Error('no cgroup filesystem is mounted');
  return { version: 2, controllers: new Map([['', unified]]), mountPoints: all };
}

const isErrno = (err: unknown, ...codes: string[]) => codes.includes((err as NodeJS.ErrnoException).code ?? '');

export class Cgroupfs {
  readonly mounts: CgroupMounts;

  constructor(mounts: CgroupMounts) {
    this.mounts = mounts;
  }

  /** The host's cgroup filesystem (`/proc/self/mountinfo`); throws where pods cannot be placed (see `cgroupMountsOf`). */
  static async open(): Promise<Cgroupfs> {
    return new Cgroupfs(cgroupMountsOf(await readFile('/proc/self/mountinfo', 'utf8')));
  }

  /** `/a/b/c` as the engine's `CgroupParent` names it (cgroupfs driver: an absolute path). */
  static nameOf(path: readonly string[]): string {
    return `/${path.join('/')}`;
  }

  /**
   * Creates the cgroup (its parents too) where it is missing and writes `resources` to it
   * (`Update`, which the kubelet's `Create` ends with): v1 `cpu.shares`, `cpu.cfs_period_us` then
   * `cpu.cfs_quota_us`, `memory.limit_in_bytes`, `pids.max`; v2 `cpu.weight`, `cpu.max`,
   * `memory.max`, `pids.max`, each level's `cgroup.subtree_control` enabling the controllers the
   * level below needs. A value the kernel refuses (a memory limit below what the cgroup uses)
   * rejects with the file named.
   */
  async apply(path: readonly string[], resources: CgroupResources): Promise<void> {
    if (this.mounts.version === 2) return this.#applyV2(path, resources);
    const dir = (controller: string) => join(this.#mount(controller), ...path);
    for (const c of WRITTEN) await mkdir(dir(c), { recursive: true });
    const cpu = dir('cpu');
    if (resources.cpuShares !== undefined) await write(cpu, 'cpu.shares', String(resources.cpuShares));
    if (resources.cpuPeriod !== undefined) await write(cpu, 'cpu.cfs_period_us', String(resources.cpuPeriod));
    if (resources.cpuQuota !== undefined && resources.cpuQuota !== 0) await write(cpu, 'cpu.cfs_quota_us', String(resources.cpuQuota));
    if (resources.memoryLimit !== undefined && resources.memoryLimit !== 0n) await write(dir('memory'), 'memory.limit_in_bytes', String(resources.memoryLimit));
    if (resources.pidsLimit !== undefined) await write(dir('pids'), 'pids.max', resources.pidsLimit > 0 ? String(resources.pidsLimit) : 'max');
  }

  async #applyV2(path: readonly string[], resources: CgroupResources): Promise<void> {
    const root = this.#mount('');
    // Each level's children need the controllers enabled in it (runc's fs2 CreateCgroupPath does the same).
    let dir = root;
    for (const name of path) {
      const available = (await readFile(join(dir, 'cgroup.controllers'), 'utf8')).split(/\s+/);
      const enable = WRITTEN.filter((c) => available.includes(c)).map((c) => `+${c}`);
      if (enable.length) await write(dir, 'cgroup.subtree_control', enable.join(' '));
      dir = join(dir, name);
      await mkdir(dir, { recursive: true });
    }
    if (resources.cpuShares !== undefined) await write(dir, 'cpu.weight', String(sharesToWeight(resources.cpuShares)));
    if (resources.cpuQuota !== undefined && resources.cpuQuota !== 0) {
      const period = resources.cpuPeriod ?? 100_000;
      await write(dir, 'cpu.max', `${resources.cpuQuota > 0 ? resources.cpuQuota : 'max'} ${period}`);
    }
    if (resources.memoryLimit !== undefined && resources.memoryLimit !== 0n) await write(dir, 'memory.max', String(resources.memoryLimit));
    if (resources.pidsLimit !== undefined) await write(dir, 'pids.max', resources.pidsLimit > 0 ? String(resources.pidsLimit) : 'max');
  }

  /**
   * Where the cgroup's files of `controller` are (v1: that controller's mount; v2: the unified
   * hierarchy, whatever the controller), for the stats readers.
   */
  dirOf(controller: string, path: readonly string[]): string {
    return join(this.#mount(this.mounts.version === 2 ? '' : controller), ...path);
  }

  /** The cgroup's `pids.current` (tasks in it and below), or undefined where the cgroup is missing. */
  async processes(path: readonly string[]): Promise<bigint | undefined> {
    const text = await readFile(join(this.#mount(this.mounts.version === 2 ? '' : 'pids'), ...path, 'pids.current'), 'utf8').catch((err: unknown) => {
      if (isErrno(err, 'ENOENT')) return undefined;
      throw err;
    });
    return text === undefined ? undefined : BigInt(text.trim());
  }

  /**
   * Removes the cgroup from every hierarchy, the empty cgroups below it first (what runc or
   * conmon left of the pod's containers). `false` when a process still runs in it or below: it
   * stays and is tried again later, as the kubelet leaves a pod cgroup with live processes.
   */
  async remove(path: readonly string[]): Promise<boolean> {
    let removed = true;
    for (const mountPoint of this.mounts.mountPoints) {
      if (!(await removeTree(join(mountPoint, ...path)))) removed = false;
    }
    return removed;
  }

  /**
   * SIGKILLs every process left in the cgroup or below it (the kubelet's `Destroy` →
   * `tryKillingCgroupProcesses`, for a pod whose containers are gone: Podman's exec-session
   * conmons, say); returns how many were signalled. They exit shortly after, and `remove` then
   * succeeds.
   */
  async killAll(path: readonly string[]): Promise<number> {
    const pids = new Set<number>();
    for (const mountPoint of this.mounts.mountPoints) await collectProcs(join(mountPoint, ...path), pids);
    let killed = 0;
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
        killed++;
      } catch (err) {
        if (!isErrno(err, 'ESRCH')) throw err;
      }
    }
    return killed;
  }

  #mount(controller: string): string {
    const mount = this.mounts.controllers.get(controller);
    if (mount === undefined) throw new Error(`cgroup controller ${controller || 'unified'} is not mounted`);
    return mount;
  }
}

async function write(dir: string, file: string, value: string): Promise<void> {
  try {
    await writeFile(join(dir, file), value);
  } catch (err) {
    throw new Error(`failed to write ${JSON.stringify(value)} to ${join(dir, file)}: ${(err as Error).message}`, { cause: err });
  }
}

/** The processes of `dir` and of every cgroup below it (`cgroup.procs`), into `into`. */
async function collectProcs(dir: string, into: Set<number>): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return;
    throw err;
  }
  const procs = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  for (const line of procs.split('\n')) if (/^\d+$/.test(line) && Number(line) > 0) into.add(Number(line));
  for (const e of entries) if (e.isDirectory()) await collectProcs(join(dir, e.name), into);
}

/** rmdir of `dir` after its child cgroups; a missing one counts as removed, a busy one (EBUSY) as not. */
async function removeTree(dir: string): Promise<boolean> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return true;
    throw err;
  }
  let empty = true;
  for (const e of entries) if (e.isDirectory() && !(await removeTree(join(dir, e.name)))) empty = false;
  if (!empty) return false;
  try {
    await rmdir(dir);
    return true;
  } catch (err) {
    if (isErrno(err, 'ENOENT')) return true;
    if (isErrno(err, 'EBUSY')) return false;
    throw err;
  }
}
