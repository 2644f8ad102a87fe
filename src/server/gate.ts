import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { HttpSeries } from '../metrics/http.js';
import type { Metrics } from '../metrics/registry.js';
import { pageNotFound } from './errors.js';
import { checkPathParams, hasPathParams } from './params.js';
import { startHttpRequest } from './plugins/metrics.js';
import type { RequestGuard, RouteGuard } from './security.js';

/** What the gate needs of a request to one (method, route), worked out when the route is registered. */
interface RouteFacts {
  /** Its `kubelet_http_*` series (label values bucketed by `HttpSeriesSet`). */
  readonly series: HttpSeries;
  readonly guard: RouteGuard;
  /** Whether the route has path parameters to check. */
  readonly params: boolean;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Set by the gate's `onRoute` hook on every route: its facts by method. */
    nodeletGate?: Readonly<Record<string, RouteFacts>>;
  }
}

/**
 * The one root `onRequest` hook every request runs, before the route's own hooks, body parsing and
 * any handler (also for HTTP Upgrade requests, which `routeUpgrades` routes through Fastify), in
 * the kubelet's order (pkg/kubelet/server/server.go: the metrics wrapper around the auth filter
 * around the handlers):
 *   1. the HTTP metrics count the request (refused and unknown ones too: label values are bucketed);
 *   2. the listener's guard authenticates and authorizes it (or applies the read-only allow-list):
 *      401, 403, 405 or the authorizer's 500, before anything else looks at the request;
 *   3. an unknown route is the apiserver's 404 Status, whatever its body (no parser ran yet);
 *   4. path parameters are checked (`checkPathParams`: a 400 naming the parameter).
 * One hook, not four: Fastify's hook runner costs per hook and request, and the guard's route
 * attributes, the metrics series and whether a route has parameters are worked out once per
 * route (`onRoute`), not looked up per request. The hook is synchronous unless an authentication
 * or authorization webhook is asked.
 */
export function installRequestGate(app: FastifyInstance, opts: { metrics: Metrics; serverType: 'readonly' | 'readwrite'; guard: RequestGuard }): void {
  const { http } = opts.metrics;
  const { serverType, guard } = opts;
  app.addHook('onRoute', (route) => {
    const facts: Record<string, RouteFacts> = {};
    const params = hasPathParams(route.url);
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      facts[method] = { series: http.forRoute(method, route.url, serverType), guard: guard.route(method, route.url), params };
    }
    // A fresh object: Fastify's automatic HEAD route starts from the GET route's options.
    route.config = { ...route.config, nodeletGate: facts };
  });

  /** Steps 3 and 4, once the guard admitted the request. */
  const checkRoute = (request: FastifyRequest, facts: RouteFacts | undefined): void => {
    if (request.is404) throw pageNotFound();
    if (facts === undefined || facts.params) checkPathParams(request);
  };

  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const facts = request.is404 ? undefined : request.routeOptions.config.nodeletGate?.[request.method];
    startHttpRequest(facts?.series ?? seriesOf(request), request, reply);
    // A throw below is a refusal: Fastify's hook runner hands it to the error handler.
    const admitted = guard.admit(request, facts?.guard);
    if (admitted === undefined) {
      checkRoute(request, facts);
      done();
      return;
    }
    admitted.then(() => checkRoute(request, facts)).then(() => done(), done);
  });

  /** The series of a request without route facts: an unknown path (bucketed by `forPath`). */
  const seriesOf = (request: FastifyRequest): HttpSeries =>
    request.is404 ? http.forPath(request.method, request.url, serverType) : http.forRoute(request.method, request.routeOptions.url ?? request.url, serverType);
}
