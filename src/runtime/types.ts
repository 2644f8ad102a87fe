import type { Container, Pod } from '../api/types.js';
import type { Duplex, Writable } from 'node:stream';
import type { CommandResult, LogOptions, PendingStreamIO, StreamIO } from '../streaming/types.js';
import type { NetworkReadiness } from '../network/types.js';

export type { NetworkReadiness } from '../network/types.js';

/**
 * What nodelet needs from a container runtime. `runtime/docker` implements it with dockerode; the
 * kubelet side (src/kubelet) never sees Docker objects, only these snapshots.
 */

export type RuntimeContainerState = 'created' | 'running' | 'exited' | 'unknown';

/** One container instance (one attempt) of a pod, as last observed. */
export interface RuntimeContainer {
  /** Runtime ID, without the `docker://` prefix. */
  readonly id: string;
  /** The pod spec's container name. */
  readonly name: string;
  /** The attempt number from the name `k8s_<name>_<pod>_<ns>_<uid>_<attempt>`. */
  readonly attempt: number;
  /** `annotation.io.kubernetes.container.restartCount`. */
  readonly restartCount: number;
  /** `annotation.io.kubernetes.container.hash`: the spec hash the instance was created from. */
  readonly hash: string;
  /** Image as named in the spec, and the resolved image ID (`sha256:…`). */
  readonly image: string;
  readonly imageID: string;
  readonly state: RuntimeContainerState;
  readonly createdAt: Date;
  readonly startedAt?: Date;
  readonly finishedAt?: Date;
  readonly exitCode?: number;
  /** `OOMKilled`, `Completed`, `Error` or `ContainerCannotRun` for exited containers. */
  readonly reason?: string;
  /** Runtime error text (Docker `State.Error`), or the termination message. */
  readonly message?: string;
  /** The pod's `terminationGracePeriodSeconds` when the instance was created (for orphans). */
  readonly gracePeriodSeconds?: number;
  /**
   * The sandbox the instance was created in (`io.kubernetes.sandbox.id`, the CRI's
   * `PodSandboxId`): a sandbox that some container still names is kept by the container GC.
   */
  readonly sandboxId?: string;
  /**
   * The cpu and memory settings the runtime holds for the instance, read back (the CRI's
   * `ContainerResources` as the kubelet converts them, pkg/kubelet/kuberuntime/
   * kuberuntime_container_linux.go `toKubeContainerResources`); absent when not inspected.
   */
  readonly resources?: RuntimeContainerResources;
}

/** A container's applied cpu and memory, in the API's units. */
export interface RuntimeContainerResources {
  /** The cpu request the cgroup's shares stand for (`sharesToMilliCPU`), in millicores. */
  readonly cpuRequestMilli: number;
  /** The cpu limit its CFS quota stands for (`quotaToMilliCPU`), in millicores; 0: none. */
  readonly cpuLimitMilli: number;
  /** The memory limit in bytes; 0: none. */
  readonly memoryLimitBytes: number;
}

/** One sandbox (infra container) instance of a pod. */
export interface RuntimeSandbox {
  readonly id: string;
  readonly attempt: number;
  readonly ready: boolean;
  /**
   * The sandbox's container runs (it may still not be ready: no pod network); absent where the
   * runtime does not say, read as `ready`.
   */
  readonly running?: boolean;
  readonly createdAt: Date;
  /**
   * The pod's `status.startTime` as recorded on the sandbox when it was created (nodelet's label
   * `io.nodelet.pod.start-time`), so that a restarted nodelet reports the instant it reported
   * before; absent on sandboxes created without it.
   */
  readonly podStartTime?: Date;
  /** Pod IPs from the sandbox's network settings; empty with network `none`. */
  readonly ips: readonly string[];
}

/** Everything the runtime holds for one pod UID. Lists are newest first. */
export interface RuntimePod {
  readonly uid: string;
  readonly name: string;
  readonly namespace: string;
  readonly sandboxes: readonly RuntimeSandbox[];
  readonly containers: readonly RuntimeContainer[];
}

/**
 * One reading of a container's cgroup counters (Docker's stats API, one-shot). Cumulative CPU
 * time and instantaneous memory, the inputs of the kubelet's `stats/v1alpha1` container stats.
 */
export interface ContainerStatsSample {
  /** When the runtime read the counters. */
  readonly timestamp: Date;
  /** CPU time used since the container started, all cores, in nanoseconds. */
  readonly cpuUsageCoreNanoSeconds: number;
  /** Memory charged to the cgroup, page cache included. */
  readonly memoryUsageBytes: number;
  /** Usage minus inactive file pages (cadvisor's working set, what eviction and `top` use). */
  readonly memoryWorkingSetBytes: number;
  /** Anonymous memory and swap cache, when the cgroup reports it. */
  readonly memoryRssBytes?: number;
  readonly pageFaults?: number;
  readonly majorPageFaults?: number;
}

export type ImagePullPolicy = 'Always' | 'IfNotPresent' | 'Never';

/**
 * Credentials for one pull (Docker's `X-Registry-Auth`), from an image pull secret: the registry
 * is the image's own, so no server address is sent.
 */
export interface RegistryAuth {
  readonly username: string;
  readonly password: string;
  readonly email?: string;
}

/**
 * The credentials to try, in order, when an image must be pulled; called only then (reading
 * them may cost apiserver requests). Empty: an anonymous pull.
 */
export type PullCredentials = () => Promise<readonly RegistryAuth[]>;

/** A pulled image, and which of the credentials given pulled it (their index; absent: anonymously). */
export interface PulledImage extends ImageInfo {
  readonly credentialIndex?: number;
}

/** A present image: its ID (`sha256:…`) and the user its config runs as (`""` for the default, root). */
export interface ImageInfo {
  readonly id: string;
  readonly user: string;
  /** The image's size as the engine reports it (the `Image size` of the kubelet's Pulled event). */
  readonly sizeBytes: number;
}

/** One bind mount of a host path (a pod volume, or a file or directory inside one) into a container. */
export interface Mount {
  readonly hostPath: string;
  readonly containerPath: string;
  readonly readOnly: boolean;
  /**
   * For read-only mounts: whether mounts below `hostPath` are read-only too (`Enabled`), stay
   * as they are (`Disabled`, the Kubernetes default) or become read-only where the kernel can.
   */
  readonly recursiveReadOnly?: 'Disabled' | 'IfPossible' | 'Enabled';
}

/**
 * A container's security settings, resolved from the pod's and container's securityContext
 * (refused fields never get here).
 */
export interface ContainerSecurity {
  /** `uid`, `uid:gid` or `name:gid`; absent: the image's user. */
  readonly user?: string;
  /** Supplementary groups: fsGroup, then supplementalGroups. */
  readonly groupAdd: readonly number[];
  readonly privileged: boolean;
  readonly readOnlyRootfs: boolean;
  /** `allowPrivilegeEscalation: false`. */
  readonly noNewPrivileges: boolean;
  readonly capAdd: readonly string[];
  readonly capDrop: readonly string[];
  /** The runtime's default seccomp profile, or none. */
  readonly seccomp: 'RuntimeDefault' | 'Unconfined';
  /** The runtime's default AppArmor profile (where the host has AppArmor), or none. */
  readonly appArmor: 'RuntimeDefault' | 'Unconfined';
  /** SELinux label options (`label=level:s0:c1`), from `seLinuxOptions`. */
  readonly seLinuxLabels?: readonly string[];
}

/**
 * Everything the kubelet side resolved for one container start: the final environment
 * (`NAME=value`, downward API, configMaps and secrets already read), bind mounts, and `command`
 * and `args` after `$(VAR)` expansion (absent: the image's entrypoint and cmd), and the
 * security settings.
 */
export interface ContainerConfig {
  readonly env: readonly string[];
  readonly mounts: readonly Mount[];
  readonly command?: readonly string[];
  readonly args?: readonly string[];
  readonly security: ContainerSecurity;
  /** An ephemeral container's `targetContainerName`, resolved: the container whose PID namespace it joins. */
  readonly pidNamespaceOf?: string;
  /** The pod's cgroup (absent: the engine's default parent). */
  readonly cgroupParent?: string;
  /** The process's `oom_score_adj` (the kubelet's by QoS, pkg/kubelet/qos/policy.go). */
  readonly oomScoreAdj?: number;
}

/**
 * What the kubelet resolved for a pod's sandbox (`generatePodSandboxConfig`): the hostname its
 * UTS namespace gets (`GetNodenameForKernel`: the short name or, with `setHostnameAsFQDN`, the
 * FQDN); absent for host-network pods, which keep the node's.
 */
export interface SandboxConfig {
  readonly hostname?: string;
  /** The pod's cgroup (absent: the engine's default parent). */
  readonly cgroupParent?: string;
  /** The sandbox process's `oom_score_adj` (`PodInfraOOMAdj`, as dockershim and cri-dockerd set it). */
  readonly oomScoreAdj?: number;
  /** The pod's `status.startTime`, recorded on the sandbox (see `RuntimeSandbox.podStartTime`). */
  readonly podStartTime?: Date;
  /**
   * Called once with the sandbox's ID when its container exists and before it starts (a runtime
   * whose sandbox is one call calls it never): the caller may create the pod's first container
   * (`Runtime.createContainer`) while the sandbox starts and its network is set up.
   */
  readonly onCreated?: (sandboxId: string) => void;
}

/** What the node reports of its container engine: `docker://<version>` (or `podman://…`) and its images. */
export interface EngineFacts {
  readonly runtimeVersion: string;
  readonly images: readonly { readonly names: readonly string[]; readonly sizeBytes: number }[];
}

/** A sandbox just started: its ID and the IPs its pod network gave it (primary first; none on `none`). */
export interface StartedSandbox {
  readonly id: string;
  readonly ips: readonly string[];
}

/** The pod network as the runtime reports it (the CRI `RuntimeStatus` condition `NetworkReady`). */
export interface RuntimeNetworkStatus {
  readonly readiness: NetworkReadiness;
  /** Whether pod-network pods' `hostPort`s are published (the network's CNI `portMappings` capability). */
  readonly hostPorts: boolean;
}

export interface Runtime {
  /** Every pod this node owns, rebuilt from labels (never from nodelet's memory). */
  listPods(): Promise<RuntimePod[]>;
  /** The image as the engine has it (CRI `ImageStatus`), or undefined when it is not present. */
  imageStatus(image: string): Promise<ImageInfo | undefined>;
  /**
   * Pulls `image` (CRI `PullImage`): anonymously without credentials, else with each in turn
   * until one succeeds; throws the engine's error (all of them, aggregated, when every one fails).
   * When to pull — the pull policy, events, back-off — is the kubelet's (src/kubelet/images.ts).
   */
  pullImage(image: string, credentials: readonly RegistryAuth[]): Promise<PulledImage>;
  /**
   * Creates and starts a sandbox (with `config`'s hostname when given) and, unless the pod uses
   * the host's network, sets up its pod network (CRI `RunPodSandbox`). A network that cannot be
   * set up fails the call with the plugin's message, the sandbox torn down and removed.
   */
  runSandbox(pod: Pod, attempt: number, config?: SandboxConfig): Promise<StartedSandbox>;
  /**
   * Tears the sandbox's pod network down, then stops it (CRI `StopPodSandbox`); a missing or
   * stopped sandbox is fine. Rejects with the network's error after stopping the sandbox anyway.
   */
  stopSandbox(id: string): Promise<void>;
  /** The pod network's readiness now (cheap: no engine call). */
  networkStatus(): RuntimeNetworkStatus;
  /**
   * Creates and starts one container inside the sandbox with the resolved `config` (the spec's
   * `env`, `command`, `args` and volume mounts are not read again); returns its ID.
   */
  startContainer(pod: Pod, container: Container, sandbox: RuntimeSandbox, attempt: number, config: ContainerConfig): Promise<string>;
  /**
   * `startContainer` in two steps (CRI `CreateContainer`, then `StartContainer`): creates the
   * container and resolves to its ID; `startCreatedContainer` starts it. The sandbox need only
   * exist, not run, so a new pod's first container can be created while its sandbox starts. A
   * created container that is not to be started is removed with `removeContainer`. Optional: a
   * runtime without them is only asked for `startContainer`.
   */
  createContainer?(pod: Pod, container: Container, sandbox: RuntimeSandbox, attempt: number, config: ContainerConfig): Promise<string>;
  startCreatedContainer?(id: string): Promise<void>;
  /** SIGTERM, then SIGKILL after `graceSeconds`; a missing or stopped container is fine. */
  stopContainer(id: string, graceSeconds: number): Promise<void>;
  /** Removes a stopped container; a missing one is fine. */
  removeContainer(id: string): Promise<void>;
  /**
   * Calls `onChange` with the pod UID whenever a container of a pod changes state, and `onStream`
   * (when given) with whether those calls can be relied on: true once the engine's event stream is
   * up (every change from then on is reported), false when it ended (until it is up again, changes
   * may go unreported). Returns a stop function.
   */
  watch(onChange: (podUID: string) => void, onStream?: (up: boolean) => void): () => void;
  /** Resolves when the runtime answers; rejects otherwise. */
  ping(): Promise<void>;
  /**
   * Runs `cmd` in a running container, relaying `io`; resolves with its exit code. With streams to
   * come (`PendingStreamIO`), the exec is created at once and started only once they are all there
   * (never when `io` rejects).
   */
  exec(containerId: string, cmd: string[], io: StreamIO | PendingStreamIO): Promise<CommandResult>;
  /** Attaches `io` to a running container's main process until its streams end. */
  attach(containerId: string, io: StreamIO): Promise<CommandResult>;
  /**
   * Writes a container's log to `out` (respecting backpressure) and resolves when done: at the
   * end of the log, or with `follow` when the container stops, or when `signal` aborts.
   */
  logs(containerId: string, opts: LogOptions, out: Writable, signal: AbortSignal): Promise<void>;
  /**
   * Connects `stream` to `127.0.0.1:port` (or `host`:`port`, an IP literal: probes and hooks)
   * inside the sandbox's network namespace and relays both ways (half-closes passed on) until
   * either side ends; rejects when nothing listens there.
   */
  portForward(sandboxId: string, port: number, stream: Duplex, signal: AbortSignal, host?: string): Promise<void>;
  /** One reading of a running container's CPU and memory counters; rejects for a stopped one. */
  containerStats(containerId: string): Promise<ContainerStatsSample>;
  /**
   * Applies `container`'s cpu and memory resources to the running container in place (CRI
   * `UpdateContainerResources`), with the conversions its creation used; rejects with the
   * engine's error (an engine without the update refuses it). Absent: in-place resize is refused.
   */
  updateContainerResources?(containerId: string, container: Container): Promise<void>;
}
