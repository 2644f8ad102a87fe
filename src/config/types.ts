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
  /** Idle streaming connections are closed after this long (`streamingConnectionIdleTimeout`, 4h; 0 = never). */
  readonly streamingConnectionIdleTimeoutMs: number;
  /** Concurrent exec/attach/port-forward sessions allowed; more get 429 (`--max-streaming-sessions`). */
  readonly maxStreamingSessions: number;
  /** A disconnected client's exec'd process is killed after this long (`--exec-disconnect-grace-period`). */
  readonly execDisconnectGracePeriodMs: number;
}
