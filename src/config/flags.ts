import { VERIFICATION_POLICIES } from './image-credentials.js';
import type { Config } from './types.js';

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Config fields no flag sets: decided by buildConfig from the others. */
type Resolved = 'generatedCredentials' | 'cgroupsPerQOSRequired';
/** Everything a flag can set: the Config fields plus the two flags that only steer the CLI. */
export type FlagValues = Mutable<Omit<Config, Resolved>> & { configFile: string; help: boolean };
export type FlagTarget = keyof FlagValues;

/** Targets whose type is exactly T, so a flag cannot feed e.g. a string into an enum field. */
type TargetOf<T> = {
  [K in FlagTarget]: [FlagValues[K]] extends [T] ? ([T] extends [FlagValues[K]] ? K : never) : never;
}[FlagTarget];
/** Targets typed as a union of string literals. */
export type EnumTarget = {
  [K in FlagTarget]: FlagValues[K] extends string ? (string extends FlagValues[K] ? never : K) : never;
}[FlagTarget];

interface Common {
  /** Long name without dashes. */
  readonly name: string;
  /** One-letter shorthand (`-v`). */
  readonly short?: string;
  readonly help: string;
  /** Dotted KubeletConfiguration field that may also set it from `--config`. */
  readonly fileField?: string;
}
export interface StringFlag extends Common {
  readonly kind: 'string';
  readonly target: TargetOf<string>;
  readonly default: string;
  /** Environment variable that overrides `default` when set and non-empty. */
  readonly envDefault?: string;
  readonly nonEmpty?: true;
}
export interface IntFlag extends Common {
  /** `int`: non-negative, base 10 (klog Level); `port`: 1–65535, Go base-0 literal (Int32Var). */
  readonly kind: 'int' | 'port';
  readonly target: TargetOf<number>;
  readonly default: number;
  /** `int` only: the least value accepted when negatives mean something (-1: unlimited). */
  readonly min?: number;
}
export interface DurationFlag extends Common {
  readonly kind: 'duration';
  readonly target: TargetOf<number>;
  /** Go syntax, as printed by `--help` (Go's Duration.String, e.g. `1m0s`). */
  readonly default: string;
  /** Zero is meaningful (a timeout turned off); polling periods leave this unset. */
  readonly allowZero?: true;
}
export interface BoolFlag extends Common {
  readonly kind: 'bool';
  readonly target: TargetOf<boolean>;
  readonly default: boolean;
}
export interface StringListFlag extends Common {
  /** pflag's StringSlice: comma-separated (CSV), a repeated flag appends; a YAML list in `--config`. */
  readonly kind: 'stringList';
  readonly target: TargetOf<readonly string[]>;
  readonly default: readonly string[];
}
/**
 * cliflag's `MapStringString` (`=` pairs) and `LangleSeparatedMapStringString` (`<` pairs, the
 * eviction thresholds): comma-separated `key<sep>value` pairs, the first use replaces the default
 * and each further one adds to it; a YAML mapping of strings in `--config`, which replaces the
 * default whole (k8s.io/component-base/cli/flag/map_string_string.go,
 * langle_separated_map_string_string.go).
 */
export interface MapFlag extends Common {
  readonly kind: 'map';
  readonly separator: '=' | '<';
  readonly target: TargetOf<Readonly<Record<string, string>>>;
  readonly default: Readonly<Record<string, string>>;
}
export type EnumFlag = {
  [K in EnumTarget]: Common & {
    readonly kind: 'enum';
    readonly target: K;
    readonly values: readonly FlagValues[K][];
    readonly default: FlagValues[K];
  };
}[EnumTarget];
export type FlagSpec = StringFlag | IntFlag | DurationFlag | BoolFlag | EnumFlag | StringListFlag | MapFlag;
export type FlagKind = FlagSpec['kind'];

export const DEFAULT_DOCKER_ENDPOINT = 'unix:///var/run/docker.sock';

/** The kubelet's `DefaultEvictionHard` on Linux (pkg/kubelet/eviction/defaults_linux.go). */
export const DEFAULT_EVICTION_HARD: Readonly<Record<string, string>> = Object.freeze({
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
  'imagefs.inodesFree': '5%',
});

const TABLE = [
  {
    name: 'address', kind: 'string', target: 'address', default: '127.0.0.1', fileField: 'address', nonEmpty: true,
    help: 'The IP address for nodelet to serve on. Always served over TLS (except with --insecure-dev). A non-loopback address requires authentication (--client-ca-file, --token-auth-file or --authentication-token-webhook) and --authorization-mode=Policy or Webhook',
  },
  {
    name: 'port', kind: 'port', target: 'port', default: 10250, fileField: 'port',
    help: 'The port for nodelet to serve on',
  },
  {
    name: 'pod-manifest-path', kind: 'string', target: 'staticPodPath', default: '', fileField: 'staticPodPath',
    help: 'Path to the directory containing static pod files to run (empty: no static pods)',
  },
  {
    name: 'file-check-frequency', kind: 'duration', target: 'fileCheckFrequencyMs', default: '20s', fileField: 'fileCheckFrequency',
    help: 'Duration between checking the static pod directory for new data',
  },
  {
    name: 'sync-frequency', kind: 'duration', target: 'syncFrequencyMs', default: '1m0s', fileField: 'syncFrequency',
    help: 'Max period between synchronizing running containers and config',
  },
  {
    name: 'hostname-override', kind: 'string', target: 'nodeName', default: '',
    help: 'If non-empty, will use this string as the node name instead of the actual hostname',
  },
  {
    name: 'node-ip', kind: 'string', target: 'nodeIP', default: '',
    help: 'IP address of the node, reported as the pods\' hostIP. If unset, the first non-internal IPv4 address of the host, else 127.0.0.1',
  },
  {
    name: 'docker-endpoint', kind: 'string', target: 'dockerEndpoint', default: DEFAULT_DOCKER_ENDPOINT, envDefault: 'DOCKER_HOST', nonEmpty: true,
    help: 'Docker Engine API endpoint (unix:///path or tcp://host:port). Defaults to $DOCKER_HOST when set',
  },
  {
    name: 'pod-infra-container-image', kind: 'string', target: 'podInfraContainerImage', default: 'registry.k8s.io/pause:3.10', nonEmpty: true,
    help: 'The image whose container holds each pod\'s namespaces (the pod sandbox)',
  },
  {
    name: 'root-dir', kind: 'string', target: 'rootDir', default: '/var/lib/nodelet', nonEmpty: true,
    help: 'Directory path for managing nodelet files (pod logs, state)',
  },
  {
    name: 'config', kind: 'string', target: 'configFile', default: '',
    help: 'nodelet will load its initial configuration from this KubeletConfiguration (kubelet.config.k8s.io/v1beta1) file. Omit this flag to use the built-in default configuration values. Command-line flags override configuration from this file',
  },
  {
    name: 'v', short: 'v', kind: 'int', target: 'verbosity', default: 2, fileField: 'logging.verbosity',
    help: 'number for the log level verbosity',
  },
  {
    name: 'logging-format', kind: 'enum', target: 'loggingFormat', values: ['text', 'json'], default: 'text', fileField: 'logging.format',
    help: 'Sets the log format. Permitted formats: "json", "text"',
  },
  {
    name: 'pod-network', kind: 'string', target: 'podNetwork', default: 'none', nonEmpty: true,
    help: 'Docker network that pod sandboxes join (nodelet-specific; "none" gives pods only a loopback interface)',
  },
  {
    name: 'network-plugin', kind: 'enum', target: 'networkPlugin', values: ['', 'cni'], default: '',
    help: 'The network plugin that gives pods their network (cri-dockerd\'s flag). "cni": nodelet executes the CNI plugins of --cni-conf-dir\'s first network on each pod sandbox and reports the pod IPs it gets; "" (default): sandboxes join --pod-network',
  },
  {
    name: 'cni-bin-dir', kind: 'stringList', target: 'cniBinDirs', default: ['/opt/cni/bin', '/usr/lib/cni'],
    help: 'Comma-separated list of directories searched in order for CNI plugin binaries (with --network-plugin=cni). The default adds Debian\'s containernetworking-plugins directory to the upstream one',
  },
  {
    name: 'cni-conf-dir', kind: 'string', target: 'cniConfDir', default: '/etc/cni/net.d', nonEmpty: true,
    help: 'Directory of CNI network configurations (with --network-plugin=cni): the first valid .conflist, .conf or .json file in name order is the pod network; re-read every 5 seconds',
  },
  {
    name: 'cni-cache-dir', kind: 'string', target: 'cniCacheDir', default: '/var/lib/cni/cache', nonEmpty: true,
    help: 'Directory where CNI results are cached (with --network-plugin=cni): pod IPs are read back from it after a restart, and DEL uses it',
  },
  {
    name: 'container-ulimits', kind: 'string', target: 'containerUlimits', default: 'auto', nonEmpty: true,
    help: 'Rlimits set on every container and sandbox (nodelet-specific): "auto" sets none on Docker (containers get the engine\'s limits, as under the kubelet) and nofile and nproc within nodelet\'s own hard limits on Podman (whose default of 1048576 fails above them); "none" always leaves the engine\'s defaults; or name=soft[:hard] pairs separated by \',\' (e.g. nofile=1024:4096,nproc=4096), "unlimited" allowed, set on either engine',
  },
  {
    name: 'container-log-max-size', kind: 'string', target: 'containerLogMaxSize', default: '10Mi', nonEmpty: true, fileField: 'containerLogMaxSize',
    help: 'Size a container\'s log file may reach before the engine rotates it, a quantity such as 10Mi (Docker\'s json-file max-size, set on every container)',
  },
  {
    name: 'container-log-max-files', kind: 'int', target: 'containerLogMaxFiles', default: 5, fileField: 'containerLogMaxFiles',
    help: 'Most log files kept for a container, the one written included; at least 2 (Docker\'s json-file max-file)',
  },
  {
    name: 'cgroups-per-qos', kind: 'bool', target: 'cgroupsPerQOS', default: true, fileField: 'cgroupsPerQOS',
    help: 'Put every pod in a cgroup of its own below kubepods and its QoS class (burstable, besteffort), with the pod\'s summed limits, and the engine\'s containers of the pod below it. Needs a local engine on the cgroupfs driver and a writable cgroup filesystem; left at its default, nodelet runs pods without them (and says so) where that is missing',
  },
  {
    name: 'cgroup-root', kind: 'string', target: 'cgroupRoot', default: '/', fileField: 'cgroupRoot', nonEmpty: true,
    help: 'Cgroup in which the kubepods cgroup of the pods is made (with --cgroups-per-qos)',
  },
  {
    name: 'cgroup-driver', kind: 'enum', target: 'cgroupDriver', values: ['cgroupfs', 'systemd'], default: 'cgroupfs', fileField: 'cgroupDriver',
    help: 'Driver nodelet manipulates cgroups on the host with, which must be the engine\'s. Only "cgroupfs" is implemented: with "systemd", --cgroups-per-qos must be false',
  },
  {
    name: 'pod-max-pids', kind: 'int', target: 'podPidsLimit', default: -1, fileField: 'podPidsLimit', min: -1,
    help: 'Most processes in one pod (its cgroup\'s pids.max, with --cgroups-per-qos); -1: unlimited',
  },
  {
    name: 'image-gc-high-threshold', kind: 'int', target: 'imageGCHighThresholdPercent', default: 85, fileField: 'imageGCHighThresholdPercent',
    help: 'The percent of the image filesystem\'s usage after which image garbage collection always runs (every 5 minutes); 100 turns it off',
  },
  {
    name: 'image-gc-low-threshold', kind: 'int', target: 'imageGCLowThresholdPercent', default: 80, fileField: 'imageGCLowThresholdPercent',
    help: 'The percent of the image filesystem\'s usage that image garbage collection frees down to; below --image-gc-high-threshold',
  },
  {
    name: 'minimum-image-ttl-duration', kind: 'duration', target: 'imageMinimumGCAgeMs', default: '2m0s', fileField: 'imageMinimumGCAge', allowZero: true,
    help: 'Minimum age of an unused image before it is garbage collected',
  },
  {
    name: 'image-maximum-gc-age', kind: 'duration', target: 'imageMaximumGCAgeMs', default: '0s', fileField: 'imageMaximumGCAge', allowZero: true,
    help: 'An image unused this long is garbage collected whatever the disk usage; 0 turns it off (imageMaximumGCAge; the flag is nodelet\'s own, the kubelet has only the config field)',
  },
  {
    name: 'image-pull-credentials-verification-policy', kind: 'enum', target: 'imagePullCredentialsVerificationPolicy', values: [...VERIFICATION_POLICIES], default: 'NeverVerifyPreloadedImages', fileField: 'imagePullCredentialsVerificationPolicy',
    help: 'Which images already on the node a pod with imagePullPolicy IfNotPresent or Never may use without pulling again with its own credentials (KubeletEnsureSecretPulledImages): "NeverVerify" any; "NeverVerifyPreloadedImages" (default) those nodelet did not pull itself, and those nodelet pulled anonymously or with one of the pod\'s pull secrets (same secret or same credentials); "NeverVerifyAllowlistedImages" like that but only the preloaded images of --preloaded-images-verification-allowlist; "AlwaysVerify" only those nodelet pulled anonymously or with the pod\'s credentials. The flag is nodelet\'s own: the kubelet has only the config field',
  },
  {
    name: 'preloaded-images-verification-allowlist', kind: 'stringList', target: 'preloadedImagesVerificationAllowlist', default: [], fileField: 'preloadedImagesVerificationAllowlist',
    help: 'With --image-pull-credentials-verification-policy=NeverVerifyAllowlistedImages: the images (names without tag or digest, or prefixes ending in "/*") used without verification when nodelet did not pull them',
  },
  {
    name: 'maximum-dead-containers-per-container', kind: 'int', target: 'maxPerPodContainerCount', default: 1, min: -1,
    help: 'Maximum number of old instances to retain per container (the container GC keeps the newest; 1 keeps the one `logs --previous` reads). Each container takes up some disk space. -1: no limit. Flag only, as the kubelet\'s (deprecated there): KubeletConfiguration has no field for it',
  },
  {
    name: 'maximum-dead-containers', kind: 'int', target: 'maxContainerCount', default: -1, min: -1,
    help: 'Maximum number of old instances of containers to retain globally. Each container takes up some disk space. -1: no limit. Flag only, as the kubelet\'s (deprecated there): KubeletConfiguration has no field for it',
  },
  {
    name: 'minimum-container-ttl-duration', kind: 'duration', target: 'minimumGCAgeMs', default: '0s', allowZero: true,
    help: 'Minimum age for a finished container before it is garbage collected. Examples: \'300ms\', \'10s\' or \'2h45m\'. Flag only, as the kubelet\'s (deprecated there): KubeletConfiguration has no field for it',
  },
  {
    name: 'container-gc-period', kind: 'duration', target: 'containerGCPeriodMs', default: '1m0s',
    help: 'How often the container GC removes dead containers and sandboxes by the three flags above (the kubelet\'s fixed ContainerGCPeriod, 1m; the flag is nodelet\'s own, with no config field)',
  },
  {
    name: 'shutdown-grace-period', kind: 'duration', target: 'shutdownGracePeriodMs', default: '0s', fileField: 'shutdownGracePeriod', allowZero: true,
    help: 'Graceful node shutdown: on SIGTERM, stop every pod within this time (regular pods first, critical ones in the last --shutdown-grace-period-critical-pods), report them Failed (reason Terminated), then exit; 0 (default): pods keep running when nodelet stops. The flag is nodelet\'s own: the kubelet has only the config field',
  },
  {
    name: 'shutdown-grace-period-critical-pods', kind: 'duration', target: 'shutdownGracePeriodCriticalPodsMs', default: '0s', fileField: 'shutdownGracePeriodCriticalPods', allowZero: true,
    help: 'The part of --shutdown-grace-period kept for pods of system-critical priority, stopped after the others',
  },
  {
    name: 'eviction-hard', kind: 'map', separator: '<', target: 'evictionHard', default: DEFAULT_EVICTION_HARD, fileField: 'evictionHard',
    help: 'A set of eviction thresholds (e.g. memory.available<1Gi) that if met would trigger a pod eviction; given in --config, it replaces the whole default. Signals: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available',
  },
  {
    name: 'eviction-soft', kind: 'map', separator: '<', target: 'evictionSoft', default: {}, fileField: 'evictionSoft',
    help: 'A set of eviction thresholds (e.g. memory.available<1.5Gi) that if met over a corresponding grace period would trigger a pod eviction',
  },
  {
    name: 'eviction-soft-grace-period', kind: 'map', separator: '=', target: 'evictionSoftGracePeriod', default: {}, fileField: 'evictionSoftGracePeriod',
    help: 'A set of eviction grace periods (e.g. memory.available=1m30s) that correspond to how long a soft eviction threshold must hold before triggering a pod eviction',
  },
  {
    name: 'eviction-minimum-reclaim', kind: 'map', separator: '=', target: 'evictionMinimumReclaim', default: {}, fileField: 'evictionMinimumReclaim',
    help: 'A set of minimum reclaims (e.g. imagefs.available=2Gi) that describes the minimum amount of resource nodelet will reclaim when performing a pod eviction if that resource is under pressure',
  },
  {
    name: 'eviction-pressure-transition-period', kind: 'duration', target: 'evictionPressureTransitionPeriodMs', default: '5m0s', fileField: 'evictionPressureTransitionPeriod', allowZero: true,
    help: 'Duration for which nodelet has to wait before transitioning out of an eviction pressure condition',
  },
  {
    name: 'eviction-max-pod-grace-period', kind: 'int', target: 'evictionMaxPodGracePeriod', default: 0, fileField: 'evictionMaxPodGracePeriod', min: -2147483648,
    help: 'Maximum allowed grace period (in seconds) to use when terminating pods in response to a soft eviction threshold being met. If negative, defer to pod specified value',
  },
  {
    name: 'streaming-connection-idle-timeout', kind: 'duration', target: 'streamingConnectionIdleTimeoutMs', default: '4h0m0s', fileField: 'streamingConnectionIdleTimeout',
    help: 'Maximum time a streaming connection (exec, attach, port-forward) can be idle before it is closed; pings count as traffic. 0 means no timeout',
    allowZero: true,
  },
  {
    name: 'max-streaming-sessions', kind: 'int', target: 'maxStreamingSessions', default: 1000,
    help: 'Maximum number of concurrent exec/attach/port-forward sessions (nodelet-specific); more are refused with 429 and Retry-After, like the kubelet\'s in-flight cap',
  },
  {
    name: 'max-port-forward-connections-per-session', kind: 'int', target: 'maxPortForwardConnectionsPerSession', default: 128,
    help: 'Maximum number of forwarded connections one port-forward session may have open at once (nodelet-specific); more are refused on their error stream',
  },
  {
    name: 'max-port-forward-connections', kind: 'int', target: 'maxPortForwardConnections', default: 256,
    help: 'Maximum number of forwarded port-forward connections on the node (nodelet-specific); each is one socket (file descriptor) in nodelet, so keep it well below the open-file limit. More are refused on their error stream',
  },
  {
    name: 'max-container-log-streams', kind: 'int', target: 'maxContainerLogStreams', default: 256,
    help: 'Maximum number of container log streams (follow or not) served at once (nodelet-specific); more are refused with 429 and Retry-After',
  },
  {
    name: 'max-watches', kind: 'int', target: 'maxWatches', default: 1000,
    help: 'Maximum number of watches (pods, events, nodes, namespaces) open at once on the node (nodelet-specific); more are refused with 429 and Retry-After. Each holds a connection (a file descriptor) and a queue in nodelet',
  },
  {
    name: 'max-watches-per-user', kind: 'int', target: 'maxWatchesPerUser', default: 100,
    help: 'Maximum number of watches one user (the authenticated name; anonymous requests share one) may have open at once (nodelet-specific); more are refused with 429 and Retry-After',
  },
  {
    name: 'exec-disconnect-grace-period', kind: 'duration', target: 'execDisconnectGracePeriodMs', default: '10s',
    help: 'How long a process started by exec may keep running after its client disconnected before nodelet kills it (nodelet-specific; the kubelet never kills it). 0 kills at once',
    allowZero: true,
  },
  {
    name: 'tls-cert-file', kind: 'string', target: 'tlsCertFile', default: '', fileField: 'tlsCertFile',
    help: 'File containing the x509 certificate for HTTPS (CA cert, if any, concatenated after the server cert). If unset: with no authenticator either, a CA and a serving certificate signed by it are generated in --cert-dir (with an admin token and <root-dir>/kubeconfig); with an authenticator, a self-signed certificate and key are generated there',
  },
  {
    name: 'tls-private-key-file', kind: 'string', target: 'tlsPrivateKeyFile', default: '', fileField: 'tlsPrivateKeyFile',
    help: 'File containing the x509 private key matching --tls-cert-file',
  },
  {
    name: 'cert-dir', kind: 'string', target: 'certDir', default: '',
    help: 'The directory where the TLS certs are located: the generated serving certificate, keys and admin token, and the certificates obtained by --bootstrap-kubeconfig, --rotate-certificates and --server-tls-bootstrap (kubelet-client-current.pem, kubelet-server-current.pem) (empty: <root-dir>/pki). The generated serving certificate is not used if --tls-cert-file and --tls-private-key-file are given',
  },
  {
    name: 'client-ca-file', kind: 'string', target: 'clientCAFile', default: '', fileField: 'authentication.x509.clientCAFile',
    help: 'If set, a client certificate signed by one of the authorities in this file authenticates its CommonName as user and its Organizations as groups',
  },
  {
    name: 'token-auth-file', kind: 'string', target: 'tokenAuthFile', default: '',
    help: 'If set, bearer tokens from this CSV file (token,user,uid,"group1,group2") authenticate requests (nodelet-specific; the apiserver\'s flag and format)',
  },
  {
    name: 'anonymous-auth', kind: 'bool', target: 'anonymousAuth', default: false, fileField: 'authentication.anonymous.enabled',
    help: 'Enables anonymous requests: requests no other authenticator rejects get user system:anonymous and group system:unauthenticated. Unset on loopback with no authenticator and AlwaysAllow, anonymous requests are allowed with --insecure-dev or --tls-cert-file, refused (401) otherwise',
  },
  {
    name: 'insecure-dev', kind: 'bool', target: 'insecureDev', default: false,
    help: 'INSECURE, development only (nodelet-specific): serve plain HTTP with anonymous requests allowed (AlwaysAllow) on a loopback address, so curl and kubectl need no credentials, and any local user can exec into every container. A warning is logged. Without it, and without --tls-cert-file or an authenticator, nodelet serves HTTPS with a generated CA and admin token and writes <root-dir>/kubeconfig',
  },
  {
    name: 'kubeconfig', kind: 'string', target: 'kubeconfig', default: '',
    help: 'Path to a kubeconfig file (server, CA or insecure-skip-tls-verify, bearer token or client certificate) for reaching the apiserver. Turns on cluster mode: nodelet registers its Node and Lease, runs the pods the apiserver binds to it, reports their statuses, creates mirror pods for static pods and sends events. Empty: standalone',
  },
  {
    name: 'bootstrap-kubeconfig', kind: 'string', target: 'bootstrapKubeconfig', default: '',
    help: 'Path to a kubeconfig file that will be used to get client certificate for nodelet. If the file specified by --kubeconfig does not exist or its client certificate is unusable or expired, the bootstrap kubeconfig (a bootstrap token, e.g. from `kubeadm token create`) is used to request a client certificate from the API server (a CSR of signer kubernetes.io/kube-apiserver-client-kubelet for system:node:<node name>). On success, a kubeconfig file referencing the generated client certificate and key is written to the path specified by --kubeconfig. The client certificate and key file will be stored in the directory pointed by --cert-dir',
  },
  {
    name: 'rotate-certificates', kind: 'bool', target: 'rotateCertificates', default: false, fileField: 'rotateCertificates',
    help: 'Auto rotate the nodelet client certificates by requesting new certificates from the API server (CSRs) at 70-90% of their validity; the new certificate is used for new connections without a restart. Needs a client certificate in --kubeconfig',
  },
  {
    name: 'server-tls-bootstrap', kind: 'bool', target: 'serverTLSBootstrap', default: false, fileField: 'serverTLSBootstrap',
    help: 'Request the serving certificate from the API server (a CSR of signer kubernetes.io/kubelet-serving for the node\'s addresses, which a cluster admin approves: kubectl certificate approve) and rotate it before it expires, swapping it in without a restart; a self-signed certificate is served until the first is issued. Needs --kubeconfig and no --tls-cert-file (nodelet\'s own flag; the kubelet has only the config field)',
  },
  {
    name: 'register-node', kind: 'bool', target: 'registerNode', default: true, fileField: 'registerNode',
    help: 'Register the node with the apiserver (cluster mode). If false, the Node object must already exist',
  },
  {
    name: 'node-labels', kind: 'string', target: 'nodeLabels', default: '',
    help: 'Labels to add when registering the node in the cluster: key=value pairs separated by \',\'. Labels in the kubernetes.io namespace must be allowed by the NodeRestriction admission plugin',
  },
  {
    name: 'register-with-taints', kind: 'string', target: 'registerWithTaints', default: '',
    help: 'Register the node with the given taints (comma separated "<key>=<value>:<effect>"). No-op if --register-node is false',
  },
  {
    name: 'node-status-update-frequency', kind: 'duration', target: 'nodeStatusUpdateFrequencyMs', default: '10s', fileField: 'nodeStatusUpdateFrequency',
    help: 'How often nodelet computes the node status and sends it to the apiserver when it changed',
  },
  {
    name: 'node-status-report-frequency', kind: 'duration', target: 'nodeStatusReportFrequencyMs', default: '5m0s', fileField: 'nodeStatusReportFrequency',
    help: 'How often nodelet sends an unchanged node status to the apiserver',
  },
  {
    name: 'node-lease-duration-seconds', kind: 'int', target: 'nodeLeaseDurationSeconds', default: 40, fileField: 'nodeLeaseDurationSeconds',
    help: 'Duration of the node Lease; nodelet renews it every quarter of that',
  },
  {
    name: 'max-pods', kind: 'int', target: 'maxPods', default: 110, fileField: 'maxPods',
    help: 'Number of pods that can run on this node (reported as the node\'s pods capacity)',
  },
  {
    name: 'authentication-token-webhook', kind: 'bool', target: 'authenticationTokenWebhook', default: false, fileField: 'authentication.webhook.enabled',
    help: 'Use the TokenReview API (through --kubeconfig) to authenticate bearer tokens not found in --token-auth-file',
  },
  {
    name: 'authentication-token-webhook-cache-ttl', kind: 'duration', target: 'authenticationTokenWebhookCacheTTLMs', default: '2m0s', fileField: 'authentication.webhook.cacheTTL',
    help: 'The duration to cache responses from the webhook token authenticator (0 = no caching)',
    allowZero: true,
  },
  {
    name: 'authorization-mode', kind: 'enum', target: 'authorizationMode', values: ['AlwaysAllow', 'Webhook', 'Policy'], default: 'AlwaysAllow', fileField: 'authorization.mode',
    help: 'Authorization mode: AlwaysAllow (only when serving on loopback), Policy (rules from --authorization-policy-file; the default when that file is given) or Webhook (SubjectAccessReview through --kubeconfig)',
  },
  {
    name: 'authorization-webhook-cache-authorized-ttl', kind: 'duration', target: 'authorizationWebhookCacheAuthorizedTTLMs', default: '5m0s', fileField: 'authorization.webhook.cacheAuthorizedTTL',
    help: 'The duration to cache \'authorized\' responses from the webhook authorizer (0 = no caching)',
    allowZero: true,
  },
  {
    name: 'authorization-webhook-cache-unauthorized-ttl', kind: 'duration', target: 'authorizationWebhookCacheUnauthorizedTTLMs', default: '30s', fileField: 'authorization.webhook.cacheUnauthorizedTTL',
    help: 'The duration to cache \'unauthorized\' responses from the webhook authorizer (0 = no caching)',
    allowZero: true,
  },
  {
    name: 'authorization-policy-file', kind: 'string', target: 'authorizationPolicyFile', default: '',
    help: 'YAML rules granting users and groups verbs on nodes/<subresource> (nodelet-specific), used by --authorization-mode=Policy',
  },
  {
    name: 'read-only-port', kind: 'int', target: 'readOnlyPort', default: 0, fileField: 'readOnlyPort',
    help: 'The read-only port for nodelet to serve on with no authentication/authorization: GET /healthz, /pods, /stats/*, /metrics* only (0 = disabled)',
  },
  {
    name: 'enable-debugging-handlers', kind: 'bool', target: 'enableDebuggingHandlers', default: true, fileField: 'enableDebuggingHandlers',
    help: 'Enables server endpoints for exec, attach, run, port-forward, container logs and runningpods; when false they answer 405',
  },
  {
    name: 'cluster-dns', kind: 'stringList', target: 'clusterDNS', default: [], fileField: 'clusterDNS',
    help: 'Comma-separated list of DNS server IP address. This value is used for containers DNS server in case of Pods with "dnsPolicy=ClusterFirst" (without it such pods fall back to "Default" and get a MissingClusterDNS event). Note: all DNS servers appearing in the list MUST serve the same set of records otherwise name resolution within the cluster may not work correctly',
  },
  {
    name: 'cluster-domain', kind: 'string', target: 'clusterDomain', default: '', fileField: 'clusterDomain',
    help: 'Domain for this cluster. If set, nodelet will configure all containers to search this domain in addition to the host\'s search domains, and pods with a subdomain get the FQDN <hostname>.<subdomain>.<namespace>.svc.<domain>',
  },
  {
    name: 'resolv-conf', kind: 'string', target: 'resolvConf', default: '/etc/resolv.conf', fileField: 'resolvConf',
    help: 'Resolver configuration file used as the basis for the container DNS resolution configuration (dnsPolicy "Default"; its search domains also follow the cluster ones). Empty: pods get nameserver 127.0.0.1 and no host search domains',
  },
  {
    name: 'help', short: 'h', kind: 'bool', target: 'help', default: false,
    help: 'help for nodelet',
  },
] as const satisfies readonly FlagSpec[];

// Compile-time guard: every Config field (plus configFile/help) must be set by some flag, so the
// defaults built from this table are complete.
type Missing = Exclude<FlagTarget, (typeof TABLE)[number]['target']>;
const complete: [Missing] extends [never] ? true : Missing = true;
void complete;

/** Every flag nodelet accepts, in the order they were declared. */
export const FLAGS: readonly FlagSpec[] = TABLE;

const byName = new Map(FLAGS.map((f) => [f.name, f]));
const byShort = new Map(FLAGS.flatMap((f) => (f.short === undefined ? [] : [[f.short, f] as const])));

/** Looks a long flag up; `_` and `-` are interchangeable, as in the kubelet's WordSepNormalizeFunc. */
export function findFlag(name: string): FlagSpec | undefined {
  return byName.get(name.replaceAll('_', '-'));
}

export function findShorthand(c: string): FlagSpec | undefined {
  return byShort.get(c);
}

export function flagForTarget(target: FlagTarget): FlagSpec | undefined {
  return FLAGS.find((f) => f.target === target);
}

/** How pflag names a flag in errors: `-v, --v` when it has a shorthand, else `--name`. */
export function displayName(spec: FlagSpec): string {
  return spec.short === undefined ? `--${spec.name}` : `-${spec.short}, --${spec.name}`;
}
