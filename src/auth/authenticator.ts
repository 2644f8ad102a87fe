import type { IncomingMessage } from 'node:http';
import { ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, type AuthnResult, type Authenticator, type UserInfo } from './types.js';

const ANONYMOUS: UserInfo = Object.freeze({ name: ANONYMOUS_USER, uid: '', groups: Object.freeze([UNAUTHENTICATED_GROUP]) });

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

  authenticate(req: IncomingMessage): AuthnResult {
    const errors: string[] = [];
    for (const authn of this.#chain) {
      const r = authn.authenticate(req);
      if (r.ok) {
        const { user } = r;
        const groups = user.groups.includes(AUTHENTICATED_GROUP) ? user.groups : [...user.groups, AUTHENTICATED_GROUP];
        return { ok: true, user: { ...user, groups } };
      }
      if (r.error !== undefined) errors.push(r.error);
    }
    if (errors.length > 0) return { ok: false, error: errors.join('; ') };
    return this.#anonymous ? { ok: true, user: ANONYMOUS } : { ok: false };
  }
}
