import { uptime } from 'node:os';
import { StatusError, badRequest, internalError, notFound, unavailable } from '../api/errors.js';
import type { Event, Pod, PodStatus } from '../api/types.js';
import type { Duplex, Writable } from 'node:stream';
import type { CommandResult, LogOptions, PendingStreamIO, StreamIO } from '../streaming/types.js';
import type { EventRecorder } from '../events/recorder.js';
import type { PodManager } from '../pod/manager.js';
import type { Runtime, RuntimePod } from '../runtime/types.js';
import type { ContainerRef, Host, HostStats, SandboxRef } from '../host/index.js';
import type { StatusManager } from '../status/manager.js';
import { buildNodeMetrics, buildPodMetrics } from '../stats/metrics-api.js';
import { renderResourceMetrics } from '../stats/resource-metrics.js';
import type { DiskSnapshot } from '../stats/disk-stats.js';
import { buildSummary } from '../stats/summary.js';
import type { NodeMetrics, PodMetrics, StatsSource, Summary } from '../stats/types.js';
import type { Kubelet } from './kubelet.js';
import type { Node } from 'kubernetes-types/core/v1.js';
import { ConfigSourceAnnotationKey } from '../api/annotations.js';
import { rfc3339 } from '../api/time.js';
import type { NodeSource } from '../node/source.js';
import { ResourceVersionClock } from '../watch/hub.js';
import { EventFeed, NodeFeed, PodFeed, type WatchFeeds } from '../watch/feeds.js';

/** Health thresholds: the relist runs every second, so 30 s without one means the loop is stuck. */
const STALE_AFTER_MS = 30_000;

/** The `Host` the HTTP API reads: pods from the pod manager, statuses from the status cache. */
export class KubeletHost implements Host {
  readonly nodeName: string;
  readonly #pods: PodManager;
  readonly #statuses: StatusManager;
  readonly #runtime: Runtime;
  readonly #recorder: EventRecorder;
  readonly #kubelet: Kubelet;
  /** Undefined without a stats sampler: the stats routes then answer 501. */
  readonly stats: HostStats | undefined;
  /** Fallback node start time where /proc/stat cannot be read. */
  readonly #bootTime = new Date(Date.now() - uptime() * 1000);
  readonly watch: WatchFeeds;
  readonly #nodeSource: NodeSource | undefined;
  /** Pods being deleted through the API, until their old incarnation is gone. */
  readonly #deleting = new Map<string, { deletionTimestamp: string; deletionGracePeriodSeconds: number }>();
  readonly #log: { warn(obj: object, msg: string): void } | undefined;

  constructor(opts: {
    nodeName: string;
    podManager: PodManager;
    statusManager: StatusManager;
    runtime: Runtime;
    recorder: EventRecorder;
    kubelet: Kubelet;
    /** The background stats sampler; without one, the Host has no `stats` (501 on the stats routes). */
    stats?: StatsSource;
    /** The background disk figures (containers' rootfs and logs, local volumes, images) for the summary. */
    diskStats?: { snapshot(): DiskSnapshot };
    /** The Node object's source; without one, `getNode` answers 503. */
    nodeSource?: NodeSource;
    /** The node's resourceVersion clock (default: a fresh one). */
    clock?: ResourceVersionClock;
    log?: { warn(obj: object, msg: string): void };
  }) {
    this.nodeName = opts.nodeName;
    this.#pods = opts.podManager;
    this.#statuses = opts.statusManager;
    this.#runtime = opts.runtime;
    this.#recorder = opts.recorder;
    this.#kubelet = opts.kubelet;
    this.stats = opts.stats ? this.#statsFrom(opts.stats, opts.diskStats) : undefined;
    this.#nodeSource = opts.nodeSource;
    this.#log = opts.log;
    // Watch feeds, fed by change notifications: the pod set, statuses (newest per pod), events, the node.
    const clock = opts.clock ?? new ResourceVersionClock();
    const pods = new PodFeed(clock, {
      pods: () => this.getPods(),
      pod: (uid) => {
        const pod = this.#pods.getPodByUID(uid);
        return pod && this.#withStatus(pod);
      },
    });
    const events = new EventFeed(clock, { list: (ns, fields) => this.#recorder.list(ns, fields) });
    const nodes = new NodeFeed(clock);
    this.#pods.onChange(() => pods.changed());
    this.#statuses.subscribe((update) => pods.changed(update.uid));
    this.#recorder.onRecord((event) => events.recorded(event));
    this.#nodeSource?.onChange((node) => nodes.updated(node));
    this.watch = { clock, pods, events, nodes };
  }

  getPods(): Pod[] {
    return this.#pods.getPods().map((pod) => this.#withStatus(pod));
  }

  podsRevision(): string {
    const pods = this.#pods.revision;
    const statuses = this.#statuses.revision;
    // The same string while nothing changed: the readers' `!==` against their cached revision is
    // then a pointer comparison, and the hot reads (`/pods`, `/podInfo`) build no string per request.
    if (pods !== this.#revisionOf.pods || statuses !== this.#revisionOf.statuses) this.#revisionOf = { pods, statuses, revision: `${pods}/${statuses}` };
    return this.#revisionOf.revision;
  }
  #revisionOf = { pods: -1, statuses: -1, revision: '' };

  getPodByName(namespace: string, name: string): Pod | undefined {
    const pod = this.#pods.getPodByName(namespace, name);
    return pod && this.#withStatus(pod);
  }

  getPodStatus(uid: string): PodStatus | undefined {
    return this.#statuses.getPodStatus(this.#pods.translatePodUID(uid));
  }

  async getRunningPods(): Promise<Pod[]> {
    const pods = await this.#runtime.listPods();
    return pods.filter((p) => p.containers.some((c) => c.state === 'running')).map(runtimePodToPod);
  }

  getEvents(namespace: string | undefined, fields: ReadonlyMap<string, string>): Event[] {
    return this.#recorder.list(namespace, fields);
  }

  healthChecks(): Record<string, () => string | undefined> {
    return {
      syncloop: () => {
        const { lastError, lastSuccess } = this.#kubelet.relistHealth();
        if (lastError !== undefined) return `container runtime unreachable: ${lastError}`;
        const last = this.#kubelet.lastActivity();
        if (!lastSuccess || Date.now() - last > STALE_AFTER_MS) return `sync loop last ran ${last ? Math.round((Date.now() - last) / 1000) + 's ago' : 'never'}`;
        return undefined;
      },
    };
  }

  resolveContainer(pod: Pod, name: string): ContainerRef {
    const uid = pod.metadata?.uid ?? '';
    const podName = pod.metadata?.name ?? '';
    this.#checkInSpec(pod, name);
    const running = this.#kubelet.runtimePod(uid)?.containers.find((c) => c.name === name && c.state === 'running');
    if (!running) {
      const waiting = this.#statuses.getPodStatus(uid)?.containerStatuses?.find((c) => c.name === name)?.state?.waiting?.reason;
      throw badRequest(`container ${name} is not running in pod ${podName}${waiting ? `: ${waiting}` : ''}`);
    }
    return { podUID: uid, namespace: pod.metadata?.namespace ?? '', pod: podName, container: name, id: running.id };
  }

  exec(ref: ContainerRef, command: string[], io: StreamIO | PendingStreamIO): Promise<CommandResult> {
    return this.#runtime.exec(ref.id, command, io);
  }

  attach(ref: ContainerRef, io: StreamIO): Promise<CommandResult> {
    return this.#runtime.attach(ref.id, io);
  }

  resolveLogContainer(pod: Pod, name: string, previous: boolean): ContainerRef {
    const uid = pod.metadata?.uid ?? '';
    const podName = pod.metadata?.name ?? '';
    this.#checkInSpec(pod, name);
    // Instances are newest first; `previous` is the one the current instance replaced.
    const instances = this.#kubelet.runtimePod(uid)?.containers.filter((c) => c.name === name) ?? [];
    const instance = instances[previous ? 1 : 0];
    if (!instance) {
      throw badRequest(previous ? `previous terminated container "${name}" in pod "${podName}" not found` : `container "${name}" in pod "${podName}" is waiting to start: ContainerCreating`);
    }
    return { podUID: uid, namespace: pod.metadata?.namespace ?? '', pod: podName, container: name, id: instance.id };
  }

  logs(ref: ContainerRef, opts: LogOptions, out: Writable, signal: AbortSignal): Promise<void> {
    return this.#runtime.logs(ref.id, opts, out, signal);
  }

  resolveSandbox(pod: Pod): SandboxRef {
    const uid = pod.metadata?.uid ?? '';
    const sandbox = this.#kubelet.runtimePod(uid)?.sandboxes.find((s) => s.ready);
    if (!sandbox) throw badRequest(`pod ${pod.metadata?.name} has no running sandbox: it is not running`);
    return { podUID: uid, namespace: pod.metadata?.namespace ?? '', pod: pod.metadata?.name ?? '', id: sandbox.id };
  }

  portForward(ref: SandboxRef, port: number, stream: Duplex, signal: AbortSignal): Promise<void> {
    return this.#runtime.portForward(ref.id, port, stream, signal);
  }

  #statsFrom(source: StatsSource, disk: { snapshot(): DiskSnapshot } | undefined): HostStats {
    return {
      getStatsSummary: (opts = {}): Summary => {
        const snap = source.snapshot();
        if (snap.failure !== undefined) throw internalError(`failed to get stats summary: ${snap.failure}`);
        const diskSnap = disk?.snapshot();
        return buildSummary(this.nodeName, snap, this.#bootTime, { ...(diskSnap ? { disk: diskSnap } : {}), ...(opts.onlyCpuAndMemory ? { onlyCpuAndMemory: true } : {}) });
      },
      getResourceMetrics: (): string => renderResourceMetrics(source.snapshot()),
      getPodMetrics: (namespace: string | undefined): PodMetrics[] => {
        // metrics-server copies the pod's labels, so `kubectl top pod -l` can select on them.
        const labelsOf = (uid: string) => this.#pods.getPodByUID(uid)?.metadata?.labels;
        return buildPodMetrics(source.snapshot(), new Date(), labelsOf).filter((m) => namespace === undefined || m.metadata.namespace === namespace);
      },
      getNodeMetrics: (): NodeMetrics | undefined => buildNodeMetrics(this.nodeName, source.snapshot(), new Date()),
    };
  }

  async getNode(): Promise<Node> {
    if (!this.#nodeSource) throw unavailable('the node object is not available');
    let node: Node;
    try {
      node = await this.#nodeSource.node();
    } catch (err) {
      throw unavailable(`the node's facts could not be read: ${(err as Error).message}`);
    }
    return this.watch.nodes.updated(node);
  }

  deletePod(namespace: string, name: string, gracePeriodSeconds: number | undefined): Pod {
    const pod = this.#pods.getPodByName(namespace, name);
    if (!pod) throw notFound('pods', name);
    const uid = pod.metadata?.uid ?? '';
    if (pod.metadata?.annotations?.[ConfigSourceAnnotationKey] === 'api') {
      throw new StatusError('MethodNotAllowed', `pod "${name}" comes from the API server: delete it there (kubectl against the API server), not on the node`, { name, kind: 'pods' });
    }
    if (!this.#deleting.has(uid)) {
      const grace = gracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
      this.#deleting.set(uid, { deletionTimestamp: rfc3339(new Date(Date.now() + grace * 1000)), deletionGracePeriodSeconds: grace });
      this.#kubelet
        .restartPod(uid, grace, () => {
          // The old incarnation is gone: watchers see it DELETED; the sync that follows adds the new one.
          this.#deleting.delete(uid);
          this.watch.pods.replaced(uid);
        })
        .catch((err: unknown) => {
          this.#deleting.delete(uid);
          this.watch.pods.changed(uid);
          this.#log?.warn({ err, pod: `${namespace}/${name}`, podUID: uid }, 'Deleting the pod failed');
        });
    }
    // The answer carries the terminating pod at the version watchers see it.
    return this.watch.pods.get(uid) ?? this.#withStatus(pod);
  }

  #checkInSpec(pod: Pod, name: string): void {
    const inSpec = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? []), ...(pod.spec?.ephemeralContainers ?? [])].some((c) => c.name === name);
    if (!inSpec) throw new StatusError('NotFound', `container "${name}" not found in pod "${pod.metadata?.name ?? ''}"`, { name, kind: 'containers' });
  }

  #withStatus(pod: Pod): Pod {
    const uid = pod.metadata?.uid ?? '';
    const status = this.#statuses.getPodStatus(uid);
    const withStatus = status ? { ...pod, status } : pod;
    const deleting = this.#deleting.get(uid);
    return deleting ? { ...withStatus, metadata: { ...withStatus.metadata, ...deleting } } : withStatus;
  }
}

/** The kubelet's `/runningpods/` shape: a Pod per runtime pod with only its running containers. */
function runtimePodToPod(rp: RuntimePod): Pod {
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    metadata: { name: rp.name, namespace: rp.namespace, uid: rp.uid },
    spec: {
      containers: rp.containers.filter((c) => c.state === 'running').map((c) => ({ name: c.name, image: c.image })),
    },
    status: {},
  };
}
