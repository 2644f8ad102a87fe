import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { StatusError, badRequest, plainText, type StatusDetails } from '../api/errors.js';
import type { Status } from '../api/types.js';
import type { Subresource, Verb } from '../auth/types.js';
import { redactURL } from '../logging/index.js';

/**
 * The one place errors become HTTP responses. Routes throw; `handleError` (installed once, on
 * the root instance) writes either a `meta/v1` Status, as the apiserver does, or — for a
 * StatusError with `wire: 'text'` (the few old kubelet endpoints whose clients parse text) — the
 * kubelet's plain-text `http.Error` body.
 */

/** 405 with the `Allow` header the kubelet's `GETOnlyRestfulFilter` sends. */
export class MethodNotAllowedError extends StatusError {
  readonly allow: readonly string[];
  constructor(allow: readonly string[]) {
    super('MethodNotAllowed', 'the server does not allow this method on the requested resource');
    this.allow = allow;
  }
}

/*
 * Answers with one spelling each: the ones several places give, and the kubelet's auth filter
 * refusals (pkg/kubelet/server/auth.go, InstallDebuggingDisabledHandlers). Their text is on the
 * wire — kubectl, old clients and the tests compare it byte for byte.
 */

export const pageNotFound = (): StatusError =>
  // The apiserver's answer for a path no handler owns (`details: {}` included).
  new StatusError('NotFound', 'the server could not find the requested resource', {});

/** 401: no credentials, or credentials nobody vouches for (the reason is only logged). */
export const unauthorized = (): StatusError => plainText('Unauthorized', 'Unauthorized');

/** What the kubelet's filter names in a refusal: `user=…, verb=…, resource=nodes, subresource=…`. */
const accessOf = (user: string, verb: Verb, subresource: Subresource): string =>
  `user=${user}, verb=${verb}, resource=nodes, subresource=${subresource}`;

/** 403: no authorizer allowed the request (`subresource` is the first, fine-grained one asked). */
export const forbidden = (user: string, verb: Verb, subresource: Subresource): StatusError =>
  plainText('Forbidden', `Forbidden (${accessOf(user, verb, subresource)})`);

/** 500: the authorizer failed (e.g. a SubjectAccessReview timed out); never an allow. */
export const authorizationError = (user: string, verb: Verb, subresource: Subresource): StatusError =>
  plainText('InternalError', `Authorization error (${accessOf(user, verb, subresource)})`);

/** 405 for the debugging handlers when `--enable-debugging-handlers=false`, and on the read-only port. */
export const debugDisabled = (): StatusError => plainText('MethodNotAllowed', 'Debug endpoints are disabled.');

/** The streaming endpoints' NotFound for a pod the node does not run. */
export const podDoesNotExist = (name: string): StatusError => new StatusError('NotFound', 'pod does not exist', { name, kind: 'pods' });

/** The apiserver's defaulting refused: a pod of several (or no) containers and no container named. */
export const containerNameRequired = (pod: string | undefined, names: readonly string[]): StatusError =>
  badRequest(`a container name must be specified for pod ${pod}, choose one of: [${names.join(' ')}]`);

/** Kubernetes `reason`s for status codes raised by Fastify itself (parsers, limits). */
const reasonForCode: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  408: 'Timeout',
  413: 'RequestEntityTooLarge',
  414: 'RequestURITooLong',
  415: 'UnsupportedMediaType',
  429: 'TooManyRequests',
};

function statusBody(code: number, reason: string, message: string, details?: StatusDetails): Status {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message,
    reason,
    ...(details ? { details } : {}),
    code,
  };
}

/** Fastify's own errors only: a Docker client error may also carry `code` and `statusCode`. */
function isFastifyError(err: unknown): err is FastifyError {
  const code = err instanceof Error ? (err as Partial<FastifyError>).code : undefined;
  return typeof code === 'string' && code.startsWith('FST_');
}

/** Maps anything thrown to the Status object the client gets. */
export function statusFor(err: unknown): Status {
  if (err instanceof StatusError) return err.toStatus();
  if (isFastifyError(err)) {
    const code = err.statusCode ?? 500;
    // Schema validation, malformed bodies, bad URLs: the client's fault, a 400 like the apiserver.
    if (err.validation || err.code === 'FST_ERR_BAD_URL' || err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
      return statusBody(400, 'BadRequest', err.message);
    }
    if (code >= 400 && code < 500) return statusBody(code, reasonForCode[code] ?? 'BadRequest', err.message);
  }
  const message = err instanceof Error ? err.message : String(err);
  return statusBody(500, 'InternalError', `Internal error occurred: ${message}`, { causes: [{ message }] });
}

export function handleError(err: unknown, request: FastifyRequest, reply: FastifyReply): void {
  if (err instanceof StatusError && err.wire === 'text') {
    // `nosniff` comes from the root onSend hook, as on every answer.
    request.log.debug({ err }, 'request failed');
    void reply.code(err.code).type('text/plain; charset=utf-8').send(`${err.message}\n`);
    return;
  }
  const status = statusFor(err);
  const code = status.code ?? 500;
  if (code >= 500) request.log.error({ err, url: redactURL(request.url), method: request.method }, 'request failed');
  else request.log.debug({ err, statusCode: code }, 'request rejected');
  if (err instanceof MethodNotAllowedError) void reply.header('allow', err.allow.join(', '));
  // The apiserver and the kubelet's stream cap both say when to come back.
  const retryAfter = status.details?.retryAfterSeconds;
  if (retryAfter !== undefined) void reply.header('retry-after', String(retryAfter));
  // A Buffer keeps the exact `application/json` (Fastify appends a charset to JSON strings) also
  // on framework errors raised before routing, which skip the root onSend hook.
  void reply
    .code(code)
    .type('application/json')
    .header('x-content-type-options', 'nosniff')
    .send(Buffer.from(JSON.stringify(status)));
}

/** Unknown routes: the apiserver's 404 Status, through the same handler. */
export async function handleNotFound(): Promise<never> {
  throw pageNotFound();
}

/** Errors Fastify raises before routing (bad percent-encoding, over-long params). */
export function handleFrameworkError(err: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  handleError(err, request, reply);
}
