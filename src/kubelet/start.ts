/**
 * The kubelet's start path, acting on what a sync decided (pkg/kubelet/kuberuntime/kuberuntime_manager.go
 * `SyncPod`, kuberuntime_container.go `startContainer`): kills, removals, the sandbox (start-sandbox.ts),
 * in-place resizes, then each container's image, config, start and postStart hook.
 */
import type { Container, Pod } from '../api/types.js';
import type { EventSubject, EventType } from '../events/recorder.js';
import type { Logger } from '../logging/index.js';
import type { Metrics } from '../metrics/registry.js';
import type { ContainerConfig, ImageInfo, Runtime, RuntimePod, RuntimeSandbox } from '../runtime/types.js';
import type { StatusManager } from '../status/manager.js';
import type { VolumeManager } from '../volumes/manager.js';
import type { NodeDNS } from '../volumes/resolv-conf.js';
import type { PodObjectSource } from '../volumes/source.js';
import type { NodeCgroups } from '../cgroups/node-cgroups.js';
import { containerOOMScoreAdjust } from '../cgroups/oom-score.js';
import { buildContainerConfig } from './container-config.js';
import { readsPodIP } from '../volumes/downward-api.js';
import type { ImagePullManager } from './image-pull-manager.js';
import { ImageError, ensureImageExists, withDefaultTag } from './images.js';
import type { PodKiller } from './kill.js';
import { runHook, terminationLogMount } from './lifecycle.js';
import type { ContainerStart, PodActions, Waiting } from './pod-actions.js';
import { runtimeProbeIO } from './prober/runtime-io.js';
import { TerminationOrdering, needsTerminationOrdering } from './termination-order.js';
import { pullCredentials } from './pull-secrets.js';
import type { StartFailures } from './start-failures.js';
import { SandboxStarter } from './start-sandbox.js';

/** What starting needs of the runtime: images, sandboxes, container starts, removals of what a sync replaces, and exec and port-forward for postStart hooks. */
export type StartRuntime = Pick<Runtime, 'imageStatus' | 'pullImage' | 'runSandbox' | 'networkStatus' | 'startContainer' | 'createContainer' | 'startCreatedContainer' | 'removeContainer' | 'exec' | 'portForward'>;

export interface PodStarterOptions {
  nodeIP: string;
  runtime: StartRuntime;
  /** The event recorder's `record`. */
  record: (subject: EventSubject, type: EventType, reason: string, message: string) => void;
  /** The node as an event's subject (warnings about the node's own DNS settings). */
  nodeSubject: EventSubject;
  log: Logger;
  /** Where every failed start is kept and held back (src/kubelet/start-failures.ts). */
  failures: StartFailures;
  /** The runtime's pods as last listed (the PLEG's cache) and a new listing of them. */
  pods: { getPod(uid: string): RuntimePod | undefined; relist(): Promise<void> };
  /** Where a pod's reported start time is read (a new sandbox records it). */
  status: Pick<StatusManager, 'getPodStatus'>;
  /** The sync's kills, and the postStart hook's failure, which kills the container it ran in (src/kubelet/kill.ts). */
  killer: Pick<PodKiller, 'killContainer' | 'stopSandboxes'>;
  /** Syncs pod `uid` again now / after `ms` (the pod workers): a failure that leaves no container brings no PLEG event. */
  schedule: (uid: string) => void;
  scheduleAfter: (uid: string, ms: number) => void;
  /** `kubelet_started_pods_total`, `kubelet_started_containers_total` and their errors. */
  metrics?: Pick<Metrics, 'startedPods' | 'startedPodErrors' | 'startedContainers' | 'startedContainerErrors'> | undefined;
  /** The pod's volumes a container mounts (see `KubeletOptions.volumes`). */
  volumes?: VolumeManager | undefined;
  /** The apiserver's secrets and configMaps for `env`, `envFrom` and `imagePullSecrets` (cluster mode). */
  objects?: PodObjectSource | undefined;
  /** Who may reuse a pulled image (`KubeletEnsureSecretPulledImages`). */
  imagePullManager?: ImagePullManager | undefined;
  /** `--root-dir`: where each container instance's termination-message file lives. */
  rootDir?: string | undefined;
  /** Each sandbox's resolv.conf and FQDN (see `KubeletOptions.dns`). */
  dns?: Omit<NodeDNS, 'nodeIPs'> | undefined;
  /** The pod cgroup each sandbox and container is created in (`EnsureExists`). */
  podCgroups?: Pick<NodeCgroups, 'ensurePod'> | undefined;
  /** The pod cgroup was made or updated with this (allocated) pod's pod-level resources: they are actuated. */
  podCgroupMade?: ((pod: Pod) => void) | undefined;
  /** Container `name` was started from this (allocated) pod: its resources are actuated. */
  containerStarted?: ((pod: Pod, name: string) => void) | undefined;
  /** OOM scores by QoS (see `KubeletOptions.oomScores`). */
  oomScores?: { readonly memoryCapacity: bigint; readonly canLower: boolean } | undefined;
}

/** A container's config, and its ID once created (`#prepare`). */
interface Prepared {
  readonly config: ContainerConfig;
  readonly id?: string;
}

const podRef = (pod: { metadata?: { namespace?: string; name?: string } }) => `${pod.metadata?.namespace}/${pod.metadata?.name}`;
const containerSubject = (pod: Pod, name: string) => ({ ...pod, fieldPath: `spec.containers{${name}}` });

/**
 * The kubelet's start path (pkg/kubelet/kuberuntime/kuberuntime_manager.go `SyncPod`'s sandbox
 * part, kuberuntime_container.go `startContainer`): a pod's sandbox created (start-sandbox.ts), each container's
 * image ensured, its config generated, the container created and started, its postStart hook
 * run; every failure recorded in the start-failure memory (`StartFailures`) with the kubelet's
 * events and waiting reasons, and held back by its back-off (`holdFailedStarts`). What to start
 * is the sync's decision (`computePodActions`); this only acts on it.
 */
export class PodStarter {
  readonly #o: PodStarterOptions;
  readonly #sandboxes: SandboxStarter;

  constructor(opts: PodStarterOptions) {
    this.#o = opts;
    this.#sandboxes = new SandboxStarter(opts, (pod, container, failed) => this.#startFailed(pod, container, failed));
  }

  /**
   * `SyncPod`'s acting steps, in its order, for what the sync decided (`computePodActions`, after
   * `holdFailedStarts`): the kills (through the `PodKiller`), the removals, the sandbox, the
   * in-place resizes of running containers (`resizeInPlace`, the sync's: SyncPod's step 7, only
   * when the sandbox stays), then each start in order.
   */
  async syncPod(pod: Pod, runtimePod: RuntimePod | undefined, actions: PodActions, resizeInPlace: () => Promise<unknown>): Promise<void> {
    const { runtime, log } = this.#o;
    const plog = log.child({ pod: podRef(pod), podUID: pod.metadata?.uid });
    // Containers killed together keep the pod's termination order: sidecars after the others.
    const ordering = needsTerminationOrdering(pod) ? new TerminationOrdering(pod, actions.kill.map((k) => k.name)) : undefined;
    await Promise.all(
      actions.kill.map(async (k) => {
        plog.info({ container: k.name }, k.message);
        if (k.name === 'POD') await this.#o.killer.stopSandboxes([k], plog);
        else if (runtimePod) await this.#o.killer.killContainer(runtimePod, pod, k, { grace: k.graceSeconds, message: k.message, ordering });
      }),
    );
    // Removal of what the sync replaces is best effort: a container the runtime cannot remove
    // (e.g. Docker's "device or resource busy" on a root filesystem it left mounted) is tried again
    // at the next sync, or by the container GC, and never keeps the pod from starting its containers.
    for (const id of actions.remove) {
      await runtime.removeContainer(id).catch((err: unknown) => plog.warn({ err, containerID: id }, 'Failed to remove container'));
    }

    let sandbox = runtimePod?.sandboxes[0];
    let early: Promise<Prepared | undefined> | undefined;
    const first = actions.start[0];
    if (actions.createSandbox !== undefined) {
      // The new sandbox's first container is created while the sandbox starts (see `#createsEarly`).
      const onCreated = first && this.#createsEarly(pod) ? (id: string) => {
        const starting: RuntimeSandbox = { id, attempt: actions.createSandbox ?? 0, ready: true, createdAt: new Date(), ips: [] };
        early = this.#prepare(pod, first.container, starting, first.attempt, plog, true);
      } : undefined;
      sandbox = await this.createSandbox(pod, runtimePod, actions.createSandbox, actions.start, plog, onCreated);
    }
    if (!sandbox) {
      // The sandbox failed after its container existed: the container made for it goes too.
      const orphan = (await early)?.id;
      if (orphan !== undefined) await runtime.removeContainer(orphan).catch((err: unknown) => plog.warn({ err, containerID: orphan }, 'Failed to remove container'));
      return;
    }

    // In-place resizes of the running containers, after the kills and before the starts (SyncPod's step 7).
    if (actions.createSandbox === undefined) await resizeInPlace();
    for (const s of actions.start) {
      if (early && s === first) {
        const prepared = await early;
        // A failed image or config was recorded as it would have been after the sandbox.
        if (prepared) await this.#launch(pod, s.container, sandbox, s.attempt, plog, prepared);
      } else {
        await this.startContainer(pod, s.container, sandbox, s.attempt, plog);
      }
    }
  }

  /**
   * Whether a new sandbox's first container may be created while the sandbox starts: the runtime
   * creates and starts in two steps, and nothing in the pod reads the pod's IP, which is known only
   * once its network is set up (the environment and downward API files are fixed at the create).
   * Its start still waits for the sandbox and its network, as the kubelet's; only the image, the
   * config (volumes included, which the kubelet sets up before the sandbox anyway) and the
   * engine's create move forward — on Docker ≈ 25 ms of a pod's start.
   */
  #createsEarly(pod: Pod): boolean {
    const { runtime } = this.#o;
    return runtime.createContainer !== undefined && runtime.startCreatedContainer !== undefined && !readsPodIP(pod);
  }

  /**
   * The starts the memory holds back (read before the status is published): a container whose
   * last start failed recently waits out its back-off — a failed pull with the image manager's
   * `ImagePullBackOff` answer and events — and a pod whose sandbox creation failed recently gets
   * no new sandbox and no starts (each failed creation may leave a container behind, whose PLEG
   * event would otherwise ask the runtime again at once); the containers show the failure meanwhile.
   */
  holdFailedStarts(pod: Pod, actions: PodActions, now: number): void {
    const { failures, record } = this.#o;
    actions.start = actions.start.filter(({ container }) => {
      const held = failures.containerHeld(pod, container, now);
      if (!held) return true;
      let waiting = held.waiting;
      if (waiting.reason === 'ErrImagePull') {
        // The image manager's back-off answer, with its events (BackOff, then kuberuntime's Failed).
        const image = withDefaultTag(container.image ?? '');
        waiting = { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}": ErrImagePull: ${held.waiting.message}` };
        const subject = containerSubject(pod, container.name);
        record(subject, 'Normal', 'BackOff', `Back-off pulling image "${image}"`);
        record(subject, 'Warning', 'Failed', 'Error: ImagePullBackOff');
      }
      actions.waiting.set(container.name, waiting);
      actions.resyncAfterMs = Math.min(actions.resyncAfterMs ?? Infinity, held.leftMs);
      return false;
    });
    const sandboxHeld = actions.createSandbox === undefined ? undefined : failures.sandboxHeld(pod.metadata?.uid ?? '', now);
    if (!sandboxHeld) return;
    actions.createSandbox = undefined;
    for (const s of actions.start) actions.waiting.set(s.container.name, sandboxHeld.waiting);
    actions.start = [];
    actions.resyncAfterMs = Math.min(actions.resyncAfterMs ?? Infinity, sandboxHeld.leftMs);
  }

  /** `SyncPod`'s sandbox part (start-sandbox.ts `SandboxStarter.createSandbox`): the new sandbox, or undefined when none was made. */
  createSandbox(pod: Pod, runtimePod: RuntimePod | undefined, attempt: number, starts: readonly ContainerStart[], plog: Logger, onCreated?: (sandboxId: string) => void): Promise<RuntimeSandbox | undefined> {
    return this.#sandboxes.createSandbox(pod, runtimePod, attempt, starts, plog, onCreated);
  }

  /**
   * `startContainer`: the image (`ensureImageExists`: ErrImagePull, ErrImageNeverPull …), the
   * config (`CreateContainerConfigError`), create and start (`CreateContainerError`), each
   * failure a `Failed` event "Error: …" and a held waiting reason; once started, `Created` and
   * `Started`, then the postStart hook, whose failure (`FailedPostStartHook`) kills the container,
   * which then restarts (or not) by the restart policy.
   */
  async startContainer(pod: Pod, container: Container, sandbox: RuntimeSandbox, attempt: number, plog: Logger): Promise<void> {
    const prepared = await this.#prepare(pod, container, sandbox, attempt, plog, false);
    if (prepared) await this.#launch(pod, container, sandbox, attempt, plog, prepared);
  }

  /**
   * `startContainer` up to the engine's start: the image, the config, then the create — done
   * here when `create` (the runtime's `createContainer`; the sandbox need not run yet), else by
   * `#launch` with the start. Undefined when a step failed, its failure recorded.
   */
  async #prepare(pod: Pod, container: Container, sandbox: RuntimeSandbox, attempt: number, plog: Logger, create: boolean): Promise<Prepared | undefined> {
    const { runtime, record } = this.#o;
    const subject = containerSubject(pod, container.name);
    const clog = plog.child({ container: container.name });
    const policy = container.imagePullPolicy === 'Always' || container.imagePullPolicy === 'Never' ? container.imagePullPolicy : 'IfNotPresent';
    let image: ImageInfo;
    try {
      image = await ensureImageExists(runtime, container.image ?? '', policy, {
        // imagePullSecrets are read only when the image must be pulled.
        credentials: () => pullCredentials(pod, container.image ?? '', { objects: this.#o.objects, warn: (reason, message) => record(pod, 'Warning', reason, message) }),
        event: (type, reason, message) => record(subject, type, reason, message),
        ...(this.#o.imagePullManager ? { pullManager: this.#o.imagePullManager } : {}),
      });
    } catch (err) {
      // An engine failure other than the pull itself (e.g. its image inspect) is a failed pull too.
      const reason = err instanceof ImageError ? err.reason : 'ErrImagePull';
      clog.warn({ err }, 'Image not available');
      // kuberuntime's FailedToCreateContainer after EnsureImageExists failed.
      record(subject, 'Warning', 'Failed', `Error: ${reason}`);
      this.#startFailed(pod, container, { reason, message: (err as Error).message });
      return undefined;
    }
    let config: ContainerConfig;
    try {
      config = await buildContainerConfig(pod, container, image, sandbox.ips, {
        volumes: this.#o.volumes,
        objects: this.#o.objects,
        nodeIP: this.#o.nodeIP,
        warn: (reason, message) => record(pod, 'Warning', reason, message),
      });
    } catch (err) {
      // CreateContainerConfigError: a volume, env source or setting is missing or refused.
      // Messages name objects and keys, never their data.
      const message = (err as Error).message;
      this.#o.metrics?.startedContainerErrors.inc({ container_type: 'container', code: 'CreateContainerConfigError' });
      clog.warn({ error: message }, 'Failed to prepare container');
      if ((err as { event?: string }).event === 'FailedMount') record(pod, 'Warning', 'FailedMount', message);
      record(subject, 'Warning', 'Failed', `Error: ${message}`);
      this.#startFailed(pod, container, { reason: 'CreateContainerConfigError', message });
      return undefined;
    }
    const target = (container as { targetContainerName?: string }).targetContainerName;
    if (target) {
      // An ephemeral container aimed at another shares that container's processes (`kubectl debug --target`).
      const id = this.#o.pods.getPod(pod.metadata?.uid ?? '')?.containers.find((c) => c.name === target && c.state === 'running')?.id;
      if (id) config = { ...config, pidNamespaceOf: id };
    }
    try {
      if (this.#o.rootDir) config = { ...config, mounts: [...config.mounts, await terminationLogMount(this.#o.rootDir, pod, container, attempt)] };
      const score = this.#o.oomScores ? this.#sandboxes.oomScore(containerOOMScoreAdjust(pod, container, this.#o.oomScores.memoryCapacity)) : {};
      config = { ...config, ...(await this.#sandboxes.podCgroup(pod)), ...score };
      if (!create || !runtime.createContainer) return { config };
      return { config, id: await runtime.createContainer(pod, container, sandbox, attempt, config) };
    } catch (err) {
      this.#createFailed(pod, container, clog, err);
      return undefined;
    }
  }

  /**
   * `startContainer` from the engine's start (and its create, unless `#prepare` made it): `Created`
   * and `Started`, then the postStart hook, whose failure kills the container. A container
   * created before its sandbox's network was set up gets the pod's hosts file written again first,
   * now with the pod's IPs (the file is bind-mounted at the start, so the container sees this one).
   */
  async #launch(pod: Pod, container: Container, sandbox: RuntimeSandbox, attempt: number, plog: Logger, prepared: Prepared): Promise<void> {
    const { runtime, record } = this.#o;
    const subject = containerSubject(pod, container.name);
    const clog = plog.child({ container: container.name });
    try {
      let id: string;
      if (prepared.id !== undefined && runtime.startCreatedContainer) {
        id = prepared.id;
        if (sandbox.ips.length) await this.#o.volumes?.etcHostsMount(pod, container, sandbox.ips);
        await runtime.startCreatedContainer(id);
      } else {
        id = await runtime.startContainer(pod, container, sandbox, attempt, prepared.config);
      }
      this.#o.containerStarted?.(pod, container.name);
      this.#o.failures.containerStarted(pod, container);
      this.#o.metrics?.startedContainers.inc({ container_type: 'container' });
      clog.info({ attempt }, 'Started container');
      record(subject, 'Normal', 'Created', `Created container ${container.name}`);
      record(subject, 'Normal', 'Started', `Started container ${container.name}`);
      const postStart = container.lifecycle?.postStart;
      if (postStart) {
        // As the kubelet: the hook runs right after the start, and its failure kills the
        // container, which then restarts (or not) by the restart policy.
        const failure = await runHook(postStart, container, runtimeProbeIO(runtime, id, sandbox.id, sandbox.ips[0]), Infinity);
        if (failure) {
          clog.warn({ error: failure }, 'PostStartHook failed');
          record(subject, 'Warning', 'FailedPostStartHook', failure);
          const target = { uid: pod.metadata?.uid ?? '', name: pod.metadata?.name ?? '', namespace: pod.metadata?.namespace ?? '', sandboxes: [sandbox] };
          await this.#o.killer.killContainer(target, pod, { id, name: container.name }, { message: 'FailedPostStartHook' });
        }
      }
    } catch (err) {
      this.#createFailed(pod, container, clog, err);
    }
  }

  /** A create or start the engine refused: `CreateContainerError`. Docker keeps a container that failed to start; its state reports ContainerCannotRun. */
  #createFailed(pod: Pod, container: Container, clog: Logger, err: unknown): void {
    this.#o.metrics?.startedContainerErrors.inc({ container_type: 'container', code: 'CreateContainerError' });
    clog.warn({ err }, 'Failed to start container');
    this.#o.record(containerSubject(pod, container.name), 'Warning', 'Failed', `Error: ${(err as Error).message}`);
    this.#startFailed(pod, container, { reason: 'CreateContainerError', message: (err as Error).message });
  }

  /**
   * A start that failed: the memory keeps its waiting reason until a start succeeds and grows its
   * back-off (10 s doubling to 5 min); the pod is synced again when the back-off ends. Each
   * attempt logs one warning and bumps one `Failed` event (both bounded by their sinks).
   */
  #startFailed(pod: Pod, container: Container, failed: Waiting): void {
    const uid = pod.metadata?.uid ?? '';
    this.#o.scheduleAfter(uid, this.#o.failures.containerFailed(pod, container, failed, Date.now()));
    // A failure that left no container brings no PLEG event: one more sync (held by the back-off)
    // publishes the waiting reason now instead of when the back-off ends.
    this.#o.schedule(uid);
  }
}
