import type { Pod } from 'kubernetes-types/core/v1.js';
import type { Config } from '../config/types.js';
import type { NodeSpecOptions } from '../node/object.js';
import type { EventRecorder } from '../events/recorder.js';
import type { Logger } from '../logging/index.js';
import type { PodManager } from '../pod/manager.js';
import type { StatusManager } from '../status/manager.js';
import type { KubeClient } from '../apiserver/client.js';
import { EventSink } from './event-sink.js';
import { MirrorPods } from './mirror-pods.js';
import { NodeController } from './node-controller.js';
import { NodeWatch } from './node-watch.js';
import type { Node } from '../api/types.js';
import type { NodeSource } from '../node/source.js';
import { ApiPodSource } from './pod-source.js';
import { StatusSync } from './status-sync.js';

export { ApiserverObjects } from './objects.js';

export interface ClusterModeOptions {
  config: Config;
  client: KubeClient;
  /** The node's facts (cached) and health, shared with the local /api/v1/nodes routes. */
  nodeSource: NodeSource;
  /** `--node-labels` and `--register-with-taints`, parsed once by the caller (the node source has the same). */
  nodeSpec: NodeSpecOptions;
  podManager: PodManager;
  statusManager: StatusManager;
  recorder: EventRecorder;
  /** The pods the apiserver binds to this node, after the first list and every change. */
  onPods: (pods: Pod[]) => void;
  hasRunningContainers: (uid: string) => boolean;
  /** The node's own Node as the apiserver holds it, after each change (undefined once deleted): what admission checks pods against. */
  onNode?: (node: Node | undefined) => void;
  /** Receives `Node.spec.podCIDRs` once the controller-manager set them (the network plugin's `ipRanges`). */
  podCIDRs?: (cidrs: readonly string[]) => void;
  log: Logger;
  /** Timing overrides for tests. */
  timing?: { resyncMs?: number; mirrorPeriodMs?: number; minWatchTimeoutSeconds?: number };
}

/**
 * nodelet as a node of a cluster: every loop that talks to the apiserver, started and stopped
 * together. `stop()` also closes `client`.
 */
export interface ClusterMode {
  readonly node: NodeController;
  /** The watch on the node's own Node (src/cluster/node-watch.ts). */
  readonly nodeWatch: NodeWatch;
  readonly pods: ApiPodSource;
  readonly statusSync: StatusSync;
  readonly mirrorPods: MirrorPods;
  readonly events: EventSink;
  /** Pods changed (any source): mirror pods may need creating or deleting. */
  podsChanged(): void;
  /** A terminating pod stopped: its API object may be deleted now. */
  podTerminated(uid: string): void;
  /** The kubelet reported a pod `Failed` it will not run (`Kubelet.rejectPod`): its status is delivered although no source runs it. */
  podRejected(pod: Pod): void;
  stop(): Promise<void>;
}

export function startClusterMode(o: ClusterModeOptions): ClusterMode {
  const log = o.log.child({ component: 'cluster' });
  const { config, client } = o;
  const node = new NodeController({
    client,
    nodeName: config.nodeName,
    facts: () => o.nodeSource.facts(),
    health: () => o.nodeSource.health(),
    spec: o.nodeSpec,
    register: config.registerNode,
    updateFrequencyMs: config.nodeStatusUpdateFrequencyMs,
    reportFrequencyMs: config.nodeStatusReportFrequencyMs,
    leaseDurationSeconds: config.nodeLeaseDurationSeconds,
    ...(o.podCIDRs ? { podCIDRs: o.podCIDRs } : {}),
    log,
  });
  // The pod watch is created below; the status sync reads its cache only once running.
  let pods: ApiPodSource | undefined;
  const statusSync = new StatusSync({
    client,
    statusManager: o.statusManager,
    podManager: o.podManager,
    hasRunningContainers: o.hasRunningContainers,
    apiserverPod: (uid) => pods?.get(uid),
    log,
    ...(o.timing?.resyncMs ? { resyncMs: o.timing.resyncMs } : {}),
  });
  const mirrorPods = new MirrorPods({
    client,
    podManager: o.podManager,
    nodeName: config.nodeName,
    nodeUID: () => node.nodeUID(),
    onCreated: () => o.statusManager.resync(),
    log,
    ...(o.timing?.mirrorPeriodMs ? { periodMs: o.timing.mirrorPeriodMs } : {}),
  });
  pods = new ApiPodSource({
    client,
    nodeName: config.nodeName,
    log,
    onPods: (list) => {
      statusSync.forgetRejected(new Set(list.map((p) => p.metadata?.uid ?? '')));
      o.onPods(list);
    },
    ...(o.timing?.minWatchTimeoutSeconds ? { minWatchTimeoutSeconds: o.timing.minWatchTimeoutSeconds } : {}),
  });
  const nodeWatch = new NodeWatch({
    client,
    nodeName: config.nodeName,
    log,
    onNode: (n) => o.onNode?.(n),
    ...(o.timing?.minWatchTimeoutSeconds ? { minWatchTimeoutSeconds: o.timing.minWatchTimeoutSeconds } : {}),
  });
  const events = new EventSink({ client, log });
  o.recorder.onRecord((event) => events.push(event));

  let stopped = false;
  node.start();
  nodeWatch.start();
  // The kubelet watches its pods only once its Node is in the node informer (pkg/kubelet/config/
  // apiserver.go `NewSourceApiserver` waits for `nodeHasSynced`): no pod is admitted against the
  // registered labels while the apiserver's differ.
  void nodeWatch.synced().then(() => {
    if (!stopped) pods.start();
  });
  statusSync.start();
  mirrorPods.start();
  log.info({ server: client.server, node: config.nodeName }, 'Cluster mode: syncing with the API server');

  return {
    node,
    nodeWatch,
    pods,
    statusSync,
    mirrorPods,
    events,
    podsChanged: () => mirrorPods.reconcile(),
    podTerminated: (uid) => void statusSync.maybeDelete(uid),
    podRejected: (pod) => statusSync.trackRejected(pod),
    async stop() {
      stopped = true;
      statusSync.stop();
      const done = Promise.all([pods.stop(), mirrorPods.stop(), node.stop(), nodeWatch.stop(), events.stop()]);
      // In-flight requests fail at once instead of running into their timeouts.
      client.close();
      await done;
    },
  };
}
