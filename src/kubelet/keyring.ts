import { createHash } from 'node:crypto';
import type { RegistryAuth } from '../runtime/types.js';

/**
 * The kubelet's credential keyring for image pull secrets (`pkg/credentialprovider`: keyring.go,
 * config.go, secrets/secrets.go), pure. A docker config maps registry locations
 * (`https://registry.example:5000`, `registry.example/team`, `*.registry.example`) to credentials;
 * an image gets every credential whose location matches its repository, the most specific
 * location first, and the kubelet tries them in that order until a pull succeeds.
 */

/** One entry of a docker config: the credentials for one registry location. */
export interface DockerConfigEntry {
  readonly username: string;
  readonly password: string;
  readonly email?: string;
}

/** A parsed docker config: registry location → credentials, in the order the file lists them. */
export type DockerConfig = ReadonlyArray<readonly [location: string, entry: DockerConfigEntry]>;

export const DOCKER_CONFIG_JSON_KEY = '.dockerconfigjson';
export const DOCKER_CFG_KEY = '.dockercfg';
export const SECRET_TYPE_DOCKER_CONFIG_JSON = 'kubernetes.io/dockerconfigjson';
export const SECRET_TYPE_DOCKERCFG = 'kubernetes.io/dockercfg';

/** The default registry's key in a keyring (`https://index.docker.io/v1/` is stored as this). */
const DEFAULT_REGISTRY_HOST = 'index.docker.io';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function optString(v: unknown, what: string): string {
  if (v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new Error(`${what} must be a string`);
  return v;
}

/**
 * `decodeDockerConfigFieldAuth`: `auth` is base64 of `username:password`, padded (standard
 * encoding) when it ends with `=`, else unpadded; anything else is an error.
 */
export function decodeAuthField(field: string): { username: string; password: string } {
  const text = field.replace(/[\r\n]/g, '');
  const padded = field.trim().endsWith('=');
  const valid = padded ? /^[A-Za-z0-9+/]*={1,2}$/.test(text) && text.length % 4 === 0 : /^[A-Za-z0-9+/]*$/.test(text) && text.length % 4 !== 1;
  if (!valid) throw new Error('illegal base64 data in auth field');
  const decoded = Buffer.from(text, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw new Error('unable to parse auth field, must be formatted as base64(username:password)');
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** `DockerConfigEntry.UnmarshalJSON`: `auth`, when present, overrides `username` and `password`. */
function parseEntry(location: string, v: unknown): DockerConfigEntry {
  if (!isRecord(v)) throw new Error(`entry ${JSON.stringify(location)} must be an object`);
  const email = optString(v.email, `${location}.email`);
  const auth = optString(v.auth, `${location}.auth`);
  const { username, password } = auth
    ? decodeAuthField(auth)
    : { username: optString(v.username, `${location}.username`), password: optString(v.password, `${location}.password`) };
  return { username, password, ...(email ? { email } : {}) };
}

function parseConfigMap(v: unknown): DockerConfig {
  if (v === undefined || v === null) return [];
  if (!isRecord(v)) throw new Error('must map registry locations to credentials');
  return Object.entries(v).map(([location, entry]) => [location, parseEntry(location, entry)] as const);
}

/** A `.dockercfg` file: `{"<registry>": {"auth": …}}`. Throws on malformed JSON or entries. */
export function parseDockercfg(text: string): DockerConfig {
  return parseConfigMap(JSON.parse(text) as unknown);
}

/** A `.dockerconfigjson` (`~/.docker/config.json`) file: `{"auths": {"<registry>": {…}}}`; other keys are ignored. */
export function parseDockerConfigJson(text: string): DockerConfig {
  const doc = JSON.parse(text) as unknown;
  if (!isRecord(doc)) throw new Error('must be a JSON object');
  return parseConfigMap(doc.auths);
}

/** Which secret a credential came from (`credentialprovider.SecretCoordinates`). */
export interface SecretCoordinates {
  readonly uid: string;
  readonly namespace: string;
  readonly name: string;
}

/**
 * A credential with where it came from and its hash (`TrackedAuthConfig`): what the image pull
 * manager records after a pull, to tell later whether a pod holds the same credentials.
 */
export interface TrackedRegistryAuth extends RegistryAuth {
  readonly source?: SecretCoordinates;
  /** `hashAuthConfig`: the hex sha256 of the credential's JSON (Go's field order, empty fields left out). */
  readonly authHash: string;
}

/** `hashAuthConfig` over `AuthConfig{Username, Password, Email}` as `json.Marshal` writes it. */
export function hashAuthConfig(auth: RegistryAuth): string {
  const json = JSON.stringify({
    ...(auth.username ? { username: auth.username } : {}),
    ...(auth.password ? { password: auth.password } : {}),
    ...(auth.email ? { email: auth.email } : {}),
  });
  return createHash('sha256').update(json).digest('hex');
}

/** A secret as the keyring reads it: its type and its data, decoded. */
export interface PullSecret {
  readonly name: string;
  /** The secret's namespace and UID, which the pull manager's records name. */
  readonly namespace?: string;
  readonly uid?: string;
  readonly type?: string;
  readonly data: Readonly<Record<string, Buffer>>;
}

/**
 * `MakeDockerKeyring`: the credentials of the secrets of type `kubernetes.io/dockerconfigjson`
 * (key `.dockerconfigjson`) and `kubernetes.io/dockercfg` (key `.dockercfg`); other secrets
 * are ignored. A malformed one throws, naming the secret (never its data).
 */
export function keyringFromSecrets(secrets: readonly PullSecret[]): Keyring {
  const keyring = new Keyring();
  for (const s of secrets) {
    const json = s.data[DOCKER_CONFIG_JSON_KEY];
    const cfg = s.data[DOCKER_CFG_KEY];
    try {
      const source = { uid: s.uid ?? '', namespace: s.namespace ?? '', name: s.name };
      if (s.type === SECRET_TYPE_DOCKER_CONFIG_JSON && json?.length) keyring.add(parseDockerConfigJson(json.toString('utf8')), source);
      else if (s.type === SECRET_TYPE_DOCKERCFG && cfg?.length) keyring.add(parseDockercfg(cfg.toString('utf8')), source);
    } catch (err) {
      const key = s.type === SECRET_TYPE_DOCKER_CONFIG_JSON ? DOCKER_CONFIG_JSON_KEY : DOCKER_CFG_KEY;
      throw new Error(`image pull secret ${JSON.stringify(s.name)}: invalid ${key}: ${(err as Error).message}`);
    }
  }
  return keyring;
}

/** Host (`host[:port]`) and path of a URL without its scheme, as Go's `url.Parse` splits them. */
function splitLocation(location: string): { host: string; path: string } | undefined {
  let rest = location.replace(/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//, '');
  rest = rest.split('#')[0] ?? '';
  rest = rest.split('?')[0] ?? '';
  const slash = rest.indexOf('/');
  let host = slash < 0 ? rest : rest.slice(0, slash);
  const path = slash < 0 ? '' : rest.slice(slash);
  const at = host.lastIndexOf('@');
  if (at >= 0) host = host.slice(at + 1);
  // url.Parse refuses a port that is not a number (`host:abc`).
  if (!host.startsWith('[')) {
    const colon = host.lastIndexOf(':');
    if (colon >= 0 && !/^\d*$/.test(host.slice(colon + 1))) return undefined;
  } else if (!/^\[[^\]]*\](:\d*)?$/.test(host)) return undefined;
  return { host, path };
}

/** `SplitURL`: the host's dot-separated parts and its port (`net.SplitHostPort`, else no port). */
function splitHost(host: string): { parts: string[]; port: string } {
  const bracketed = /^\[([^\]]*)\]:(\d*)$/.exec(host);
  if (bracketed) return { parts: (bracketed[1] ?? '').split('.'), port: bracketed[2] ?? '' };
  const colons = host.split(':').length - 1;
  if (colons === 1 && !host.startsWith('[')) {
    const [h = '', port = ''] = host.split(':');
    return { parts: h.split('.'), port };
  }
  return { parts: host.split('.'), port: '' };
}

/**
 * Go's `filepath.Match` for one host part: `*` any run of characters, `?` one, `[…]` a class
 * (`^` negates, ranges), `\` escapes. A malformed pattern matches nothing, as its error does.
 */
export function globMatch(pattern: string, name: string): boolean {
  let re = '';
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i] ?? '';
    if (ch === '*') re += '[^/]*';
    else if (ch === '?') re += '[^/]';
    else if (ch === '\\') {
      const next = pattern[++i];
      if (next === undefined) return false;
      re += escapeRe(next);
    } else if (ch === '[') {
      const end = pattern.indexOf(']', i + 2);
      if (end < 0) return false;
      let body = pattern.slice(i + 1, end);
      const negated = body.startsWith('^');
      if (negated) body = body.slice(1);
      if (!body) return false;
      re += `[${negated ? '^' : ''}${body.replace(/[\]\\]/g, '\\$&')}]`;
      i = end;
    } else re += escapeRe(ch);
  }
  try {
    return new RegExp(`^${re}$`).test(name);
  } catch {
    return false;
  }
}

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&');

/**
 * `URLsMatchStr`: whether the keyring location `glob` covers the image repository `target`
 * (both without scheme): same port, same number of host parts, each matching (`*.` wildcards),
 * and the location's path a prefix of the repository's.
 */
export function locationMatches(glob: string, target: string): boolean {
  const g = splitLocation(glob);
  const t = splitLocation(target);
  if (!g || !t) return false;
  const gh = splitHost(g.host);
  const th = splitHost(t.host);
  if (gh.port !== th.port) return false;
  if (gh.parts.length !== th.parts.length) return false;
  if (!t.path.startsWith(g.path)) return false;
  return gh.parts.every((part, i) => globMatch(part, th.parts[i] ?? ''));
}

/** `isDefaultRegistryMatch`: whether the repository is pulled from Docker Hub. */
export function isDefaultRegistryMatch(image: string): boolean {
  const slash = image.indexOf('/');
  const first = slash < 0 ? image : image.slice(0, slash);
  if (!first) return false;
  if (slash < 0) return true;
  if (first === 'docker.io' || first === 'index.docker.io') return true;
  return !/[.:]/.test(first);
}

/**
 * The repository an image is pulled from, as the kubelet looks it up (`ParseImageName`'s
 * `repoToPull`, Docker's normalized name): tag and digest dropped, Docker Hub names completed
 * (`busybox` → `docker.io/library/busybox`).
 */
export function repositoryOf(image: string): string {
  const at = image.indexOf('@');
  let name = at >= 0 ? image.slice(0, at) : image;
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) name = name.slice(0, colon);
  const slash = name.indexOf('/');
  let domain: string;
  let remainder: string;
  const first = slash < 0 ? '' : name.slice(0, slash);
  if (slash < 0 || (!/[.:]/.test(first) && first !== 'localhost' && first.toLowerCase() === first)) {
    domain = 'docker.io';
    remainder = name;
  } else {
    domain = first;
    remainder = name.slice(slash + 1);
  }
  if (domain === 'index.docker.io') domain = 'docker.io';
  if (domain === 'docker.io' && !remainder.includes('/')) remainder = `library/${remainder}`;
  return `${domain}/${remainder}`;
}

/**
 * `BasicDockerKeyring`: credentials by registry location. Each location is stored without its
 * scheme, and `/v1/` or `/v2/` after the host means the host itself; the index is sorted in
 * reverse so that `registry.example/team` is tried before `registry.example`.
 */
export class Keyring {
  #index: string[] = [];
  readonly #creds = new Map<string, TrackedRegistryAuth[]>();

  /** Adds a docker config's credentials, each tracked to `source` (the secret it came from). */
  add(config: DockerConfig, source?: SecretCoordinates): void {
    for (const [location, entry] of config) {
      const value = /^https?:\/\//.test(location) ? location : `https://${location}`;
      const parsed = splitLocation(value);
      if (!parsed) continue; // "Entry in dockercfg invalid, ignoring"
      let path = parsed.path;
      if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
      const key = path && path !== '/' ? parsed.host + path : parsed.host;
      const auth: RegistryAuth = { username: entry.username, password: entry.password, ...(entry.email ? { email: entry.email } : {}) };
      const creds: TrackedRegistryAuth = { ...auth, ...(source ? { source } : {}), authHash: hashAuthConfig(auth) };
      this.#creds.set(key, [...(this.#creds.get(key) ?? []), creds]);
      this.#index.push(key);
    }
    this.#index = [...new Set(this.#index)].sort().reverse();
  }

  /**
   * `Lookup(repoToPull)`: every credential whose location matches the repository, most specific
   * location first; with none, the default registry's for a Docker Hub image; else nothing.
   */
  lookup(repository: string): TrackedRegistryAuth[] {
    const out: TrackedRegistryAuth[] = [];
    for (const key of this.#index) if (locationMatches(key, repository)) out.push(...(this.#creds.get(key) ?? []));
    if (out.length) return out;
    if (isDefaultRegistryMatch(repository)) return [...(this.#creds.get(DEFAULT_REGISTRY_HOST) ?? [])];
    return [];
  }
}
