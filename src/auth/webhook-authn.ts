import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { ReviewClient } from './apiserver.js';
import { bearerToken } from './token-file.js';
import { TtlCache, type Clock } from './ttl-cache.js';
import type { AuthnResult, Authenticator, UserInfo } from './types.js';

export const TOKEN_REVIEW_PATH = '/apis/authentication.k8s.io/v1/tokenreviews';

/** Where the webhooks report apiserver trouble; pino's logger fits. Never given a credential. */
export interface WebhookLog {
  warn(obj: object, msg: string): void;
}

export interface WebhookAuthnOptions {
  readonly client: ReviewClient;
  /** `--authentication-token-webhook-cache-ttl` (kubelet default 2 min); 0 = no caching. */
  readonly cacheTTLMs: number;
  /** Bound on cached tokens (default 10 000); the least recently used is dropped. */
  readonly maxEntries?: number;
  /** Per-review deadline (default 10 s). */
  readonly timeoutMs?: number;
  readonly now?: Clock;
  readonly log?: WebhookLog;
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
  readonly #cache: TtlCache<Review>;
  readonly #inflight = new Map<string, Promise<Review>>();
  readonly #log: WebhookLog | undefined;

  constructor(opts: WebhookAuthnOptions) {
    this.#client = opts.client;
    this.#ttl = opts.cacheTTLMs;
    this.#timeout = opts.timeoutMs ?? 10_000;
    this.#cache = new TtlCache(opts.maxEntries ?? 10_000, opts.now);
    this.#log = opts.log;
  }

  get cacheSize(): number {
    return this.#cache.size;
  }

  authenticate(req: IncomingMessage): AuthnResult | Promise<AuthnResult> {
    const token = bearerToken(req.headers.authorization);
    if (token === undefined) return { ok: false };
    const key = digest(token);
    const cached = this.#cache.get(key);
    if (cached !== undefined) return result(cached);
    let pending = this.#inflight.get(key);
    if (pending === undefined) {
      pending = this.#review(token, key).finally(() => this.#inflight.delete(key));
      this.#inflight.set(key, pending);
    }
    return pending.then(result, (err: unknown) => {
      const reason = err instanceof Error ? err.message : String(err);
      this.#log?.warn({ reason }, 'TokenReview failed; request refused');
      return { ok: false, error: `token webhook: ${reason}` };
    });
  }

  async #review(token: string, key: string): Promise<Review> {
    const answer = await this.#client.post(
      TOKEN_REVIEW_PATH,
      { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
      this.#timeout,
    );
    const status = (answer as { status?: Record<string, unknown> } | null)?.status;
    if (typeof answer !== 'object' || answer === null || (status !== undefined && (typeof status !== 'object' || status === null))) {
      throw new Error('malformed TokenReview answer');
    }
    let review: Review;
    const user = status?.user as Record<string, unknown> | undefined;
    if (status?.authenticated === true && typeof user?.username === 'string' && user.username !== '') {
      review = { user: { name: user.username, uid: typeof user.uid === 'string' ? user.uid : '', groups: strings(user.groups) } };
    } else {
      review = { user: undefined, error: 'invalid bearer token' };
    }
    this.#cache.set(key, review, this.#ttl);
    return review;
  }
}

function result(review: Review): AuthnResult {
  return review.user !== undefined ? { ok: true, user: review.user } : { ok: false, error: review.error };
}
