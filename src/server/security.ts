import type { FastifyInstance, FastifyRequest } from 'fastify';
import { StatusError } from '../api/errors.js';
import { isSubpath, requestAttributes } from '../auth/attributes.js';
import type { SecurityOptions } from '../auth/options.js';
import type { AuthnResult } from '../auth/types.js';
import { PlainTextError } from './errors.js';

/** The matched route's pattern (see attributes.ts), else the raw path without the query. */
function routePath(request: FastifyRequest): string {
  const pattern = request.is404 ? undefined : request.routeOptions.url;
  if (pattern !== undefined && pattern !== '') return pattern;
  const q = request.url.indexOf('?');
  return q < 0 ? request.url : request.url.slice(0, q);
}

export const DEBUG_DISABLED = 'Debug endpoints are disabled.';

/**
 * Installs the listener's guard as the FIRST root `onRequest` hook, so it runs before path checks,
 * unknown-route 404s, body parsing and any handler — also for HTTP Upgrade requests, which
 * `routeUpgrades` sends through Fastify routing: a refused upgrade gets its 401/403 and the socket
 * is closed, no 101 is ever written (the CVE-2018-1002105 lesson).
 */
export function installSecurity(app: FastifyInstance, security: SecurityOptions): void {
  if (security.kind === 'readOnly') {
    app.addHook('onRequest', readOnlyGuard);
    return;
  }
  const { authenticator, authorizer, nodeName, enableDebuggingHandlers } = security;
  app.addHook('onRequest', async (request: FastifyRequest) => {
    let authn: AuthnResult;
    try {
      authn = await authenticator.authenticate(request.raw);
    } catch (err) {
      // An authenticator that throws (it should answer { ok: false, error }) still fails closed.
      authn = { ok: false, error: err instanceof Error ? err.message : 'authenticator error' };
    }
    if (!authn.ok) {
      // The reason is ours (e.g. "invalid bearer token", an x509 error code), never the credential.
      request.log.debug({ reason: authn.error ?? 'no credentials' }, 'Unauthorized');
      throw new PlainTextError(401, 'Unauthorized');
    }
    const { user } = authn;
    const path = routePath(request);
    const attrs = requestAttributes(request.method, path);
    if (!authorizer.alwaysAllow) {
      if (attrs.verb === undefined) {
        throw new StatusError('MethodNotAllowed', `method ${request.method} is not supported; nodelet authorizes GET, HEAD, POST, PUT, PATCH and DELETE only`);
      }
      const verb = attrs.verb;
      // The kubelet's loop: subresources in order (the fine-grained one, then proxy); the first
      // allow admits; an error on any of them is a 500 at once — never an allow.
      let allowed = false;
      for (const subresource of attrs.subresources) {
        try {
          allowed = await authorizer.authorize({ user, verb, resource: 'nodes', name: nodeName, subresource, path });
        } catch (err) {
          const msg = `Authorization error (user=${user.name}, verb=${verb}, resource=nodes, subresource=${subresource})`;
          request.log.error({ reason: err instanceof Error ? err.message : String(err), user: user.name, verb, subresource, path }, 'Authorization error');
          throw new PlainTextError(500, msg);
        }
        if (allowed) break;
      }
      if (!allowed) {
        const msg = `Forbidden (user=${user.name}, verb=${verb}, resource=nodes, subresource=${attrs.subresources[0]})`;
        request.log.info({ user: user.name, verb, subresources: attrs.subresources, path }, 'Forbidden');
        throw new PlainTextError(403, msg);
      }
    }
    if (!enableDebuggingHandlers && isDebugPath(path, attrs.streaming)) throw new PlainTextError(405, DEBUG_DISABLED);
  });
}

/** What `--enable-debugging-handlers=false` turns off: the kubelet's InstallDebuggingDisabledHandlers list. */
function isDebugPath(path: string, streaming: boolean): boolean {
  if (streaming) return true;
  return (
    isSubpath(path, '/containerLogs') ||
    isSubpath(path, '/runningpods') ||
    isSubpath(path, '/debug') ||
    /^\/api\/v1\/namespaces\/[^/]+\/pods\/[^/]+\/log\/?$/.test(path)
  );
}

/** GETs the read-only port serves (kubelet `InstallAuthNotRequiredHandlers`, minus checkpoint and configz). */
export function readOnlyAllowed(method: string, path: string): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  return path === '/pods' || path === '/pods/' || isSubpath(path, '/healthz') || isSubpath(path, '/stats') || isSubpath(path, '/metrics');
}

async function readOnlyGuard(request: FastifyRequest): Promise<void> {
  if (!readOnlyAllowed(request.method, routePath(request))) throw new PlainTextError(405, DEBUG_DISABLED);
}
