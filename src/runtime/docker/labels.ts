import type { Container, Pod } from '../../api/types.js';

/**
 * Docker labels nodelet writes, as the kubelet + cri-dockerd write them (kuberuntime/labels.go,
 * cri-dockerd core/helpers.go). Docker has no annotations, so CRI annotations become labels with
 * an `annotation.` prefix. State is rebuilt from these labels after a restart of nodelet.
 */
export const Label = {
  podName: 'io.kubernetes.pod.name',
  podNamespace: 'io.kubernetes.pod.namespace',
  podUID: 'io.kubernetes.pod.uid',
  containerName: 'io.kubernetes.container.name',
  dockerType: 'io.kubernetes.docker.type',
  sandboxID: 'io.kubernetes.sandbox.id',
  logPath: 'io.kubernetes.container.logpath',
  hash: 'annotation.io.kubernetes.container.hash',
  restartCount: 'annotation.io.kubernetes.container.restartCount',
  terminationMessagePath: 'annotation.io.kubernetes.container.terminationMessagePath',
  terminationMessagePolicy: 'annotation.io.kubernetes.container.terminationMessagePolicy',
  terminationGracePeriod: 'annotation.io.kubernetes.pod.terminationGracePeriod',
  ports: 'annotation.io.kubernetes.container.ports',
  containerType: 'annotation.io.kubernetes.container.type',
  /**
   * nodelet's own: the node that owns the container. Several nodelets (or a real kubelet) may
   * share one engine; each adopts and garbage-collects only its own containers.
   */
  node: 'io.nodelet.node',
  /**
   * nodelet's own, on sandboxes: the pod's `status.startTime` (RFC 3339) when the sandbox was
   * created. The kubelet keeps it in its status manager and, in a cluster, the mirror pod; a
   * standalone nodelet has only the engine to remember it across its restarts.
   */
  podStartTime: 'io.nodelet.pod.start-time',
} as const;

export const DockerType = { sandbox: 'podsandbox', container: 'container' } as const;

function podLabels(pod: Pod, node: string): Record<string, string> {
  return {
    [Label.podName]: pod.metadata?.name ?? '',
    [Label.podNamespace]: pod.metadata?.namespace ?? '',
    [Label.podUID]: pod.metadata?.uid ?? '',
    [Label.node]: node,
  };
}

/** Sandbox labels: the pod's own labels, its annotations as `annotation.<key>`, then ours. */
export function sandboxLabels(pod: Pod, node: string, podStartTime?: Date): Record<string, string> {
  const labels: Record<string, string> = { ...(pod.metadata?.labels ?? {}) };
  for (const [k, v] of Object.entries(pod.metadata?.annotations ?? {})) labels[`annotation.${k}`] = v;
  return {
    ...labels,
    ...podLabels(pod, node),
    [Label.containerName]: 'POD',
    [Label.dockerType]: DockerType.sandbox,
    ...(podStartTime ? { [Label.podStartTime]: podStartTime.toISOString() } : {}),
  };
}

export function containerLabels(
  pod: Pod,
  container: Container,
  opts: { node: string; sandboxID: string; hash: string; restartCount: number; logPath: string },
): Record<string, string> {
  const labels: Record<string, string> = {
    ...podLabels(pod, opts.node),
    [Label.containerName]: container.name,
    [Label.dockerType]: DockerType.container,
    [Label.sandboxID]: opts.sandboxID,
    [Label.logPath]: opts.logPath,
    [Label.hash]: opts.hash,
    [Label.restartCount]: String(opts.restartCount),
    [Label.terminationMessagePath]: container.terminationMessagePath ?? '/dev/termination-log',
    [Label.terminationMessagePolicy]: container.terminationMessagePolicy ?? 'File',
    [Label.terminationGracePeriod]: String(pod.spec?.terminationGracePeriodSeconds ?? 30),
    [Label.containerType]: 'container',
  };
  if (container.ports?.length) labels[Label.ports] = JSON.stringify(container.ports);
  return labels;
}

/** kubelet `BuildContainerLogsDirectory` + `buildContainerLogsPath`. */
export function containerLogPath(pod: Pod, container: string, restartCount: number): string {
  const m = pod.metadata ?? {};
  return `/var/log/pods/${m.namespace}_${m.name}_${m.uid}/${container}/${restartCount}.log`;
}
