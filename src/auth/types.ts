import type { IncomingMessage } from 'node:http';

/** Who made a request, as the apiserver's `user.Info` describes it. */
export interface UserInfo {
  readonly name: string;
  readonly uid: string;
  readonly groups: readonly string[];
}

/**
 * An authenticator's answer: a user; no opinion (`error` unset: this authenticator found no
 * credentials of its kind); or credentials of its kind that are wrong (`error` set). Like the
 * apiserver's union authenticator, an error is never turned into an anonymous request.
 */
export type AuthnResult = { readonly ok: true; readonly user: UserInfo } | { readonly ok: false; readonly error?: string };

export interface Authenticator {
  /** Local authenticators answer at once; the TokenReview webhook answers with a promise. */
  authenticate(req: IncomingMessage): AuthnResult | Promise<AuthnResult>;
}

/** The kubelet's verbs (`auth.go` `GetRequestAttributes`): never empty when an authorizer is asked. */
export type Verb = 'get' | 'create' | 'update' | 'patch' | 'delete';

/** The kubelet's node subresources (`nodes/<subresource>`). */
export const SUBRESOURCES = ['proxy', 'log', 'stats', 'metrics', 'pods', 'healthz', 'configz', 'statusz', 'checkpoint'] as const;
export type Subresource = (typeof SUBRESOURCES)[number];

/** A SubjectAccessReview's resource attributes, as the kubelet builds them (resource `nodes`, name = the node). */
export interface Attributes {
  readonly user: UserInfo;
  readonly verb: Verb;
  readonly resource: 'nodes';
  readonly name: string;
  readonly subresource: Subresource;
  readonly path: string;
}

export interface Authorizer {
  /** AlwaysAllow: the filter skips building attributes (any method is fine then). */
  readonly alwaysAllow: boolean;
  /**
   * true = allow. Local authorizers answer at once; the SubjectAccessReview webhook with a promise.
   * A throw or rejection is an authorization *error*: the filter answers 500, never allows.
   */
  authorize(attrs: Attributes): boolean | Promise<boolean>;
}

export const ANONYMOUS_USER = 'system:anonymous';
export const UNAUTHENTICATED_GROUP = 'system:unauthenticated';
export const AUTHENTICATED_GROUP = 'system:authenticated';
/** The apiserver's superuser group (`user.SystemPrivilegedGroup`): the embedded default's admin is in it. */
export const PRIVILEGED_GROUP = 'system:masters';
