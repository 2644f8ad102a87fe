import type { PodQOSClass } from '../api/qos.js';
import type { Pod } from '../api/types.js';
import type { Logger } from '../logging/index.js';
import { Cgroupfs } from './cgroupfs.js';
import { cgroupRootPath, PodCgroups, type PodCgroupsOptions } from './manager.js';
import type { CgroupResources } from './pod-resources.js';

export interface NodeCgroupsOptions extends Omit<PodCgroupsOptions, 'root'> {
  /** `cgroupRoot`, as configured (`/`). */
  readonly root: string;
  /** `cgroupsPerQOS` was set explicitly: where pod cgroups cannot be had, pods fail instead of running without. */
  readonly required: boolean;
  /**
   * Why the engine cannot place pods in nodelet's cgroups (remote, another cgroup driver), or
   * undefined when it can; rejects while the engine does not answer (asked again next time).
   */
  readonly engineRefusal: () => Promise<string | undefined>;
  /** The host's cgroup filesystem (default: /proc/self/mountinfo's). */
  readonly openCgroupfs?: () => Promise<Cgroupfs>;
  readonly log: Logger;
}

/**
 * `cgroupsPerQOS` decided once the engine first answers: pod cgroups where the node can have
 * them, else — with the setting left at its default — pods in the engine's default cgroups and a
 * warning that says why, or — with it set explicitly — every new pod failing with that reason,
 * as the kubelet refuses to run on a node whose cgroups it cannot manage.
 */
export class NodeCgroups {
  readonly #o: NodeCgroupsOptions;
  #decided: Promise<PodCgroups | string> | undefined;
  #pods: PodCgroups | undefined;

  constructor(opts: NodeCgroupsOptions) {
    this.#o = opts;
  }

  /**
   * Decides now, as the kubelet's container manager sets its cgroups up at start
   * (pkg/kubelet/cm/container_manager_linux.go `Start`): pods found running after a restart, which
   * no `ensurePod` touches, then have their cgroups known for stats and for removal. An engine that
   * does not answer yet is asked again by the next call that needs the decision.
   */
  start(): void {
    this.#decide().catch(() => undefined);
  }

  /** Whether pods get cgroups of their own: undefined until decided. */
  get enabled(): boolean | undefined {
    return this.#decided === undefined ? undefined : this.#pods !== undefined;
  }

  /**
   * The pod's cgroup, made or brought up to date, as the engine's `CgroupParent`; undefined when
   * this node runs pods without (the warning logged once). Rejects with the reason when pod
   * cgroups are required and cannot be had, or when writing the cgroup fails.
   */
  async ensurePod(pod: Pod): Promise<string | undefined> {
    const pods = await this.#decide();
    if (typeof pods === 'string') {
      if (this.#o.required) throw new Error(`cgroupsPerQOS is set but pods cannot get cgroups of their own here: ${pods}`);
      return undefined;
    }
    return pods.ensurePod(pod);
  }

  /**
   * Writes `fields` of a resized pod's cgroup values (see `PodCgroups.resizePod`); nothing when
   * pods have no cgroups of their own.
   */
  async resizePod(pod: Pod, fields: readonly (keyof CgroupResources)[]): Promise<void> {
    const pods = await this.#decide();
    if (typeof pods !== 'string') await pods.resizePod(pod, fields);
  }

  /** Removes a torn-down pod's cgroup (nothing when pods have none). */
  async removePod(uid: string): Promise<void> {
    await this.#decide().catch(() => undefined);
    await this.#pods?.removePod(uid);
  }

  /** Processes in the pod's cgroup; undefined when pods have no cgroups (or this one none yet). */
  async processes(uid: string): Promise<bigint | undefined> {
    return this.#pods?.processes(uid);
  }

  /** Where the stats readers find the pod's (or its container's) cgroup; undefined without one. */
  statsLocation(uid: string, containerID?: string, qos?: PodQOSClass): { version: 1 | 2; dir: (controller: string) => string } | undefined {
    if (this.#decided === undefined) this.start();
    return this.#pods?.statsLocation(uid, containerID, qos);
  }

  close(): void {
    this.#pods?.close();
  }

  #decide(): Promise<PodCgroups | string> {
    this.#decided ??= (async () => {
      let reason = await this.#o.engineRefusal();
      let pods: PodCgroups | undefined;
      let version: 1 | 2 | undefined;
      if (reason === undefined) {
        try {
          const fs = await (this.#o.openCgroupfs ?? Cgroupfs.open)();
          version = fs.mounts.version;
          pods = new PodCgroups(fs, { ...this.#o, root: cgroupRootPath(this.#o.root) });
          // kubepods and the QoS classes: where nodelet may not write them (not root), there are none.
          await pods.start();
        } catch (err) {
          reason = (err as Error).message;
        }
      }
      if (reason !== undefined || pods === undefined) {
        const why = reason ?? 'no cgroup filesystem';
        if (!this.#o.required) this.#o.log.warn({ reason: why }, 'Pods run without cgroups of their own (cgroupsPerQOS): their containers get only their own limits');
        return why;
      }
      this.#o.log.info({ cgroupRoot: this.#o.root, cgroupVersion: version }, 'Pods get cgroups of their own below kubepods (cgroupsPerQOS)');
      this.#pods = pods;
      return pods;
    })();
    // An engine that did not answer is asked again at the next pod.
    this.#decided.catch(() => {
      this.#decided = undefined;
    });
    return this.#decided;
  }
}
