import type { NodeCondition, Taint } from 'kubernetes-types/core/v1.js';
import { quantityOf } from '../api/quantity.js';
import { rfc3339 } from '../api/time.js';
import type { Node, NodeStatus } from '../api/types.js';
import { jsonEqual, withoutEmpty } from '../status/normalize.js';
import { DECLARED_FEATURES } from './declared-features.js';

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
    // Set with every status, as the kubelet's setNodeStatus does (pkg/kubelet/kubelet_node_status.go).
    declaredFeatures: [...DECLARED_FEATURES],
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

/**
 * Whether sending `next` (a strategic-merge patch `{status: next}`) would change the apiserver's
 * copy `held` beyond heartbeat times — the kubelet's `updateNode` + `nodeStatusHasChanged`
 * (pkg/kubelet/kubelet_node_status.go), which apply the setters to the fetched Node and compare
 * the result with it, so whatever another writer changed there (the node lifecycle controller's
 * `Unknown` conditions) counts as a change. What the patch leaves alone is not compared: another
 * writer's conditions and addresses (both merge by `type`), fields nodelet does not set
 * (`volumesInUse`, `config`, `nodeInfo.swap`). Quantities compare by value (`4Gi` = `4194304Ki`),
 * and empty values as absent, so the apiserver's copy of what nodelet sent compares equal.
 */
export function nodeStatusDiffers(held: NodeStatus | undefined, next: NodeStatus): boolean {
  if (!held) return true;
  const withoutHeartbeat = ({ lastHeartbeatTime: _h, ...rest }: NodeCondition) => rest;
  for (const c of next.conditions ?? []) {
    const h = held.conditions?.find((o) => o.type === c.type);
    if (!h || !jsonEqual(withoutEmpty(withoutHeartbeat(h)), withoutEmpty(withoutHeartbeat(c)))) return true;
  }
  const types = new Set((next.addresses ?? []).map((a) => a.type));
  const heldAddresses = (held.addresses ?? []).filter((a) => types.has(a.type));
  if (!jsonEqual(withoutEmpty(heldAddresses), withoutEmpty(next.addresses ?? []))) return true;
  for (const key of ['capacity', 'allocatable'] as const) {
    for (const [resource, quantity] of Object.entries(next[key] ?? {})) {
      const h = held[key]?.[resource];
      if (h === undefined || quantityOf(h) !== quantityOf(quantity)) return true;
    }
  }
  const rest = (s: NodeStatus) => {
    const { conditions: _c, addresses: _a, capacity: _cap, allocatable: _alloc, ...others } = s;
    return others as Record<string, unknown>;
  };
  return patchChanges(rest(held), rest(next));
}

/** Whether merging `patch` into `held` changes it: objects merge key by key, anything else is replaced. */
function patchChanges(held: unknown, patch: unknown): boolean {
  if (patch !== null && typeof patch === 'object' && !Array.isArray(patch)) {
    const h = held !== null && typeof held === 'object' && !Array.isArray(held) ? (held as Record<string, unknown>) : {};
    return Object.entries(patch).some(([k, v]) => v !== undefined && patchChanges(h[k], v));
  }
  return !jsonEqual(withoutEmpty(held), withoutEmpty(patch));
}
