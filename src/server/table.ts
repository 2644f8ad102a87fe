import type { ContainerStatus, ListMeta, ObjectMeta, Pod, PodStatus } from '../api/types.js';
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

export function podsToTable(pods: readonly Pod[], now: Date, version: TableVersion = 'v1'): Table {
  const apiVersion = `meta.k8s.io/${version}`;
  return {
    kind: 'Table',
    apiVersion,
    metadata: { resourceVersion: '' },
    columnDefinitions: podColumnDefinitions.map((c) => ({ ...c })),
    rows: pods.map((pod) => ({
      cells: podRowCells(pod, now),
      object: { kind: 'PartialObjectMetadata', apiVersion, metadata: pod.metadata ?? {} },
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
