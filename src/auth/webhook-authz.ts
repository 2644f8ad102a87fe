import type { ReviewClient } from './apiserver.js';
import { CachedReviews, DEFAULT_REVIEW_TIMEOUT_MS, type Reviewed, type WebhookLog, type WebhookOptions } from './cached-reviews.js';
import type { Attributes, Authorizer } from './types.js';

export const SUBJECT_ACCESS_REVIEW_PATH = '/apis/authorization.k8s.io/v1/subjectaccessreviews';

export interface WebhookAuthzOptions extends WebhookOptions {
  /** `--authorization-webhook-cache-authorized-ttl` (kubelet default 5 min); 0 = no caching. */
  readonly authorizedTTLMs: number;
  /** `--authorization-webhook-cache-unauthorized-ttl` (kubelet default 30 s); 0 = no caching. */
  readonly unauthorizedTTLMs: number;
}

/** The SubjectAccessReview spec the kubelet sends for its attributes (`auth.go`, resource request). */
export function subjectAccessReviewSpec(attrs: Attributes): Record<string, unknown> {
  return {
    user: attrs.user.name,
    groups: [...attrs.user.groups],
    uid: attrs.user.uid,
    resourceAttributes: {
      verb: attrs.verb,
      group: '',
      version: 'v1',
      resource: attrs.resource,
      subresource: attrs.subresource,
      name: attrs.name,
      namespace: '',
    },
  };
}

/**
 * `--authorization-mode=Webhook`: each decision is a SubjectAccessReview
 * (`authorization.k8s.io/v1`) through the apiserver. An allow is cached `authorizedTTLMs`, a deny
 * `unauthorizedTTLMs`, keyed by the whole spec (user, uid, groups and attributes), so one user's
 * answer is never reused for another. An apiserver error or timeout rejects: the filter answers
 * 500 `Authorization error (…)` — never an allow — and nothing is cached.
 */
export class WebhookAuthorizer implements Authorizer {
  readonly alwaysAllow = false;
  readonly #client: ReviewClient;
  readonly #allowTTL: number;
  readonly #denyTTL: number;
  readonly #timeout: number;
  readonly #reviews: CachedReviews<boolean>;
  readonly #log: WebhookLog | undefined;

  constructor(opts: WebhookAuthzOptions) {
    this.#client = opts.client;
    this.#allowTTL = opts.authorizedTTLMs;
    this.#denyTTL = opts.unauthorizedTTLMs;
    this.#timeout = opts.timeoutMs ?? DEFAULT_REVIEW_TIMEOUT_MS;
    this.#reviews = new CachedReviews(opts);
    this.#log = opts.log;
  }

  get cacheSize(): number {
    return this.#reviews.size;
  }

  authorize(attrs: Attributes): boolean | Promise<boolean> {
    const spec = subjectAccessReviewSpec(attrs);
    const decision = this.#reviews.get(JSON.stringify(spec), () => this.#review(spec));
    if (!(decision instanceof Promise)) return decision;
    return decision.catch((err: unknown) => {
      const reason = err instanceof Error ? err.message : String(err);
      this.#log?.warn({ reason, user: attrs.user.name, verb: attrs.verb, subresource: attrs.subresource }, 'SubjectAccessReview failed');
      throw new Error(`SubjectAccessReview: ${reason}`);
    });
  }

  async #review(spec: Record<string, unknown>): Promise<Reviewed<boolean>> {
    const answer = await this.#client.post(
      SUBJECT_ACCESS_REVIEW_PATH,
      { apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec },
      this.#timeout,
    );
    const status = (answer as { status?: unknown } | null)?.status;
    if (typeof status !== 'object' || status === null) throw new Error('malformed SubjectAccessReview answer (no status)');
    // Only an explicit allow admits; `denied`, no opinion and anything else deny.
    const allowed = (status as Record<string, unknown>).allowed === true && (status as Record<string, unknown>).denied !== true;
    return { value: allowed, ttlMs: allowed ? this.#allowTTL : this.#denyTTL };
  }
}
