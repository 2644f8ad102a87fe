import type { FastifyRequest } from 'fastify';
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
export interface RouteAccess {
  readonly path: string;
  readonly attrs: RequestAttributes;
  /** Refused with 405 when the debugging handlers are off. */
  readonly debug: boolean;
}

/**
 * What the listener's guard knows of one (method, route pattern): worked out once, when the route
 * is registered (`route`), so a request pays no lookup for it. Unknown paths have none.
 */
export interface RouteGuard {
  readonly access: RouteAccess;
  /** The read-only port's allow-list answer for this route. */
  readonly readOnlyAllowed: boolean;
}

/**
 * The listener's guard, run by the root `onRequest` hook (`src/server/gate.ts`) before path checks,
 * unknown-route 404s, body parsing and any handler — also for HTTP Upgrade requests, which
 * `routeUpgrades` sends through Fastify routing: a refused upgrade gets its 401/403 and the socket
 * is closed, no 101 is ever written (the CVE-2018-1002105 lesson).
 */
export interface RequestGuard {
  route(method: string, pattern: string): RouteGuard;
  /**
   * Admits `request` (matched to `route`, none for an unknown path) or throws its refusal. It
   * answers synchronously whenever the authenticator and authorizer do (local ones, and the
   * webhooks' cached decisions), so a request pays no promise for it; only a TokenReview or
   * SubjectAccessReview in flight makes it return a promise.
   */
  admit(request: FastifyRequest, route: RouteGuard | undefined): void | Promise<void>;
}

/** The guard of a listener with `security` (pkg/kubelet/server/auth.go's filter, or the read-only allow-list). */
export function requestGuard(security: SecurityOptions): RequestGuard {
  if (security.kind === 'readOnly') {
    return {
      route: (method, pattern) => ({ access: { path: pattern, attrs: requestAttributes(method, pattern), debug: false }, readOnlyAllowed: readOnlyAllowed(method, pattern) }),
      admit: (request, route) => {
        if (!(route ? route.readOnlyAllowed : readOnlyAllowed(request.method, routePath(request)))) throw debugDisabled();
      },
    };
  }
  const { authenticator, authorizer, nodeName, enableDebuggingHandlers } = security;
  const accessOf = (method: string, path: string): RouteAccess => {
    const attrs = requestAttributes(method, path);
    return { path, attrs, debug: !enableDebuggingHandlers && isDebugPath(path, attrs.streaming) };
  };

  /** After authentication: authorize, then the debugging-handlers rule. Throws a refusal; a promise only while a review is pending. */
  const admitAuthenticated = (request: FastifyRequest, route: RouteGuard | undefined, authn: AuthnResult): void | Promise<void> => {
    if (!authn.ok) {
      // The reason is ours (e.g. "invalid bearer token", an x509 error code), never the credential.
      request.log.debug({ reason: authn.error ?? 'no credentials' }, 'Unauthorized');
      throw unauthorized();
    }
    const access = route?.access ?? accessOf(request.method, routePath(request));
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

  return {
    route: (method, pattern) => ({ access: accessOf(method, pattern), readOnlyAllowed: false }),
    admit: (request, route) => {
      let authn: AuthnResult | Promise<AuthnResult>;
      try {
        authn = authenticator.authenticate(request.raw);
      } catch (err) {
        authn = authenticatorFailed(err);
      }
      if (!(authn instanceof Promise)) return admitAuthenticated(request, route, authn);
      return authn.then(
        (r) => admitAuthenticated(request, route, r),
        (err: unknown) => admitAuthenticated(request, route, authenticatorFailed(err)),
      );
    },
  };
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
