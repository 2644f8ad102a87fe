import type Docker from 'dockerode';
import type { Container, Pod } from '../../api/types.js';
import type { Logger } from '../../logging/index.js';
import type { ContainerConfig, ContainerStatsSample, EngineFacts, ImageInfo, PulledImage, RegistryAuth, Runtime, RuntimeNetworkStatus, RuntimePod, RuntimeSandbox, SandboxConfig, StartedSandbox } from '../types.js';
import type { NetworkPlugin } from '../../network/types.js';
import { Label } from './labels.js';
import { watchContainerEvents } from './events.js';
import { InspectCache, eventInvalidatesInspect } from './inspect-cache.js';
import { attachToContainer, execInContainer } from './exec.js';
import type { Duplex, Writable } from 'node:stream';
import type { CommandResult, LogOptions, PendingStreamIO, StreamIO } from '../../streaming/types.js';
import { containerLogs } from './logs.js';
import { forwardPort } from './portforward.js';
import { NetnsDialers } from './netns-dialer.js';
import { containerStats } from './stats.js';
import type { ContainerLogRotation } from './log-config.js';
import { DockerImages } from './images.js';
import { EngineDiskUsage } from './disk-usage.js';
import { DockerSandboxes } from './sandbox.js';
import { DockerContainers } from './containers.js';
import { PodLister } from './pod-list.js';
import { EngineDetection, engineOf, type Engine } from './engine.js';

export interface DockerRuntimeOptions {
  docker: Docker;
  nodeName: string;
  infraImage: string;
  /** Docker network of sandboxes (`none`, `bridge`, a user network); host-network pods use `host`. */
  podNetwork: string;
  /**
   * `--network-plugin`: sets up each sandbox's pod network once it runs (the sandbox stays on
   * `podNetwork`, normally `none`) and tears it down before it stops, as cri-dockerd does.
   */
  network?: NetworkPlugin;
  /** How often sandboxes that no longer exist have their network released (default 1 min). */
  networkGCPeriodMs?: number;
  /** How long an exec'd process may outlive its disconnected client before it is killed. */
  execDisconnectGraceMs?: number;
  /** `--container-ulimits` (default `auto`: what the engine needs, see engine.ts). */
  containerUlimits?: string;
  /**
   * `containerLogMaxSize` / `containerLogMaxFiles`: each container's log rotation, as Docker's
   * json-file `max-size` / `max-file` (absent: the engine's own log settings).
   */
  containerLogs?: ContainerLogRotation;
  /**
   * The engine shares this host's filesystem (a unix socket): a follow of a json-file log reads the
   * engine's files, which survives rotation (logs.ts). Otherwise every log read asks the engine.
   */
  readLogFiles?: boolean;
  log: Logger;
}

/**
 * The Docker implementation of `Runtime`, laid out like dockershim: one sandbox container per pod
 * holding the network and IPC namespaces, each app container joining them.
 *
 * It serves exec, attach, logs, port-forward, stats and events itself and delegates the rest
 * along cri-dockerd's `core/` files, sharing one inspect cache (inspect-cache.ts): the relist to
 * pod-list.ts (`listPods` inspects only the containers whose Docker state changed since the last
 * listing, or that an event may have changed since their last inspection), the sandbox and its
 * pod network to sandbox.ts, app containers' create, start, stop, remove and resize to
 * containers.ts (their create body: container-config.ts), images to images.ts, disk usage to
 * disk-usage.ts, engine detection to engine.ts.
 */
export class DockerRuntime implements Runtime {
  readonly #docker: Docker;
  readonly #opts: DockerRuntimeOptions;
  readonly #inspections = new InspectCache();
  /** The engine's images and the infra image's lookup (images.ts). */
  readonly #images: DockerImages;
  /** The engine and its containers' rlimits, detected once (engine.ts). */
  readonly #engine: EngineDetection;
  /** Port-forward helpers, one per sandbox that has forwards (netns-dialer.ts). */
  readonly #dialers: NetnsDialers;
  /** What the engine's images and containers take on disk (disk-usage.ts). */
  readonly #disk: EngineDiskUsage;
  /** App containers' create, start, stop, remove and update (containers.ts). */
  readonly #containers: DockerContainers;
  /** Sandboxes and their pod networks (sandbox.ts). */
  readonly #sandboxes: DockerSandboxes;
  /** The relist (pod-list.ts). */
  readonly #pods: PodLister;

  constructor(opts: DockerRuntimeOptions) {
    this.#docker = opts.docker;
    this.#opts = opts;
    this.#engine = new EngineDetection(opts.docker, opts.containerUlimits, opts.log);
    this.#disk = new EngineDiskUsage(opts.docker);
    this.#images = new DockerImages({ docker: opts.docker, infraImage: opts.infraImage, log: opts.log });
    this.#dialers = new NetnsDialers({ log: opts.log });
    this.#containers = new DockerContainers({
      docker: opts.docker,
      nodeName: opts.nodeName,
      containerLogs: opts.containerLogs,
      network: opts.network,
      log: opts.log,
      inspections: this.#inspections,
      engine: this.#engine,
      dialers: this.#dialers,
      tearDownNetwork: (id) => this.#sandboxes.tearDownNetwork(id),
    });
    this.#sandboxes = new DockerSandboxes({
      docker: opts.docker,
      nodeName: opts.nodeName,
      infraImage: opts.infraImage,
      podNetwork: opts.podNetwork,
      network: opts.network,
      networkGCPeriodMs: opts.networkGCPeriodMs,
      log: opts.log,
      images: this.#images,
      inspections: this.#inspections,
      ulimits: () => this.#engine.ulimitsConfig(),
      quirks: () => this.#engine.quirks(),
      containers: this.#containers,
    });
    this.#pods = new PodLister({ docker: opts.docker, nodeName: opts.nodeName, inspections: this.#inspections, sandboxes: this.#sandboxes });
  }

  get docker(): Docker {
    return this.#docker;
  }

  /** The engine, once it answered `/version` (Docker or Podman; engine.ts). */
  get currentEngine(): Engine | undefined {
    return this.#engine.current;
  }

  /**
   * Detects the engine on first use (retried while it does not answer) and logs it once, with the
   * rlimits nodelet will set on its containers.
   */
  async engine(): Promise<Engine> {
    return (await this.#engine.detect()).engine;
  }

  async ping(): Promise<void> {
    await this.#docker.ping();
  }

  /** Every image of the engine (image GC). */
  listImages(): Promise<{ id: string; tags: string[]; sizeBytes: number }[]> {
    return this.#images.listImages();
  }

  /** cri-dockerd's `RemoveImage` (images.ts): an image a container still uses is refused. */
  removeImage(id: string): Promise<void> {
    return this.#images.removeImage(id);
  }

  imageStatus(image: string): Promise<ImageInfo | undefined> {
    return this.#images.imageStatus(image);
  }

  pullImage(image: string, credentials: readonly RegistryAuth[]): Promise<PulledImage> {
    return this.#images.pullImage(image, credentials);
  }

  /** The engine's data root filesystem, as the kubelet's `ImageFsStats` (disk-usage.ts). */
  imageFsStats(): Promise<{ capacityBytes: number; availableBytes: number }> {
    return this.#disk.imageFsStats();
  }

  /** The engine's data root (`DockerRootDir`, Podman's `GraphRoot`), asked once and remembered. */
  imageFsRoot(): Promise<string> {
    return this.#disk.imageFsRoot();
  }

  /** Each container's writable layer and log files on disk (disk-usage.ts); one gone meanwhile is left out. */
  containerDiskUsage(ids: readonly string[]): Promise<Map<string, { rootfsBytes: bigint; logsBytes: bigint; logsInodes: bigint }>> {
    return this.#disk.containerDiskUsage(ids);
  }

  /** The engine's cgroup driver and version (`/info` `CgroupDriver`, `CgroupVersion`): pod cgroups need `cgroupfs`. */
  async cgroupInfo(): Promise<{ driver: string; version: string }> {
    const info = (await this.#docker.info()) as { CgroupDriver?: string; CgroupVersion?: string };
    return { driver: info.CgroupDriver ?? '', version: info.CgroupVersion ?? '' };
  }

  /** This node's pods as the engine has them (pod-list.ts). */
  listPods(): Promise<RuntimePod[]> {
    return this.#pods.listPods();
  }

  /** Creates and starts a pod's sandbox, then sets up its pod network (sandbox.ts). */
  runSandbox(pod: Pod, attempt: number, config?: SandboxConfig): Promise<StartedSandbox> {
    return this.#sandboxes.runSandbox(pod, attempt, config);
  }

  /** Tears down a sandbox's pod network, then stops it (sandbox.ts). */
  stopSandbox(id: string): Promise<void> {
    return this.#sandboxes.stopSandbox(id);
  }

  networkStatus(): RuntimeNetworkStatus {
    return this.#sandboxes.networkStatus();
  }

  /** Creates and starts an app container in its pod's sandbox (containers.ts); resolves to its ID. */
  startContainer(pod: Pod, container: Container, sandbox: RuntimeSandbox, attempt: number, config: ContainerConfig): Promise<string> {
    return this.#containers.startContainer(pod, container, sandbox, attempt, config);
  }

  /** `startContainer`'s create alone (containers.ts); the sandbox need not run yet. */
  createContainer(pod: Pod, container: Container, sandbox: RuntimeSandbox, attempt: number, config: ContainerConfig): Promise<string> {
    return this.#containers.createContainer(pod, container, sandbox, attempt, config);
  }

  /** Starts a container `createContainer` made. */
  startCreatedContainer(id: string): Promise<void> {
    return this.#containers.startCreatedContainer(id);
  }

  stopContainer(id: string, graceSeconds: number): Promise<void> {
    return this.#containers.stopContainer(id, graceSeconds);
  }

  /** Removes a container; a sandbox's pod network is torn down first if it still holds one. */
  removeContainer(id: string): Promise<void> {
    return this.#containers.removeContainer(id);
  }

  /** An in-place resize (`POST /containers/{id}/update`; containers.ts). */
  updateContainerResources(containerId: string, container: Container): Promise<void> {
    return this.#containers.updateContainerResources(containerId, container);
  }

  exec(containerId: string, cmd: string[], io: StreamIO | PendingStreamIO): Promise<CommandResult> {
    return execInContainer(this.#docker, containerId, cmd, io, { disconnectGraceMs: this.#opts.execDisconnectGraceMs ?? 10_000, log: this.#opts.log });
  }

  attach(containerId: string, io: StreamIO): Promise<CommandResult> {
    return attachToContainer(this.#docker, containerId, io);
  }

  async logs(containerId: string, opts: LogOptions, out: Writable, signal: AbortSignal): Promise<void> {
    // Whole-second stamps (Podman): keep every line of the second `since` falls in (engine.ts).
    const wholeSeconds = this.#engine.current?.quirks.logTimestampsWholeSeconds === true;
    const since = wholeSeconds && opts.since ? { since: new Date(Math.floor(opts.since.getTime() / 1000) * 1000) } : {};
    // Docker's json-file only (once the engine is known): Podman takes `json-file` as a name for
    // its own k8s-file format.
    const readFiles = this.#opts.readLogFiles === true && this.#engine.current?.name === 'docker';
    return containerLogs(this.#docker, containerId, { ...opts, ...since }, out, signal, { readFiles });
  }

  /** The engine's version and its tagged images, for the Node object (`node/facts.ts`). */
  async engineFacts(): Promise<EngineFacts> {
    const [version, images] = await Promise.all([this.#docker.version(), this.#docker.listImages()]);
    return {
      runtimeVersion: engineOf(version).runtimeVersion,
      images: images
        .map((i) => ({ names: [...(i.RepoTags ?? []), ...(i.RepoDigests ?? [])].filter((n) => n !== '<none>:<none>' && n !== '<none>@<none>'), sizeBytes: i.Size }))
        .filter((i) => i.names.length > 0),
    };
  }

  portForward(sandboxId: string, port: number, stream: Duplex, signal: AbortSignal, host?: string): Promise<void> {
    return forwardPort(this.#docker, this.#dialers, sandboxId, port, stream, signal, this.#opts.log, host);
  }

  /** Process ids of the running port-forward helpers (one per sandbox with recent forwards). */
  portForwardHelperPids(): number[] {
    return this.#dialers.pids();
  }

  /**
   * Stops what the runtime runs beside the engine (the port-forward helpers) and resolves once
   * they have exited; containers are left alone. Port-forwards afterwards are refused.
   */
  async close(): Promise<void> {
    await this.#sandboxes.close();
    return this.#dialers.close();
  }

  containerStats(containerId: string): Promise<ContainerStatsSample> {
    return containerStats(this.#docker, containerId);
  }

  watch(onChange: (podUID: string) => void, onStream?: (up: boolean) => void): () => void {
    return watchContainerEvents(this.#docker, `${Label.node}=${this.#opts.nodeName}`, this.#opts.log, onStream, (id, action, attrs) => {
      if (!this.#inspections.asksForRelist(action, attrs.name ?? '')) return;
      // Docker's container list lags some events (a `die` can still list as running for a
      // moment), so after those the next listing inspects this container whatever state the
      // list shows (inspect-cache.ts).
      if (id && eventInvalidatesInspect(action)) this.#inspections.changed(id);
      const uid = attrs[Label.podUID];
      if (uid) onChange(uid);
    });
  }
}
