// Kubernetes object types come from the maintained `kubernetes-types` package; this module only
// re-exports what nodelet uses so imports stay short and in one place.
import type { Container as ContainerV130, EnvVar as EnvVarV130, EnvVarSource as EnvVarSourceV130, Lifecycle as LifecycleV130, Node as NodeV130, NodeStatus as NodeStatusV130, Pod as PodV130, PodCondition as PodConditionV130, PodSpec as PodSpecV130, PodStatus as PodStatusV130, ResourceRequirements } from 'kubernetes-types/core/v1.js';

export type {
  PodList,
  ContainerStatus,
  ContainerState,
  Event,
  EventList,
  Namespace,
  ObjectReference,
} from 'kubernetes-types/core/v1.js';
export type { ObjectMeta, Status, StatusCause, APIResourceList, APIResource, ListMeta } from 'kubernetes-types/meta/v1.js';

// The fields a 1.34–1.37 apiserver has that kubernetes-types (last published for 1.30) lacks are
// added here, each from k8s.io/api/core/v1/types.go of the control plane's pin (v0.37.2). No
// maintained package has 1.37's types in this plain-JSON shape: @kubernetes/client-node's models
// are generated classes (timestamps as `Date`, `_continue`), kubernetes-models' interfaces stop
// short of 1.37's APIs (no certificates.k8s.io ClusterTrustBundle or PodCertificateRequest).

/** A pod condition; `observedGeneration` (PodObservedGenerationTracking, on since 1.34). */
export interface PodCondition extends PodConditionV130 {
  /** The `metadata.generation` of the pod this condition was set from. */
  observedGeneration?: number;
}

/** A pod's status; `observedGeneration` (PodObservedGenerationTracking, on since 1.34). */
export interface PodStatus extends Omit<PodStatusV130, 'conditions'> {
  conditions?: PodCondition[];
  /** The `metadata.generation` of the pod the kubelet last acted on. */
  observedGeneration?: number;
  /** The pod's requests as allocated (`resource.PodRequests`; InPlacePodLevelResourcesVerticalScaling). */
  allocatedResources?: Record<string, string>;
  /** The pod-level resources its cgroup holds (InPlacePodLevelResourcesVerticalScaling). */
  resources?: Pick<ResourceRequirements, 'limits' | 'requests'>;
}

/** A pod's spec; pod-level `resources` (PodLevelResources, on since 1.34) and `hostnameOverride`. */
/** A container's lifecycle; `stopSignal` (ContainerStopSignals, alpha since 1.33). */
export interface Lifecycle extends LifecycleV130 {
  /** The signal that stops the container (the engine's stop signal), instead of the image's. */
  stopSignal?: string;
}

/** `env[].valueFrom.fileKeyRef` (EnvFiles, on since 1.35): a key of an env file in an emptyDir volume. */
export interface FileKeySelector {
  volumeName: string;
  /** Relative to the volume's root. */
  path: string;
  key: string;
  optional?: boolean;
}

export interface EnvVarSource extends EnvVarSourceV130 {
  fileKeyRef?: FileKeySelector;
}

export interface EnvVar extends Omit<EnvVarV130, 'valueFrom'> {
  valueFrom?: EnvVarSource;
}

/** `restartPolicyRules[]` (ContainerRestartRules, beta and on since 1.35): how an exit of the container is handled. */
export interface ContainerRestartRule {
  /** `Restart`, or `RestartAllContainers` (RestartAllContainersOnContainerExits, on since 1.36). */
  action: string;
  exitCodes?: {
    /** `In` or `NotIn`. */
    operator: string;
    /** At most 255. */
    values?: number[];
  };
}

/** A container; its `lifecycle` with `stopSignal`, its `env` with `fileKeyRef`, its `restartPolicyRules`. */
export interface Container extends Omit<ContainerV130, 'lifecycle' | 'env'> {
  lifecycle?: Lifecycle;
  env?: EnvVar[];
  restartPolicyRules?: ContainerRestartRule[];
}

export interface PodSpec extends Omit<PodSpecV130, 'containers' | 'initContainers'> {
  containers: Container[];
  initContainers?: Container[];
  /** The pod's hostname as given (HostnameOverride, on since 1.35): no domain, no FQDN. */
  hostnameOverride?: string;
  /** Requests and limits of the whole pod (cpu, memory, hugepages): its cgroup's limits and its QoS class. */
  resources?: Pick<ResourceRequirements, 'limits' | 'requests'>;
}

export interface Pod extends Omit<PodV130, 'status' | 'spec'> {
  spec?: PodSpec;
  status?: PodStatus;
}

/**
 * A node's status; `declaredFeatures` (NodeDeclaredFeatures, GA since 1.37; `listType=atomic`):
 * the node-declared feature names (k8s.io/component-helpers/nodedeclaredfeatures) the node
 * implements. The apiserver reads it to decide how to stream to the node, the scheduler and the
 * NodeDeclaredFeatureValidator admission plugin to keep pods off nodes that lack a feature.
 */
export interface NodeStatus extends NodeStatusV130 {
  declaredFeatures?: string[];
}

export interface Node extends Omit<NodeV130, 'status'> {
  status?: NodeStatus;
}
