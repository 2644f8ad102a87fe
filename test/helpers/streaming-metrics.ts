/**
 * Which transport a client really used, read from nodelet's `nodelet_streaming_upgrades_total`
 * (kubectl ≥ 1.30 tries WebSocket first and silently falls back to SPDY, so its exit code alone
 * cannot tell). Keys are `"<path> <transport> <protocol>"`, e.g. `"exec websocket v5.channel.k8s.io"`.
 */
export type UpgradeCounts = Record<string, number>;

const METRIC = 'nodelet_streaming_upgrades_total';

/**
 * Where the metrics come from: nodelet's URL (plain loopback HTTP, scraped with fetch), or a
 * function returning the exposition text (e.g. a scrape with a client certificate).
 */
export type MetricsSource = string | (() => Promise<string>);

/** Scrapes `<url>/metrics` (loopback) and returns the counter's non-zero series. */
export async function streamingUpgrades(source: MetricsSource, init: RequestInit = {}): Promise<UpgradeCounts> {
  if (typeof source === 'function') return parseUpgrades(await source());
  const res = await fetch(`${source}/metrics`, init);
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}`);
  return parseUpgrades(await res.text());
}

/** The counter's series in Prometheus text exposition, keyed as above. */
export function parseUpgrades(text: string): UpgradeCounts {
  const counts: UpgradeCounts = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${METRIC}{`)) continue;
    const close = line.lastIndexOf('}');
    const labels: Record<string, string> = {};
    for (const m of line.slice(METRIC.length + 1, close).matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[m[1] ?? ''] = (m[2] ?? '').replace(/\\(.)/g, '$1');
    const value = Number(line.slice(close + 1).trim());
    if (value > 0) counts[`${labels.path ?? ''} ${labels.transport ?? ''} ${labels.protocol ?? ''}`] = value;
  }
  return counts;
}

/** What grew between two scrapes (series that did not change are left out). */
export function upgradeDelta(before: UpgradeCounts, after: UpgradeCounts): UpgradeCounts {
  const delta: UpgradeCounts = {};
  for (const [key, value] of Object.entries(after)) {
    const grown = value - (before[key] ?? 0);
    if (grown !== 0) delta[key] = grown;
  }
  return delta;
}

/**
 * Runs `fn` (a kubectl call) and returns its result with the upgrades nodelet counted meanwhile.
 * The counter moves when the 101 is written, before the client can act on it, so a finished
 * call's sessions are all in the second scrape. Callers run such calls one at a time.
 */
export async function upgradesDuring<T>(source: MetricsSource, fn: () => Promise<T>, init: RequestInit = {}): Promise<{ result: T; upgrades: UpgradeCounts }> {
  const before = await streamingUpgrades(source, init);
  const result = await fn();
  return { result, upgrades: upgradeDelta(before, await streamingUpgrades(source, init)) };
}
