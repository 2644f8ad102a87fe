import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { stringify } from 'yaml';
import { isLoopbackAddress, isUnspecifiedAddress } from './host.js';
import { isMapping, parseMapping } from './yaml-mapping.js';

/**
 * `--kubeconfig`: how to reach the apiserver. Only what the TokenReview and SubjectAccessReview
 * webhooks need is read: the current context's cluster (`server`, `certificate-authority[-data]`,
 * `insecure-skip-tls-verify`, `tls-server-name`) and user (`token`, `tokenFile`,
 * `client-certificate[-data]` + `client-key[-data]`). Relative paths are resolved against the
 * kubeconfig's directory, as client-go does. `exec` and `auth-provider` plugins and basic auth are
 * refused. Token files are read once, at start-up. Error messages never quote a credential.
 */
export interface ApiserverConnection {
  /** `https://host:port` (plain `http://` only towards a loopback address), without a trailing `/`. */
  readonly server: string;
  /** PEM bundle trusted for the apiserver's certificate; undefined = the system roots. */
  readonly ca?: Buffer;
  readonly insecureSkipTLSVerify: boolean;
  readonly tlsServerName?: string;
  readonly token?: string;
  readonly clientCert?: Buffer;
  readonly clientKey?: Buffer;
}

export class KubeconfigError extends Error {}

type Rec = Record<string, unknown>;

function named(list: unknown, kind: string, name: string, field: string): Rec {
  if (!Array.isArray(list)) throw new KubeconfigError(`no ${kind}s list`);
  const entry: unknown = list.find((e: unknown) => isMapping(e) && e.name === name);
  if (entry === undefined) throw new KubeconfigError(`${kind} ${JSON.stringify(name)} not found`);
  const body = (entry as Rec)[field];
  if (!isMapping(body)) throw new KubeconfigError(`${kind} ${JSON.stringify(name)} has no ${field} mapping`);
  return body;
}

function str(rec: Rec, key: string, where: string): string | undefined {
  const v = rec[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new KubeconfigError(`${where}.${key} must be a string`);
  return v;
}

/** Parses kubeconfig text; `baseDir` resolves relative file paths; `read` is injectable for tests. */
export function parseKubeconfig(text: string, baseDir: string, read: (path: string) => Buffer = (p) => readFileSync(p)): ApiserverConnection {
  const root = parseMapping(text, 'a kubeconfig mapping (kind: Config)', (why) => new KubeconfigError(why));
  if (root.kind !== undefined && root.kind !== 'Config') throw new KubeconfigError(`unsupported kind ${JSON.stringify(root.kind)}; expected "Config"`);

  let contextName = typeof root['current-context'] === 'string' ? root['current-context'] : '';
  if (contextName === '') {
    const contexts = Array.isArray(root.contexts) ? root.contexts : [];
    const only: unknown = contexts.length === 1 ? contexts[0] : undefined;
    if (!isMapping(only) || typeof only.name !== 'string') throw new KubeconfigError('no current-context (and not exactly one context)');
    contextName = only.name;
  }
  const context = named(root.contexts, 'context', contextName, 'context');
  const clusterName = str(context, 'cluster', 'context');
  if (clusterName === undefined) throw new KubeconfigError(`context ${JSON.stringify(contextName)} names no cluster`);
  const cluster = named(root.clusters, 'cluster', clusterName, 'cluster');
  const userName = str(context, 'user', 'context');
  const user = userName === undefined ? {} : named(root.users, 'user', userName, 'user');

  const file = (path: string, what: string): Buffer => {
    const full = isAbsolute(path) ? path : resolve(baseDir, path);
    try {
      return read(full);
    } catch (err) {
      throw new KubeconfigError(`cannot read ${what} ${JSON.stringify(full)}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
  };
  const data = (rec: Rec, where: string, dataKey: string, fileKey: string, what: string): Buffer | undefined => {
    const inline = str(rec, dataKey, where);
    if (inline !== undefined) {
      const buf = Buffer.from(inline, 'base64');
      if (buf.length === 0) throw new KubeconfigError(`${where}.${dataKey} is not base64`);
      return buf;
    }
    const path = str(rec, fileKey, where);
    return path === undefined ? undefined : file(path, what);
  };

  const serverText = str(cluster, 'server', 'cluster');
  if (serverText === undefined) throw new KubeconfigError(`cluster ${JSON.stringify(clusterName)} has no server`);
  let url: URL;
  try {
    url = new URL(serverText);
  } catch {
    throw new KubeconfigError(`cluster ${JSON.stringify(clusterName)}: server ${JSON.stringify(serverText)} is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new KubeconfigError(`server must be https:// (got ${url.protocol})`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (url.protocol === 'http:' && !isLoopbackAddress(host)) {
    throw new KubeconfigError('a plain http:// server is only allowed on a loopback address: tokens and reviews would cross the network in clear');
  }
  if (url.username !== '' || url.password !== '') throw new KubeconfigError('server URL must not carry credentials');
  const server = `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}`;

  for (const unsupported of ['exec', 'auth-provider', 'username', 'password']) {
    if (user[unsupported] !== undefined && user[unsupported] !== null) {
      throw new KubeconfigError(`user ${JSON.stringify(userName)}: "${unsupported}" is not supported; use a token, tokenFile or a client certificate`);
    }
  }
  const insecure = cluster['insecure-skip-tls-verify'] === true;
  const ca = data(cluster, 'cluster', 'certificate-authority-data', 'certificate-authority', 'certificate authority');
  if (insecure && ca !== undefined) throw new KubeconfigError('insecure-skip-tls-verify and a certificate authority are mutually exclusive');
  let token = str(user, 'token', 'user');
  if (token === undefined) {
    const tokenFile = str(user, 'tokenFile', 'user');
    if (tokenFile !== undefined) token = file(tokenFile, 'token file').toString('utf8').trim();
    if (token === '') throw new KubeconfigError('the token file is empty');
  }
  const clientCert = data(user, 'user', 'client-certificate-data', 'client-certificate', 'client certificate');
  const clientKey = data(user, 'user', 'client-key-data', 'client-key', 'client key');
  if ((clientCert === undefined) !== (clientKey === undefined)) throw new KubeconfigError('client certificate and client key must be given together');
  const tlsServerName = str(cluster, 'tls-server-name', 'cluster');

  return {
    server,
    insecureSkipTLSVerify: insecure,
    ...(ca ? { ca } : {}),
    ...(tlsServerName ? { tlsServerName } : {}),
    ...(token !== undefined ? { token } : {}),
    ...(clientCert && clientKey ? { clientCert, clientKey } : {}),
  };
}

export function loadKubeconfig(path: string): ApiserverConnection {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new KubeconfigError(`cannot read kubeconfig ${JSON.stringify(path)}: ${(err as Error).message}`);
  }
  try {
    return parseKubeconfig(text, dirname(resolve(path)));
  } catch (err) {
    if (err instanceof KubeconfigError) throw new KubeconfigError(`kubeconfig ${JSON.stringify(path)}: ${err.message}`);
    throw err;
  }
}

/** What `renderKubeconfig` writes: one cluster, one user with a bearer token, one context. */
export interface KubeconfigSpec {
  /** Name of the cluster, user and context (e.g. the node name). */
  readonly name: string;
  /** `https://host:port`. */
  readonly server: string;
  /** PEM of the CA that signs the server's certificate, embedded as `certificate-authority-data`. */
  readonly caPem: string;
  readonly token: string;
}

/** Where a kubeconfig for a local listener should point: loopback for an unspecified bind address, IPv6 in brackets. */
export function loopbackServerURL(address: string, port: number): string {
  const host = isUnspecifiedAddress(address) ? '127.0.0.1' : address;
  return `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * A kubeconfig (`kind: Config`) for kubectl and client-go: `parseKubeconfig` reads back what this
 * writes. It holds a credential: write it mode 0600.
 */
export function renderKubeconfig(spec: KubeconfigSpec): string {
  if (!/^https:\/\//.test(spec.server)) throw new KubeconfigError(`server must be https://, got ${JSON.stringify(spec.server)}`);
  if (spec.token === '' || /\s/.test(spec.token)) throw new KubeconfigError('the token must be non-empty and hold no whitespace');
  if (!spec.caPem.includes('-----BEGIN CERTIFICATE-----')) throw new KubeconfigError('the certificate authority must be a PEM certificate');
  const { name } = spec;
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name, cluster: { server: spec.server, 'certificate-authority-data': Buffer.from(spec.caPem).toString('base64') } }],
    users: [{ name, user: { token: spec.token } }],
    contexts: [{ name, context: { cluster: name, user: name, namespace: 'default' } }],
    'current-context': name,
    preferences: {},
  }, { lineWidth: 0 });
}
