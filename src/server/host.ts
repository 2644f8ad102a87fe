import type { Event, Pod, PodStatus } from '../api/types.js';

/**
 * The narrow interface the HTTP API reads the node through (the kubelet's `HostInterface`,
 * virtual-kubelet's `Provider`). Everything here except `getRunningPods` is served from memory:
 * routes never call Docker for data the status cache holds.
 */
export interface Host {
  /** The node's name, as pods' `spec.nodeName` carries it. */
  readonly nodeName: string;
  /** Every pod the node manages, each with its newest cached status. O(pods), no I/O. */
  getPods(): Pod[];
  /** One pod by namespace and name, with its cached status; undefined when unknown. O(1). */
  getPodByName(namespace: string, name: string): Pod | undefined;
  /** The cached status of a pod by UID (mirror pod UIDs are translated). O(1). */
  getPodStatus(uid: string): PodStatus | undefined;
  /** Pods as the runtime reports them right now (the kubelet's `/runningpods/`): calls Docker. */
  getRunningPods(): Promise<Pod[]>;
  /** Recorded events in a namespace (all when undefined) matching `field=value` selectors. */
  getEvents(namespace: string | undefined, fields: ReadonlyMap<string, string>): Event[];
  /** Health checks for `/healthz`: each returns undefined when healthy, else the reason. */
  healthChecks(): Record<string, () => string | undefined>;
}
