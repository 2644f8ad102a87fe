import type { Pod } from '../api/types.js';
import type { PodQOSClass } from '../api/qos.js';
import type { Logger } from '../logging/index.js';
import { Cgroupfs } from './cgroupfs.js';
import { MIN_SHARES, milliCPUToShares, podCgroupPath, podCgroupResources, podCPURequestMilli, type CgroupResources } from './pod-resources.js';

export interface PodCgroupsOptions {
  /** `cgroupRoot` (`/`): the cgroup `kubepods` is made in, as names (`[]` for the root). */
  readonly root: readonly string[];
  /** `podPidsLimit` (-1: unlimited). */
  readonly podPidsLimit: number;
  /** The node's allocatable cpu in millicores: the `kubepods` cgroup's shares. */
  readonly allocatableMilliCPU: bigint;
  /** What the `kubepods` cgroup may hold (`enforceNodeAllocatable: [pods]`): capacity less what is reserved, nothing here. */
  readonly podsMemoryLimit: bigint;
  readonly log: Logger;
  /** How soon a pod cgroup that still had processes is tried again (default 2 s). */
  readonly retryRemoveMs?: number;
}

/** How often a pod cgroup with processes left is killed and tried again before it is left alone. */
const MAX_REMOVE_ATTEMPTS = 30;

/** The node's top pod cgroup (`defaultNodeAllocatableCgroupName`, pkg/kubelet/cm/container_manager_linux.go). */
const KUBEPODS = 'kubepods';

/**
 * The kubelet's QoS and pod cgroups with `cgroupsPerQOS` (pkg/kubelet/cm/qos_container_manager_linux.go,
 * pod_container_manager_linux.go): `<cgroupRoot>/kubepods` holds every pod, with the node's
 * allocatable cpu as its shares; `kubepods/burstable` and `kubepods/besteffort` hold those
 * classes' pods (besteffort with the floor of 2 shares, burstable with the summed cpu requests of
 * its pods, updated as they come and go); each pod gets `pod<uid>` below its class (Guaranteed pods
 * right below `kubepods`), with its summed limits (`ResourceConfigForPod`) and `podPidsLimit`.
 * The engine places the pod's sandbox and containers below it (`CgroupParent`), so the pod's
 * containers share its limits as they do under the kubelet.
 *
 * A pod's cgroup is removed when the pod is torn down, once its containers are gone; a cgroup
 * whose processes have not exited yet is tried again until it is empty. Cgroups of pods this
 * nodelet never saw are left alone: several nodes on one host (tests, the conformance run) share
 * `/` unless each has a `cgroupRoot` of its own.
 */
export class PodCgroups {
  readonly #fs: Cgroupfs;
  readonly #o: PodCgroupsOptions;
  /** Pods whose cgroups exist, by UID: their class and cpu request (the burstable class's shares). */
  readonly #pods = new Map<string, { qos: PodQOSClass; cpuMilli: bigint }>();
  readonly #retries = new Map<string, NodeJS.Timeout>();
  /** Removals tried so far of pod cgroups that still had processes. */
  readonly #attempts = new Map<string, number>();
  #qosReady: Promise<void> | undefined;
  #burstableShares = -1;
  #burstableWrite: Promise<void> = Promise.resolve();

  constructor(fs: Cgroupfs, opts: PodCgroupsOptions) {
    this.#fs = fs;
    this.#o = opts;
  }

  /** `kubepods` and the QoS class cgroups (the kubelet's `setupNode` and `qosContainerManager.Start`). */
  start(): Promise<void> {
    this.#qosReady ??= (async () => {
      await this.#fs.apply(this.#path([]), { cpuShares: milliCPUToShares(this.#o.allocatableMilliCPU), memoryLimit: this.#o.podsMemoryLimit });
      await this.#fs.apply(this.#path(['besteffort']), { cpuShares: MIN_SHARES });
      await this.#updateBurstable();
    })();
    this.#qosReady.catch(() => {
      this.#qosReady = undefined;
    });
    return this.#qosReady;
  }

  /**
   * Creates the pod's cgroup with its limits where missing, or brings them up to date (the
   * kubelet's `EnsureExists`, at each sync that starts something); returns the engine's
   * `CgroupParent` for its sandbox and containers.
   */
  async ensurePod(pod: Pod): Promise<string> {
    await this.start();
    const uid = pod.metadata?.uid ?? '';
    const { qos, ...resources } = podCgroupResources(pod, { podPidsLimit: this.#o.podPidsLimit });
    const path = this.#path(podCgroupPath(qos, uid));
    this.#cancelRetry(uid);
    await this.#fs.apply(path, resources);
    this.#pods.set(uid, { qos, cpuMilli: podCPURequestMilli(pod) });
    if (qos === 'Burstable') await this.#updateBurstable();
    return Cgroupfs.nameOf(path);
  }

  /** Processes in the pod's cgroup now (the eviction manager's PID ranking); undefined for a pod without one. */
  async processes(uid: string): Promise<bigint | undefined> {
    const known = this.#pods.get(uid);
    return known ? this.#fs.processes(this.#path(podCgroupPath(known.qos, uid))) : undefined;
  }

  /**
   * Writes only `fields` of the pod's cgroup values (computed from `pod`, its resized spec) to its
   * existing cgroup (the kubelet's `SetPodCgroupConfig` in `doPodResizeAction`): an in-place resize
   * changes cpu and memory one at a time, in the order that keeps a container's limit within its
   * pod's. The burstable class's shares follow the pod's new cpu request.
   */
  async resizePod(pod: Pod, fields: readonly (keyof CgroupResources)[]): Promise<void> {
    await this.start();
    const uid = pod.metadata?.uid ?? '';
    const { qos, ...resources } = podCgroupResources(pod, { podPidsLimit: this.#o.podPidsLimit });
    const picked: Record<string, unknown> = {};
    for (const f of fields) if (resources[f] !== undefined) picked[f] = resources[f];
    await this.#fs.apply(this.#path(podCgroupPath(qos, uid)), picked as CgroupResources);
    this.#pods.set(uid, { qos, cpuMilli: podCPURequestMilli(pod) });
    if (qos === 'Burstable' && fields.includes('cpuShares')) await this.#updateBurstable();
  }

  /**
   * Where the stats readers find the pod's cgroup (or, with `containerID`, the cgroup the engine
   * made for that container below it: `<pod cgroup>/<id>` with the cgroupfs driver); undefined
   * for a pod without one. `qos` places a pod this nodelet has not synced yet (one found running
   * at start-up). The directories may not exist yet (or any more).
   */
  statsLocation(uid: string, containerID?: string, qos?: PodQOSClass): { version: 1 | 2; dir: (controller: string) => string } | undefined {
    const cls = this.#pods.get(uid)?.qos ?? qos;
    if (!cls) return undefined;
    const path = [...this.#path(podCgroupPath(cls, uid)), ...(containerID ? [containerID] : [])];
    return { version: this.#fs.mounts.version, dir: (controller) => this.#fs.dirOf(controller, path) };
  }

  /** The engine's `CgroupParent` for the pod (its cgroup made by `ensurePod`). */
  parentOf(pod: Pod, qos: PodQOSClass): string {
    return Cgroupfs.nameOf(this.#path(podCgroupPath(qos, pod.metadata?.uid ?? '')));
  }

  /**
   * Removes a torn-down pod's cgroup (every class is tried: a pod found at start-up has no recorded
   * one); call it only once the pod's containers are gone. Processes still in it are killed, and
   * the removal is tried again shortly after.
   */
  async removePod(uid: string): Promise<void> {
    this.#cancelRetry(uid);
    const known = this.#pods.get(uid);
    let removed = true;
    for (const qos of known ? [known.qos] : (['Guaranteed', 'Burstable', 'BestEffort'] as const)) {
      const path = this.#path(podCgroupPath(qos, uid));
      if (await this.#fs.remove(path)) continue;
      removed = false;
      // The pod's containers are gone: what still runs in its cgroup is left over, and is killed.
      const killed = await this.#fs.killAll(path);
      if (killed) this.#o.log.info({ podUID: uid, processes: killed }, 'Killed processes left in a removed pod\'s cgroup');
    }
    if (!removed) {
      const attempts = (this.#attempts.get(uid) ?? 0) + 1;
      if (attempts >= MAX_REMOVE_ATTEMPTS) {
        this.#attempts.delete(uid);
        this.#o.log.warn({ podUID: uid, attempts }, 'Pod cgroup still has processes after they were killed: left in place');
        return;
      }
      this.#attempts.set(uid, attempts);
      const timer = setTimeout(() => {
        this.#retries.delete(uid);
        this.removePod(uid).catch((err: unknown) => this.#o.log.warn({ err, podUID: uid }, 'Failed to remove pod cgroup'));
      }, this.#o.retryRemoveMs ?? 2000);
      timer.unref();
      this.#retries.set(uid, timer);
      return;
    }
    this.#pods.delete(uid);
    this.#attempts.delete(uid);
    if (known?.qos === 'Burstable') await this.#updateBurstable();
  }

  /** Stops the retries (the cgroups themselves stay: the pods keep running without nodelet). */
  close(): void {
    for (const t of this.#retries.values()) clearTimeout(t);
    this.#retries.clear();
  }

  #cancelRetry(uid: string): void {
    const t = this.#retries.get(uid);
    if (t) clearTimeout(t);
    this.#retries.delete(uid);
  }

  /**
   * The burstable class's shares: the summed cpu requests of its pods (`setCPUCgroupConfig`).
   * Writes are chained, so the last one is always from the newest sum.
   */
  #updateBurstable(): Promise<void> {
    const next = this.#burstableWrite.catch(() => {}).then(async () => {
      let milli = 0n;
      for (const p of this.#pods.values()) if (p.qos === 'Burstable') milli += p.cpuMilli;
      const shares = milliCPUToShares(milli);
      if (shares === this.#burstableShares) return;
      await this.#fs.apply(this.#path(['burstable']), { cpuShares: shares });
      this.#burstableShares = shares;
    });
    this.#burstableWrite = next;
    return next;
  }

  #path(below: readonly string[]): string[] {
    return [...this.#o.root, KUBEPODS, ...below];
  }
}

/** `cgroupRoot` as names: `/` → `[]`, `/a/b` → `['a', 'b']`; throws for a relative or `..` path. */
export function cgroupRootPath(root: string): string[] {
  if (!root.startsWith('/')) throw new Error(`cgroup root ${JSON.stringify(root)} is not an absolute path`);
  const names = root.split('/').filter(Boolean);
  if (names.some((n) => n === '.' || n === '..')) throw new Error(`cgroup root ${JSON.stringify(root)} has a "." or ".." element`);
  return names;
}
