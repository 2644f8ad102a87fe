import type { FastifyInstance } from 'fastify';
import { securityFromConfig } from './auth/index.js';
import type { Config } from './config/types.js';
import { EventRecorder } from './events/recorder.js';
import { Backoff } from './kubelet/backoff.js';
import { KubeletHost } from './kubelet/host.js';
import { Kubelet } from './kubelet/kubelet.js';
import type { Logger } from './logging/index.js';
import { PodConfig } from './pod/config.js';
import { StaticPodDirSource } from './pod/file-source.js';
import { PodManager } from './pod/manager.js';
import { dockerClient, observeDockerRequests } from './runtime/docker/client.js';
import { DockerRuntime } from './runtime/docker/runtime.js';
import { ownCapabilityBounds } from './runtime/docker/privileged.js';
import { NodeCgroups } from './cgroups/node-cgroups.js';
import { flagzValues, kubeletConfiguration } from './config/index.js';
import { ImageGC } from './kubelet/image-gc.js';
import { ImagePullManager } from './kubelet/image-pull-manager.js';
import { verificationEnforcer } from './kubelet/pull-records.js';
import { EvictionManager } from './eviction/manager.js';
import { parseThresholdConfig } from './eviction/thresholds.js';
import { evictionReadings } from './stats/eviction-readings.js';
import { ConfigError } from './config/errors.js';
import { buildServer } from './server/index.js';
import { loadTlsMaterial, replaceServingCertificate, servesTLS, type TlsMaterial } from './server/tls.js';
import { loadEmbeddedCredentials, writeAdminKubeconfig } from './server/embedded.js';
import { Metrics } from './metrics/registry.js';
import { instrumentRuntime } from './metrics/runtime.js';
import { StreamingSessions } from './server/upgrade.js';
import { StatusManager } from './status/manager.js';
import { getPodQOS } from './api/qos.js';
import { readCgroupStats, type CgroupLocation } from './stats/cgroup-stats.js';
import { DiskStatsCache } from './stats/disk-stats.js';
import { hostReader } from './stats/host.js';
import { readNodeStats, readText } from './stats/node.js';
import { StatsSampler } from './stats/sampler.js';
import { serverVersion } from './version.js';
import { podRuntimeInfo } from './kubelet/container-config.js';
import { VolumeManager } from './volumes/manager.js';
import type { PodObjectSource } from './volumes/source.js';
import { nodeAllocatable, type PodRuntimeInfo } from './volumes/downward-api.js';
import { KubeClient, requestKind } from './apiserver/client.js';
import { loadKubeconfig } from './config/kubeconfig.js';
import { ApiserverObjects, startClusterMode, type ClusterMode } from './cluster/index.js';
import { parseNodeLabels, parseTaints } from './config/node-flags.js';
import { readNodeFacts } from './node/facts.js';
import { containerLogMaxSizeBytes } from './runtime/docker/log-config.js';
import { NodeSource, healthFromRelist } from './node/source.js';
import { CNINetworkPlugin } from './network/cni/index.js';
import { clientCertificateManager, loadClientCert, servingCertificateManager, type CertificateManager, type CertificateTiming } from './certificate/index.js';
import type { NetworkPlugin } from './network/types.js';
import { Lifecycle } from './async/lifecycle.js';
import type { ApiserverConnection } from './config/kubeconfig.js';
import type { SecurityOptions } from './auth/options.js';
import type { Taint } from 'kubernetes-types/core/v1.js';

/** The kubelet's `ImageGCPeriod`. */
const IMAGE_GC_PERIOD_MS = 5 * 60_000;

export interface Nodelet {
  readonly app: FastifyInstance;
  readonly kubelet: Kubelet;
  readonly runtime: DockerRuntime;
  readonly metrics: Metrics;
  /** Open exec/attach/port-forward sessions. */
  readonly sessions: StreamingSessions;
  /** The background CPU/memory sampler behind `/stats/summary` and `metrics.k8s.io`. */
  readonly stats: StatsSampler;
  /** The background disk figures of `/stats/summary` (containers' rootfs and logs, local volumes, images). */
  readonly diskStats: DiskStatsCache;
  /** `http(s)://address:port` the API listens on (https whenever TLS is served). */
  readonly url: string;
  /** The unauthenticated read-only listener (`--read-only-port`), when enabled. */
  readonly readOnlyUrl: string | undefined;
  /** Cluster mode's loops (node, lease, pods, statuses, mirror pods, events), with `--kubeconfig`. */
  readonly cluster: ClusterMode | undefined;
  /** The certificate managers: `rotateCertificates` (client) and `serverTLSBootstrap` (serving). */
  readonly certificates: { readonly client: CertificateManager | undefined; readonly serving: CertificateManager | undefined };
  /** The admin kubeconfig written for the embedded default (`generatedCredentials`), else undefined. */
  readonly adminKubeconfig: string | undefined;
  /**
   * Graceful node shutdown with `shutdownGracePeriod` (nothing without): every pod stopped by
   * priority group and reported `Failed`/`Terminated`, serving and syncing meanwhile; call
   * `close` after it.
   */
  shutdown(): Promise<void>;
  /** Stops serving and syncing. Pods keep running, as they do when a kubelet stops. */
  close(): Promise<void>;
}

export interface StartOptions {
  log: Logger;
  /** Timing overrides for tests; production uses the kubelet's defaults. */
  relistPeriodMs?: number;
  crashLoopBackoffMs?: { initialMs: number; maxMs: number };
  /** Streaming timing overrides for tests (creation timeout, close wait). */
  streaming?: { streamCreationTimeoutMs?: number; closeWaitMs?: number };
  /** Stats sampling period (default 10 s, about the kubelet's cadvisor housekeeping interval). */
  statsPeriodMs?: number;
  /** How often the summary's disk figures are refreshed (default 1 min, the kubelet's `volumeStatsAggPeriod`). */
  diskStatsPeriodMs?: number;
  /** How often configMap, secret and projected volumes are refreshed (default 1 min; tests: shorter). */
  volumeRefreshMs?: number;
  /** Cluster-mode timing overrides for tests (status resync, mirror pod period, watch timeout). */
  clusterTiming?: { resyncMs?: number; mirrorPeriodMs?: number; minWatchTimeoutSeconds?: number };
  /** A network plugin instead of the one `--network-plugin` names (tests: a recording fake). */
  networkPlugin?: NetworkPlugin;
  /** How often the pod networks of vanished sandboxes are released (default 1 min). */
  networkGCPeriodMs?: number;
  /** How often image GC runs (default 5 min, the kubelet's `ImageGCPeriod`). */
  imageGCPeriodMs?: number;
  /** How often the eviction manager observes the node (default 10 s, `evictionMonitoringPeriod`). */
  evictionMonitoringPeriodMs?: number;
  /** Certificate rotation timing overrides for tests (rotate soon after issue, CSR polling). */
  certificateTiming?: CertificateTiming;
}

/** The `--network-plugin` of `config`, or the one a test passes; undefined: none. */
function networkPluginFor(config: Config, opts: StartOptions): NetworkPlugin | undefined {
  if (opts.networkPlugin) return opts.networkPlugin;
  if (config.networkPlugin !== 'cni') return undefined;
  return new CNINetworkPlugin({ confDir: config.cniConfDir, binDirs: config.cniBinDirs, cacheDir: config.cniCacheDir, log: opts.log.child({ component: 'cni' }) });
}

/**
 * Wires the pieces of the architecture together and starts them (see docs/architecture.md, "Data
 * flow"). Everything is made in dependency order, each part added to one `Lifecycle` as it is
 * made: they start in that order, and a failed start and `close` alike stop them in the reverse.
 */
export async function startNodelet(config: Config, opts: StartOptions): Promise<Nodelet> {
  const { log } = opts;
  // The settings only the start can check stop nodelet (exit 2) before anything runs.
  const evictionThresholds = evictionThresholdsOf(config);
  const nodeSpec = { labels: parseNodeLabels(config.nodeLabels), taints: parseTaints(config.registerWithTaints) };
  const lifecycle = new Lifecycle({ onStopError: (err, part) => log.warn({ err, part }, 'Failed to stop a part of nodelet') });
  try {
    const api = await connectApiserver(config, opts, lifecycle);
    const credentials = await servingCredentials(config, log, api, lifecycle);
    const engine = await connectEngine(config, opts, lifecycle);
    const pods = buildPodPipeline(config, opts, api, engine, lifecycle);
    const node = buildNodeParts(config, opts, engine, pods, evictionThresholds, nodeSpec, lifecycle);
    const serving = await buildServing(config, opts, api, credentials, engine, pods, node, lifecycle);
    let cluster: ClusterMode | undefined;
    if (api.client) {
      const client = api.client;
      client.onRequest((method, path) => engine.metrics.apiserverRequests.inc(requestKind(method, path)));
      lifecycle.add({
        name: 'cluster mode',
        start: () => {
          cluster = startCluster(config, opts, client, nodeSpec, engine, pods, node);
        },
        stop: () => cluster?.stop(),
      });
    }
    node.registeredUID = () => cluster?.node.uid;
    addPodSources(config, log, pods, lifecycle);
    await lifecycle.start();
    const posture = { tls: credentials.tls !== undefined, anonymousAuth: config.anonymousAuth, authorizationMode: config.authorizationMode, tokenWebhook: config.authenticationTokenWebhook || undefined, insecureDev: config.insecureDev || undefined, adminKubeconfig: serving.adminKubeconfig };
    log.info({ url: serving.url, readOnlyUrl: serving.readOnlyUrl, node: config.nodeName, staticPodPath: config.staticPodPath || undefined, ...posture }, 'nodelet is serving');
    if (serving.readOnlyUrl) log.warn({ readOnlyUrl: serving.readOnlyUrl }, 'The read-only port serves /pods (including env values) without authentication');
    return {
      app: serving.app,
      kubelet: pods.kubelet,
      runtime: engine.dockerRuntime,
      metrics: engine.metrics,
      sessions: serving.sessions,
      stats: node.stats,
      diskStats: node.diskStats,
      url: serving.url,
      readOnlyUrl: serving.readOnlyUrl,
      cluster,
      certificates: { client: api.clientCertificates, serving: serving.servingCertificates },
      adminKubeconfig: serving.adminKubeconfig,
      async shutdown() {
        const groups = shutdownGroups(config.shutdownGracePeriodMs, config.shutdownGracePeriodCriticalPodsMs);
        if (!groups.length) return;
        log.info({ shutdownGracePeriod: config.shutdownGracePeriodMs / 1000, shutdownGracePeriodCriticalPods: config.shutdownGracePeriodCriticalPodsMs / 1000 }, 'Shutdown manager: the node is shutting down, stopping its pods');
        await pods.kubelet.shutdownPods(groups);
      },
      close: () => lifecycle.stop(),
    };
  } catch (err) {
    await lifecycle.stop();
    throw err;
  }
}

/** The eviction thresholds, checked before anything runs: a bad one is a usage error (exit 2). */
function evictionThresholdsOf(config: Config): ReturnType<typeof parseThresholdConfig> {
  try {
    return parseThresholdConfig(config);
  } catch (err) {
    throw new ConfigError(`invalid eviction settings: ${(err as Error).message}`);
  }
}

interface ApiserverParts {
  readonly connection: ApiserverConnection | undefined;
  readonly client: KubeClient | undefined;
  /** The webhooks' own client, so that a rotated client certificate reaches it too. */
  readonly webhookClient: KubeClient | undefined;
  readonly userAgent: string;
  readonly clientCertificates: CertificateManager | undefined;
}

/**
 * Cluster mode's connection (`--kubeconfig`): the TLS bootstrap first (pkg/kubelet/certificate/bootstrap:
 * --kubeconfig is written, when missing or its certificate is unusable, before anything reads it;
 * it waits for the CSR to be issued), then the kubeconfig, read before anything runs so a bad one
 * stops nodelet at once, its clients, and `rotateCertificates`' manager (started with the others).
 */
async function connectApiserver(config: Config, opts: StartOptions, lifecycle: Lifecycle): Promise<ApiserverParts> {
  const { log } = opts;
  const userAgent = `nodelet/${serverVersion.gitVersion} (${config.nodeName})`;
  if (config.bootstrapKubeconfig !== '') {
    await loadClientCert({ kubeconfigPath: config.kubeconfig, bootstrapKubeconfigPath: config.bootstrapKubeconfig, certDir: config.certDir, nodeName: config.nodeName, log, userAgent });
  }
  const connection = config.kubeconfig ? loadKubeconfig(config.kubeconfig) : undefined;
  const client = connection ? new KubeClient(connection, { userAgent }) : undefined;
  const webhookClient = connection && (config.authenticationTokenWebhook || config.authorizationMode === 'Webhook') ? new KubeClient(connection, { userAgent: 'nodelet-webhook' }) : undefined;
  lifecycle.add({ name: 'apiserver clients', stop: () => [client, webhookClient].forEach((c) => c?.close()) });
  const clientCertificates =
    config.rotateCertificates && connection && client
      ? await clientCertificateManager({
          conn: connection,
          certDir: config.certDir,
          nodeName: config.nodeName,
          client,
          onRotated: (pair) => {
            for (const c of [client, webhookClient]) c?.setClientCertificate(Buffer.from(pair.certPem), Buffer.from(pair.keyPem));
          },
          log,
          ...(opts.certificateTiming ? { timing: opts.certificateTiming } : {}),
        })
      : undefined;
  return { connection, client, webhookClient, userAgent, clientCertificates };
}

interface Credentials {
  readonly embedded: Awaited<ReturnType<typeof loadEmbeddedCredentials>> | undefined;
  readonly security: SecurityOptions;
  /** What the API serves, when TLS; the serving certificate manager may replace its pair. */
  tls: TlsMaterial | undefined;
}

/**
 * Credentials, policy and certificates, before anything runs (a bad file stops nodelet): the
 * embedded default makes (once) and reuses its CA, serving certificate and admin token; bearer
 * tokens checked by the webhook are real cluster credentials, so never over plain HTTP.
 */
async function servingCredentials(config: Config, log: Logger, api: ApiserverParts, lifecycle: Lifecycle): Promise<Credentials> {
  const embedded = config.generatedCredentials ? await loadEmbeddedCredentials(config, log) : undefined;
  const warnings: string[] = [];
  const security = securityFromConfig(config, warnings, log, embedded?.adminToken, api.webhookClient);
  lifecycle.add({ name: 'security', stop: () => (security.kind === 'authenticated' ? security.close?.() : undefined) });
  for (const warning of warnings) log.warn({ file: config.tokenAuthFile }, `token file: ${warning}`);
  const tls = embedded ? embedded.tls : servesTLS(config) || config.authenticationTokenWebhook ? await loadTlsMaterial(config, log) : undefined;
  return { embedded, security, tls };
}

interface EngineParts {
  readonly dockerRuntime: DockerRuntime;
  /** The runtime as every other part uses it: instrumented. */
  readonly runtime: ReturnType<typeof instrumentRuntime>;
  readonly metrics: Metrics;
  readonly network: NetworkPlugin | undefined;
  readonly podCgroups: NodeCgroups | undefined;
  readonly allocatable: ReturnType<typeof nodeAllocatable>;
  /** Lowering a process's OOM score below 0 needs CAP_SYS_RESOURCE, which some hosts withhold from root. */
  readonly canLowerOOMScore: boolean;
  /** Who may reuse an image on the node (KubeletEnsureSecretPulledImages). */
  readonly imagePullManager: ImagePullManager;
}

/**
 * The engine and what sits beside it: the network plugin (started before the first relist: it
 * reads back the IPs of sandboxes that already run), the Docker runtime, and the pod cgroups.
 */
async function connectEngine(config: Config, opts: StartOptions, lifecycle: Lifecycle): Promise<EngineParts> {
  const { log } = opts;
  const metrics = new Metrics();
  const network = networkPluginFor(config, opts);
  if (network) lifecycle.add({ name: 'network plugin', start: () => network.start(), stop: () => network.stop() });
  const docker = dockerClient(config.dockerEndpoint);
  observeDockerRequests(docker, (method, endpoint) => metrics.dockerRequests.inc({ method, endpoint }));
  const dockerRuntime = new DockerRuntime({
    docker,
    nodeName: config.nodeName,
    infraImage: config.podInfraContainerImage,
    podNetwork: config.podNetwork,
    ...(network ? { network } : {}),
    ...(opts.networkGCPeriodMs ? { networkGCPeriodMs: opts.networkGCPeriodMs } : {}),
    execDisconnectGraceMs: config.execDisconnectGracePeriodMs,
    containerUlimits: config.containerUlimits,
    containerLogs: { maxSizeBytes: containerLogMaxSizeBytes(config.containerLogMaxSize), maxFiles: config.containerLogMaxFiles },
    readLogFiles: config.dockerEndpoint.startsWith('unix://'),
    log,
  });
  const runtime = instrumentRuntime(dockerRuntime, metrics);
  lifecycle.add({
    name: 'container runtime',
    start: async () => {
      try {
        await runtime.ping();
        // Docker or Podman, logged with the rlimits its containers get; asked again later if it fails.
        await dockerRuntime.engine();
      } catch (err) {
        // Keep going: the relist retries, and /healthz reports the engine unreachable meanwhile.
        log.warn({ err, endpoint: config.dockerEndpoint }, 'Docker engine does not answer yet');
      }
    },
    // Stopped after the servers closed: no forward can start a port-forward helper any more.
    stop: () => dockerRuntime.close(),
  });
  const allocatable = nodeAllocatable();
  const podCgroups = config.cgroupsPerQOS
    ? new NodeCgroups({
      root: config.cgroupRoot,
      required: config.cgroupsPerQOSRequired,
      podPidsLimit: config.podPidsLimit,
      allocatableMilliCPU: allocatable.cpuMilli,
      // enforceNodeAllocatable [pods]: capacity less the reservations, of which nodelet has none.
      podsMemoryLimit: allocatable.memoryBytes,
      engineRefusal: async () => {
        if (!config.dockerEndpoint.startsWith('unix://')) return `the engine at ${config.dockerEndpoint} is not known to share this host's cgroups (only a unix socket is)`;
        const { driver } = await dockerRuntime.cgroupInfo();
        return driver === 'cgroupfs' ? undefined : `the engine's cgroup driver is ${JSON.stringify(driver)}, not "cgroupfs"`;
      },
      log,
    })
    : undefined;
  if (podCgroups) lifecycle.add({ name: 'pod cgroups', start: () => podCgroups.start(), stop: () => podCgroups.close() });
  const canLowerOOMScore = !(await ownCapabilityBounds()).missing.includes('SYS_RESOURCE');
  // KubeletEnsureSecretPulledImages (pkg/kubelet/kuberuntime/kuberuntime_manager.go makes it
  // beside the runtime): records under <root-dir>/image_manager, intents of an earlier run settled now.
  const imagePullManager = await ImagePullManager.open(
    { rootDir: config.rootDir, enforcer: verificationEnforcer(config.imagePullCredentialsVerificationPolicy, config.preloadedImagesVerificationAllowlist), log: log.child({ component: 'image-pull-manager' }) },
    () => dockerRuntime.listImages(),
  );
  return { dockerRuntime, runtime, metrics, network, podCgroups, allocatable, canLowerOOMScore, imagePullManager };
}

interface PodPipeline {
  readonly recorder: EventRecorder;
  readonly podManager: PodManager;
  readonly statusManager: StatusManager;
  readonly volumes: VolumeManager;
  readonly kubelet: Kubelet;
  readonly podConfig: PodConfig;
}

/** Pod sources' target: the pod config and manager, the status manager, the volumes, and the kubelet's sync loop. */
function buildPodPipeline(config: Config, opts: StartOptions, api: ApiserverParts, engine: EngineParts, lifecycle: Lifecycle): PodPipeline {
  const { log } = opts;
  const { runtime, podCgroups, allocatable } = engine;
  const recorder = new EventRecorder({ nodeName: config.nodeName });
  const podManager = new PodManager();
  const statusManager = new StatusManager({ log });
  // Secrets, configMaps and service-account tokens that volumes and env refer to: read from the
  // apiserver in cluster mode; standalone there are none (pods needing them are refused).
  // The volume manager reads each pod's sandbox IPs (downward API) from the kubelet, made next;
  // an issued pod certificate re-syncs its pod there.
  const runtimePods: { kubelet?: Kubelet } = {};
  const apiObjects = api.client
    ? new ApiserverObjects(api.client, {
        log,
        podCertificates: {
          nodeName: config.nodeName,
          recordEvent: (pod, reason, message) => recorder.record(pod, 'Warning', reason, message),
          onRequestSettled: (uid) => runtimePods.kubelet?.syncPodSoon(uid),
        },
      })
    : undefined;
  if (apiObjects) lifecycle.add({ name: 'service informer', start: () => apiObjects.start(), stop: () => apiObjects.stop() });
  const objects: PodObjectSource | undefined = apiObjects;
  const volumes: VolumeManager = new VolumeManager({
    rootDir: config.rootDir,
    objects,
    log,
    getPod: (uid) => podManager.getPodByUID(uid),
    listPods: () => podManager.getPods(),
    podInfo: (pod): PodRuntimeInfo => podRuntimeInfo(pod, config.nodeIP, runtimePods.kubelet?.runtimePod(pod.metadata?.uid ?? '')?.sandboxes[0]?.ips ?? []),
    clusterDomain: config.clusterDomain,
    ...(opts.volumeRefreshMs ? { refreshPeriodMs: opts.volumeRefreshMs } : {}),
  });
  const kubelet = new Kubelet({
    nodeName: config.nodeName,
    nodeIP: config.nodeIP,
    runtime,
    podManager,
    statusManager,
    recorder,
    log,
    syncFrequencyMs: config.syncFrequencyMs,
    metrics: engine.metrics,
    volumes,
    rootDir: config.rootDir,
    ...(objects ? { objects } : {}),
    imagePullManager: engine.imagePullManager,
    dns: { clusterDNS: config.clusterDNS, clusterDomain: config.clusterDomain, resolvConf: config.resolvConf },
    ...(podCgroups ? { podCgroups } : {}),
    oomScores: { memoryCapacity: allocatable.memoryBytes, canLower: engine.canLowerOOMScore },
    containerGC: {
      policy: { minAgeMs: config.minimumGCAgeMs, maxPerPodContainer: config.maxPerPodContainerCount, maxContainers: config.maxContainerCount },
      periodMs: config.containerGCPeriodMs,
    },
    ...(opts.relistPeriodMs ? { relistPeriodMs: opts.relistPeriodMs } : {}),
    ...(opts.crashLoopBackoffMs ? { backoff: new Backoff(opts.crashLoopBackoffMs) } : {}),
  });
  runtimePods.kubelet = kubelet;
  lifecycle.add({ name: 'volume manager', start: () => volumes.start(), stop: () => volumes.stop() });
  lifecycle.add({ name: 'kubelet', start: () => kubelet.start(), stop: () => kubelet.stop() });
  const podConfig = new PodConfig({
    manager: podManager,
    recorder,
    log,
    onChange: (diff) => kubelet.handlePodChanges(diff),
    // An apiserver pod refused as invalid is reported Failed by the kubelet, as those it refuses itself.
    onRejected: (source, pod, message) => {
      if (source === 'api') kubelet.rejectPod(pod, { reason: 'FailedValidation', message });
    },
  });
  return { recorder, podManager, statusManager, volumes, kubelet, podConfig };
}

interface NodeParts {
  readonly nodeSubject: { kind: string; apiVersion: string; metadata: { name: string; namespace: string; uid: string } };
  readonly imageGC: ImageGC;
  readonly stats: StatsSampler;
  readonly diskStats: DiskStatsCache;
  readonly eviction: EvictionManager;
  readonly nodeSource: NodeSource;
  /** The port the API listens on, once listening (the Node's `daemonEndpoints`). */
  servingPort: number;
  /** The Node's UID once cluster mode registered it. */
  registeredUID: () => string | undefined;
}

/**
 * What watches the node: image GC (pkg/kubelet/images/image_gc_manager.go: at start, then every 5
 * minutes), the stats samplers, the eviction manager (pkg/kubelet/eviction/: node pressure,
 * local-storage limits, reclaim, then one pod evicted per pass; its `Admit` the kubelet's first
 * admission handler), and the Node object (facts cached a few seconds, health from the relist).
 */
function buildNodeParts(config: Config, opts: StartOptions, engine: EngineParts, pods: PodPipeline, thresholds: ReturnType<typeof parseThresholdConfig>, spec: { labels: Record<string, string>; taints: Taint[] }, lifecycle: Lifecycle): NodeParts {
  const { log } = opts;
  const { dockerRuntime, runtime, podCgroups, metrics } = engine;
  const { kubelet, recorder, podManager, volumes } = pods;
  const nodeSubject = { kind: 'Node', apiVersion: 'v1', metadata: { name: config.nodeName, namespace: 'default', uid: config.nodeName } };
  const imageGC = new ImageGC({
    store: dockerRuntime,
    policy: { highThresholdPercent: config.imageGCHighThresholdPercent, lowThresholdPercent: config.imageGCLowThresholdPercent, minAgeMs: config.imageMinimumGCAgeMs, maxAgeMs: config.imageMaximumGCAgeMs },
    // Read from the engine at each run, not the relist's cache: right after a start it is still empty.
    imagesInUse: async () => new Set((await runtime.listPods()).flatMap((p) => p.containers.map((c) => c.imageID))),
    pinned: [config.podInfraContainerImage],
    warn: (reason, message) => recorder.record(nodeSubject, 'Warning', reason, message),
    collected: (reason) => metrics.imageGarbageCollected.inc({ reason }),
    afterFree: (remaining, began) => engine.imagePullManager.pruneUnknownRecords(remaining, began),
    log,
  });
  let imageGCTimer: NodeJS.Timeout | undefined;
  lifecycle.add({
    name: 'image GC',
    start: () => {
      const run = () => void imageGC.run();
      imageGCTimer = setInterval(run, opts.imageGCPeriodMs ?? IMAGE_GC_PERIOD_MS);
      imageGCTimer.unref();
      setImmediate(run);
    },
    stop: () => clearInterval(imageGCTimer),
  });
  // Samples what the relist last saw running; its first round runs at once (before any pod starts).
  const localImageFsRoot = async () => (config.dockerEndpoint.startsWith('unix://') ? dockerRuntime.imageFsRoot() : undefined);
  /** The class of a pod not synced since a restart, whose cgroup the pod cgroups do not know yet. */
  const qosOf = (uid: string) => {
    const pod = podManager.getPodByUID(uid);
    return pod ? getPodQOS(pod) : undefined;
  };
  const readCgroup = (location: CgroupLocation | undefined) => (location ? readCgroupStats(location, readText) : Promise.resolve(undefined));
  const stats = new StatsSampler({
    runtime,
    pods: () => kubelet.runtimePods(),
    log,
    readNode: () => readNodeStats(),
    readHost: hostReader({ rootDir: config.rootDir, imageFsRoot: localImageFsRoot }),
    ...(podCgroups
      ? {
        readPodCgroup: (uid: string) => readCgroup(podCgroups.statsLocation(uid, undefined, qosOf(uid))),
        readContainerCgroup: (uid: string, id: string) => readCgroup(podCgroups.statsLocation(uid, id, qosOf(uid))),
      }
      : {}),
    ...(opts.statsPeriodMs ? { periodMs: opts.statsPeriodMs } : {}),
  });
  lifecycle.add({ name: 'stats sampler', start: () => stats.start(), stop: () => stats.stop() });
  const diskStats = new DiskStatsCache({
    pods: () => kubelet.runtimePods(),
    podSpec: (uid) => podManager.getPodByUID(uid),
    localVolumeDir: (pod, name) => volumes.localEphemeralVolumeDir(pod, name),
    containerDiskUsage: (ids) => dockerRuntime.containerDiskUsage(ids),
    imagesBytes: async () => (await dockerRuntime.listImages()).reduce((sum, i) => sum + i.sizeBytes, 0),
    log,
    ...(opts.diskStatsPeriodMs ? { periodMs: opts.diskStatsPeriodMs } : {}),
  });
  lifecycle.add({ name: 'disk stats', start: () => diskStats.start(), stop: () => diskStats.stop() });
  const readings = evictionReadings({
    rootDir: config.rootDir,
    imageFsRoot: localImageFsRoot,
    sampleNow: () => stats.sampleNow(),
    snapshot: () => stats.snapshot(),
    runtimePod: (uid) => kubelet.runtimePod(uid),
    containerDiskUsage: (ids) => dockerRuntime.containerDiskUsage(ids),
    localVolumeDir: (pod, name) => volumes.localEphemeralVolumeDir(pod, name),
    ...(podCgroups ? { podProcesses: (uid: string) => podCgroups.processes(uid) } : {}),
  });
  const eviction = new EvictionManager({
    thresholds,
    pressureTransitionPeriodMs: config.evictionPressureTransitionPeriodMs,
    maxPodGracePeriodSeconds: config.evictionMaxPodGracePeriod,
    ...(opts.evictionMonitoringPeriodMs ? { monitoringIntervalMs: opts.evictionMonitoringPeriodMs } : {}),
    readNode: () => readings.readNode(),
    podUsage: (list, needs) => readings.podUsage(list, needs),
    activePods: () => kubelet.activePods(),
    deleteUnusedContainers: () => kubelet.deleteAllUnusedContainers(),
    deleteUnusedImages: () => imageGC.deleteUnusedImages(),
    evict: (pod, e, graceSeconds) => kubelet.evictPod(pod.metadata?.uid ?? '', e, graceSeconds),
    podCleanedUp: (pod) => kubelet.podCleanedUp(pod.metadata?.uid ?? ''),
    record: {
      pod: (pod, type, reason, message, annotations) => recorder.record(pod, type, reason, message, annotations),
      node: (type, reason, message) => recorder.record(nodeSubject, type, reason, message),
    },
    counted: (signal) => metrics.evictions.inc({ eviction_signal: signal }),
    log: log.child({ component: 'eviction' }),
  });
  kubelet.addPodAdmitHandler((pod) => eviction.admit(pod));
  lifecycle.add({ name: 'eviction manager', start: () => eviction.start(), stop: () => eviction.stop() });
  const parts: NodeParts = {
    nodeSubject,
    imageGC,
    stats,
    diskStats,
    eviction,
    servingPort: config.port,
    registeredUID: () => undefined,
    nodeSource: new NodeSource({
      readFacts: () => readNodeFacts({ engine: () => dockerRuntime.engineFacts(), nodeName: config.nodeName, nodeIP: config.nodeIP, port: parts.servingPort, rootDir: config.rootDir, kubeletVersion: serverVersion.gitVersion, maxPods: config.maxPods }),
      health: () => healthFromRelist(kubelet.relistHealth(), Date.now(), runtime.networkStatus().readiness, eviction.conditions()),
      spec,
      registeredUID: () => parts.registeredUID(),
      log,
    }),
  };
  // Admission fits new pods into the node's allocatable as last built.
  parts.nodeSource.onChange((node) => kubelet.nodeBuilt(node));
  return parts;
}

interface ServingParts {
  readonly app: FastifyInstance;
  readonly sessions: StreamingSessions;
  readonly servingCertificates: CertificateManager | undefined;
  url: string;
  readOnlyUrl: string | undefined;
  adminKubeconfig: string | undefined;
}

/**
 * The HTTP API (and the read-only port), the Host it reads, the metrics it serves, and what
 * starts once it listens: the admin kubeconfig (the port is in it), the Node's refreshes (the
 * port is in it too), and the certificate managers. `serverTLSBootstrap`: a CSR-issued serving
 * certificate; the stored one is served from the start, else the self-signed one until the first
 * is issued (the kubelet refuses handshakes meanwhile).
 */
async function buildServing(config: Config, opts: StartOptions, api: ApiserverParts, credentials: Credentials, engine: EngineParts, pods: PodPipeline, node: NodeParts, lifecycle: Lifecycle): Promise<ServingParts> {
  const { log } = opts;
  const { dockerRuntime, runtime, metrics } = engine;
  const { kubelet, podManager, statusManager, recorder } = pods;
  const { nodeSource } = node;
  const server: { app?: FastifyInstance } = {};
  const servingCertificates =
    config.serverTLSBootstrap && api.client
      ? servingCertificateManager({
          certDir: config.certDir,
          nodeName: config.nodeName,
          client: api.client,
          addresses: () => nodeSource.last?.status?.addresses,
          onRotated: (pair) => {
            if (!credentials.tls) return;
            credentials.tls = { ...credentials.tls, cert: Buffer.from(pair.certPem), key: Buffer.from(pair.keyPem) };
            if (server.app && replaceServingCertificate(server.app.server, credentials.tls)) log.info({ serial: pair.serial, notAfter: pair.notAfter.toISOString() }, 'Serving the certificate issued by the cluster');
          },
          log,
          ...(opts.certificateTiming ? { timing: opts.certificateTiming } : {}),
        })
      : undefined;
  const stored = await servingCertificates?.load();
  if (credentials.tls && stored) credentials.tls = { ...credentials.tls, cert: Buffer.from(stored.certPem), key: Buffer.from(stored.keyPem) };
  const host = new KubeletHost({ nodeName: config.nodeName, podManager, statusManager, runtime, recorder, kubelet, stats: node.stats, diskStats: node.diskStats, nodeSource, log });
  const sessions = new StreamingSessions(config.maxStreamingSessions);
  metrics.collectFrom({
    runningPods: () => kubelet.runtimePods().filter((p) => p.sandboxes.some((s) => s.ready)).length,
    containersByState: () => {
      const counts: Record<string, number> = { created: 0, running: 0, exited: 0, unknown: 0 };
      for (const p of kubelet.runtimePods()) for (const c of p.containers) counts[c.state] = (counts[c.state] ?? 0) + 1;
      return counts;
    },
    sessions: () => sessions.size,
    runtime: () => dockerRuntime.currentEngine,
  });
  const app = buildServer({
    host,
    logger: log,
    version: serverVersion,
    sessions,
    metrics,
    streaming: {
      idleTimeoutMs: config.streamingConnectionIdleTimeoutMs,
      maxPortForwardConnectionsPerSession: config.maxPortForwardConnectionsPerSession,
      maxPortForwardConnections: config.maxPortForwardConnections,
      ...opts.streaming,
    },
    maxContainerLogStreams: config.maxContainerLogStreams,
    zpages: { component: 'kubelet', configz: () => kubeletConfiguration(config), flagz: () => flagzValues(config), startedAt: new Date(), binaryVersion: serverVersion.gitVersion },
    maxWatches: config.maxWatches,
    maxWatchesPerUser: config.maxWatchesPerUser,
    security: credentials.security,
    ...(credentials.tls ? { tls: credentials.tls } : {}),
  });
  server.app = app;
  const parts: ServingParts = { app, sessions, servingCertificates, url: '', readOnlyUrl: undefined, adminKubeconfig: undefined };
  lifecycle.add({
    name: 'API server',
    start: async () => {
      parts.url = await app.listen({ host: config.address, port: config.port });
      node.servingPort = Number(new URL(parts.url).port);
    },
    stop: () => app.close(),
  });
  // The kubelet's 10255: no authentication, an allow-list of GETs, plain HTTP, no streaming sessions.
  if (config.readOnlyPort > 0) {
    const readOnly = buildServer({ host, logger: log, version: serverVersion, sessions: new StreamingSessions(0), metrics, security: { kind: 'readOnly' } });
    lifecycle.add({
      name: 'read-only server',
      start: async () => {
        parts.readOnlyUrl = await readOnly.listen({ host: config.address, port: config.readOnlyPort });
      },
      stop: () => readOnly.close(),
    });
  }
  const embedded = credentials.embedded;
  if (embedded) {
    lifecycle.add({
      name: 'admin kubeconfig',
      start: async () => {
        parts.adminKubeconfig = await writeAdminKubeconfig(config, node.servingPort, embedded);
        log.info({ kubeconfig: parts.adminKubeconfig }, `Admin kubeconfig: KUBECONFIG=${parts.adminKubeconfig} kubectl get pods`);
      },
    });
  }
  lifecycle.add({ name: 'node source', start: () => nodeSource.start(), stop: () => nodeSource.stop() });
  for (const [name, manager] of [['client certificates', api.clientCertificates], ['serving certificates', servingCertificates]] as const) {
    if (manager) lifecycle.add({ name, start: () => manager.start(), stop: () => manager.stop() });
  }
  return parts;
}

/** Cluster mode's loops (node, lease, pods, statuses, mirror pods, events), told what the kubelet does. */
function startCluster(config: Config, opts: StartOptions, client: KubeClient, nodeSpec: { labels: Record<string, string>; taints: Taint[] }, engine: EngineParts, pods: PodPipeline, node: NodeParts): ClusterMode {
  const { kubelet } = pods;
  const network = engine.network;
  const cluster = startClusterMode({
    config,
    client,
    nodeSource: node.nodeSource,
    nodeSpec,
    podManager: pods.podManager,
    statusManager: pods.statusManager,
    recorder: pods.recorder,
    onPods: (list) => pods.podConfig.update('api', list),
    onNode: (n) => kubelet.nodeObserved(n),
    hasRunningContainers: (uid) => {
      const rp = kubelet.runtimePod(uid);
      return rp !== undefined && (rp.containers.some((c) => c.state === 'running') || rp.sandboxes.some((s) => s.ready));
    },
    ...(network ? { podCIDRs: (cidrs: readonly string[]) => network.setPodCIDRs(cidrs) } : {}),
    log: opts.log,
    ...(opts.clusterTiming ? { timing: opts.clusterTiming } : {}),
  });
  kubelet.on('podTerminated', (uid) => cluster.podTerminated(uid));
  kubelet.on('podRejected', (pod) => cluster.podRejected(pod));
  pods.podConfig.onPodsChanged(() => cluster.podsChanged());
  return cluster;
}

/**
 * The static pod directory (`--pod-manifest-path`) and, in cluster mode, the apiserver: orphaned
 * containers are removed only once every source has delivered its first snapshot
 * (`markSourcesReady`). Started last: every part a pod needs runs by then.
 */
function addPodSources(config: Config, log: Logger, pods: PodPipeline, lifecycle: Lifecycle): void {
  const { kubelet, podConfig, recorder } = pods;
  const unseen = new Set([...(config.staticPodPath ? ['file'] : []), ...(config.kubeconfig ? ['api'] : [])]);
  const seen = (name: string) => {
    unseen.delete(name);
    if (unseen.size === 0) kubelet.markSourcesReady();
  };
  podConfig.onSnapshot(seen);
  if (unseen.size === 0) lifecycle.add({ name: 'pod sources', start: () => kubelet.markSourcesReady() });
  if (!config.staticPodPath) return;
  const nodeSubject = { kind: 'Node', apiVersion: 'v1', metadata: { name: config.nodeName, namespace: 'default', uid: config.nodeName } };
  const source = new StaticPodDirSource({
    dir: config.staticPodPath,
    nodeName: config.nodeName,
    intervalMs: config.fileCheckFrequencyMs,
    log,
    onError: (file, message) => recorder.record(nodeSubject, 'Warning', 'FailedValidation', `Error reading static pod file ${file}, ignoring: ${message}`),
  });
  lifecycle.add({ name: 'static pod source', start: () => source.start((list) => podConfig.update('file', list)), stop: () => source.stop() });
}

/** `scheduling.SystemCriticalPriority`. */
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/**
 * The shutdown manager's `migrateConfig` (pkg/kubelet/nodeshutdown/nodeshutdown_manager.go): pods
 * of priority 0 and up get `shutdownGracePeriod − shutdownGracePeriodCriticalPods`, pods of
 * system-critical priority the rest; none without a grace period.
 */
export function shutdownGroups(gracePeriodMs: number, criticalMs: number): { priority: number; graceSeconds: number }[] {
  if (gracePeriodMs <= 0 || criticalMs > gracePeriodMs) return [];
  return [
    { priority: 0, graceSeconds: Math.floor((gracePeriodMs - criticalMs) / 1000) },
    { priority: SYSTEM_CRITICAL_PRIORITY, graceSeconds: Math.floor(criticalMs / 1000) },
  ];
}
