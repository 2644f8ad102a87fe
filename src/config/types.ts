import type { VerificationPolicy } from './image-credentials.js';
/**
 * nodelet's whole configuration, frozen once built from defaults ← `--config` file ← flags.
 * Field names follow the kubelet's KubeletConfiguration (kubelet.config.k8s.io/v1beta1) where one
 * exists; durations are milliseconds.
 */
export interface Config {
  /** IP address to serve on (`--address`). */
  readonly address: string;
  /** Port to serve on (`--port`, default 10250). */
  readonly port: number;
  /** Directory of static pod manifests (`--pod-manifest-path`, `staticPodPath`); empty = none. */
  readonly staticPodPath: string;
  /** How often the static pod directory is rescanned (`--file-check-frequency`, default 20s). */
  readonly fileCheckFrequencyMs: number;
  /** How often every pod is re-synced even without events (`syncFrequency`, default 1m). */
  readonly syncFrequencyMs: number;
  /** The node's name: `--hostname-override`, else the lower-cased host name. */
  readonly nodeName: string;
  /** The node's IP reported as `hostIP` (`--node-ip`); empty = first non-internal IPv4, else 127.0.0.1. */
  readonly nodeIP: string;
  /** Docker endpoint (`--docker-endpoint`): `unix:///path`, `tcp://host:port`. */
  readonly dockerEndpoint: string;
  /** Image of each pod's sandbox container (`--pod-infra-container-image`). */
  readonly podInfraContainerImage: string;
  /** nodelet's state directory (`--root-dir`, default /var/lib/nodelet). */
  readonly rootDir: string;
  /** Log verbosity (`-v`/`--v`, klog levels, default 2). */
  readonly verbosity: number;
  /** `--logging-format`: `text` or `json`. */
  readonly loggingFormat: 'text' | 'json';
  /** Docker network of pod sandboxes (`--pod-network`, nodelet's own flag; default `none`). */
  readonly podNetwork: string;
  /**
   * `--network-plugin` (cri-dockerd's flag): `cni` sets pod networks up by executing CNI plugins
   * (src/network/cni); `''` leaves sandboxes on `podNetwork`.
   */
  readonly networkPlugin: '' | 'cni';
  /** `--cni-bin-dir`: directories searched in order for CNI plugin executables. */
  readonly cniBinDirs: readonly string[];
  /** `--cni-conf-dir`: where the network configuration (`.conflist`, `.conf`, `.json`) is read. */
  readonly cniConfDir: string;
  /** `--cni-cache-dir`: libcni's result cache, read back at start and for DEL. */
  readonly cniCacheDir: string;
  /** `--container-ulimits` as given (`auto`, `none` or `nofile=S:H,…`; nodelet's own), checked at start-up; parsed by config/ulimits. */
  readonly containerUlimits: string;
  /** `containerLogMaxSize` (10Mi) as given: a quantity, checked at start-up; `containerLogMaxSizeBytes` of it. */
  readonly containerLogMaxSize: string;
  /** `containerLogMaxFiles` (5, at least 2): log files kept per container, the written one included. */
  readonly containerLogMaxFiles: number;
  /**
   * `cgroupsPerQOS` (true): each pod in a cgroup of its own below `kubepods` and its QoS class
   * (src/cgroups/). Where the node cannot have them (no local engine on the cgroupfs driver, no
   * writable cgroup filesystem) pods run without, with a warning — unless it was set explicitly
   * (`cgroupsPerQOSRequired`), when such pods fail to start with the reason.
   */
  readonly cgroupsPerQOS: boolean;
  /** Whether `cgroupsPerQOS` was given (flag or config file) rather than defaulted. */
  readonly cgroupsPerQOSRequired: boolean;
  /** `cgroupRoot` (`/`): the cgroup `kubepods` is made in. */
  readonly cgroupRoot: string;
  /** `cgroupDriver` (`cgroupfs`): must be the engine's; `systemd` is refused at start-up when pod cgroups are on. */
  readonly cgroupDriver: 'cgroupfs' | 'systemd';
  /** `podPidsLimit` (`--pod-max-pids`, -1): most processes in one pod's cgroup; -1 unlimited. */
  readonly podPidsLimit: number;
  /** `imageGCHighThresholdPercent` (85): image GC runs when the image filesystem is this full; 100 turns it off. */
  readonly imageGCHighThresholdPercent: number;
  /** `imageGCLowThresholdPercent` (80): image GC frees down to this; below the high threshold. */
  readonly imageGCLowThresholdPercent: number;
  /** `imageMinimumGCAge` (2 min): an image seen more recently is never removed. */
  readonly imageMinimumGCAgeMs: number;
  /** `imageMaximumGCAge` (0: off): an image unused this long is removed whatever the disk usage. */
  readonly imageMaximumGCAgeMs: number;
  /** `imagePullCredentialsVerificationPolicy` (NeverVerifyPreloadedImages): who may reuse an image on the node. */
  readonly imagePullCredentialsVerificationPolicy: VerificationPolicy;
  /** `preloadedImagesVerificationAllowlist`: preloaded images used unverified (only with NeverVerifyAllowlistedImages). */
  readonly preloadedImagesVerificationAllowlist: readonly string[];
  /** `--maximum-dead-containers-per-container` (1): dead instances the container GC keeps per container; -1 no limit. */
  readonly maxPerPodContainerCount: number;
  /** `--maximum-dead-containers` (-1: no limit): dead containers the container GC keeps on the node. */
  readonly maxContainerCount: number;
  /** `--minimum-container-ttl-duration` (0): a dead container younger than this is never collected. */
  readonly minimumGCAgeMs: number;
  /** `--container-gc-period` (1 min, the kubelet's `ContainerGCPeriod`): how often the container GC runs. */
  readonly containerGCPeriodMs: number;
  /**
   * `shutdownGracePeriod` (0: off): on SIGTERM nodelet stops its pods in this time before it exits
   * (graceful node shutdown), the last `shutdownGracePeriodCriticalPods` of it kept for critical ones.
   */
  readonly shutdownGracePeriodMs: number;
  /** `shutdownGracePeriodCriticalPods` (0): the part of the shutdown grace period for pods of system-critical priority. */
  readonly shutdownGracePeriodCriticalPodsMs: number;
  /**
   * `evictionHard` (the kubelet's `DefaultEvictionHard`): signal → threshold (`100Mi`, `10%`), as
   * given; parsed and checked at start by the eviction manager (src/eviction/thresholds.ts).
   */
  readonly evictionHard: Readonly<Record<string, string>>;
  /** `evictionSoft` (none): thresholds that evict once met for their grace period. */
  readonly evictionSoft: Readonly<Record<string, string>>;
  /** `evictionSoftGracePeriod` (none): signal → Go duration, one for each soft threshold. */
  readonly evictionSoftGracePeriod: Readonly<Record<string, string>>;
  /** `evictionMinimumReclaim` (none): signal → quantity or percentage reclaimed beyond the threshold. */
  readonly evictionMinimumReclaim: Readonly<Record<string, string>>;
  /** `evictionPressureTransitionPeriod` (5 min): a pressure condition stays this long after its last observation. */
  readonly evictionPressureTransitionPeriodMs: number;
  /** `evictionMaxPodGracePeriod` (0): the most seconds a pod evicted by a soft threshold gets; negative: the pod's own. */
  readonly evictionMaxPodGracePeriod: number;
  /** Idle streaming connections are closed after this long (`streamingConnectionIdleTimeout`, 4h; 0 = never). */
  readonly streamingConnectionIdleTimeoutMs: number;
  /** Concurrent exec/attach/port-forward sessions allowed; more get 429 (`--max-streaming-sessions`). */
  readonly maxStreamingSessions: number;
  /** Forwarded connections one port-forward session may have open (`--max-port-forward-connections-per-session`, nodelet's own). */
  readonly maxPortForwardConnectionsPerSession: number;
  /** Forwarded connections (one socket each in nodelet) on the whole node (`--max-port-forward-connections`, nodelet's own). */
  readonly maxPortForwardConnections: number;
  /** Container log streams (follow or not) served at once; more get 429 (`--max-container-log-streams`, nodelet's own). */
  readonly maxContainerLogStreams: number;
  /** Watches open at once on the node; more get 429 (`--max-watches`, nodelet's own). */
  readonly maxWatches: number;
  /** Watches one user may have open at once; more get 429 (`--max-watches-per-user`, nodelet's own). */
  readonly maxWatchesPerUser: number;
  /** A disconnected client's exec'd process is killed after this long (`--exec-disconnect-grace-period`). */
  readonly execDisconnectGracePeriodMs: number;
  /** Serving certificate (`--tls-cert-file`, `tlsCertFile`); empty = none given. */
  readonly tlsCertFile: string;
  /** Key of that certificate (`--tls-private-key-file`, `tlsPrivateKeyFile`). */
  readonly tlsPrivateKeyFile: string;
  /** Where a self-signed serving certificate is generated (`--cert-dir`; default `<root-dir>/pki`). */
  readonly certDir: string;
  /** CA bundle that signs client certificates (`--client-ca-file`, `authentication.x509.clientCAFile`). */
  readonly clientCAFile: string;
  /** Static bearer tokens, CSV `token,user,uid,"group1,group2"` (`--token-auth-file`, nodelet's own flag). */
  readonly tokenAuthFile: string;
  /**
   * Requests no authenticator claims become `system:anonymous` (`--anonymous-auth`). Resolved:
   * unless given, true only in the loopback development posture (no authenticator, AlwaysAllow, and
   * `insecureDev` or a given serving certificate), see src/config/security.ts.
   */
  readonly anonymousAuth: boolean;
  /**
   * `--insecure-dev` (nodelet's own): the loopback development posture — plain HTTP, anonymous
   * requests, AlwaysAllow. Refused off loopback and together with certificates or authenticators.
   */
  readonly insecureDev: boolean;
  /**
   * Resolved, the embedded default: no serving certificate, no authenticator, no `--kubeconfig`
   * and not `insecureDev`. nodelet then serves HTTPS with a CA and serving certificate it
   * generates in `certDir`, accepts only a generated admin token (group `system:masters`), and
   * writes `<rootDir>/kubeconfig` for it (src/server/embedded.ts).
   */
  readonly generatedCredentials: boolean;
  /**
   * kubeconfig of the apiserver (`--kubeconfig`); empty = standalone. Given, nodelet is a node of
   * that cluster (src/cluster) and the TokenReview/SubjectAccessReview webhooks can use it.
   */
  readonly kubeconfig: string;
  /**
   * `--bootstrap-kubeconfig` (flag only, as the kubelet's): when `kubeconfig` is missing or its
   * client certificate is unusable or expired, this kubeconfig (a bootstrap token) requests a
   * client certificate by CSR and `kubeconfig` is written pointing at it (src/certificate/).
   */
  readonly bootstrapKubeconfig: string;
  /** `rotateCertificates` (false): renew the client certificate by CSR before it expires. */
  readonly rotateCertificates: boolean;
  /**
   * `serverTLSBootstrap` (false): the serving certificate comes from a `kubernetes.io/kubelet-serving`
   * CSR (approved by an admin), renewed before it expires; needs cluster mode and no `tlsCertFile`.
   */
  readonly serverTLSBootstrap: boolean;
  /** Create the Node object when it does not exist (`--register-node`, default true). */
  readonly registerNode: boolean;
  /** `--node-labels` as given (`k=v,k2=v2`), checked at start-up; parsed by config/node-flags. */
  readonly nodeLabels: string;
  /** `--register-with-taints` as given (`key=value:Effect,…`), checked at start-up. */
  readonly registerWithTaints: string;
  /** How often the node status is computed and sent when changed (`nodeStatusUpdateFrequency`, 10 s). */
  readonly nodeStatusUpdateFrequencyMs: number;
  /** An unchanged node status is sent this often (`nodeStatusReportFrequency`, 5 min). */
  readonly nodeStatusReportFrequencyMs: number;
  /** `nodeLeaseDurationSeconds` (40); renewed every quarter. */
  readonly nodeLeaseDurationSeconds: number;
  /** The node's pods capacity (`maxPods`, 110). */
  readonly maxPods: number;
  /** TokenReview through the apiserver (`--authentication-token-webhook`); needs `kubeconfig`. */
  readonly authenticationTokenWebhook: boolean;
  /** How long TokenReview answers are cached (`authentication.webhook.cacheTTL`, default 2m; 0 = not cached). */
  readonly authenticationTokenWebhookCacheTTLMs: number;
  /** `--authorization-mode`, resolved: `Policy` when a policy file is given and no mode is. */
  readonly authorizationMode: 'AlwaysAllow' | 'Webhook' | 'Policy';
  /** Local authorization rules for `Policy` mode (`--authorization-policy-file`, nodelet's own flag). */
  readonly authorizationPolicyFile: string;
  /** How long an allowing SubjectAccessReview is cached (`authorization.webhook.cacheAuthorizedTTL`, 5m). */
  readonly authorizationWebhookCacheAuthorizedTTLMs: number;
  /** How long a denying SubjectAccessReview is cached (`authorization.webhook.cacheUnauthorizedTTL`, 30s). */
  readonly authorizationWebhookCacheUnauthorizedTTLMs: number;
  /** Unauthenticated read-only port (`--read-only-port`, `readOnlyPort`); 0 = off. */
  readonly readOnlyPort: number;
  /** exec/attach/run/port-forward/container logs/runningpods served (`--enable-debugging-handlers`). */
  readonly enableDebuggingHandlers: boolean;
  /** Nameservers of `ClusterFirst` pods (`--cluster-dns`, `clusterDNS`); empty: such pods fall back to `Default`. */
  readonly clusterDNS: readonly string[];
  /** The cluster's DNS domain (`--cluster-domain`, `clusterDomain`): search domains and pod FQDNs; empty = none. */
  readonly clusterDomain: string;
  /** The node's resolver file that `Default` pods get (`--resolv-conf`, `resolvConf`, /etc/resolv.conf); empty = none. */
  readonly resolvConf: string;
}
