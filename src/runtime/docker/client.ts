import { inspect } from 'node:util';
import Docker from 'dockerode';

/** A dockerode client for a `--docker-endpoint` value: `unix:///path`, `tcp://host:port`, `http(s)://…`. */
export function dockerClient(endpoint: string): Docker {
  return withCheapRequestInspection(dockerClientFor(endpoint));
}

function dockerClientFor(endpoint: string): Docker {
  const url = new URL(endpoint);
  switch (url.protocol) {
    case 'unix:':
      return new Docker({ socketPath: url.pathname });
    case 'tcp:':
    case 'http:':
      return new Docker({ host: url.hostname, port: Number(url.port || 2375), protocol: 'http' });
    case 'https:':
      return new Docker({ host: url.hostname, port: Number(url.port || 2376), protocol: 'https' });
    default:
      throw new Error(`unsupported Docker endpoint "${endpoint}": use unix:///path or tcp://host:port`);
  }
}

/** The request options docker-modem's `buildRequest` receives (those nodelet reads). */
interface ModemRequestOptions {
  method?: string;
  path?: string;
  [inspect.custom]?: () => string;
}

/**
 * docker-modem's `buildRequest` formats every request's options with
 * `util.inspect(options, { showHidden: true, depth: null })` for its `debug('Sending: %s')` line,
 * whether that debug namespace is on or not: the argument is built before `debug` can drop it.
 * Profiled over a 30-pod burst that was ≈ 1.5% of nodelet's main-thread time, for a line nobody
 * reads. Each options object gets a custom inspection (`METHOD path`), so the call costs a string
 * concatenation; with `DEBUG=modem` the line still names the request.
 */
export function withCheapRequestInspection(docker: Docker): Docker {
  const modem = docker.modem as unknown as { buildRequest: (options: ModemRequestOptions, ...rest: unknown[]) => unknown };
  const buildRequest = modem.buildRequest.bind(modem);
  modem.buildRequest = (options, ...rest) => {
    Object.defineProperty(options, inspect.custom, { value: () => `${options.method ?? 'GET'} ${options.path ?? ''}`, configurable: true });
    return buildRequest(options, ...rest);
  };
  return docker;
}

/** Docker answers 404 for a missing object, 304 for "already in that state". */
export function statusCodeOf(err: unknown): number | undefined {
  const code = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

/**
 * `createContainer`'s argument for a container named `name` with `config`, sent as the JSON body
 * only. dockerode's plain form also flattens every option into the query string (docker-modem
 * builds the URL of a path ending in `?` from the options, and the body from them again), and
 * Docker's Go server counts the request line against its 1 MiB header limit (net/http
 * `DefaultMaxHeaderBytes`): a container with about 1 MiB of env or labels (less once
 * percent-encoded) was answered `431 Request Header Fields Too Large`, on every retry.
 * docker-modem's `_query`/`_body` split them: the URL carries only the name.
 */
export function createContainerOptions(name: string, config: Omit<Docker.ContainerCreateOptions, 'name'>): Docker.ContainerCreateOptions {
  return { _query: { name }, _body: config } as Docker.ContainerCreateOptions;
}

/**
 * An Engine API path as a template: the version prefix and query dropped, the object after
 * `containers/`, `exec/`, `networks/`, `volumes/` and an image name (which may hold `/`) replaced,
 * e.g. `/v1.41/containers/3f2a…/json?size=1` → `/containers/{id}/json`.
 */
export function dockerEndpointOf(path: string): string {
  const q = path.indexOf('?');
  const bare = (q === -1 ? path : path.slice(0, q)).replace(/^\/v\d+\.\d+(?=\/)/, '');
  const image = /^\/images\/(.+)\/(json|history|push|tag|get)$/.exec(bare);
  if (image) return `/images/{name}/${image[2]}`;
  if (/^\/images\/(?!json$|create$|load$|search$|prune$|get$).+/.test(bare)) return '/images/{name}';
  return bare.replace(/^\/(containers|exec|networks|volumes)\/(?!json$|create$|prune$)[^/]+/, '/$1/{id}');
}

/** Calls `listener` with the method and templated endpoint (`dockerEndpointOf`) of every Engine API request the client sends. */
export function observeDockerRequests(docker: Docker, listener: (method: string, endpoint: string) => void): void {
  const modem = docker.modem as { dial: (options: { method?: string; path?: string }, callback: unknown) => unknown };
  const dial = modem.dial.bind(modem);
  modem.dial = (options, callback) => {
    listener(options.method ?? 'GET', dockerEndpointOf(options.path ?? ''));
    return dial(options, callback);
  };
}
