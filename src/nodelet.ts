import type { FastifyInstance } from 'fastify';
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
import { buildServer } from './server/index.js';
import { Metrics } from './metrics/registry.js';
import { instrumentRuntime } from './metrics/runtime.js';
import { StreamingSessions } from './server/upgrade.js';
import { StatusManager } from './status/manager.js';
import { serverVersion } from './version.js';

export interface Nodelet {
  readonly app: FastifyInstance;
  readonly kubelet: Kubelet;
  readonly runtime: DockerRuntime;
  readonly metrics: Metrics;
  /** Open exec/attach/port-forward sessions. */
  readonly sessions: StreamingSessions;
  /** `http://address:port` the API listens on. */
  readonly url: string;
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
}

/** Wires the pieces of the architecture together and starts them (see DESIGN.md's data flow). */
export async function startNodelet(config: Config, opts: StartOptions): Promise<Nodelet> {
  const { log } = opts;
  const docker = dockerClient(config.dockerEndpoint);
  const metrics = new Metrics();
  const dockerRuntime = new DockerRuntime({
    docker,
    nodeName: config.nodeName,
    infraImage: config.podInfraContainerImage,
    podNetwork: config.podNetwork,
    execDisconnectGraceMs: config.execDisconnectGracePeriodMs,
    log,
  });
  const runtime = instrumentRuntime(dockerRuntime, metrics);
  try {
    await runtime.ping();
  } catch (err) {
    // Keep going: the relist retries, and /healthz reports the engine unreachable meanwhile.
    log.warn({ err, endpoint: config.dockerEndpoint }, 'Docker engine does not answer yet');
  }

  const recorder = new EventRecorder({ nodeName: config.nodeName });
  const podManager = new PodManager();
  const statusManager = new StatusManager({ log });
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
    ...(opts.relistPeriodMs ? { relistPeriodMs: opts.relistPeriodMs } : {}),
    ...(opts.crashLoopBackoffMs ? { backoff: new Backoff(opts.crashLoopBackoffMs) } : {}),
  });
  const podConfig = new PodConfig({ manager: podManager, recorder, log, onChange: (diff) => kubelet.handlePodChanges(diff) });
  kubelet.start();

  const node = { kind: 'Node', apiVersion: 'v1', metadata: { name: config.nodeName, namespace: 'default', uid: config.nodeName } };
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
      kubelet.markSourcesReady();
    });
  } else {
    kubelet.markSourcesReady();
  }

  const host = new KubeletHost({ nodeName: config.nodeName, podManager, statusManager, runtime, recorder, kubelet });
  const sessions = new StreamingSessions(config.maxStreamingSessions);
  metrics.collectFrom({
    runningPods: () => kubelet.pleg.getPods().filter((p) => p.sandboxes.some((s) => s.ready)).length,
    containersByState: () => {
      const counts: Record<string, number> = { created: 0, running: 0, exited: 0, unknown: 0 };
      for (const p of kubelet.pleg.getPods()) for (const c of p.containers) counts[c.state] = (counts[c.state] ?? 0) + 1;
      return counts;
    },
    sessions: () => sessions.size,
  });
  const app = buildServer({
    host,
    logger: log,
    version: serverVersion,
    sessions,
    metrics,
    streaming: { idleTimeoutMs: config.streamingConnectionIdleTimeoutMs, ...opts.streaming },
  });
  let url: string;
  try {
    url = await app.listen({ host: config.address, port: config.port });
  } catch (err) {
    source?.stop();
    await kubelet.stop();
    throw err;
  }
  log.info({ url, node: config.nodeName, staticPodPath: config.staticPodPath || undefined }, 'nodelet is serving');

  return {
    app,
    kubelet,
    runtime: dockerRuntime,
    metrics,
    sessions,
    url,
    async close() {
      source?.stop();
      await app.close();
      await kubelet.stop();
    },
  };
}
