import type { ContainerStatsSample } from '../runtime/types.js';
import type { CgroupReading } from './cgroup-stats.js';
import type { HostReading } from './host.js';
import type { PressureReading } from './psi.js';

/**
 * The slice of `k8s.io/kubelet/pkg/apis/stats/v1alpha1` (staging/src/k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go)
 * nodelet fills: CPU and memory (what metrics-server and `kubectl top` read:
 * `cpu.usageCoreNanoSeconds`, `memory.workingSetBytes`), filesystems, rlimit, processes and PSI.
 * Field names and JSON spelling are upstream's; optional fields are the Go pointers left nil.
 * Times are RFC 3339 strings; byte and inode counts are JSON numbers (exact below 2^53).
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
  /** IO pressure (`KubeletPSI`). */
  io?: IOStats;
  /** The filesystem of `--root-dir` (nodefs). */
  fs?: FsStats;
  runtime?: RuntimeStats;
  rlimit?: RlimitStats;
}

/** The engine's image filesystem (imagefs): its data root, with `usedBytes` the images' size. */
export interface RuntimeStats {
  imageFs?: FsStats;
}

/** `maxpid`: min(kernel.pid_max, kernel.threads-max); `curproc`: the tasks on the node now. */
export interface RlimitStats {
  time: string;
  maxpid?: number;
  curproc?: number;
}

export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

/** A pod volume's figures: its filesystem's capacity and what the volume's tree uses. */
export interface VolumeStats extends FsStats {
  name: string;
}

export interface ProcessStats {
  process_count?: number;
}

/** One line of a pressure file: stall percentages over 10/60/300 s and the cumulative stall (µs, the kernel's `total`). */
export interface PSIData {
  total: number;
  avg10: number;
  avg60: number;
  avg300: number;
}

/** `full` and `some` of a resource's pressure (Go zero values where the kernel has no such line). */
export interface PSIStats {
  full: PSIData;
  some: PSIData;
}

export interface IOStats {
  time: string;
  psi?: PSIStats;
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
  io?: IOStats;
  /** Local ephemeral volumes (emptyDir on disk), from the background walk. */
  volume?: VolumeStats[];
  /** Containers' writable layers and logs plus the local volumes (helper.go `calcEphemeralStorage`). */
  'ephemeral-storage'?: FsStats;
  process_stats?: ProcessStats;
}

export interface ContainerStats {
  name: string;
  /** Creation time of the container instance. */
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  io?: IOStats;
  /** The writable layer (`SizeRw`) on the image filesystem. */
  rootfs?: FsStats;
  /** The container's log files. */
  logs?: FsStats;
}

export interface CPUStats {
  time: string;
  /** Rate over the last sampling window; absent until two samples exist. */
  usageNanoCores?: number;
  usageCoreNanoSeconds?: number;
  psi?: PSIStats;
}

export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
  psi?: PSIStats;
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

/** A pod cgroup's newest reading and the CPU rate since the one before. */
export interface PodCgroupSample {
  readonly latest: CgroupReading;
  readonly usageNanoCores?: number;
  readonly windowMs?: number;
}

/** One consistent view, replaced whole at the end of every sampling round. */
export interface StatsSnapshot {
  /** When the round that produced this view started; undefined before the first round. */
  readonly takenAt?: Date;
  readonly containers: readonly SampledContainer[];
  readonly node?: NodeSample;
  /** Node filesystems, rlimit and pressure from the last round that read them. */
  readonly host?: HostReading;
  /** Pods' own cgroups by pod UID (pods with cgroups; the others are summed from their containers). */
  readonly podCgroups?: ReadonlyMap<string, PodCgroupSample>;
  /** Containers' pressure by container ID (cgroup v2). */
  readonly containerPressure?: ReadonlyMap<string, PressureReading>;
  /** Set when the last round could read no container at all (the runtime is unreachable). */
  readonly failure?: string;
}

export interface StatsSource {
  snapshot(): StatsSnapshot;
}
