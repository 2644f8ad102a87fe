import type Docker from 'dockerode';
import type { Pod } from '../../api/types.js';
import { podHostname } from '../../api/names.js';
import type { RuntimeNetworkStatus, RuntimeSandbox, SandboxConfig, StartedSandbox } from '../types.js';
import { sandboxSysctls } from '../sysctl.js';
import { netnsPathOf, networkIdentityOf, portMappingsOf, setUpFailure, usesHostNetwork } from './pod-network.js';
import { createContainerOptions, statusCodeOf } from './client.js';
import { sandboxLabels } from './labels.js';
import { makeSandboxName } from './naming.js';
import type { InspectCache } from './inspect-cache.js';
import { rememberInspection } from './pod-list.js';
import type { DockerImages } from './images.js';
import type { DockerUlimit, EngineQuirks } from './engine.js';
import type { DockerContainers } from './containers.js';
import type { DockerRuntimeOptions } from './runtime.js';
import { cgroupHostConfig } from './container-config.js';

/**
 * A pod's sandbox: the infra container holding its network and IPC namespaces, created from the
 * infra image (images.ts), started, and given its pod network by the network plugin once it runs;
 * stopped with that network torn down first; and the pod networks of sandboxes that no longer
 * exist released in the background after a listing. Mirrors cri-dockerd's `core/sandbox_run.go`
 * (`RunPodSandbox`), `core/sandbox_stop.go` (`StopPodSandbox`) and the IPs of
 * `core/sandbox_status.go` (`PodSandboxStatus`).
 */

/** `DockerRuntimeOptions`' sandbox part, and what the runtime shares with its sandboxes. */
export interface DockerSandboxesOptions extends Pick<DockerRuntimeOptions, 'docker' | 'nodeName' | 'infraImage' | 'podNetwork' | 'network' | 'networkGCPeriodMs' | 'log'> {
  images: DockerImages;
  inspections: InspectCache;
  /** `HostConfig.Ulimits` for a new sandbox, or nothing (the engine's defaults; engine.ts). */
  ulimits(): Promise<{ Ulimits?: DockerUlimit[] }>;
  /** The engine's quirks (engine.ts): whether a sandbox's network namespace comes from a libnetwork hook. */
  quirks(): Promise<Pick<EngineQuirks, 'netnsByHook'>>;
  /** Start, stop and removal of the sandbox container (containers.ts). */
  containers: Pick<DockerContainers, 'start' | 'stopContainer' | 'removeContainer'>;
}

/** How long a sandbox this runtime created counts as live for network GC, listed or not. */
const NEW_SANDBOX_GRACE_MS = 60_000;

export class DockerSandboxes {
  readonly #docker: Docker;
  readonly #opts: DockerSandboxesOptions;
  readonly #inspections: InspectCache;
  /** Sandboxes created by this runtime → when: a listing started before one was created misses it. */
  readonly #newSandboxes = new Map<string, number>();
  /** Sandboxes whose pod network is being set up now. */
  readonly #settingUp = new Set<string>();
  #lastNetworkGC = 0;
  #networkGC: Promise<void> | undefined;

  constructor(opts: DockerSandboxesOptions) {
    this.#docker = opts.docker;
    this.#opts = opts;
    this.#inspections = opts.inspections;
  }

  /**
   * Creates a sandbox container, its infra image made sure of first — once: after the image was
   * found or pulled, sandboxes are created without asking for it again (as containerd's CRI,
   * which looks the sandbox image up in its own image store, not the engine, per sandbox). An
   * image removed behind nodelet's back fails the create with 404: the image is asked for (and
   * pulled) again and the create retried once. Any other failure has the next sandbox ask again.
   */
  async #createSandbox(options: Docker.ContainerCreateOptions): Promise<Docker.Container> {
    await this.#opts.images.infraImage();
    try {
      return await this.#docker.createContainer(options);
    } catch (err) {
      this.#opts.images.forgetInfraImage();
      if (statusCodeOf(err) !== 404 || (await this.#opts.images.imageStatus(this.#opts.infraImage))) throw err;
      this.#opts.log.info({ image: this.#opts.infraImage }, 'The infra image is gone; pulling it again');
      await this.#opts.images.infraImage();
      return this.#docker.createContainer(options);
    }
  }

  async runSandbox(pod: Pod, attempt: number, config?: SandboxConfig): Promise<StartedSandbox> {
    const meta = pod.metadata ?? {};
    const name = makeSandboxName({ pod: meta.name ?? '', namespace: meta.namespace ?? '', uid: meta.uid ?? '' }, attempt);
    this.#inspections.startingNow(name);
    try {
      return await this.#runSandbox(pod, name, config);
    } finally {
      this.#inspections.started(name);
    }
  }

  async #runSandbox(pod: Pod, name: string, config: SandboxConfig | undefined): Promise<StartedSandbox> {
    const hostNetwork = pod.spec?.hostNetwork === true;
    // Namespaced sysctls belong to the sandbox, whose network and IPC namespaces the containers join.
    const sysctls = sandboxSysctls(pod);
    const ulimits = await this.#opts.ulimits();
    // With a network plugin the sandbox's namespace is the plugin's to set up (its loopback
    // included, cri-dockerd's `getLoNetwork`), and the pod's resolv.conf and hosts file are
    // nodelet's own bind mounts: the engine's libnetwork sandbox would only cost a start.
    const networkDisabled = !hostNetwork && this.#opts.network !== undefined && (await this.#opts.quirks()).netnsByHook;
    const created = await this.#createSandbox(createContainerOptions(name, {
      Image: this.#opts.infraImage,
      ...(networkDisabled ? { NetworkDisabled: true } : {}),
      // No Domainname: the CRI has no domain field, so under the kubelet `domainname` is unset too.
      ...(hostNetwork ? {} : { Hostname: config?.hostname ?? podHostname(pod) }),
      Labels: sandboxLabels(pod, this.#opts.nodeName, config?.podStartTime),
      HostConfig: {
        NetworkMode: hostNetwork ? 'host' : this.#opts.podNetwork,
        IpcMode: pod.spec?.hostIPC ? 'host' : 'shareable',
        ...(pod.spec?.hostPID ? { PidMode: 'host' } : {}),
        ...(Object.keys(sysctls).length ? { Sysctls: sysctls } : {}),
        ...ulimits,
        ...cgroupHostConfig(config ?? {}),
        RestartPolicy: { Name: 'no' },
      },
    }));
    this.#newSandboxes.set(created.id, performance.now());
    config?.onCreated?.(created.id);
    const network = this.#opts.network;
    if (hostNetwork || !network) {
      await this.#opts.containers.start(created);
      return { id: created.id, ips: [] };
    }
    this.#settingUp.add(created.id);
    try {
      await this.#opts.containers.start(created);
    } catch (err) {
      this.#settingUp.delete(created.id);
      throw err;
    }
    try {
      const seq = this.#inspections.next();
      const info = await created.inspect();
      // The next listing shows it as this inspection did, unless an event says otherwise.
      await rememberInspection(this.#docker, this.#inspections, created.id, info.State.Status, info, seq);
      const netnsPath = netnsPathOf(info);
      if (!netnsPath) throw new Error(`sandbox ${created.id} is not running (${info.State.Status})`);
      const { ips } = await network.setUpPod({ ...networkIdentityOf(info), netnsPath, portMappings: portMappingsOf(pod) });
      return { id: created.id, ips };
    } catch (err) {
      // cri-dockerd RunPodSandbox: DEL even after a failed ADD (a plugin may have half set up),
      // then stop; nodelet also removes the sandbox, so a retry starts clean.
      const failure = setUpFailure(created.id, pod, network.name, err);
      await this.tearDownNetwork(created.id).catch((e: unknown) => this.#opts.log.warn({ err: e, sandbox: created.id }, 'Network teardown after a failed set-up failed'));
      await this.#opts.containers.removeContainer(created.id).catch((e: unknown) => this.#opts.log.warn({ err: e, sandbox: created.id }, 'Removing a sandbox whose network failed failed'));
      throw failure;
    } finally {
      this.#settingUp.delete(created.id);
    }
  }

  async stopSandbox(id: string): Promise<void> {
    let teardown: unknown;
    await this.tearDownNetwork(id).catch((err: unknown) => (teardown = err));
    await this.#opts.containers.stopContainer(id, 0);
    if (teardown !== undefined) throw teardown;
  }

  networkStatus(): RuntimeNetworkStatus {
    const network = this.#opts.network;
    if (!network) return { readiness: { ready: true }, hostPorts: false };
    return { readiness: network.readiness(), hostPorts: network.hasCapability('portMappings') };
  }

  /**
   * DEL of a sandbox's pod network (cri-dockerd `StopPodSandbox`), on its netns while it runs
   * and without one after; nothing for host-network sandboxes, missing ones, or without a plugin.
   */
  async tearDownNetwork(id: string): Promise<void> {
    const network = this.#opts.network;
    if (!network) return;
    let info: Docker.ContainerInspectInfo;
    try {
      info = await this.#docker.getContainer(id).inspect();
    } catch (err) {
      if (statusCodeOf(err) !== 404) throw err;
      // Gone already: the cached attachment (if any) says what to release.
      if (network.podNetworkStatus(id)) await network.tearDownPod({ sandboxId: id, podName: '', podNamespace: '', podUID: '' });
      return;
    }
    if (usesHostNetwork(info)) return;
    const netnsPath = netnsPathOf(info);
    await network.tearDownPod({ ...networkIdentityOf(info), ...(netnsPath ? { netnsPath } : {}) });
  }

  /**
   * With a network plugin, a pod-network sandbox's IPs are its cached ADD result. One that runs
   * without any (its ADD lost, e.g. the cache removed, or made before `--network-plugin`) is not
   * ready, so the kubelet side replaces it (the kubelet's `podSandboxChanged`: "Sandbox for pod
   * has no IP address"); one whose ADD is still running is ready, its IPs known to the caller.
   */
  withNetworkIPs(sandbox: RuntimeSandbox, hostNetwork: boolean): RuntimeSandbox {
    const network = this.#opts.network;
    if (!network || hostNetwork || sandbox.ips.length) return sandbox;
    const ips = network.podNetworkStatus(sandbox.id)?.ips;
    if (ips?.length) return { ...sandbox, ips };
    return sandbox.ready && !this.#settingUp.has(sandbox.id) ? { ...sandbox, ready: false } : sandbox;
  }

  /**
   * At most once per `networkGCPeriodMs`, in the background: releases the pod networks of
   * sandboxes that no longer exist (removed behind nodelet's back, or while it was down). A
   * sandbox created since the listing began is kept whether listed or not.
   */
  maybeCollectNetwork(listed: readonly string[], listedAt: number): void {
    const network = this.#opts.network;
    const now = performance.now();
    if (!network || this.#networkGC || now - this.#lastNetworkGC < (this.#opts.networkGCPeriodMs ?? 60_000)) return;
    this.#lastNetworkGC = now;
    const live = new Set(listed);
    for (const [id, at] of this.#newSandboxes) {
      if (at >= listedAt - 1000) live.add(id);
      else if (now - at > NEW_SANDBOX_GRACE_MS) this.#newSandboxes.delete(id);
    }
    this.#networkGC = network
      .garbageCollect(live)
      .then((released) => {
        if (released.length) this.#opts.log.info({ sandboxes: released }, 'Released the pod networks of sandboxes that no longer exist');
      })
      .catch((err: unknown) => this.#opts.log.warn({ err }, 'Pod network garbage collection failed'))
      .finally(() => (this.#networkGC = undefined));
  }

  /** Resolves once the pod network garbage collection in flight (if any) has ended. */
  async close(): Promise<void> {
    await this.#networkGC;
  }
}
