// The eviction manager's data (pkg/kubelet/eviction/api/types.go and types.go of the kubelet):
// signals, thresholds, the node readings it observes and the per-pod usage it ranks pods by.
// Pure types; the readings are produced by the kubelet side of nodelet, the manager only reads them.

/** The eviction signals nodelet observes (a subset of evictionapi.Signal: see thresholds.ts). */
export type Signal = 'memory.available' | 'nodefs.available' | 'nodefs.inodesFree'
  | 'imagefs.available' | 'imagefs.inodesFree' | 'pid.available';

/** How a quantity prints (apimachinery's resource.Format): kept from the text it was parsed from. */
export type QuantityFormat = 'DecimalSI' | 'BinarySI' | 'DecimalExponent';

/** A threshold value: an absolute quantity (bytes, inodes, pids) or a fraction of capacity (0..1]. */
export type ThresholdValue =
  | { readonly quantity: bigint; /** How the configured text printed (`100Mi` stays `100Mi`); BinarySI when absent. */ readonly format?: QuantityFormat }
  | { readonly percentage: number };

export interface Threshold {
  readonly signal: Signal;
  readonly operator: 'LessThan';
  readonly value: ThresholdValue;
  /** 0 for hard thresholds; the soft grace period otherwise. */
  readonly gracePeriodMs: number;
  readonly minReclaim?: ThresholdValue;
}

/** The raw KubeletConfiguration maps, as given (keys are signal names, values quantities or "10%"). */
export interface EvictionConfigMaps {
  readonly evictionHard: Readonly<Record<string, string>>;
  readonly evictionSoft: Readonly<Record<string, string>>;
  readonly evictionSoftGracePeriod: Readonly<Record<string, string>>; // Go durations "1m30s"
  readonly evictionMinimumReclaim: Readonly<Record<string, string>>;
}

/** Filesystem reading (bytes; inodes where the filesystem has them). */
export interface FsReading {
  readonly availableBytes: bigint;
  readonly capacityBytes: bigint;
  readonly inodesFree?: bigint;
  readonly inodes?: bigint;
}

/** One cheap reading of the node (the kubelet builds these from the summary: makeSignalObservations). */
export interface NodeReadings {
  readonly time: number; // ms since epoch of the reading
  /** memory.available = capacity − working set of the node (root cgroup). */
  readonly memory?: { readonly availableBytes: bigint; readonly capacityBytes: bigint };
  /** The filesystem of --root-dir (pod volumes, logs). */
  readonly nodefs?: FsReading;
  /** The engine's image/container filesystem. */
  readonly imagefs?: FsReading;
  /** True when imagefs is a different filesystem from nodefs (the kubelet's hasDedicatedImageFs). */
  readonly dedicatedImageFs: boolean;
  /** pid.available = min(pid_max, threads-max) − processes now. */
  readonly pid?: { readonly available: bigint; readonly capacity: bigint };
}

/** What a pod uses, measured on demand (only the parts asked for are filled). */
export interface PodUsage {
  readonly memoryWorkingSetBytes?: bigint;
  /**
   * Per container (by name): working set, bytes. Optional: only the eviction message uses it
   * (helpers.go `evictionMessage` names the containers using more than they requested).
   */
  readonly containerMemoryBytes?: ReadonlyMap<string, bigint>;
  /** Per container (by name): writable layer + log files, bytes (the kubelet's rootfs + logs). */
  readonly containerBytes?: ReadonlyMap<string, bigint>;
  /**
   * Per container (by name): the log-file part of `containerBytes`. Optional: with a dedicated
   * imagefs the kubelet charges logs to nodefs and the writable layer to imagefs; without this
   * split all of `containerBytes` counts as writable layer.
   */
  readonly containerLogBytes?: ReadonlyMap<string, bigint>;
  /** Per local volume (by volume name) counted in ephemeral storage (emptyDir on disk, …), bytes. */
  readonly volumeBytes?: ReadonlyMap<string, bigint>;
  /** Inodes used by the pod's writable layers, logs and local volumes. */
  readonly inodes?: bigint;
  readonly processes?: bigint;
}

/**
 * The parts of PodUsage a pass asks for: `memory` → memoryWorkingSetBytes (and
 * containerMemoryBytes for the message); `disk` → containerBytes, containerLogBytes, volumeBytes;
 * `inodes` → inodes; `pids` → processes.
 */
export interface UsageNeeds { readonly memory?: boolean; readonly disk?: boolean; readonly inodes?: boolean; readonly pids?: boolean }

/** How a pod is ended by eviction (fed to the kubelet's kill path; the status is built from it). */
export interface Eviction {
  readonly reason: 'Evicted';
  readonly message: string;
  /** The event's annotations (offending_containers, offending_containers_usage, starved_resource). */
  readonly annotations: Readonly<Record<string, string>>;
  /** 'TerminationByKubelet' for pressure evictions (DisruptionTarget condition), absent for local-storage limit evictions, as 1.34 does. */
  readonly disruption?: 'TerminationByKubelet';
}

export type NodeCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** The resource a signal starves (helpers.go `signalToResource`): what pods are ranked by. */
export type StarvedResource = 'memory' | 'ephemeral-storage' | 'inodes' | 'pids';

/** One signal's observation (helpers.go `signalObservation`): available and capacity in its unit, and when. */
export interface Observation {
  readonly available: bigint;
  readonly capacity: bigint;
  /** ms since epoch of the reading it came from. */
  readonly time: number;
}

/** The observed signals of one reading (helpers.go `signalObservations`); absent signals are not observed. */
export type Observations = ReadonlyMap<Signal, Observation>;
