import type { ContainerStatsSample } from '../runtime/types.js';

/**
 * The slice of `k8s.io/kubelet/pkg/apis/stats/v1alpha1` nodelet fills: CPU and memory, which is
 * what metrics-server and `kubectl top` read (`cpu.usageCoreNanoSeconds`,
 * `memory.workingSetBytes`). Field names and JSON spelling are upstream's; optional fields are
 * the Go pointers left nil. Times are RFC 3339 strings.
 */

export interface Summary {
  node: NodeStats;
  pods: PodStats[];
}

export interface NodeStats {
  nodeName: string;
  /** Boot time of the node (the kubelet's `systemBootTime`). */
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
}

export interface PodReference {
  name: string;
  namespace: string;
  uid: string;
}

export interface PodStats {
  podRef: PodReference;
  /** Creation time of the pod's sandbox, as the CRI stats provider reports it. */
  startTime: string;
  containers: ContainerStats[];
  cpu?: CPUStats;
  memory?: MemoryStats;
}

export interface ContainerStats {
  name: string;
  /** Creation time of the container instance. */
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
}

export interface CPUStats {
  time: string;
  /** Rate over the last sampling window; absent until two samples exist. */
  usageNanoCores?: number;
  usageCoreNanoSeconds?: number;
}

export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

/** `metrics.k8s.io/v1beta1` (k8s.io/metrics): what metrics-server serves and `kubectl top` reads. */
export const metricsGroupVersion = 'metrics.k8s.io/v1beta1';

export interface ResourceUsage {
  /** A quantity: nanocores in canonical form, e.g. `3m` or `1234567n`. */
  cpu: string;
  /** A quantity: bytes in canonical binary form, e.g. `2Mi` or `2049Ki`. */
  memory: string;
}

export interface ContainerMetrics {
  name: string;
  usage: ResourceUsage;
}

export interface MetricsObjectMeta {
  name: string;
  namespace?: string;
  creationTimestamp: string;
  labels?: Record<string, string>;
}

export interface PodMetrics {
  kind: 'PodMetrics';
  apiVersion: typeof metricsGroupVersion;
  metadata: MetricsObjectMeta;
  /** When the newest sample was taken. */
  timestamp: string;
  /** The sampling window the CPU rate covers, as a Go duration (`10s`, `9.998s`). */
  window: string;
  containers: ContainerMetrics[];
}

export interface NodeMetrics {
  kind: 'NodeMetrics';
  apiVersion: typeof metricsGroupVersion;
  metadata: MetricsObjectMeta;
  timestamp: string;
  window: string;
  usage: ResourceUsage;
}

export interface MetricsList<T> {
  kind: 'PodMetricsList' | 'NodeMetricsList';
  apiVersion: typeof metricsGroupVersion;
  metadata: Record<string, never>;
  items: T[];
}

/** What the sampler knows about one running container or sandbox of a pod. */
export interface StatsTarget {
  readonly id: string;
  readonly podUID: string;
  readonly podName: string;
  readonly namespace: string;
  /** The pod's start: creation of its ready sandbox. */
  readonly podStartTime: Date;
  /** Container name from the pod spec; empty for the sandbox. */
  readonly name: string;
  /** The sandbox (pause) container: counted in pod totals, never listed as a container. */
  readonly sandbox: boolean;
  readonly startTime: Date;
}

export interface SampledContainer {
  readonly target: StatsTarget;
  readonly latest: ContainerStatsSample;
  /** The sample before `latest`, when there is one. */
  readonly previous?: ContainerStatsSample;
  /** CPU rate between `previous` and `latest`. */
  readonly usageNanoCores?: number;
}

/** Node-wide figures from /proc (the kubelet reads the root cgroup through cadvisor). */
export interface NodeSample {
  readonly timestamp: Date;
  readonly bootTime: Date;
  readonly cpuUsageCoreNanoSeconds: number;
  readonly usageNanoCores?: number;
  /** Milliseconds between the two samples the rate covers. */
  readonly windowMs?: number;
  readonly memoryUsageBytes: number;
  readonly memoryWorkingSetBytes: number;
  readonly memoryAvailableBytes: number;
  readonly memoryRssBytes?: number;
}

/** One consistent view, replaced whole at the end of every sampling round. */
export interface StatsSnapshot {
  /** When the round that produced this view started; undefined before the first round. */
  readonly takenAt?: Date;
  readonly containers: readonly SampledContainer[];
  readonly node?: NodeSample;
  /** Set when the last round could read no container at all (the runtime is unreachable). */
  readonly failure?: string;
}

export interface StatsSource {
  snapshot(): StatsSnapshot;
}
