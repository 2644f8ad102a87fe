// The Host contract between the HTTP layer (server/, which consumes it) and the kubelet (kubelet/,
// which implements it). A capability a backend lacks is optional here and answers 501 NotImplemented.
import type { Node } from 'kubernetes-types/core/v1.js';
import type { Event, Pod, PodStatus } from '../api/types.js';
import type { WatchFeeds } from '../watch/feeds.js';
import type { Duplex, Writable } from 'node:stream';
import type { CommandResult, LogOptions, PendingStreamIO, StreamIO } from '../streaming/types.js';
import type { NodeMetrics, PodMetrics, Summary } from '../stats/types.js';

/** A pod's running sandbox (its network namespace), resolved before a port-forward upgrade. */
export interface SandboxRef {
  readonly podUID: string;
  readonly namespace: string;
  readonly pod: string;
  /** Runtime ID of the sandbox container. */
  readonly id: string;
}

/** A running container of a pod, resolved before a stream is upgraded. */
export interface ContainerRef {
  readonly podUID: string;
  readonly namespace: string;
  readonly pod: string;
  readonly container: string;
  /** Runtime ID of the running instance. */
  readonly id: string;
}

/** Resource usage from a background sampler's newest samples. No Docker call. */
export interface HostStats {
  /**
   * The `stats/v1alpha1` Summary. Throws when the last sampling round could read nothing (the
   * kubelet's summary provider error). `onlyCpuAndMemory`: the `only_cpu_and_memory=true` form.
   */
  getStatsSummary(opts?: { onlyCpuAndMemory?: boolean }): Summary;
  /** The same samples in Prometheus text, the kubelet's `/metrics/resource`. */
  getResourceMetrics(): string;
  /** `metrics.k8s.io` PodMetrics of the pods in `namespace` (all when undefined) that have a CPU rate. */
  getPodMetrics(namespace: string | undefined): PodMetrics[];
  /** `metrics.k8s.io` NodeMetrics of this node; undefined until it has a CPU rate. */
  getNodeMetrics(): NodeMetrics | undefined;
}

/**
 * The narrow interface the HTTP API reads the node through (the kubelet's `HostInterface`,
 * virtual-kubelet's `Provider`). Everything here except `getRunningPods` is served from memory:
 * routes never call Docker for data the status cache holds.
 */
export interface Host {
  /** The node's name, as pods' `spec.nodeName` carries it. */
  readonly nodeName: string;
  /** Every pod the node manages, each with its newest cached status. O(pods), no I/O. */
  getPods(): Pod[];
  /** Changes whenever `getPods()` would answer differently, so its serialisation can be cached. O(1). */
  podsRevision(): string;
  /** One pod by namespace and name, with its cached status; undefined when unknown. O(1). */
  getPodByName(namespace: string, name: string): Pod | undefined;
  /** The cached status of a pod by UID (mirror pod UIDs are translated). O(1). */
  getPodStatus(uid: string): PodStatus | undefined;
  /** Pods as the runtime reports them right now (the kubelet's `/runningpods/`): calls Docker. */
  getRunningPods(): Promise<Pod[]>;
  /** Recorded events in a namespace (all when undefined) matching `field=value` selectors. */
  getEvents(namespace: string | undefined, fields: ReadonlyMap<string, string>): Event[];
  /** Health checks for `/healthz`: each returns undefined when healthy, else the reason. */
  healthChecks(): Record<string, () => string | undefined>;
  /**
   * The running instance of container `name` in `pod`, from the runtime snapshot (no Docker call).
   * Throws a `StatusError`: 404 when the pod has no such container, 400 when it is not running.
   */
  resolveContainer(pod: Pod, name: string): ContainerRef;
  /**
   * Runs `command` in the container, relaying `io`; resolves with the exit code. With streams to
   * come (`PendingStreamIO`), the command is prepared at once and started when they are all there.
   */
  exec(ref: ContainerRef, command: string[], io: StreamIO | PendingStreamIO): Promise<CommandResult>;
  /** Attaches `io` to the container's main process until it ends or the client leaves. */
  attach(ref: ContainerRef, io: StreamIO): Promise<CommandResult>;
  /**
   * The instance of container `name` whose log to read: the newest (any state), or with
   * `previous` the one before it. Throws a `StatusError`: 404 when the pod has no such container,
   * 400 when the instance does not exist (e.g. `previous` without a restart). No Docker call.
   */
  resolveLogContainer(pod: Pod, name: string, previous: boolean): ContainerRef;
  /** Streams the log of `ref` to `out`; see `Runtime.logs`. */
  logs(ref: ContainerRef, opts: LogOptions, out: Writable, signal: AbortSignal): Promise<void>;
  /**
   * The pod's ready sandbox, for port-forward; throws a `StatusError` (400) when the pod has none.
   * No Docker call.
   */
  resolveSandbox(pod: Pod): SandboxRef;
  /** Relays `stream` to 127.0.0.1:`port` in the sandbox's network namespace; see `Runtime.portForward`. */
  portForward(ref: SandboxRef, port: number, stream: Duplex, signal: AbortSignal): Promise<void>;
  /**
   * Resource usage, an optional capability: a backend without a stats sampler leaves it undefined
   * and the stats routes answer 501 NotImplemented (never empty data).
   */
  readonly stats?: HostStats | undefined;
  /**
   * The change feeds behind `?watch=true` (pods, events, the node) on the node's one
   * resourceVersion clock; list answers read their resourceVersions from them too.
   */
  readonly watch: WatchFeeds;
  /**
   * This node's Node object — the one cluster mode registers — with its resourceVersion. Facts
   * are cached for a few seconds, so this calls Docker at most that often.
   */
  getNode(): Promise<Node>;
  /**
   * Deletes a pod from a local source (a static pod) the way deleting its mirror pod does in a
   * cluster: the pod is killed (SIGTERM, SIGKILL after `gracePeriodSeconds`, default its
   * `terminationGracePeriodSeconds`) and recreated from its manifest. Returns at once with the pod
   * as the apiserver answers a graceful delete (`deletionTimestamp` set). Throws a `StatusError`:
   * 404 for an unknown pod, 405 for a pod the apiserver owns (cluster mode).
   */
  deletePod(namespace: string, name: string, gracePeriodSeconds: number | undefined): Pod;
}
