import { Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client';
import { HttpSeriesSet } from './http.js';

/**
 * Labels of `nodelet_streaming_upgrades_total`: the kubelet's path bucket (as in
 * `kubelet_http_requests_total`), the transport the 101 switched to, and the subprotocol
 * nodelet chose (from its own list, so the label set is bounded; empty when the client offered
 * none, i.e. v1).
 */
export interface StreamingUpgradeLabels {
  path: 'exec' | 'attach' | 'portForward';
  transport: 'websocket' | 'spdy';
  protocol: string;
}

/**
 * nodelet's metrics, with the kubelet's names and labels (pkg/kubelet/metrics, server/metrics)
 * plus a few of its own (`nodelet_*`). One registry per nodelet instance, never prom-client's
 * global one, so several nodelets can live in one process (tests).
 */
export class Metrics {
  readonly registry = new Registry();

  /** The HTTP request counts as plain numbers, recorded per request and read into the two metrics below when scraped. */
  readonly http = new HttpSeriesSet();

  readonly httpRequests = new Counter({
    name: 'kubelet_http_requests_total',
    help: 'Number of the http requests received since the server started',
    labelNames: ['method', 'path', 'server_type', 'long_running'] as const,
    registers: [this.registry],
    collect: completedInto(this.http),
  });
  /** `kubelet_http_requests_duration_seconds`, kept in the HTTP series (`HttpSeries.observe`) and written from them when scraped. */
  readonly httpDuration = registerSeriesHistogram(this.registry, this.http, 'kubelet_http_requests_duration_seconds', 'Duration in seconds to serve http requests');
  readonly httpInflight = new Gauge({
    name: 'kubelet_http_inflight_requests',
    help: 'Number of the inflight http requests',
    labelNames: ['method', 'path', 'server_type', 'long_running'] as const,
    registers: [this.registry],
    collect: inflightInto(this.http),
  });

  readonly startedPods = new Counter({ name: 'kubelet_started_pods_total', help: 'Cumulative number of pods started', registers: [this.registry] });
  readonly startedPodErrors = new Counter({ name: 'kubelet_started_pods_errors_total', help: 'Cumulative number of errors when starting pods', registers: [this.registry] });
  readonly startedContainers = new Counter({
    name: 'kubelet_started_containers_total',
    help: 'Cumulative number of containers started',
    labelNames: ['container_type'] as const,
    registers: [this.registry],
  });
  readonly startedContainerErrors = new Counter({
    name: 'kubelet_started_containers_errors_total',
    help: 'Cumulative number of errors when starting containers',
    labelNames: ['container_type', 'code'] as const,
    registers: [this.registry],
  });
  readonly restartedPods = new Counter({
    name: 'kubelet_restarted_pods_total',
    help: 'Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods)',
    labelNames: ['static'] as const,
    registers: [this.registry],
  });
  readonly podStartDuration = new Histogram({
    name: 'kubelet_pod_start_duration_seconds',
    help: 'Duration in seconds from the kubelet seeing a pod for the first time to the pod starting to run',
    buckets: [0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600],
    registers: [this.registry],
  });
  readonly runtimeOperations = new Counter({
    name: 'kubelet_runtime_operations_total',
    help: 'Cumulative number of runtime operations by operation type.',
    labelNames: ['operation_type'] as const,
    registers: [this.registry],
  });
  readonly runtimeOperationErrors = new Counter({
    name: 'kubelet_runtime_operations_errors_total',
    help: 'Cumulative number of runtime operation errors by operation type.',
    labelNames: ['operation_type'] as const,
    registers: [this.registry],
  });
  readonly runtimeOperationDuration = new Histogram({
    name: 'kubelet_runtime_operations_duration_seconds',
    help: 'Duration in seconds of runtime operations. Broken down by operation type.',
    labelNames: ['operation_type'] as const,
    buckets: [0.005, 0.0125, 0.03125, 0.078125, 0.1953125, 0.48828125, 1.220703125, 3.0517578125, 7.62939453125, 19.073486328125, 47.6837158203125, 119.20928955078125, 298.0232238769531, 745.0580596923828],
    registers: [this.registry],
  });
  /**
   * Streaming sessions that got their 101, by transport and subprotocol. kubectl ≥ 1.30 tries
   * WebSocket first and silently falls back to SPDY on any refusal: this says which one it used.
   */
  readonly streamingUpgrades = new Counter({
    name: 'nodelet_streaming_upgrades_total',
    help: 'Streaming sessions (exec, attach, port-forward) upgraded with a 101, by path, transport (websocket, spdy) and negotiated subprotocol',
    labelNames: ['path', 'transport', 'protocol'] as const,
    registers: [this.registry],
  });
  readonly websocketNativeUnmask = new Gauge({
    name: 'nodelet_websocket_native_unmask',
    help: '1 when WebSocket client frames are unmasked by native code (bufferutil loaded), else 0',
    registers: [this.registry],
  });
  readonly imageGarbageCollected = new Counter({
    name: 'kubelet_image_garbage_collected_total',
    help: 'Total number of images garbage collected by the kubelet, whether through disk usage or image age',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });
  readonly evictions = new Counter({
    name: 'kubelet_evictions',
    help: 'Cumulative number of pod evictions by eviction signal',
    labelNames: ['eviction_signal'] as const,
    registers: [this.registry],
  });
  readonly dockerRequests = new Counter({
    name: 'nodelet_docker_api_requests_total',
    help: 'Docker Engine API requests sent, by method and endpoint template',
    labelNames: ['method', 'endpoint'] as const,
    registers: [this.registry],
  });
  readonly apiserverRequests = new Counter({
    name: 'nodelet_apiserver_requests_total',
    help: 'Requests sent to the apiserver by the node client, by verb and resource',
    labelNames: ['verb', 'resource'] as const,
    registers: [this.registry],
  });
  readonly dockerErrors = new Counter({
    name: 'nodelet_docker_api_errors_total',
    help: 'Docker Engine API calls that failed, by runtime operation',
    labelNames: ['operation_type'] as const,
    registers: [this.registry],
  });

  /** Gauges computed at scrape time from live state, so they can never drift. */
  collectFrom(sources: {
    runningPods: () => number;
    containersByState: () => Record<string, number>;
    sessions: () => number;
    /** The container engine, once it answered (no sample before). */
    runtime?: () => { name: string; version: string } | undefined;
  }): void {
    new Gauge({
      name: 'kubelet_running_pods',
      help: 'Number of pods that have a running pod sandbox',
      registers: [this.registry],
      collect() {
        this.set(sources.runningPods());
      },
    });
    new Gauge({
      name: 'kubelet_running_containers',
      help: 'Number of containers currently running',
      labelNames: ['container_state'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [state, n] of Object.entries(sources.containersByState())) this.set({ container_state: state }, n);
      },
    });
    new Gauge({
      name: 'nodelet_streaming_sessions',
      help: 'Open exec, attach and port-forward sessions',
      registers: [this.registry],
      collect() {
        this.set(sources.sessions());
      },
    });
    new Gauge({
      name: 'nodelet_container_runtime_info',
      help: 'The container engine behind the Docker Engine API (docker or podman) and its version; always 1',
      labelNames: ['runtime', 'version'] as const,
      registers: [this.registry],
      collect() {
        this.reset();
        const engine = sources.runtime?.();
        if (engine) this.set({ runtime: engine.name, version: engine.version }, 1);
      },
    });
  }
}

/**
 * A histogram that lives in the HTTP series, registered as a metric of its own: prom-client's
 * `Histogram.observe` validates and hashes its labels on every call, which cost more than serving
 * a cached `/podInfo`; here a request costs a bucket increment, and the scrape does the rest.
 */
function registerSeriesHistogram(registry: Registry, http: HttpSeriesSet, name: string, help: string): { readonly name: string } {
  const metric = {
    name,
    help,
    type: 'histogram' as const,
    aggregator: 'sum' as const,
    get: async () => ({ name, help, type: 'histogram' as const, aggregator: 'sum' as const, values: http.durationSamples(name) }),
    reset: () => undefined,
  };
  registry.registerMetric(metric as unknown as Metric);
  return metric;
}

/** prom-client `collect` functions: bring a metric up to date with the HTTP series before it is read. */
function completedInto(http: HttpSeriesSet): (this: Counter<string>) => void {
  return function (this: Counter<string>) {
    http.exportCompleted(this);
  };
}
function inflightInto(http: HttpSeriesSet): (this: Gauge<string>) => void {
  return function (this: Gauge<string>) {
    http.exportInflight(this);
  };
}
