import type { Status, StatusCause } from './types.js';

/**
 * Typed error categories, thrown where a problem is found and mapped to HTTP exactly once (in
 * src/server). Each carries the Kubernetes `reason` and `code` of the Status object it becomes.
 */
export type StatusReason =
  | 'BadRequest'
  | 'Invalid'
  | 'NotFound'
  | 'Conflict'
  | 'Unauthorized'
  | 'Forbidden'
  | 'MethodNotAllowed'
  | 'NotAcceptable'
  | 'TooManyRequests'
  | 'Expired'
  | 'Timeout'
  | 'ServiceUnavailable'
  | 'NotImplemented'
  | 'InternalError';

const codeOf: Record<StatusReason, number> = {
  BadRequest: 400,
  Invalid: 422,
  NotFound: 404,
  Conflict: 409,
  Unauthorized: 401,
  Forbidden: 403,
  MethodNotAllowed: 405,
  NotAcceptable: 406,
  TooManyRequests: 429,
  // A watch or list resourceVersion older than the history kept (`410 Gone`): relist.
  Expired: 410,
  // The apiserver's `Timeout` (504), e.g. a resourceVersion newer than any it has issued.
  Timeout: 504,
  ServiceUnavailable: 503,
  NotImplemented: 501,
  InternalError: 500,
};

export interface StatusDetails {
  name?: string;
  kind?: string;
  group?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/**
 * How an answer is written: `status`, the `meta/v1` Status object (JSON) the apiserver sends;
 * `text`, the kubelet's `http.Error(w, msg, code)` — `text/plain; charset=utf-8`, `nosniff`, the
 * message + `\n` — for the kubelet endpoints whose clients match on the text (the auth filter's
 * refusals, `/podInfo`, `/stats/summary`).
 */
export type ErrorWire = 'status' | 'text';

export class StatusError extends Error {
  readonly reason: StatusReason;
  readonly code: number;
  readonly details: StatusDetails | undefined;
  readonly wire: ErrorWire;

  constructor(reason: StatusReason, message: string, details?: StatusDetails, wire: ErrorWire = 'status') {
    super(message);
    this.name = 'StatusError';
    this.reason = reason;
    this.code = codeOf[reason];
    this.details = details;
    this.wire = wire;
  }

  /** The `meta/v1` Status object the apiserver would send for this error. */
  toStatus(): Status {
    return {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: this.details } : {}),
      code: this.code,
    };
  }
}

/** A kubelet plain-text answer (`wire: 'text'`): the code of `reason`, `message` as the body. */
export const plainText = (reason: StatusReason, message: string) => new StatusError(reason, message, undefined, 'text');

export const badRequest = (message: string, details?: StatusDetails) => new StatusError('BadRequest', message, details);
export const invalid = (message: string, details?: StatusDetails) => new StatusError('Invalid', message, details);
export const internalError = (message: string) => new StatusError('InternalError', message);
export const unavailable = (message: string) => new StatusError('ServiceUnavailable', message);
export const notImplemented = (message: string) => new StatusError('NotImplemented', message);

/** The apiserver's NotFound for a named object, e.g. `pods "web" not found`. */
export function notFound(resource: string, name: string, group = ''): StatusError {
  return new StatusError('NotFound', `${resource}${group ? '.' + group : ''} "${name}" not found`, {
    name,
    kind: resource,
    ...(group ? { group } : {}),
  });
}
