import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ReviewClient } from './apiserver.js';
import { CachedReviews, DEFAULT_REVIEW_TIMEOUT_MS, type Reviewed, type WebhookLog, type WebhookOptions } from './cached-reviews.js';
import { bearerToken } from './token-file.js';
import type { AuthnResult, Authenticator, UserInfo } from './types.js';

export const TOKEN_REVIEW_PATH = '/apis/authentication.k8s.io/v1/tokenreviews';

export interface WebhookAuthnOptions extends WebhookOptions {
  /** `--authentication-token-webhook-cache-ttl` (kubelet default 2 min); 0 = no caching. */
  readonly cacheTTLMs: number;
}

type Review = { readonly user: UserInfo } | { readonly user: undefined; readonly error: string };

const digest = (token: string): string => createHash('sha256').update(token).digest('hex');

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/**
 * Bearer tokens checked with a TokenReview (`authentication.k8s.io/v1`) through the apiserver, as
 * the kubelet's `--authentication-token-webhook`. Runs after the token file in the chain, so it
 * only sees tokens the file does not know. Answers — authenticated or not — are cached for
 * `cacheTTLMs` under the token's SHA-256 digest (the token itself is never stored or logged);
 * concurrent reviews of one token share a request. An apiserver error or timeout is not cached
 * and fails the request (401): it is never a fall-through to anonymous.
 */
export class WebhookTokenAuthenticator implements Authenticator {
  readonly #client: ReviewClient;
  readonly #ttl: number;
  readonly #timeout: number;
  readonly #reviews: CachedReviews<Review>;
  readonly #log: WebhookLog | undefined;

  constructor(opts: WebhookAuthnOptions) {
    this.#client = opts.client;
    this.#ttl = opts.cacheTTLMs;
    this.#timeout = opts.timeoutMs ?? DEFAULT_REVIEW_TIMEOUT_MS;
    this.#reviews = new CachedReviews(opts);
    this.#log = opts.log;
  }

  get cacheSize(): number {
    return this.#reviews.size;
  }

  authenticate(req: IncomingMessage): AuthnResult | Promise<AuthnResult> {
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) return { ok: false };
    const review = this.#reviews.get(digest(token), () => this.#review(token));
    if (!(review instanceof Promise)) return result(review);
    return review.then(result, (err: unknown) => {
      const reason = err instanceof Error ? err.message : String(err);
      this.#log?.warn({ reason }, 'TokenReview failed; request refused');
      return { ok: false, error: `token webhook: ${reason}` };
    });
  }

  async #review(token: string): Promise<Reviewed<Review>> {
    const answer = await this.#client.post(
      TOKEN_REVIEW_PATH,
      { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      this.#timeout,
    );
    const status = (answer as { status?: Record<string, unknown> } | null)?.status;
    if (typeof answer !== 'object' || answer === null || (status !== undefined && (typeof status !== 'object' || status === null))) {
      throw new Error('malformed TokenReview answer');
    }
    const user = status?.user as Record<string, unknown> | undefined;
    const value: Review = status?.authenticated === true && typeof user?.username === 'string' && user.username !== ''
      ? { user: { name: user.username, uid: typeof user.uid === 'string' ? user.uid : '', groups: strings(user.groups) } }
      : { user: undefined, error: 'invalid bearer token' };
    return { value, ttlMs: this.#ttl };
  }
}

function result(review: Review): AuthnResult {
  return review.user !== undefined ? { ok: true, user: review.user } : { ok: false, error: review.error };
}
