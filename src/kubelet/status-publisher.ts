import { rfc3339 } from '../api/time.js';
import type { Pod } from '../api/types.js';
import type { Metrics } from '../metrics/registry.js';
import type { RuntimePod } from '../runtime/types.js';
import type { StatusManager } from '../status/manager.js';
import type { Waiting } from './pod-actions.js';
import { failedStatus, type PodFailure } from './pod-failure.js';
import { generatePodStatus } from './pod-status.js';
import type { ProberManager } from './prober/manager.js';
import type { ResizeManager } from './resize-manager.js';
import type { StartFailures } from './start-failures.js';

export interface StatusPublisherOptions {
  /** The node's IP: each pod's `hostIP`. */
  nodeIP: string;
  status: Pick<StatusManager, 'getPodStatus' | 'setPodStatus'>;
  /** The start-failure memory: the waiting reasons of starts held back. */
  failures: Pick<StartFailures, 'waiting'>;
  /** The probe results that make containers ready and started. */
  prober: Pick<ProberManager, 'isReady' | 'isStarted'>;
  /** Allocated resources and resize conditions (`ResizeManager.status`). */
  resize: Pick<ResizeManager, 'status'>;
  metrics?: Pick<Metrics, 'podStartDuration'> | undefined;
}

/**
 * Publishes a pod's status to the status manager (the kubelet's `generateAPIPodStatus` then
 * `statusManager.SetPodStatus`, pkg/kubelet/kubelet_pods.go and kubelet.go `SyncPod`): generated
 * from the PLEG snapshot, the held-back starts and the probes, with the resize conditions, and
 * failed with the node's reason when the node ends the pod. Also the clock of
 * `kubelet_pod_start_duration_seconds`: when each pod was first synced, until it first runs.
 */
export class StatusPublisher {
  readonly #o: StatusPublisherOptions;
  /** When each pod was first synced, until it first runs (`kubelet_pod_start_duration_seconds`; a metric's clock, not a start failure). */
  readonly #firstSeen = new Map<string, number>();

  constructor(opts: StatusPublisherOptions) {
    this.#o = opts;
  }

  /** A pod synced with nothing of it in the runtime yet: its start duration counts from `now` (the first such sync). */
  seen(uid: string, now: number): void {
    if (!this.#firstSeen.has(uid)) this.#firstSeen.set(uid, now);
  }

  /** Forgets the pod's start clock (gone, or recreated from scratch). */
  forget(uid: string): void {
    this.#firstSeen.delete(uid);
  }

  #probeResults(uid: string): NonNullable<Parameters<typeof generatePodStatus>[2]['probes']> {
    return {
      ready: (name, id) => this.#o.prober.isReady(uid, name, id),
      started: (name, id) => this.#o.prober.isStarted(uid, name, id),
    };
  }

  publish(pod: Pod, runtimePod: RuntimePod | undefined, waiting: ReadonlyMap<string, Waiting>, terminal = false, failure?: PodFailure): void {
    // The start time its oldest sandbox recorded (or, on sandboxes from before the label, when
    // that sandbox was created): stable across restarts of nodelet.
    const firstSandbox = runtimePod?.sandboxes.at(-1);
    const recorded: Pod = firstSandbox && !pod.status?.startTime
      ? { ...pod, status: { ...pod.status, startTime: rfc3339(firstSandbox.podStartTime ?? firstSandbox.createdAt) } }
      : pod;
    const allWaiting = this.#o.failures.waiting(pod, runtimePod, waiting);
    const previous = this.#o.status.getPodStatus(pod.metadata?.uid ?? '') ?? pod.status;
    const generated = generatePodStatus(recorded, runtimePod, { hostIP: this.#o.nodeIP, waiting: allWaiting, now: new Date(), terminal, probes: this.#probeResults(pod.metadata?.uid ?? ''), previous });
    const status = this.#o.resize.status(pod, runtimePod, failure ? failedStatus(generated, failure, pod) : generated);
    this.#o.status.setPodStatus(recorded, status);
    const uid = pod.metadata?.uid ?? '';
    const firstSeen = this.#firstSeen.get(uid);
    if (firstSeen !== undefined && status.phase === 'Running') {
      this.#firstSeen.delete(uid);
      this.#o.metrics?.podStartDuration.observe((Date.now() - firstSeen) / 1000);
    }
  }
}
