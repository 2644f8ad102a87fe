/**
 * Label values of the kubelet's HTTP metrics (pkg/kubelet/server/server.go `ServeHTTP` and
 * server/metrics). Values are bucketed so a client sending random paths or methods cannot grow
 * the label set (CVE-2020-8551): anything unknown becomes `other`.
 */
const pathBuckets = [
  'healthz',
  'pods',
  'stats',
  'metrics/cadvisor',
  'metrics/probes',
  'metrics/resource',
  'metrics',
  'run',
  'exec',
  'attach',
  'portForward',
  'containerLogs',
  'configz',
  'flagz',
  'statusz',
  'runningpods',
  'logs',
  'debug',
  'checkpoint',
] as const;

const methods = new Set(['OPTIONS', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'TRACE', 'CONNECT', 'PATCH']);

/** Paths that hold a connection open for a session (the kubelet's `longRunningRequestPathMap`). */
const longRunning = new Set(['exec', 'attach', 'portForward', 'debug']);

/** apiserver-style pod subresources map onto the kubelet bucket of the same operation. */
const apiSubresources: Record<string, string> = { exec: 'exec', attach: 'attach', portforward: 'portForward', log: 'containerLogs' };

export interface HttpLabels {
  method: string;
  path: string;
  server_type: 'readonly' | 'readwrite';
  long_running: 'true' | 'false';
}

export function httpLabels(method: string, url: string, serverType: 'readonly' | 'readwrite'): HttpLabels {
  const path = pathBucket(url);
  return {
    method: methods.has(method) ? method : 'other',
    path,
    server_type: serverType,
    long_running: longRunning.has(path) ? 'true' : 'false',
  };
}

export function pathBucket(url: string): string {
  const pathname = url.split('?', 1)[0] ?? '';
  const trimmed = pathname.replace(/^\/+/, '');
  for (const bucket of pathBuckets) {
    if (trimmed === bucket || trimmed.startsWith(`${bucket}/`)) return bucket;
  }
  const api = /^api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/([a-z]+)\/?$/.exec(trimmed);
  const subresource = api?.[1] ? apiSubresources[api[1]] : undefined;
  if (subresource) return subresource;
  if (trimmed === 'api' || trimmed.startsWith('api/') || trimmed === 'apis' || trimmed.startsWith('apis/') || trimmed === 'version') return 'api';
  return 'other';
}

type ServerType = HttpLabels['server_type'];
type LabelName = keyof HttpLabels;

/**
 * One label set's request figures, updated in place per request (two additions, no label object,
 * no hashing): prom-client's labelled `inc`/`dec` hash and validate their labels on every call,
 * which cost more than serving a cached `/podInfo`. The registry reads them when scraped.
 */
export class HttpSeries {
  readonly labels: Readonly<HttpLabels>;
  inflight = 0;
  /** Requests completed (the response closed). */
  completed = 0;
  /** `completed` as the counter was last told. */
  exported = 0;
  /** Durations: how many fell in each of DURATION_BUCKETS (not cumulative), the last slot +Inf. */
  readonly durations = new Float64Array(DURATION_BUCKETS.length + 1);
  durationSum = 0;

  constructor(labels: HttpLabels) {
    this.labels = Object.freeze(labels);
  }

  /** One request's duration in seconds: a bucket increment and an addition. */
  observe(seconds: number): void {
    let i = 0;
    while (i < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[i]!) i++;
    this.durations[i]!++;
    this.durationSum += seconds;
  }
}

/** The kubelet's `kubelet_http_requests_duration_seconds` buckets (Prometheus `DefBuckets`). */
export const DURATION_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One sample of a metric as prom-client's registry formats it. */
export interface MetricSample {
  readonly metricName: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

/**
 * The `kubelet_http_*` series by label set, created once per (method, bucket, server type) and
 * reused; the set stays bounded because the label values are bucketed.
 */
export class HttpSeriesSet {
  readonly #series = new Map<string, HttpSeries>();
  /** By method and route pattern: a route's bucket is found once, not per request. */
  readonly #byRoute = new Map<string, HttpSeries>();

  /** The series of a request matched to route `pattern` (bounded: routes are finite). */
  forRoute(method: string, pattern: string, serverType: ServerType): HttpSeries {
    const key = `${method} ${pattern} ${serverType}`;
    let s = this.#byRoute.get(key);
    if (s === undefined) {
      s = this.forPath(method, pattern, serverType);
      this.#byRoute.set(key, s);
    }
    return s;
  }

  /** The series of a request to `url`, a raw path that matched no route. */
  forPath(method: string, url: string, serverType: ServerType): HttpSeries {
    const labels = httpLabels(method, url, serverType);
    const key = `${labels.method} ${labels.path} ${serverType}`;
    let s = this.#series.get(key);
    if (s === undefined) {
      s = new HttpSeries(labels);
      this.#series.set(key, s);
    }
    return s;
  }

  /** Counter `collect()`: adds what completed since the last scrape. */
  exportCompleted(counter: { inc(labels: Partial<Record<LabelName, string>>, value: number): void }): void {
    for (const s of this.#series.values()) {
      if (s.completed === s.exported) continue;
      counter.inc(s.labels, s.completed - s.exported);
      s.exported = s.completed;
    }
  }

  /** The duration histogram's samples (`<name>_bucket` cumulative with `le`, `_sum`, `_count`), as prom-client writes a histogram. */
  durationSamples(name: string): MetricSample[] {
    const out: MetricSample[] = [];
    for (const s of this.#series.values()) {
      let cumulative = 0;
      for (let i = 0; i <= DURATION_BUCKETS.length; i++) {
        cumulative += s.durations[i]!;
        out.push({ metricName: `${name}_bucket`, labels: { le: i < DURATION_BUCKETS.length ? DURATION_BUCKETS[i]! : '+Inf', ...s.labels }, value: cumulative });
      }
      out.push({ metricName: `${name}_sum`, labels: s.labels, value: s.durationSum }, { metricName: `${name}_count`, labels: s.labels, value: cumulative });
    }
    return out;
  }

  /** Gauge `collect()`: the requests in flight right now. */
  exportInflight(gauge: { set(labels: Partial<Record<LabelName, string>>, value: number): void }): void {
    for (const s of this.#series.values()) gauge.set(s.labels, s.inflight);
  }
}
