/**
 * The pod network as the runtime sees it: cri-dockerd's `network.NetworkPlugin`
 * (Mirantis/cri-dockerd `network/plugins.go`) reduced to what nodelet calls. `network/cni`
 * implements it by executing CNI plugins itself; without `--network-plugin` there is none and
 * sandboxes keep the Docker network they are given (`--pod-network`, default `none`).
 */

/** One `hostPort` of the pod, in CNI's `portMappings` capability form (containernetworking/cni's CONVENTIONS.md). */
export interface PortMapping {
  readonly hostPort: number;
  readonly containerPort: number;
  /** Lower case, as cri-dockerd passes it: `tcp`, `udp`, `sctp`. */
  readonly protocol: 'tcp' | 'udp' | 'sctp';
  /** Absent or `''`: every address of the node. */
  readonly hostIP?: string;
}

/** CNI's `bandwidth` capability, from the pod's `kubernetes.io/{ingress,egress}-bandwidth` annotations. */
export interface Bandwidth {
  /** Bits per second. */
  readonly ingressRate?: number;
  readonly ingressBurst?: number;
  readonly egressRate?: number;
  readonly egressBurst?: number;
}

/** Who a sandbox's network belongs to: CNI_CONTAINERID and the `K8S_POD_*` CNI_ARGS. */
export interface PodNetworkIdentity {
  /** The sandbox (infra container) ID: `CNI_CONTAINERID` and `K8S_POD_INFRA_CONTAINER_ID`. */
  readonly sandboxId: string;
  readonly podNamespace: string;
  readonly podName: string;
  readonly podUID: string;
}

export interface PodNetworkSetUp extends PodNetworkIdentity {
  /** `/proc/<sandbox pid>/ns/net`. */
  readonly netnsPath: string;
  readonly portMappings: readonly PortMapping[];
  readonly bandwidth?: Bandwidth;
}

export interface PodNetworkTearDown extends PodNetworkIdentity {
  /** Absent when the sandbox no longer runs (CNI_NETNS is then empty, as the spec allows for DEL). */
  readonly netnsPath?: string;
}

/** What the network gave a sandbox. */
export interface PodNetworkStatus {
  /**
   * The pod's IPs, primary first (the first IPv4 of the container interface, then the first
   * IPv6), without prefix length: at most one per family, as `status.podIPs`.
   */
  readonly ips: readonly string[];
}

/** The network's readiness, as the runtime's `NetworkReady` condition. */
export type NetworkReadiness =
  | { readonly ready: true }
  /** `reason` is cri-dockerd's `NetworkPluginNotReady`; `message` e.g. `cni config uninitialized`. */
  | { readonly ready: false; readonly reason: string; readonly message: string };

export interface NetworkPlugin {
  /** `cni`: the value of `--network-plugin`. */
  readonly name: string;
  /** Whether pod-network sandboxes can be set up now (a valid config is loaded, a PodCIDR known if one is needed). */
  readiness(): NetworkReadiness;
  /**
   * Whether the default network now loaded declares a CNI capability (`portMappings`: whether
   * `hostPort`s can be published at all; a pod asking for one on a network without it is refused).
   */
  hasCapability(name: string): boolean;
  /**
   * ADD: the loopback network, then the default one, on the sandbox's netns. Resolves with the
   * pod's IPs; rejects with the plugin's error text (the caller tears the sandbox down, DEL
   * included, and retries with its back-off). Calls for one sandbox are serialised.
   */
  setUpPod(pod: PodNetworkSetUp): Promise<PodNetworkStatus>;
  /**
   * DEL: the default network (with the cached ADD result as `prevResult` and the cached config
   * when the conf dir changed since), then loopback. Idempotent: a sandbox never set up, already
   * torn down, or whose netns is gone resolves. Removes the cached result on success.
   */
  tearDownPod(pod: PodNetworkTearDown): Promise<void>;
  /** The cached ADD result of a sandbox (survives restarts of nodelet and Docker), or undefined. */
  podNetworkStatus(sandboxId: string): PodNetworkStatus | undefined;
  /**
   * Releases what sandboxes that no longer exist still hold: DEL (no netns) for each cached
   * attachment whose sandbox is not in `liveSandboxIds`, then IPAM leases (host-local files) held
   * by container IDs that are neither live nor cached. Resolves with the sandbox IDs released.
   */
  garbageCollect(liveSandboxIds: ReadonlySet<string>): Promise<string[]>;
  /** `Node.spec.podCIDRs` (cluster mode): passed as the `ipRanges` capability; the first value received is kept. */
  setPodCIDRs(cidrs: readonly string[]): void;
  /** Loads the config now and then every few seconds (cri-dockerd: 5 s) until stopped. */
  start(): Promise<void>;
  stop(): void;
}
