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
