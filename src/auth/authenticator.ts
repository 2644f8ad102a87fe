import type { IncomingMessage } from 'node:http';
import { ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, type AuthnResult, type Authenticator, type UserInfo } from './types.js';

const ANONYMOUS: UserInfo = Object.freeze({ name: ANONYMOUS_USER, uid: '', groups: Object.freeze([UNAUTHENTICATED_GROUP]) });
const ANONYMOUS_RESULT: AuthnResult = Object.freeze({ ok: true, user: ANONYMOUS });
const NO_CREDENTIALS: AuthnResult = Object.freeze({ ok: false });

/**
 * The kubelet's delegating authenticator: x509, then bearer tokens; the first user wins. Any
 * authenticator error (a bad token, a certificate from another CA) fails the request even when
 * anonymous auth is on — `union.NewFailOnError(..., anonymous)` — so a wrong credential is never
 * silently downgraded to `system:anonymous`. Authenticated users get `system:authenticated`.
 */
export class UnionAuthenticator implements Authenticator {
  readonly #chain: readonly Authenticator[];
  readonly #anonymous: boolean;

  constructor(chain: readonly Authenticator[], anonymous: boolean) {
    this.#chain = chain;
    this.#anonymous = anonymous;
  }

  /** Synchronous while every authenticator asked so far answered synchronously (the local ones). */
  authenticate(req: IncomingMessage): AuthnResult | Promise<AuthnResult> {
    // Made on the first error only: most requests have none (anonymous, or the first authenticator answers).
    let errors: string[] | undefined;
    for (let i = 0; i < this.#chain.length; i++) {
      const r = this.#chain[i]?.authenticate(req);
      if (r === undefined) continue;
      if (r instanceof Promise) return this.#continue(req, r, i, errors ?? []);
      if (r.ok) return withAuthenticated(r.user);
      if (r.error !== undefined) (errors ??= []).push(r.error);
    }
    return errors === undefined ? this.#unauthenticated : this.#finish(errors);
  }

  /** The answer for a request nobody authenticated and nobody refused: one frozen object, not one per request. */
  get #unauthenticated(): AuthnResult {
    return this.#anonymous ? ANONYMOUS_RESULT : NO_CREDENTIALS;
  }

  async #continue(req: IncomingMessage, pending: Promise<AuthnResult>, index: number, errors: string[]): Promise<AuthnResult> {
    let r: AuthnResult = await pending;
    for (let i = index; ; ) {
      if (r.ok) return withAuthenticated(r.user);
      if (r.error !== undefined) errors.push(r.error);
      i++;
      const next = this.#chain[i];
      if (next === undefined) break;
      r = await next.authenticate(req);
    }
    return this.#finish(errors);
  }

  #finish(errors: string[]): AuthnResult {
    if (errors.length > 0) return { ok: false, error: errors.join('; ') };
    return this.#anonymous ? { ok: true, user: ANONYMOUS } : { ok: false };
  }
}

function withAuthenticated(user: UserInfo): AuthnResult {
  const groups = user.groups.includes(AUTHENTICATED_GROUP) ? user.groups : [...user.groups, AUTHENTICATED_GROUP];
  return { ok: true, user: { ...user, groups } };
}
