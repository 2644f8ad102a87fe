import type { FastifyRequest } from 'fastify';
import { badRequest, StatusError } from '../api/errors.js';
import { isDNS1123Label, isDNS1123Subdomain, isValidUID } from '../api/names.js';
import type { Pod } from '../api/types.js';
import { containerNameRequired } from './errors.js';

/**
 * Input hygiene for every route with parameters, run by the root `onRequest` hook so it precedes
 * body parsing and any `Host` call. Route parameters are named by convention and checked by name:
 *   ns, namespace, podNamespace → DNS-1123 label (the apiserver's namespace rule)
 *   name, pod, podID            → DNS-1123 subdomain (pod names)
 *   container, containerName    → DNS-1123 label
 *   uid, podUID                 → pod UID
 *   check                       → nothing: only a key into the fixed map of health checks, so
 *                                 any unknown value, `a/b` included, is the kubelet mux's 404
 * Any other parameter only has to be free of traversal and separator bytes. Fastify hands the
 * parameters over percent-decoded, so `%2F`, `%2e%2e` and `%00` are caught here too.
 */

type Check = (value: string) => string[];

const label: Check = isDNS1123Label;
const subdomain: Check = isDNS1123Subdomain;
const uid: Check = (v) => (isValidUID(v) ? [] : ['must be a UID (1-64 characters of [0-9a-zA-Z-])']);

const checks: Record<string, { what: string; check: Check }> = {
  ns: { what: 'namespace', check: label },
  namespace: { what: 'namespace', check: label },
  podNamespace: { what: 'namespace', check: label },
  name: { what: 'name', check: subdomain },
  pod: { what: 'pod name', check: subdomain },
  podID: { what: 'pod name', check: subdomain },
  container: { what: 'container name', check: label },
  containerName: { what: 'container name', check: label },
  uid: { what: 'uid', check: uid },
  podUID: { what: 'uid', check: uid },
};

/** Parameters that are only keys into a fixed map (see above): never checked. */
const lookupKeys = new Set(['check']);

/** Bytes no path segment may carry, whatever the parameter. */
function unsafeSegment(value: string): string | undefined {
  if (value === '') return 'must not be empty';
  if (value === '.' || value === '..') return "must not be '.' or '..'";
  if (value.includes('/')) return "must not contain '/'";
  if (value.includes('\\')) return "must not contain '\\'";
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  if (/[\u0000-\u001f\u007f]/.test(value)) return 'must not contain control characters';
  return undefined;
}

/** Throws a 400 BadRequest Status naming the parameter; returns when `value` is acceptable. */
export function checkParam(param: string, value: string): void {
  if (lookupKeys.has(param)) return;
  const rule = checks[param];
  const what = rule?.what ?? param;
  const unsafe = unsafeSegment(value);
  const errs = unsafe ? [unsafe] : (rule?.check(value) ?? []);
  if (errs.length > 0) {
    throw badRequest(`invalid ${what} ${JSON.stringify(value)} (path parameter "${param}"): ${errs.join(', ')}`, {
      causes: errs.map((message) => ({ reason: 'FieldValueInvalid', message, field: param })),
    });
  }
}

/** Whether a route pattern has path parameters (the only routes `checkPathParams` has work on). */
export function hasPathParams(url: string): boolean {
  return /[:*]/.test(url);
}

/**
 * Validates every path parameter of the matched route; run by the root `onRequest` hook
 * (`src/server/gate.ts`) for routes with parameters, after authentication and before the route's
 * own hooks and body parsing. Routes without parameters (`/pods`, `/podInfo`, `/healthz`) pay nothing.
 */
export function checkPathParams(request: FastifyRequest): void {
  const params = request.params as Record<string, unknown> | undefined;
  if (params) {
    for (const param in params) {
      const value = params[param];
      if (typeof value === 'string') checkParam(param, value);
    }
  }
}

/** A query value as Go's `url.Values.Get` reads it: the first occurrence, '' when absent. */
export function queryValue(request: FastifyRequest, key: string): string {
  const v = (request.query as Record<string, unknown> | undefined)?.[key];
  if (Array.isArray(v)) return typeof v[0] === 'string' ? v[0] : '';
  return typeof v === 'string' ? v : '';
}

/** Whether the query has `key` at all (`?verbose` with no value counts, as in Go's `Query()[key]`). */
export function hasQuery(request: FastifyRequest, key: string): boolean {
  const q = request.query as Record<string, unknown> | undefined;
  return q !== undefined && Object.hasOwn(q, key);
}

/** Every value of a repeated query key (`?exclude=a&exclude=b`). */
export function queryValues(request: FastifyRequest, key: string): string[] {
  const v = (request.query as Record<string, unknown> | undefined)?.[key];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return typeof v === 'string' ? [v] : [];
}

/**
 * `?watch=true` on a resource nodelet only lists: the apiserver's MethodNotSupported 405 for a
 * storage without Watch, instead of a list the client would misread as a watch stream.
 */
export function refuseWatch(request: FastifyRequest, resource: string): void {
  const watch = queryValue(request, 'watch');
  if (watch === 'true' || watch === '1') {
    throw new StatusError('MethodNotAllowed', `watch is not supported on resources of kind "${resource}"`, { kind: resource });
  }
}

/** The apiserver's defaulting of `container` for pods/log, exec and attach: the pod's only container. */
export function defaultContainerName(pod: Pod, requested: string | undefined): string {
  if (requested) return requested;
  const names = (pod.spec?.containers ?? []).map((c) => c.name);
  if (names.length === 1 && names[0]) return names[0];
  throw containerNameRequired(pod.metadata?.name, names);
}
