import type { Pod } from '../api/types.js';
import type { EventRecorder } from '../events/recorder.js';
import type { Logger } from '../logging/index.js';
import type { Metrics } from '../metrics/registry.js';
import type { PodManager } from '../pod/manager.js';
import type { Runtime } from '../runtime/types.js';
import type { StatusManager } from '../status/manager.js';
import type { NodeCgroups } from '../cgroups/node-cgroups.js';
import type { NodeDNS } from '../volumes/resolv-conf.js';
import type { VolumeManager } from '../volumes/manager.js';
import type { PodObjectSource } from '../volumes/source.js';
import type { AdmissionRefusal } from './admission.js';
import type { Backoff } from './backoff.js';
import type { ContainerGCPolicy } from './container-gc.js';
import type { ImagePullManager } from './image-pull-manager.js';

/**
 * What `Kubelet` (src/kubelet/kubelet.ts) is built from, and what it tells its listeners: the
 * kubelet's `KubeletDeps` and configuration as nodelet needs them (pkg/kubelet/kubelet.go
 * `NewMainKubelet`).
 */
export interface KubeletOptions {
  nodeName: string;
  nodeIP: string;
  runtime: Runtime;
  podManager: PodManager;
  statusManager: StatusManager;
  recorder: EventRecorder;
  log: Logger;
  /** Every pod is re-synced this often even without events (`syncFrequency`). */
  syncFrequencyMs: number;
  relistPeriodMs?: number;
  /** Crash-loop back-off; injectable so tests can shorten it. */
  backoff?: Backoff;
  /**
   * Back-off between failed sandbox creations (default 1 s doubling to 10 s, the kubelet's pod
   * worker back-off): a runtime that refuses sandboxes is not asked again on every PLEG event.
   */
  sandboxBackoff?: Backoff;
  metrics?: Metrics;
  /** Sets up pod volumes before containers start and removes them with the pod; absent: pods with volumes are refused. */
  volumes?: VolumeManager;
  /** The apiserver's secrets and configMaps for `env` and `envFrom` (cluster mode); absent standalone. */
  objects?: PodObjectSource;
  /** Who may reuse a pulled image (`KubeletEnsureSecretPulledImages`); absent: any pod may use any present image. */
  imagePullManager?: ImagePullManager;
  /** `--root-dir`: where each container instance's termination-message file lives. */
  rootDir?: string;
  /** `--cluster-dns`, `--cluster-domain`, `--resolv-conf`: each sandbox's resolv.conf and FQDN (absent: no cluster DNS, the node's /etc/resolv.conf). */
  dns?: Omit<NodeDNS, 'nodeIPs'>;
  /** Pod cgroups (`cgroupsPerQOS`, src/cgroups/); absent: pods run in the engine's default cgroups. */
  podCgroups?: Pick<NodeCgroups, 'ensurePod' | 'removePod'> & Partial<Pick<NodeCgroups, 'resizePod'>>;
  /**
   * OOM scores by QoS (pkg/kubelet/qos/policy.go): the node's memory capacity, and whether scores
   * below 0 can be set here (`CAP_SYS_RESOURCE`); absent: the engine's default score.
   */
  oomScores?: { readonly memoryCapacity: bigint; readonly canLower: boolean };
  /** The container GC's policy (default: the kubelet's) and period (default 1 min, `ContainerGCPeriod`). */
  containerGC?: { policy?: ContainerGCPolicy; periodMs?: number };
}

/** What the kubelet tells its listeners (`Kubelet.on`). */
export interface KubeletEvents {
  /**
   * A pod being deleted (`deletionTimestamp`) has no running container left and its terminal
   * status is published: cluster mode may now delete the pod object.
   */
  podTerminated: [uid: string];
  /** A pod the node will not run was reported `Failed` (`rejectPod`): cluster mode delivers that status although no source runs it. */
  podRejected: [pod: Pod, refusal: AdmissionRefusal];
}
