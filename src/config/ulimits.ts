/**
 * `--container-ulimits` (nodelet's own flag; the kubelet has none): the rlimits nodelet sets on
 * the containers and sandboxes it creates (Docker's `HostConfig.Ulimits`).
 *
 * - `auto` (default): what each engine needs, decided in src/runtime/docker/engine.ts — nothing
 *   on Docker (containers get the engine's limits, as under the kubelet), nofile and nproc within
 *   nodelet's own hard limits on Podman (whose built-in 1048576 can fail to apply).
 * - `none`: never set; every engine's own defaults apply (Podman's containers.conf included).
 * - `nofile=1024:4096,nproc=4096`: exactly these, `name=soft[:hard]` like `docker run --ulimit`;
 *   `unlimited` (or -1) is RLIM_INFINITY.
 */
export type UlimitSetting = { readonly mode: 'auto' } | { readonly mode: 'none' } | { readonly mode: 'explicit'; readonly limits: readonly Ulimit[] };

/** One rlimit in Docker's spelling: soft and hard, -1 for unlimited. */
export interface Ulimit {
  readonly name: UlimitName;
  readonly soft: number;
  readonly hard: number;
}

/** The names Docker accepts (`RLIMIT_<NAME>`). */
export const ULIMIT_NAMES = ['core', 'cpu', 'data', 'fsize', 'locks', 'memlock', 'msgqueue', 'nice', 'nofile', 'nproc', 'rss', 'rtprio', 'rttime', 'sigpending', 'stack'] as const;
export type UlimitName = (typeof ULIMIT_NAMES)[number];

function limitValue(text: string, what: string): number {
  if (text === 'unlimited' || text === '-1') return -1;
  if (!/^\d{1,18}$/.test(text)) throw new Error(`${what} ${JSON.stringify(text)} is not a non-negative integer or "unlimited"`);
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new Error(`${what} ${JSON.stringify(text)} is too large`);
  return n;
}

/** -1 (unlimited) is the largest value. */
function exceeds(a: number, b: number): boolean {
  if (b === -1) return false;
  return a === -1 || a > b;
}

/** Parses a `--container-ulimits` value; throws an Error saying what is wrong. */
export function parseContainerUlimits(text: string): UlimitSetting {
  const value = text.trim();
  if (value === 'auto') return { mode: 'auto' };
  if (value === 'none') return { mode: 'none' };
  if (value === '') throw new Error('expected "auto", "none" or name=soft[:hard],…');
  const limits: Ulimit[] = [];
  for (const item of value.split(',')) {
    const m = /^([a-z]+)=([^:]+)(?::(.+))?$/.exec(item.trim());
    if (!m) throw new Error(`${JSON.stringify(item)}: expected name=soft[:hard]`);
    const name = m[1] as UlimitName;
    if (!ULIMIT_NAMES.includes(name)) throw new Error(`unknown ulimit ${JSON.stringify(m[1])} (one of ${ULIMIT_NAMES.join(', ')})`);
    if (limits.some((l) => l.name === name)) throw new Error(`ulimit ${name} given twice`);
    const soft = limitValue(m[2] ?? '', `${name} soft limit`);
    const hard = m[3] === undefined ? soft : limitValue(m[3], `${name} hard limit`);
    if (exceeds(soft, hard)) throw new Error(`${name}: soft limit ${m[2]} is above hard limit ${m[3]}`);
    limits.push({ name, soft, hard });
  }
  return { mode: 'explicit', limits };
}
