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
import { dockerClient } from './runtime/docker/client.js';
import { DockerRuntime } from './runtime/docker/runtime.js';
import { ownCapabilityBounds } from './runtime/docker/privileged.js';
import { NodeCgroups } from './cgroups/node-cgroups.js';
import { flagzValues, kubeletConfiguration } from './config/index.js';
import { ImageGC } from './kubelet/image-gc.js';
import { EvictionManager } from './eviction/manager.js';
import { parseThresholdConfig } from './eviction/thresholds.js';
import { evictionReadings } from './stats/eviction-readings.js';
import { ConfigError } from './config/errors.js';

/** The kubelet's `ImageGCPeriod`. */
const IMAGE_GC_PERIOD_MS = 5 * 60_000;
import { buildServer } from './server/index.js';
import { loadTlsMaterial, replaceServingCertificate, servesTLS, type TlsMaterial } from './server/tls.js';
import { loadEmbeddedCredentials, writeAdminKubeconfig } from './server/embedded.js';
import { Metrics } from './metrics/registry.js';
import { instrumentRuntime } from './metrics/runtime.js';
import { StreamingSessions } from './server/upgrade.js';
import { StatusManager } from './status/manager.js';
import { getPodQOS } from './api/qos.js';
import { readCgroupPressure, readCgroupStats, type CgroupLocation } from './stats/cgroup-stats.js';
import { DiskStatsCache } from './stats/disk-stats.js';
import { hostReader } from './stats/host.js';
import { readNodeStats, readText } from './stats/node.js';
import { StatsSampler } from './stats/sampler.js';
import { serverVersion } from './version.js';
import { podRuntimeInfo } from './kubelet/container-config.js';
import { VolumeManager } from './volumes/manager.js';
import type { PodObjectSource } from './volumes/source.js';
import { nodeAllocatable, type PodRuntimeInfo } from './volumes/downward-api.js';
import { KubeClient } from './apiserver/client.js';
import { loadKubeconfig } from './config/kubeconfig.js';
import { ApiserverObjects, startClusterMode, type ClusterMode } from './cluster/index.js';
import { parseNodeLabels, parseTaints } from './config/node-flags.js';
import { readNodeFacts } from './node/facts.js';
import { containerLogMaxSizeBytes } from './runtime/docker/log-config.js';
import { NodeSource, healthFromRelist } from './node/source.js';
import { CNINetworkPlugin } from './network/cni/index.js';
import { clientCertificateManager, loadClientCert, servingCertificateManager, type CertificateManager, type CertificateTiming } from './certificate/index.js';
import type { NetworkPlugin } from './network/types.js';

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

/** Wires the pieces of the architecture together and starts them (see docs/architecture.md, "Data flow"). */
export async function startNodelet(config: Config, opts: StartOptions): Promise<Nodelet> {
  const { log } = opts;
  const startedAt = new Date();
  // The eviction thresholds are checked before anything runs: a bad one stops nodelet (exit 2).
  const evictionThresholds = (() => {
    try {
      return parseThresholdConfig(config);
    } catch (err) {
      throw new ConfigError(`invalid eviction settings: ${(err as Error).message}`);
    }
  })();
  // TLS bootstrap (pkg/kubelet/certificate/bootstrap): --kubeconfig is written, when missing or its
  // certificate is unusable, before anything reads it. It waits for the CSR to be issued.
  const userAgent = `nodelet/${serverVersion.gitVersion} (${config.nodeName})`;
  if (config.bootstrapKubeconfig !== '') {
    await loadClientCert({ kubeconfigPath: config.kubeconfig, bootstrapKubeconfigPath: config.bootstrapKubeconfig, certDir: config.certDir, nodeName: config.nodeName, log, userAgent });
  }
  // Cluster mode: the kubeconfig is read before anything runs, so a bad one stops nodelet at once.
  const apiConnection = config.kubeconfig ? loadKubeconfig(config.kubeconfig) : undefined;
  const apiClient = apiConnection ? new KubeClient(apiConnection, { userAgent }) : undefined;
  // The webhooks' own client, so that a rotated client certificate reaches it too.
  const webhookClient =
    apiConnection && (config.authenticationTokenWebhook || config.authorizationMode === 'Webhook') ? new KubeClient(apiConnection, { userAgent: 'nodelet-webhook' }) : undefined;
  // Credentials, policy and certificates first: a bad file stops nodelet before anything runs.
  // The embedded default makes (once) and reuses its CA, serving certificate and admin token.
  const embedded = config.generatedCredentials ? await loadEmbeddedCredentials(config, log) : undefined;
  const securityWarnings: string[] = [];
  const security = securityFromConfig(config, securityWarnings, log, embedded?.adminToken, webhookClient);
  const closeSecurity = (): void => {
    if (security.kind === 'authenticated') security.close?.();
  };
  for (const warning of securityWarnings) log.warn({ file: config.tokenAuthFile }, `token file: ${warning}`);
  // Bearer tokens checked by the webhook are real cluster credentials: never over plain HTTP.
  let tls: TlsMaterial | undefined = embedded ? embedded.tls : servesTLS(config) || config.authenticationTokenWebhook ? await loadTlsMaterial(config, log) : undefined;
  // rotateCertificates: the client certificate renewed by CSR; both clients swap it in.
  const clientCertificates =
    config.rotateCertificates && apiConnection && apiClient
      ? await clientCertificateManager({
          conn: apiConnection,
          certDir: config.certDir,
          nodeName: config.nodeName,
          client: apiClient,
          onRotated: (pair) => {
            for (const c of [apiClient, webhookClient]) c?.setClientCertificate(Buffer.from(pair.certPem), Buffer.from(pair.keyPem));
          },
          log,
          ...(opts.certificateTiming ? { timing: opts.certificateTiming } : {}),
        })
      : undefined;
  // serverTLSBootstrap: a CSR-issued serving certificate; the stored one is served from the start,
  // else the self-signed one until the first is issued (the kubelet refuses handshakes meanwhile).
  // `app` is made below; the manager is started once the Node's addresses are known.
  let app: FastifyInstance | undefined;
  const servingCertificates =
    config.serverTLSBootstrap && apiClient
      ? servingCertificateManager({
          certDir: config.certDir,
          nodeName: config.nodeName,
          client: apiClient,
          addresses: () => nodeSource?.last?.status?.addresses,
          onRotated: (pair) => {
            if (!tls) return;
            tls = { ...tls, cert: Buffer.from(pair.certPem), key: Buffer.from(pair.keyPem) };
            if (app && replaceServingCertificate(app.server, tls)) log.info({ serial: pair.serial, notAfter: pair.notAfter.toISOString() }, 'Serving the certificate issued by the cluster');
          },
          log,
          ...(opts.certificateTiming ? { timing: opts.certificateTiming } : {}),
        })
      : undefined;
  const storedServing = await servingCertificates?.load();
  if (tls && storedServing) tls = { ...tls, cert: Buffer.from(storedServing.certPem), key: Buffer.from(storedServing.keyPem) };
  const docker = dockerClient(config.dockerEndpoint);
  const metrics = new Metrics();
  // Started before the first relist: it reads back the IPs of sandboxes that already run.
  const network = networkPluginFor(config, opts);
  await network?.start();
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
  try {
    await runtime.ping();
    // Docker or Podman, logged with the rlimits its containers get; asked again later if it fails.
    await dockerRuntime.engine();
  } catch (err) {
    // Keep going: the relist retries, and /healthz reports the engine unreachable meanwhile.
    log.warn({ err, endpoint: config.dockerEndpoint }, 'Docker engine does not answer yet');
  }

  let cluster: ClusterMode | undefined;
  const recorder = new EventRecorder({ nodeName: config.nodeName });
  const podManager = new PodManager();
  const statusManager = new StatusManager({ log });
  // Secrets, configMaps and service-account tokens that volumes and env refer to: read from the
  // apiserver in cluster mode; standalone there are none (pods needing them are refused).
  const objects: PodObjectSource | undefined = apiClient ? new ApiserverObjects(apiClient) : undefined;
  const volumes: VolumeManager = new VolumeManager({
    rootDir: config.rootDir,
    objects,
    log,
    getPod: (uid) => podManager.getPodByUID(uid),
    listPods: () => podManager.getPods(),
    podInfo: (pod): PodRuntimeInfo => podRuntimeInfo(pod, config.nodeIP, kubelet.runtimePod(pod.metadata?.uid ?? '')?.sandboxes[0]?.ips ?? []),
    clusterDomain: config.clusterDomain,
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
  // Lowering a process's OOM score below 0 needs CAP_SYS_RESOURCE, which some hosts withhold from root.
  const canLowerOOMScore = !(await ownCapabilityBounds()).missing.includes('SYS_RESOURCE');
  // Made once the kubelet exists (the Node's health is the PLEG's); the kubelet only reads it later.
  let nodeSource: NodeSource | undefined;
  // Made below, once the stats it reads exist; new pods are admitted through it from then on.
  let eviction: EvictionManager | undefined;
  const kubelet = new Kubelet({
    nodeName: config.nodeName,
    nodeIP: config.nodeIP,
    runtime,
    podManager,
    statusManager,
    recorder,
    log,
    syncFrequencyMs: config.syncFrequencyMs,
    metrics,
    volumes,
    rootDir: config.rootDir,
    ...(objects ? { objects } : {}),
    dns: { clusterDNS: config.clusterDNS, clusterDomain: config.clusterDomain, resolvConf: config.resolvConf },
    // Read at admission: until the node source below first builds the Node (moments after start,
    // nodeSource.start()) there is no allocatable, and resources are not checked.
    allocatable: () => nodeSource?.last?.status?.allocatable,
    ...(podCgroups ? { podCgroups } : {}),
    oomScores: { memoryCapacity: allocatable.memoryBytes, canLower: canLowerOOMScore },
    containerGC: {
      policy: { minAgeMs: config.minimumGCAgeMs, maxPerPodContainer: config.maxPerPodContainerCount, maxContainers: config.maxContainerCount },
      periodMs: config.containerGCPeriodMs,
    },
    admit: (pod) => eviction?.admit(pod),
    ...(opts.relistPeriodMs ? { relistPeriodMs: opts.relistPeriodMs } : {}),
    ...(opts.crashLoopBackoffMs ? { backoff: new Backoff(opts.crashLoopBackoffMs) } : {}),
  });
  const podConfig = new PodConfig({
    manager: podManager,
    recorder,
    log,
    onChange: (diff) => {
      kubelet.handlePodChanges(diff);
      cluster?.podsChanged();
    },
    // An apiserver pod refused as invalid is reported Failed by the kubelet, as those it refuses itself.
    onRejected: (source, pod, message) => {
      if (source === 'api') kubelet.rejectPod(pod, { reason: 'FailedValidation', message });
    },
  });
  kubelet.start();
  volumes.start();
  // Orphaned containers are removed only once every source has delivered its first snapshot.
  const unseen = new Set([...(config.staticPodPath ? ['file'] : []), ...(apiClient ? ['api'] : [])]);
  const sourceSeen = (name: string) => {
    unseen.delete(name);
    if (unseen.size === 0) kubelet.markSourcesReady();
  };

  const node = { kind: 'Node', apiVersion: 'v1', metadata: { name: config.nodeName, namespace: 'default', uid: config.nodeName } };
  // Image GC (pkg/kubelet/images/image_gc_manager.go): at start, then every 5 minutes.
  const imageGC = new ImageGC({
    store: dockerRuntime,
    policy: { highThresholdPercent: config.imageGCHighThresholdPercent, lowThresholdPercent: config.imageGCLowThresholdPercent, minAgeMs: config.imageMinimumGCAgeMs, maxAgeMs: config.imageMaximumGCAgeMs },
    // Read from the engine at each run, not the PLEG's cache: right after a start it is still empty.
    imagesInUse: async () => new Set((await runtime.listPods()).flatMap((p) => p.containers.map((c) => c.imageID))),
    pinned: [config.podInfraContainerImage],
    warn: (reason, message) => recorder.record(node, 'Warning', reason, message),
    collected: (reason) => metrics.imageGarbageCollected.inc({ reason }),
    log,
  });
  const runImageGC = () => void imageGC.run();
  const imageGCTimer = setInterval(runImageGC, opts.imageGCPeriodMs ?? IMAGE_GC_PERIOD_MS);
  imageGCTimer.unref();
  setImmediate(runImageGC);
  let source: StaticPodDirSource | undefined;
  if (config.staticPodPath) {
    source = new StaticPodDirSource({
      dir: config.staticPodPath,
      nodeName: config.nodeName,
      intervalMs: config.fileCheckFrequencyMs,
      log,
      onError: (file, message) => recorder.record(node, 'Warning', 'FailedValidation', `Error reading static pod file ${file}, ignoring: ${message}`),
    });
    source.start((pods) => {
      podConfig.update('file', pods);
      sourceSeen('file');
    });
  }
  if (unseen.size === 0) kubelet.markSourcesReady();

  // Samples what the PLEG last saw running; its first round runs at once (before any pod starts).
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
        readContainerPressure: async (uid: string, id: string) => {
          const location = podCgroups.statsLocation(uid, id, qosOf(uid));
          return location ? readCgroupPressure(location, readText) : undefined;
        },
      }
      : {}),
    ...(opts.statsPeriodMs ? { periodMs: opts.statsPeriodMs } : {}),
  });
  stats.start();
  const diskStats = new DiskStatsCache({
    pods: () => kubelet.runtimePods(),
    podSpec: (uid) => podManager.getPodByUID(uid),
    localVolumeDir: (pod, name) => volumes.localEphemeralVolumeDir(pod, name),
    containerDiskUsage: (ids) => dockerRuntime.containerDiskUsage(ids),
    imagesBytes: async () => (await dockerRuntime.listImages()).reduce((sum, i) => sum + i.sizeBytes, 0),
    log,
    ...(opts.diskStatsPeriodMs ? { periodMs: opts.diskStatsPeriodMs } : {}),
  });
  diskStats.start();
  // The eviction manager (pkg/kubelet/eviction/): node pressure conditions, local-storage limits,
  // reclaim (dead containers, unused images), then one pod evicted per pass.
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
  eviction = new EvictionManager({
    thresholds: evictionThresholds,
    pressureTransitionPeriodMs: config.evictionPressureTransitionPeriodMs,
    maxPodGracePeriodSeconds: config.evictionMaxPodGracePeriod,
    ...(opts.evictionMonitoringPeriodMs ? { monitoringIntervalMs: opts.evictionMonitoringPeriodMs } : {}),
    readNode: () => readings.readNode(),
    podUsage: (pods, needs) => readings.podUsage(pods, needs),
    activePods: () => kubelet.activePods(),
    deleteUnusedContainers: () => kubelet.deleteAllUnusedContainers(),
    deleteUnusedImages: () => imageGC.deleteUnusedImages(),
    evict: (pod, e, graceSeconds) => kubelet.evictPod(pod.metadata?.uid ?? '', e, graceSeconds),
    podCleanedUp: (pod) => kubelet.podCleanedUp(pod.metadata?.uid ?? ''),
    record: {
      pod: (pod, type, reason, message, annotations) => recorder.record(pod, type, reason, message, annotations),
      node: (type, reason, message) => recorder.record(node, type, reason, message),
    },
    counted: (signal) => metrics.evictions.inc({ eviction_signal: signal }),
    log: log.child({ component: 'eviction' }),
  });
  eviction.start();
  // The Node object, for the local /api/v1/nodes routes and cluster mode alike: facts cached a few
  // seconds, health from the PLEG. The port is the one listened on, known once listening.
  let servingPort = config.port;
  nodeSource = new NodeSource({
    readFacts: () => readNodeFacts({ engine: () => dockerRuntime.engineFacts(), nodeName: config.nodeName, nodeIP: config.nodeIP, port: servingPort, rootDir: config.rootDir, kubeletVersion: serverVersion.gitVersion, maxPods: config.maxPods }),
    health: () => healthFromRelist(kubelet.relistHealth(), Date.now(), runtime.networkStatus().readiness, eviction?.conditions()),
    spec: { labels: parseNodeLabels(config.nodeLabels), taints: parseTaints(config.registerWithTaints) },
    registeredUID: () => cluster?.node.uid,
    log,
  });
  const host = new KubeletHost({ nodeName: config.nodeName, podManager, statusManager, runtime, recorder, kubelet, stats, diskStats, nodeSource, log });
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
  app = buildServer({
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
    zpages: {
      component: 'kubelet',
      configz: () => kubeletConfiguration(config),
      flagz: () => flagzValues(config),
      startedAt,
      binaryVersion: serverVersion.gitVersion,
    },
    maxWatches: config.maxWatches,
    maxWatchesPerUser: config.maxWatchesPerUser,
    security,
    ...(tls ? { tls } : {}),
  });
  // The kubelet's 10255: no authentication, an allow-list of GETs, plain HTTP, no streaming sessions.
  const readOnly =
    config.readOnlyPort > 0
      ? buildServer({ host, logger: log, version: serverVersion, sessions: new StreamingSessions(0), metrics, security: { kind: 'readOnly' } })
      : undefined;
  /** Undoes a start that failed after the parts above were started. */
  const abandonStart = async () => {
    await source?.stop();
    await app.close();
    await readOnly?.close();
    await eviction?.stop();
    await stats.stop();
    await diskStats.stop();
    await kubelet.stop();
    await volumes.stop();
    await dockerRuntime.close();
    podCgroups?.close();
    clearInterval(imageGCTimer);
    network?.stop();
    closeSecurity();
    apiClient?.close();
    await clientCertificates?.stop();
    await servingCertificates?.stop();
  };
  let url: string;
  let readOnlyUrl: string | undefined;
  try {
    url = await app.listen({ host: config.address, port: config.port });
    if (readOnly) readOnlyUrl = await readOnly.listen({ host: config.address, port: config.readOnlyPort });
  } catch (err) {
    await abandonStart();
    throw err;
  }
  servingPort = Number(new URL(url).port);
  let adminKubeconfig: string | undefined;
  if (embedded) {
    try {
      adminKubeconfig = await writeAdminKubeconfig(config, servingPort, embedded);
      log.info({ kubeconfig: adminKubeconfig }, `Admin kubeconfig: KUBECONFIG=${adminKubeconfig} kubectl get pods`);
    } catch (err) {
      await abandonStart();
      throw err;
    }
  }
  nodeSource.start();
  clientCertificates?.start();
  servingCertificates?.start();
  if (apiClient) {
    cluster = startClusterMode({
      config,
      client: apiClient,
      nodeSource,
      podManager,
      statusManager,
      recorder,
      onPods: (pods) => {
        podConfig.update('api', pods);
        sourceSeen('api');
      },
      hasRunningContainers: (uid) => {
        const rp = kubelet.runtimePod(uid);
        return rp !== undefined && (rp.containers.some((c) => c.state === 'running') || rp.sandboxes.some((s) => s.ready));
      },
      ...(network ? { podCIDRs: (cidrs: readonly string[]) => network.setPodCIDRs(cidrs) } : {}),
      log,
      ...(opts.clusterTiming ? { timing: opts.clusterTiming } : {}),
    });
    const mode = cluster;
    kubelet.on('podTerminated', (uid) => mode.podTerminated(uid));
    kubelet.on('podRejected', (pod) => mode.podRejected(pod));
  }
  const posture = {
    tls: tls !== undefined,
    anonymousAuth: config.anonymousAuth,
    authorizationMode: config.authorizationMode,
    tokenWebhook: config.authenticationTokenWebhook || undefined,
    insecureDev: config.insecureDev || undefined,
    adminKubeconfig,
  };
  log.info({ url, readOnlyUrl, node: config.nodeName, staticPodPath: config.staticPodPath || undefined, ...posture }, 'nodelet is serving');
  if (readOnlyUrl) log.warn({ readOnlyUrl }, 'The read-only port serves /pods (including env values) without authentication');

  return {
    app,
    kubelet,
    runtime: dockerRuntime,
    metrics,
    sessions,
    stats,
    diskStats,
    url,
    readOnlyUrl,
    cluster,
    certificates: { client: clientCertificates, serving: servingCertificates },
    adminKubeconfig,
    async shutdown() {
      const groups = shutdownGroups(config.shutdownGracePeriodMs, config.shutdownGracePeriodCriticalPodsMs);
      if (!groups.length) return;
      log.info({ shutdownGracePeriod: config.shutdownGracePeriodMs / 1000, shutdownGracePeriodCriticalPods: config.shutdownGracePeriodCriticalPodsMs / 1000 }, 'Shutdown manager: the node is shutting down, stopping its pods');
      await kubelet.shutdownPods(groups);
    },
    async close() {
      await source?.stop();
      nodeSource.stop();
      await clientCertificates?.stop();
      await servingCertificates?.stop();
      await cluster?.stop();
      apiClient?.close();
      await readOnly?.close();
      await app.close();
      await eviction?.stop();
      await stats.stop();
      await diskStats.stop();
      await kubelet.stop();
      await volumes.stop();
      // After the server closed: no forward can start a port-forward helper any more.
      await dockerRuntime.close();
      podCgroups?.close();
      clearInterval(imageGCTimer);
      network?.stop();
      closeSecurity();
    },
  };
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
