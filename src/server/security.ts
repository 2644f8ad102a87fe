import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import { StatusError } from '../api/errors.js';
import { isSubpath, requestAttributes, type RequestAttributes } from '../auth/attributes.js';
import type { SecurityOptions } from '../auth/options.js';
import type { AuthnResult, Subresource } from '../auth/types.js';
import { setRequestUser } from './identity.js';
import { authorizationError, debugDisabled, forbidden, unauthorized } from './errors.js';

/** The matched route's pattern (see attributes.ts), else the raw path without the query. */
function routePath(request: FastifyRequest): string {
  const pattern = request.is404 ? undefined : request.routeOptions.url;
  if (pattern !== undefined && pattern !== '') return pattern;
  const q = request.url.indexOf('?');
  return q < 0 ? request.url : request.url.slice(0, q);
}

/** What the guard needs of a request besides its user: worked out once per (method, route). */
interface RouteAccess {
  readonly path: string;
  readonly attrs: RequestAttributes;
  /** Refused with 405 when the debugging handlers are off. */
  readonly debug: boolean;
}

/**
 * Installs the listener's guard as the FIRST root `onRequest` hook, so it runs before path checks,
 * unknown-route 404s, body parsing and any handler — also for HTTP Upgrade requests, which
 * `routeUpgrades` sends through Fastify routing: a refused upgrade gets its 401/403 and the socket
 * is closed, no 101 is ever written (the CVE-2018-1002105 lesson).
 *
 * The hook answers synchronously whenever the authenticator and authorizer do (local ones, and the
 * webhooks' cached decisions), so a request pays no promise for it; only a TokenReview or
 * SubjectAccessReview in flight makes it wait. Request attributes depend only on the method and
 * the route pattern, so they are computed once per route (unknown paths: per request).
 */
export function installSecurity(app: FastifyInstance, security: SecurityOptions): void {
  if (security.kind === 'readOnly') {
    app.addHook('onRequest', readOnlyGuard);
    return;
  }
  const { authenticator, authorizer, nodeName, enableDebuggingHandlers } = security;
  const routes = new Map<string, RouteAccess>();
  const accessOf = (method: string, path: string): RouteAccess => {
    const attrs = requestAttributes(method, path);
    return { path, attrs, debug: !enableDebuggingHandlers && isDebugPath(path, attrs.streaming) };
  };
  const routeAccess = (request: FastifyRequest): RouteAccess => {
    const pattern = request.is404 ? undefined : request.routeOptions.url;
    if (pattern === undefined || pattern === '') return accessOf(request.method, routePath(request));
    const key = `${request.method} ${pattern}`;
    let access = routes.get(key);
    if (access === undefined) routes.set(key, (access = accessOf(request.method, pattern)));
    return access;
  };

  /** After authentication: authorize, then the debugging-handlers rule. Throws a refusal; a promise only while a review is pending. */
  const admit = (request: FastifyRequest, authn: AuthnResult): void | Promise<void> => {
    if (!authn.ok) {
      // The reason is ours (e.g. "invalid bearer token", an x509 error code), never the credential.
      request.log.debug({ reason: authn.error ?? 'no credentials' }, 'Unauthorized');
      throw unauthorized();
    }
    const access = routeAccess(request);
    const { user } = authn;
    setRequestUser(request.raw, user.name);
    if (authorizer.alwaysAllow) return refuseDebug(access);
    const { path, attrs } = access;
    if (attrs.verb === undefined) {
      throw new StatusError('MethodNotAllowed', `method ${request.method} is not supported; nodelet authorizes GET, HEAD, POST, PUT, PATCH and DELETE only`);
    }
    const verb = attrs.verb;
    // The kubelet's loop: subresources in order (the fine-grained one, then proxy); the first
    // allow admits; an error on any of them is a 500 at once — never an allow.
    const failed = (subresource: Subresource, err: unknown): StatusError => {
      request.log.error({ reason: err instanceof Error ? err.message : String(err), user: user.name, verb, subresource, path }, 'Authorization error');
      return authorizationError(user.name, verb, subresource);
    };
    const decided = (allowed: boolean): void => {
      if (!allowed) {
        request.log.info({ user: user.name, verb, subresources: attrs.subresources, path }, 'Forbidden');
        throw forbidden(user.name, verb, attrs.subresources[0]);
      }
      refuseDebug(access);
    };
    const ask = (i: number): boolean | Promise<boolean> => {
      for (; i < attrs.subresources.length; i++) {
        const subresource = attrs.subresources[i]!;
        let answer: boolean | Promise<boolean>;
        try {
          answer = authorizer.authorize({ user, verb, resource: 'nodes', name: nodeName, subresource, path });
        } catch (err) {
          throw failed(subresource, err);
        }
        if (answer instanceof Promise) {
          const next = i + 1;
          return answer.then(
            (allowed) => allowed || ask(next),
            (err: unknown) => {
              throw failed(subresource, err);
            },
          );
        }
        if (answer) return true;
      }
      return false;
    };
    const answer = ask(0);
    return answer instanceof Promise ? answer.then(decided) : decided(answer);
  };
  const refuseDebug = (access: RouteAccess): void => {
    if (access.debug) throw debugDisabled();
  };

  app.addHook('onRequest', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    let authn: AuthnResult | Promise<AuthnResult>;
    try {
      authn = authenticator.authenticate(request.raw);
    } catch (err) {
      authn = authenticatorFailed(err);
    }
    // A throw below is a refusal: Fastify's hook runner hands it to the error handler.
    const pending = authn instanceof Promise ? authn.then((r) => admit(request, r), (err: unknown) => admit(request, authenticatorFailed(err))) : admit(request, authn);
    if (pending === undefined) done();
    else pending.then(() => done(), done);
  });
}

/** An authenticator that throws (it should answer { ok: false, error }) still fails closed. */
function authenticatorFailed(err: unknown): AuthnResult {
  return { ok: false, error: err instanceof Error ? err.message : 'authenticator error' };
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

function readOnlyGuard(request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  if (!readOnlyAllowed(request.method, routePath(request))) throw debugDisabled();
  done();
}
