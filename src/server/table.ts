import type { Node } from 'kubernetes-types/core/v1.js';
import type { ContainerStatus, Event, ListMeta, Namespace, ObjectMeta, Pod, PodStatus } from '../api/types.js';
import type { TableVersion } from './negotiate.js';

/**
 * Server-side printing of pods as a `meta.k8s.io` Table, the way the apiserver answers
 * `kubectl get pods` (pkg/printers/internalversion `printPod`). Pure: the clock is a parameter.
 */

export interface TableColumnDefinition {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format: string;
  description: string;
  priority: number;
}

export interface PartialObjectMetadata {
  kind: 'PartialObjectMetadata';
  apiVersion: string;
  metadata: ObjectMeta;
}

export interface TableRow {
  cells: Array<string | number>;
  object: PartialObjectMetadata;
}

export interface Table {
  kind: 'Table';
  apiVersion: string;
  metadata: ListMeta;
  columnDefinitions: TableColumnDefinition[];
  rows: TableRow[];
}

/** The columns of `kubectl get pods` (`-o wide` shows the priority-1 ones too). */
export const podColumnDefinitions: readonly TableColumnDefinition[] = [
  { name: 'Name', type: 'string', format: 'name', priority: 0, description: 'Name must be unique within a namespace.' },
  { name: 'Ready', type: 'string', format: '', priority: 0, description: 'The aggregate readiness state of this pod for accepting traffic.' },
  { name: 'Status', type: 'string', format: '', priority: 0, description: 'The aggregate status of the containers in this pod.' },
  { name: 'Restarts', type: 'integer', format: '', priority: 0, description: 'The number of times the containers in this pod have been restarted.' },
  { name: 'Age', type: 'string', format: '', priority: 0, description: 'CreationTimestamp is a timestamp representing the server time when this object was created.' },
  { name: 'IP', type: 'string', format: '', priority: 1, description: 'IP address allocated to the pod. Routable at least within the cluster.' },
  { name: 'Node', type: 'string', format: '', priority: 1, description: 'NodeName is the name of the node the pod is scheduled on.' },
];

export function podsToTable(pods: readonly Pod[], now: Date, version: TableVersion = 'v1', resourceVersion = ''): Table {
  return buildTable(podColumnDefinitions, pods, (pod) => podRowCells(pod, now), version, resourceVersion);
}

/**
 * A Table of `items` with one row each (the apiserver's `TableConvertor`, always `Wide`: kubectl
 * hides the priority-1 columns unless `-o wide`). `resourceVersion` is the list's, or for a watch
 * event's one-row table the object's, as `asTable` copies it.
 */
export function buildTable<T extends { metadata?: ObjectMeta }>(
  columns: readonly TableColumnDefinition[],
  items: readonly T[],
  cells: (item: T) => Array<string | number>,
  version: TableVersion,
  resourceVersion: string,
): Table {
  const apiVersion = `meta.k8s.io/${version}`;
  return {
    kind: 'Table',
    apiVersion,
    metadata: { resourceVersion },
    columnDefinitions: columns.map((c) => ({ ...c })),
    rows: items.map((item) => ({
      cells: cells(item),
      object: { kind: 'PartialObjectMetadata', apiVersion, metadata: item.metadata ?? {} },
    })),
  };
}

/** NAME, READY, STATUS, RESTARTS, AGE, IP, NODE for one pod. */
export function podRowCells(pod: Pod, now: Date): [string, string, string, number, string, string, string] {
  const { reason, ready, total, restarts } = summarizePod(pod);
  const created = pod.metadata?.creationTimestamp ?? pod.status?.startTime;
  const age = created ? humanDuration(now.getTime() - Date.parse(created)) : '<unknown>';
  return [
    pod.metadata?.name ?? '',
    `${ready}/${total}`,
    reason,
    restarts,
    age,
    pod.status?.podIP || '<none>',
    pod.spec?.nodeName || '<none>',
  ];
}

interface PodSummary {
  reason: string;
  ready: number;
  total: number;
  restarts: number;
}

/**
 * kubectl's STATUS column: the phase (or `status.reason`), overridden by the first failing or
 * waiting init container (`Init:…`), else by the last container's waiting/terminated reason
 * (`CrashLoopBackOff`, `Completed`, `Error`, `ExitCode:N`), and `Terminating` while deleting.
 */
export function summarizePod(pod: Pod): PodSummary {
  const status: PodStatus = pod.status ?? {};
  const initSpecs = pod.spec?.initContainers ?? [];
  // Restartable init containers (sidecars) count towards READY, as in kubectl ≥ 1.29.
  const sidecars = new Set(initSpecs.filter((c) => c.restartPolicy === 'Always').map((c) => c.name));
  let total = (pod.spec?.containers ?? []).length + sidecars.size;
  let ready = 0;
  let restarts = 0;
  let sidecarRestarts = 0;
  let reason = status.reason || status.phase || '';
  if (total === 0) total = (status.containerStatuses ?? []).length;

  let initializing = false;
  const initStatuses = status.initContainerStatuses ?? [];
  for (let i = 0; i < initStatuses.length; i++) {
    const c = initStatuses[i] as ContainerStatus;
    restarts += c.restartCount ?? 0;
    const state = c.state ?? {};
    if (sidecars.has(c.name)) {
      sidecarRestarts += c.restartCount ?? 0;
      if (c.started && c.ready) ready++;
      if (c.started) continue;
    }
    if (state.terminated && state.terminated.exitCode === 0) continue;
    if (state.terminated) {
      const t = state.terminated;
      reason = t.reason ? `Init:${t.reason}` : t.signal ? `Init:Signal:${t.signal}` : `Init:ExitCode:${t.exitCode}`;
    } else if (state.waiting?.reason && state.waiting.reason !== 'PodInitializing') {
      reason = `Init:${state.waiting.reason}`;
    } else {
      reason = `Init:${i}/${initSpecs.length || initStatuses.length}`;
    }
    initializing = true;
    break;
  }

  const initialized = (status.conditions ?? []).some((c) => c.type === 'Initialized' && c.status === 'True');
  if (!initializing || initialized) {
    // Once running, RESTARTS counts app containers plus sidecars, not finished init containers.
    restarts = sidecarRestarts;
    let hasRunning = false;
    const statuses = status.containerStatuses ?? [];
    // Last container wins, as kubectl iterates in reverse and keeps overwriting.
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i] as ContainerStatus;
      restarts += c.restartCount ?? 0;
      const state = c.state ?? {};
      if (state.waiting?.reason) {
        reason = state.waiting.reason;
      } else if (state.terminated?.reason) {
        reason = state.terminated.reason;
      } else if (state.terminated) {
        reason = state.terminated.signal ? `Signal:${state.terminated.signal}` : `ExitCode:${state.terminated.exitCode}`;
      } else if (c.ready && state.running) {
        hasRunning = true;
        ready++;
      }
    }
    if (reason === 'Completed' && hasRunning) {
      const podReady = (status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
      reason = podReady ? 'Running' : 'NotReady';
    }
  }

  if (pod.metadata?.deletionTimestamp) {
    if (status.reason === 'NodeLost') reason = 'Unknown';
    else if (status.phase !== 'Succeeded' && status.phase !== 'Failed') reason = 'Terminating';
  }
  return { reason, ready, total, restarts };
}

/**
 * apimachinery's `duration.HumanDuration`: `5s`, `2m30s`, `12m`, `5h3m`, `20h`, `3d4h`, `12d`,
 * `2y3d`. Clock skew of up to a second reads as `0s`.
 */
export function humanDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '<unknown>';
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.trunc(hours / 24) % 365;
    const y = Math.trunc(hours / 24 / 365);
    return dy === 0 ? `${y}y` : `${y}y${dy}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/** `translateTimestampSince`: the age of a timestamp, `<unknown>` when there is none. */
export function ageOf(timestamp: string | undefined, now: Date): string {
  if (!timestamp) return '<unknown>';
  const at = Date.parse(timestamp);
  return Number.isNaN(at) ? '<unknown>' : humanDuration(now.getTime() - at);
}

/** The columns of `kubectl get nodes` (printers.go `nodeColumnDefinitions`). */
export const nodeColumnDefinitions: readonly TableColumnDefinition[] = [
  { name: 'Name', type: 'string', format: 'name', priority: 0, description: 'Name must be unique within a namespace.' },
  { name: 'Status', type: 'string', format: '', priority: 0, description: 'The status of the node' },
  { name: 'Roles', type: 'string', format: '', priority: 0, description: 'The roles of the node' },
  { name: 'Age', type: 'string', format: '', priority: 0, description: 'CreationTimestamp is a timestamp representing the server time when this object was created.' },
  { name: 'Version', type: 'string', format: '', priority: 0, description: 'Kubelet Version reported by the node.' },
  { name: 'Internal-IP', type: 'string', format: '', priority: 1, description: 'List of addresses reachable to the node.' },
  { name: 'External-IP', type: 'string', format: '', priority: 1, description: 'List of addresses reachable to the node.' },
  { name: 'OS-Image', type: 'string', format: '', priority: 1, description: 'OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).' },
  { name: 'Kernel-Version', type: 'string', format: '', priority: 1, description: "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)." },
  { name: 'Container-Runtime', type: 'string', format: '', priority: 1, description: 'ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).' },
];

/** `findNodeRoles`: `node-role.kubernetes.io/<role>` label keys and the `kubernetes.io/role` value. */
export function nodeRoles(node: Node): string[] {
  const roles = new Set<string>();
  for (const [k, v] of Object.entries(node.metadata?.labels ?? {})) {
    if (k.startsWith('node-role.kubernetes.io/')) {
      const role = k.slice('node-role.kubernetes.io/'.length);
      if (role !== '') roles.add(role);
    } else if (k === 'kubernetes.io/role' && v !== '') {
      roles.add(v);
    }
  }
  return [...roles].sort();
}

/** NAME, STATUS, ROLES, AGE, VERSION, INTERNAL-IP, EXTERNAL-IP, OS-IMAGE, KERNEL-VERSION, CONTAINER-RUNTIME (`printNode`). */
export function nodeRowCells(node: Node, now: Date): string[] {
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
  const status = [ready ? (ready.status === 'True' ? 'Ready' : 'NotReady') : 'Unknown'];
  if (node.spec?.unschedulable) status.push('SchedulingDisabled');
  const roles = nodeRoles(node).join(',') || '<none>';
  const address = (type: string) => node.status?.addresses?.find((a) => a.type === type)?.address ?? '<none>';
  const info = node.status?.nodeInfo;
  return [
    node.metadata?.name ?? '',
    status.join(','),
    roles,
    ageOf(node.metadata?.creationTimestamp, now),
    info?.kubeletVersion ?? '',
    address('InternalIP'),
    address('ExternalIP'),
    info?.osImage || '<unknown>',
    info?.kernelVersion || '<unknown>',
    info?.containerRuntimeVersion || '<unknown>',
  ];
}

export function nodesToTable(nodes: readonly Node[], now: Date, version: TableVersion = 'v1', resourceVersion = ''): Table {
  return buildTable(nodeColumnDefinitions, nodes, (n) => nodeRowCells(n, now), version, resourceVersion);
}

/** The columns of `kubectl get namespaces`. */
export const namespaceColumnDefinitions: readonly TableColumnDefinition[] = [
  { name: 'Name', type: 'string', format: 'name', priority: 0, description: 'Name must be unique within a namespace.' },
  { name: 'Status', type: 'string', format: '', priority: 0, description: 'The status of the namespace' },
  { name: 'Age', type: 'string', format: '', priority: 0, description: 'CreationTimestamp is a timestamp representing the server time when this object was created.' },
];

export function namespacesToTable(namespaces: readonly Namespace[], now: Date, version: TableVersion = 'v1', resourceVersion = ''): Table {
  return buildTable(namespaceColumnDefinitions, namespaces, (ns) => [ns.metadata?.name ?? '', ns.status?.phase ?? '', ageOf(ns.metadata?.creationTimestamp, now)], version, resourceVersion);
}

/** The columns of `kubectl get events` (printers.go `eventColumnDefinitions`); the priority-1 ones show with `-o wide`. */
export const eventColumnDefinitions: readonly TableColumnDefinition[] = [
  { name: 'Last Seen', type: 'string', format: '', priority: 0, description: 'The time at which the most recent occurrence of this event was recorded.' },
  { name: 'Type', type: 'string', format: '', priority: 0, description: 'Type of this event (Normal, Warning), new types could be added in the future' },
  { name: 'Reason', type: 'string', format: '', priority: 0, description: "This should be a short, machine understandable string that gives the reason for the transition into the object's current status." },
  { name: 'Object', type: 'string', format: '', priority: 0, description: 'The object that this event is about.' },
  { name: 'Subobject', type: 'string', format: '', priority: 1, description: 'If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].' },
  { name: 'Source', type: 'string', format: '', priority: 1, description: 'The component reporting this event. Should be a short machine understandable string.' },
  { name: 'Message', type: 'string', format: '', priority: 0, description: 'A human-readable description of the status of this operation.' },
  { name: 'First Seen', type: 'string', format: '', priority: 1, description: 'The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)' },
  { name: 'Count', type: 'string', format: '', priority: 1, description: 'The number of times this event has occurred.' },
  { name: 'Name', type: 'string', format: 'name', priority: 1, description: 'Name must be unique within a namespace.' },
];

/** LAST SEEN, TYPE, REASON, OBJECT, SUBOBJECT, SOURCE, MESSAGE, FIRST SEEN, COUNT, NAME (`printEvent`, wide). */
export function eventRowCells(event: Event, now: Date): Array<string | number> {
  const first = ageOf(event.firstTimestamp ?? event.eventTime, now);
  let last = event.lastTimestamp ? ageOf(event.lastTimestamp, now) : first;
  let count = event.count ?? 0;
  if (event.series) {
    last = ageOf(event.series.lastObservedTime, now);
    count = event.series.count ?? count;
  } else if (count === 0) {
    count = 1; // singleton events of the events.k8s.io API carry no count
  }
  const kind = (event.involvedObject.kind ?? '').toLowerCase();
  const target = event.involvedObject.name ? `${kind}/${event.involvedObject.name}` : kind;
  const component = event.source?.component || event.reportingComponent || '';
  const instance = event.source?.host || event.reportingInstance || '';
  return [
    last,
    event.type ?? '',
    event.reason ?? '',
    target,
    event.involvedObject.fieldPath ?? '',
    instance ? `${component}, ${instance}` : component,
    (event.message ?? '').trim(),
    first,
    count,
    event.metadata.name ?? '',
  ];
}

export function eventsToTable(events: readonly Event[], now: Date, version: TableVersion = 'v1', resourceVersion = ''): Table {
  return buildTable(eventColumnDefinitions, events, (e) => eventRowCells(e, now), version, resourceVersion);
}
