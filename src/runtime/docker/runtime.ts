import type Docker from 'dockerode';
import type { Container, Pod } from '../../api/types.js';
import type { Logger } from '../../logging/index.js';
import { podHostname } from '../../api/names.js';
import type { ContainerConfig, ContainerStatsSample, EngineFacts, ImageInfo, PulledImage, RegistryAuth, Runtime, RuntimeContainer, RuntimeNetworkStatus, RuntimePod, RuntimeSandbox, StartedSandbox } from '../types.js';
import type { NetworkPlugin } from '../../network/types.js';
import { netnsPathOf, networkIdentityOf, portMappingsOf, setUpFailure, usesHostNetwork } from './pod-network.js';
import type { SandboxConfig } from '../types.js';
import { createContainerOptions, statusCodeOf } from './client.js';
import { DockerType, Label, sandboxLabels } from './labels.js';
import { makeContainerName, makeSandboxName, parseContainerName, type ParsedName } from './naming.js';
import { containerFromInspect, containerFromListEntry, sandboxFromInspect, sandboxFromListEntry } from './state.js';
import { watchContainerEvents } from './events.js';
import { InspectCache, eventChangesStatus, eventInvalidatesInspect } from './inspect-cache.js';
import { attachToContainer, execInContainer } from './exec.js';
import type { Duplex, Writable } from 'node:stream';
import type { CommandResult, LogOptions, PendingStreamIO, StreamIO } from '../../streaming/types.js';
import { containerLogs } from './logs.js';
import { readTerminationMessage } from './termination-message.js';
import { forwardPort } from './portforward.js';
import { NetnsDialers } from './netns-dialer.js';
import { dockerSecurity } from './security.js';
import { PrivilegedMode } from './privileged.js';
import { sandboxSysctls } from '../sysctl.js';
import { containerStats } from './stats.js';
import { UpdateUnsupportedError } from '../update-unsupported.js';
import { logConfig, type ContainerLogRotation } from './log-config.js';
import { DockerImages } from './images.js';
import { EngineDiskUsage } from './disk-usage.js';
import { cgroupHostConfig, containerCreateConfig, containerResourceConfig } from './container-config.js';
import { EngineProbe, containerUlimits, engineOf, readHostLimits, type DockerUlimit, type Engine } from './engine.js';

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

/** How long a relist waits for one container's inspect before reporting it from its list entry. */
const INSPECT_WAIT_MS = 250;
const SLOW = Symbol('slow inspect');
/** How long a sandbox this runtime created counts as live for network GC, listed or not. */
const NEW_SANDBOX_GRACE_MS = 60_000;

/**
 * The Docker implementation of `Runtime`, laid out like dockershim: one sandbox container per pod
 * holding the network and IPC namespaces, each app container joining them.
 *
 * `listPods` lists containers by this node's label and inspects only those whose Docker state
 * changed since the last listing, or that an event may have changed since their last inspection
 * (inspect-cache.ts), so a relist of an idle node costs one API call.
 */
export class DockerRuntime implements Runtime {
  readonly #docker: Docker;
  readonly #opts: DockerRuntimeOptions;
  readonly #inspections = new InspectCache();
  /** Inspections in flight and the tick each was asked at, shared by relists (one per container at a time). */
  readonly #inspecting = new Map<string, { seq: number; answer: Promise<Docker.ContainerInspectInfo | undefined> }>();
  /** The engine's images and the infra image's lookup (images.ts). */
  readonly #images: DockerImages;
  readonly #probe: EngineProbe;
  /** The engine and the rlimits for its containers, once known; retried while it does not answer. */
  #detected: Promise<{ engine: Engine; ulimits: DockerUlimit[] }> | undefined;
  /** Port-forward helpers, one per sandbox that has forwards (netns-dialer.ts). */
  readonly #dialers: NetnsDialers;
  /** Sandboxes created by this runtime → when: a listing started before one was created misses it. */
  readonly #newSandboxes = new Map<string, number>();
  /** Sandboxes whose pod network is being set up now. */
  readonly #settingUp = new Set<string>();
  #lastNetworkGC = 0;
  /** What the engine's images and containers take on disk (disk-usage.ts). */
  readonly #disk: EngineDiskUsage;
  #networkGC: Promise<void> | undefined;
  /** `Privileged` as this host can grant it (privileged.ts). */
  readonly #privileged: PrivilegedMode;

  constructor(opts: DockerRuntimeOptions) {
    this.#docker = opts.docker;
    this.#opts = opts;
    this.#probe = new EngineProbe(opts.docker);
    this.#disk = new EngineDiskUsage(opts.docker);
    this.#images = new DockerImages({ docker: opts.docker, infraImage: opts.infraImage, log: opts.log });
    this.#privileged = new PrivilegedMode(opts.log);
    this.#dialers = new NetnsDialers({ log: opts.log });
  }

  get docker(): Docker {
    return this.#docker;
  }

  /** The engine, once it answered `/version` (Docker or Podman; engine.ts). */
  get currentEngine(): Engine | undefined {
    return this.#probe.current;
  }

  /**
   * Detects the engine on first use (retried while it does not answer) and logs it once, with the
   * rlimits nodelet will set on its containers.
   */
  async engine(): Promise<Engine> {
    return (await this.#detect()).engine;
  }

  #detect(): Promise<{ engine: Engine; ulimits: DockerUlimit[] }> {
    if (this.#detected) return this.#detected;
    const detected = (async () => {
      const [engine, host] = await Promise.all([this.#probe.get(), readHostLimits()]);
      const { ulimits = [], aboveOwnLimits } = containerUlimits(this.#opts.containerUlimits ?? 'auto', engine, host);
      const ulimitText = ulimits.map((u) => `${u.Name}=${u.Soft}:${u.Hard}`).join(',') || 'engine defaults';
      this.#opts.log.info({ runtime: engine.name, version: engine.version, apiVersion: engine.apiVersion, ulimits: ulimitText }, 'Container runtime');
      if (aboveOwnLimits.length) {
        this.#opts.log.warn({ ulimits: aboveOwnLimits }, '--container-ulimits above nodelet\'s own hard limits: containers fail to start unless the engine may raise them');
      }
      return { engine, ulimits };
    })();
    this.#detected = detected;
    detected.catch(() => {
      if (this.#detected === detected) this.#detected = undefined;
    });
    return detected;
  }

  /** `HostConfig.Ulimits` for a new container or sandbox, or nothing (the engine's defaults). */
  async #ulimitsConfig(): Promise<{ Ulimits?: DockerUlimit[] }> {
    const { ulimits } = await this.#detect();
    return ulimits.length ? { Ulimits: ulimits.map((u) => ({ ...u })) } : {};
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

  async listPods(): Promise<RuntimePod[]> {
    const listedAt = performance.now();
    const listedTick = this.#inspections.next();
    const list = await this.#docker.listContainers({ all: true, filters: { label: [`${Label.node}=${this.#opts.nodeName}`] } });
    const seen = new Set<string>();
    const pods = new Map<string, { uid: string; name: string; namespace: string; sandboxes: RuntimeSandbox[]; containers: RuntimeContainer[] }>();
    await Promise.all(
      list.map(async (entry) => {
        seen.add(entry.Id);
        const parsed = entry.Names.map(parseContainerName).find((n): n is ParsedName => n !== undefined);
        const uid = entry.Labels[Label.podUID];
        if (!parsed || !uid) return;
        // A container nodelet is starting now: its inspection would wait for the start to end.
        const starting = entry.State === 'created' && entry.Names.some((n) => this.#inspections.isStarting(n.replace(/^\//, '')));
        const info = starting ? SLOW : await this.#inspect(entry.Id, entry.State);
        if (!info) return;
        let pod = pods.get(uid);
        if (!pod) {
          pod = { uid, name: entry.Labels[Label.podName] ?? parsed.pod, namespace: entry.Labels[Label.podNamespace] ?? parsed.namespace, sandboxes: [], containers: [] };
          pods.set(uid, pod);
        }
        const sandbox = entry.Labels[Label.dockerType] === DockerType.sandbox;
        if (info === SLOW) {
          // Busy in Docker, or being started by nodelet: report what the list and the last
          // inspection say; the inspection still running answers the next listing. The
          // inspection only while the list still shows a state it saw: a container
          // the list shows exited since (it died, or the engine stopped it as it restarted) is
          // reported from its list entry, never as still running from an older inspection.
          const last = this.#inspections.last(entry.Id);
          const cached = last && (last.listedState === entry.State || last.status === entry.State) ? last.info : undefined;
          if (sandbox) pod.sandboxes.push(this.#withNetworkIPs(cached ? sandboxFromInspect(cached, parsed) : sandboxFromListEntry(entry, parsed), entry.HostConfig?.NetworkMode === 'host'));
          else pod.containers.push(cached ? containerFromInspect(cached, parsed) : containerFromListEntry(entry, parsed));
        } else if (sandbox) pod.sandboxes.push(this.#withNetworkIPs(sandboxFromInspect(info, parsed), usesHostNetwork(info)));
        else {
          // The kubelet reports the container's own message over the runtime's error text.
          const message = this.#inspections.last(entry.Id)?.terminationMessage;
          const container = containerFromInspect(info, parsed);
          pod.containers.push(message !== undefined ? { ...container, message } : container);
        }
      }),
    );
    this.#inspections.retain(seen, listedTick);
    this.#maybeCollectNetwork(list.filter((e) => e.Labels[Label.dockerType] === DockerType.sandbox).map((e) => e.Id), listedAt);
    const byNewest = (a: { attempt: number; createdAt: Date }, b: { attempt: number; createdAt: Date }) =>
      b.attempt - a.attempt || b.createdAt.getTime() - a.createdAt.getTime();
    return [...pods.values()].map((p) => ({ ...p, sandboxes: p.sandboxes.sort(byNewest), containers: p.containers.sort(byNewest) }));
  }

  /**
   * Inspects a container unless its cached inspection still holds (`InspectCache.fresh`).
   * Docker holds a container's lock while it creates, starts or stops it, and an inspect waits
   * for that lock: during a burst of starts, or a graceful stop, one inspect can take seconds.
   * So an inspect slower than INSPECT_WAIT_MS answers SLOW and keeps running in the background
   * (its answer fills the cache); the relist goes on without it and the next one uses that
   * answer, or waits for it again — one busy container never holds back every pod's status. An
   * inspection in flight is shared unless an event came after it was asked.
   */
  async #inspect(id: string, listedState: string): Promise<Docker.ContainerInspectInfo | undefined | typeof SLOW> {
    const cached = this.#inspections.fresh(id, listedState);
    if (cached) return cached.info;
    let pending = this.#inspecting.get(id);
    if (!pending || !this.#inspections.current(id, pending.seq)) {
      const seq = this.#inspections.next();
      const answer = this.#docker
        .getContainer(id)
        .inspect()
        .then(
          async (info) => {
            await this.#remember(id, listedState, info, seq);
            return info;
          },
          (err: unknown) => {
            if (statusCodeOf(err) === 404) return undefined; // removed between list and inspect
            throw err;
          },
        )
        .finally(() => {
          if (this.#inspecting.get(id)?.answer === answer) this.#inspecting.delete(id);
        });
      pending = { seq, answer };
      this.#inspecting.set(id, pending);
    }
    const { answer: inFlight } = pending;
    let timer: NodeJS.Timeout | undefined;
    const slow = new Promise<typeof SLOW>((resolve) => {
      timer = setTimeout(() => resolve(SLOW), INSPECT_WAIT_MS);
    });
    try {
      const answer = await Promise.race([inFlight, slow]);
      if (answer === SLOW) inFlight.catch(() => undefined);
      return answer;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Caches an inspection asked at tick `seq` (with an exited container's termination message). */
  async #remember(id: string, listedState: string, info: Docker.ContainerInspectInfo, seq: number): Promise<void> {
    const exited = !info.State.Running && info.State.FinishedAt !== '' && !info.State.FinishedAt.startsWith('0001-');
    const terminationMessage = exited && info.Config.Labels?.[Label.dockerType] !== DockerType.sandbox ? await readTerminationMessage(this.#docker, info) : undefined;
    this.#inspections.remember(id, { listedState, status: info.State.Status || listedState, info, seq, ...(terminationMessage !== undefined ? { terminationMessage } : {}) });
  }

  /**
   * Creates a sandbox container, its infra image made sure of first — once: after the image was
   * found or pulled, sandboxes are created without asking for it again (as containerd's CRI,
   * which looks the sandbox image up in its own image store, not the engine, per sandbox). An
   * image removed behind nodelet's back fails the create with 404: the image is asked for (and
   * pulled) again and the create retried once. Any other failure has the next sandbox ask again.
   */
  async #createSandbox(options: Docker.ContainerCreateOptions): Promise<Docker.Container> {
    await this.#images.infraImage();
    try {
      return await this.#docker.createContainer(options);
    } catch (err) {
      this.#images.forgetInfraImage();
      if (statusCodeOf(err) !== 404 || (await this.#images.imageStatus(this.#opts.infraImage))) throw err;
      this.#opts.log.info({ image: this.#opts.infraImage }, 'The infra image is gone; pulling it again');
      await this.#images.infraImage();
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
    const ulimits = await this.#ulimitsConfig();
    const created = await this.#createSandbox(createContainerOptions(name, {
      Image: this.#opts.infraImage,
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
    const network = this.#opts.network;
    if (hostNetwork || !network) {
      await this.#start(created);
      return { id: created.id, ips: [] };
    }
    this.#settingUp.add(created.id);
    try {
      await this.#start(created);
    } catch (err) {
      this.#settingUp.delete(created.id);
      throw err;
    }
    try {
      const seq = this.#inspections.next();
      const info = await created.inspect();
      // The next listing shows it as this inspection did, unless an event says otherwise.
      await this.#remember(created.id, info.State.Status, info, seq);
      const netnsPath = netnsPathOf(info);
      if (!netnsPath) throw new Error(`sandbox ${created.id} is not running (${info.State.Status})`);
      const { ips } = await network.setUpPod({ ...networkIdentityOf(info), netnsPath, portMappings: portMappingsOf(pod) });
      return { id: created.id, ips };
    } catch (err) {
      // cri-dockerd RunPodSandbox: DEL even after a failed ADD (a plugin may have half set up),
      // then stop; nodelet also removes the sandbox, so a retry starts clean.
      const failure = setUpFailure(created.id, pod, network.name, err);
      await this.#tearDownNetwork(created.id).catch((e: unknown) => this.#opts.log.warn({ err: e, sandbox: created.id }, 'Network teardown after a failed set-up failed'));
      await this.removeContainer(created.id).catch((e: unknown) => this.#opts.log.warn({ err: e, sandbox: created.id }, 'Removing a sandbox whose network failed failed'));
      throw failure;
    } finally {
      this.#settingUp.delete(created.id);
    }
  }

  async stopSandbox(id: string): Promise<void> {
    let teardown: unknown;
    await this.#tearDownNetwork(id).catch((err: unknown) => (teardown = err));
    await this.stopContainer(id, 0);
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
  async #tearDownNetwork(id: string): Promise<void> {
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
  #withNetworkIPs(sandbox: RuntimeSandbox, hostNetwork: boolean): RuntimeSandbox {
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
  #maybeCollectNetwork(listed: readonly string[], listedAt: number): void {
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

  async startContainer(pod: Pod, container: Container, sandbox: RuntimeSandbox, attempt: number, config: ContainerConfig): Promise<string> {
    const meta = pod.metadata ?? {};
    const name = makeContainerName(container.name, { pod: meta.name ?? '', namespace: meta.namespace ?? '', uid: meta.uid ?? '' }, attempt);
    this.#inspections.startingNow(name);
    try {
      return await this.#startContainer(pod, container, sandbox, { name, attempt }, config);
    } finally {
      this.#inspections.started(name);
    }
  }

  async #startContainer(pod: Pod, container: Container, sandbox: RuntimeSandbox, { name, attempt }: { name: string; attempt: number }, config: ContainerConfig): Promise<string> {
    const security = dockerSecurity(config.security);
    const ulimits = await this.#ulimitsConfig();
    const engine = (await this.#detect()).engine.name;
    const create = async () => this.#docker.createContainer(createContainerOptions(name, containerCreateConfig(pod, container, config, {
      nodeName: this.#opts.nodeName,
      sandbox,
      attempt,
      user: security.User,
      securityHostConfig: await this.#privileged.hostConfig(security.HostConfig, engine),
      ulimits,
      logConfig: logConfig(engine, this.#opts.containerLogs),
    })));
    let created: Docker.Container;
    for (;;) {
      try {
        created = await create();
        break;
      } catch (err) {
        // A capability the engine does not know (privileged.ts): asked again without it.
        if (!this.#privileged.refused(err)) throw err;
      }
    }
    await this.#start(created);
    return created.id;
  }

  /** Starts a container nodelet just created. */
  async #start(container: Docker.Container): Promise<void> {
    try {
      await container.start();
    } catch (err) {
      // Keep the failed container: its ContainerCannotRun state is what the status reports, so
      // no inspection asked before the failure may stand for it.
      this.#inspections.forget(container.id);
      this.#inspections.changed(container.id);
      throw err;
    }
  }

  async stopContainer(id: string, graceSeconds: number): Promise<void> {
    // A sandbox's port-forward helper would hold its network namespace open.
    this.#dialers.release(id);
    try {
      await this.#docker.getContainer(id).stop({ t: Math.max(0, Math.floor(graceSeconds)) });
    } catch (err) {
      const code = statusCodeOf(err);
      if (code !== 304 && code !== 404) throw err;
    }
  }

  async removeContainer(id: string): Promise<void> {
    this.#dialers.release(id);
    // A sandbox removed without a stop first (a dead one, or garbage) still holds its network.
    if (this.#opts.network?.podNetworkStatus(id)) await this.#tearDownNetwork(id);
    try {
      await this.#docker.getContainer(id).remove({ force: true, v: true });
    } catch (err) {
      const code = statusCodeOf(err);
      // 409: removal already in progress.
      if (code !== 404 && code !== 409) throw err;
    }
    this.#inspections.forget(id);
  }

  exec(containerId: string, cmd: string[], io: StreamIO | PendingStreamIO): Promise<CommandResult> {
    return execInContainer(this.#docker, containerId, cmd, io, { disconnectGraceMs: this.#opts.execDisconnectGraceMs ?? 10_000, log: this.#opts.log });
  }

  attach(containerId: string, io: StreamIO): Promise<CommandResult> {
    return attachToContainer(this.#docker, containerId, io);
  }

  async logs(containerId: string, opts: LogOptions, out: Writable, signal: AbortSignal): Promise<void> {
    // Whole-second stamps (Podman): keep every line of the second `since` falls in (engine.ts).
    const wholeSeconds = this.#probe.current?.quirks.logTimestampsWholeSeconds === true;
    const since = wholeSeconds && opts.since ? { since: new Date(Math.floor(opts.since.getTime() / 1000) * 1000) } : {};
    // Docker's json-file only (once the engine is known): Podman takes `json-file` as a name for
    // its own k8s-file format.
    const readFiles = this.#opts.readLogFiles === true && this.#probe.current?.name === 'docker';
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
    await this.#networkGC;
    return this.#dialers.close();
  }

  containerStats(containerId: string): Promise<ContainerStatsSample> {
    return containerStats(this.#docker, containerId);
  }

  /**
   * An in-place resize (`POST /containers/{id}/update`, the CRI's `UpdateContainerResources`):
   * the same `CpuShares`, `NanoCpus` and `Memory` its creation set from the spec, and
   * `MemorySwap` at twice the memory limit — the engine's default for a container created with a
   * limit and no swap setting, which it also requires to stay at or above the new limit. The next
   * listing inspects the container again, so the values read back are the engine's.
   */
  async updateContainerResources(containerId: string, container: Container): Promise<void> {
    const resources = containerResourceConfig(container);
    const update = { ...resources, ...(resources.Memory ? { MemorySwap: resources.Memory * 2 } : {}) };
    try {
      await this.#docker.getContainer(containerId).update(update);
    } catch (err) {
      // 404 for a container that exists: the engine has no such endpoint (Podman before its
      // compat update), not a missing container.
      if (statusCodeOf(err) === 404 && (await this.#docker.getContainer(containerId).inspect().then(() => true, () => false))) {
        const engine = this.#probe.current;
        throw new UpdateUnsupportedError(`the container engine${engine ? ` (${engine.name} ${engine.version})` : ''} has no container update (POST /containers/{id}/update answered 404): in-place resize is not supported on it`, { cause: err });
      }
      throw err;
    } finally {
      this.#inspections.changed(containerId);
    }
  }

  watch(onChange: (podUID: string) => void): () => void {
    return watchContainerEvents(this.#docker, `${Label.node}=${this.#opts.nodeName}`, this.#opts.log, (id, action, attrs) => {
      if (!eventChangesStatus(action)) return;
      // Docker's container list lags some events (a `die` can still list as running for a
      // moment), so after those the next listing inspects this container whatever state the
      // list shows (inspect-cache.ts).
      if (id && eventInvalidatesInspect(action)) this.#inspections.changed(id);
      const uid = attrs[Label.podUID];
      if (uid) onChange(uid);
    });
  }
}
