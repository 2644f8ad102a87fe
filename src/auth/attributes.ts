import type { Subresource, Verb } from './types.js';

/**
 * Request → authorization attributes, after the kubelet's `auth.go` `GetRequestAttributes` with
 * KubeletFineGrainedAuthz (on by default since 1.33), and two deliberate differences:
 *  1. exec, attach, run and port-forward always need verb `create`, whatever the HTTP method:
 *     a WebSocket upgrade is a GET, so the kubelet lets `get nodes/proxy` open a shell (the hole
 *     PR #136550 tried to close; the apiserver closed it for `pods/exec` in KEP-4006).
 *  2. The apiserver-style pod paths nodelet also serves map to the subresource of the kubelet
 *     endpoint doing the same thing (`…/pods/{name}/exec` ≙ `/exec`, `…/log` ≙ `/containerLogs`).
 *
 * | path (route pattern)                                                   | verb        | subresources, in order |
 * |------------------------------------------------------------------------|-------------|------------------------|
 * | /exec, /attach, /run, /portForward, /api/v1/…/pods/{name}/{exec,attach,portforward} | create | proxy       |
 * | /containerLogs, /api/v1/…/pods/{name}/log                              | from method | proxy                  |
 * | /stats/*  /metrics/*  /logs/*  /checkpoint/*                           | from method | stats / metrics / log / checkpoint |
 * | /healthz/*                                                             | from method | healthz, proxy         |
 * | /configz                                                               | from method | configz, proxy         |
 * | /flagz (1.36+ fine-grained: no proxy fallback)                         | from method | configz                |
 * | /statusz (likewise)                                                    | from method | statusz                |
 * | /pods, /runningpods, /podInfo, /api/v1beta1/podInfo, other /api/v1/…, /api, /apis, /version | from method | pods, proxy |
 * | anything else (unknown paths included)                                 | from method | proxy                  |
 *
 * Verb from method: GET and HEAD → get (the documented table; the code gives HEAD ""), POST →
 * create, PUT → update, PATCH → patch, DELETE → delete; any other method has no verb and is
 * refused with 405 before an authorizer sees it.
 */

const METHOD_VERBS: Readonly<Record<string, Verb>> = {
  GET: 'get',
  HEAD: 'get',
  POST: 'create',
  PUT: 'update',
  PATCH: 'patch',
  DELETE: 'delete',
};

export interface RequestAttributes {
  /** undefined: a method the kubelet has no verb for. */
  readonly verb: Verb | undefined;
  /** Tried in order; any allowed one admits the request. */
  readonly subresources: readonly [Subresource, ...Subresource[]];
  /** Whether this is a streaming endpoint (verb forced to `create`). */
  readonly streaming: boolean;
}

/** The kubelet's `isSubpath`: `/healthz` and `/healthz/x`, not `/healthzjunk`. */
export function isSubpath(path: string, prefix: string): boolean {
  const p = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  return path === p || path.startsWith(`${p}/`);
}

const STREAMING_PREFIXES = ['/exec', '/attach', '/run', '/portForward'];
const API_POD_SUBRESOURCE = /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/([^/]+)\/?$/;
const POD_READ_PREFIXES = ['/pods', '/runningpods', '/podInfo', '/api/v1beta1/podInfo', '/api', '/apis', '/version'];

/**
 * `path` is the matched route's pattern (`/exec/:ns/:name/:container`) when there is one, so
 * percent-encoded spellings (`/%65xec/…`) cannot dodge the streaming rule; the raw path otherwise.
 */
export function requestAttributes(method: string, path: string): RequestAttributes {
  const fromMethod = METHOD_VERBS[method.toUpperCase()];
  const apiSub = API_POD_SUBRESOURCE.exec(path)?.[1];
  if (STREAMING_PREFIXES.some((p) => isSubpath(path, p)) || apiSub === 'exec' || apiSub === 'attach' || apiSub === 'portforward') {
    return { verb: 'create', subresources: ['proxy'], streaming: true };
  }
  const attrs = (subresources: RequestAttributes['subresources']): RequestAttributes => ({ verb: fromMethod, subresources, streaming: false });
  if (isSubpath(path, '/containerLogs') || apiSub === 'log') return attrs(['proxy']);
  if (isSubpath(path, '/stats')) return attrs(['stats']);
  if (isSubpath(path, '/metrics')) return attrs(['metrics']);
  if (isSubpath(path, '/logs')) return attrs(['log']);
  if (isSubpath(path, '/checkpoint')) return attrs(['checkpoint']);
  if (isSubpath(path, '/healthz')) return attrs(['healthz', 'proxy']);
  if (isSubpath(path, '/configz')) return attrs(['configz', 'proxy']);
  if (isSubpath(path, '/flagz')) return attrs(['configz']);
  if (isSubpath(path, '/statusz')) return attrs(['statusz']);
  if (POD_READ_PREFIXES.some((p) => isSubpath(path, p))) return attrs(['pods', 'proxy']);
  return attrs(['proxy']);
}
