import type { Node, NodeCondition, NodeStatus, Taint } from 'kubernetes-types/core/v1.js';
import { rfc3339 } from '../api/time.js';

/**
 * The Node object this nodelet stands for, built from facts read off the host and the container
 * engine. Pure, so the apiserver registration (cluster mode) and any local `/api/v1/nodes` route
 * serve the same object. Field values follow the kubelet's node status setters
 * (pkg/kubelet/nodestatus/setters.go).
 */

export interface NodeFacts {
  readonly nodeName: string;
  readonly hostname: string;
  readonly nodeIP: string;
  /** The HTTPS port the apiserver dials (`daemonEndpoints.kubeletEndpoint.Port`). */
  readonly port: number;
  readonly kubeletVersion: string;
  /** `docker://28.2.2` or `podman://4.3.1`. */
  readonly containerRuntimeVersion: string;
  readonly kernelVersion: string;
  readonly osImage: string;
  readonly operatingSystem: string;
  /** GOARCH spelling: `amd64`, `arm64`. */
  readonly architecture: string;
  readonly machineID: string;
  readonly systemUUID: string;
  readonly bootID: string;
  readonly cpuCores: number;
  readonly memoryBytes: number;
  readonly ephemeralStorageBytes: number;
  readonly maxPods: number;
  readonly images: readonly { names: string[]; sizeBytes: number }[];
}

/** What changes from one status update to the next. */
export interface NodeHealth {
  /** Undefined when ready; otherwise why not (becomes the Ready condition's message). */
  readonly notReadyReason?: string;
  readonly memoryPressure: boolean;
  readonly diskPressure: boolean;
  readonly pidPressure: boolean;
}

export interface NodeSpecOptions {
  /** `--node-labels`, merged over the well-known labels. */
  readonly labels: Readonly<Record<string, string>>;
  /** `--register-with-taints`, applied at registration only. */
  readonly taints: readonly Taint[];
}

/** The kubelet reports at most this many images (`nodeStatusMaxImages`, default 50). */
const MAX_IMAGES = 50;

/** The well-known labels the kubelet sets on its Node (`kubernetes.io/hostname`, os, arch). */
export function nodeLabels(facts: NodeFacts, opts: NodeSpecOptions): Record<string, string> {
  return {
    'kubernetes.io/hostname': facts.nodeName,
    'kubernetes.io/os': facts.operatingSystem,
    'kubernetes.io/arch': facts.architecture,
    'beta.kubernetes.io/os': facts.operatingSystem,
    'beta.kubernetes.io/arch': facts.architecture,
    ...opts.labels,
  };
}

/** The object POSTed at registration. */
export function initialNode(facts: NodeFacts, opts: NodeSpecOptions, health: NodeHealth, now: Date): Node {
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: facts.nodeName,
      labels: nodeLabels(facts, opts),
      annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
    },
    spec: opts.taints.length ? { taints: [...opts.taints] } : {},
    status: nodeStatus(facts, health, undefined, now),
  };
}

/**
 * The node's status. `previous` carries the conditions' last transition times: a condition's
 * `lastTransitionTime` moves only when its status does; `lastHeartbeatTime` is always now.
 */
export function nodeStatus(facts: NodeFacts, health: NodeHealth, previous: NodeStatus | undefined, now: Date): NodeStatus {
  const capacity = {
    cpu: String(facts.cpuCores),
    memory: `${Math.floor(facts.memoryBytes / 1024)}Ki`,
    pods: String(facts.maxPods),
    'ephemeral-storage': `${Math.floor(facts.ephemeralStorageBytes / 1024)}Ki`,
  };
  const at = rfc3339(now);
  const condition = (type: string, status: boolean, reasonTrue: string, messageTrue: string, reasonFalse: string, messageFalse: string): NodeCondition => {
    const value = status ? 'True' : 'False';
    const prev = previous?.conditions?.find((c) => c.type === type);
    return {
      type,
      status: value,
      reason: status ? reasonTrue : reasonFalse,
      message: status ? messageTrue : messageFalse,
      lastHeartbeatTime: at,
      lastTransitionTime: prev?.status === value && prev.lastTransitionTime ? prev.lastTransitionTime : at,
    };
  };
  const ready = health.notReadyReason === undefined;
  return {
    capacity,
    // Nothing is reserved for system daemons (no --kube-reserved/--system-reserved).
    allocatable: { ...capacity },
    conditions: [
      condition('MemoryPressure', health.memoryPressure, 'KubeletHasInsufficientMemory', 'kubelet has insufficient memory available', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
      condition('DiskPressure', health.diskPressure, 'KubeletHasDiskPressure', 'kubelet has disk pressure', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
      condition('PIDPressure', health.pidPressure, 'KubeletHasInsufficientPID', 'kubelet has insufficient PID available', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
      condition('Ready', ready, 'KubeletReady', 'kubelet is posting ready status', 'KubeletNotReady', health.notReadyReason ?? ''),
    ],
    addresses: [
      { type: 'InternalIP', address: facts.nodeIP },
      { type: 'Hostname', address: facts.hostname },
    ],
    daemonEndpoints: { kubeletEndpoint: { Port: facts.port } },
    nodeInfo: {
      machineID: facts.machineID,
      systemUUID: facts.systemUUID,
      bootID: facts.bootID,
      kernelVersion: facts.kernelVersion,
      osImage: facts.osImage,
      containerRuntimeVersion: facts.containerRuntimeVersion,
      kubeletVersion: facts.kubeletVersion,
      kubeProxyVersion: '',
      operatingSystem: facts.operatingSystem,
      architecture: facts.architecture,
    },
    images: [...facts.images].sort((a, b) => b.sizeBytes - a.sizeBytes).slice(0, MAX_IMAGES).map((i) => ({ names: [...i.names], sizeBytes: i.sizeBytes })),
  };
}

/**
 * Whether `next` says something `prev` did not, ignoring heartbeat times: the kubelet sends the
 * status when this is true, and otherwise only every `nodeStatusReportFrequency`.
 */
export function nodeStatusChanged(prev: NodeStatus | undefined, next: NodeStatus): boolean {
  if (!prev) return true;
  const strip = (s: NodeStatus) => JSON.stringify({ ...s, conditions: (s.conditions ?? []).map(({ lastHeartbeatTime: _h, ...rest }) => rest) });
  return strip(prev) !== strip(next);
}
