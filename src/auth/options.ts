import { UnionAuthenticator } from './authenticator.js';
import { alwaysAllow } from './policy.js';
import type { Authenticator, Authorizer } from './types.js';

/** How a listener guards its routes. */
export type SecurityOptions =
  | {
      readonly kind: 'authenticated';
      readonly authenticator: Authenticator;
      readonly authorizer: Authorizer;
      /** `name` of the `nodes` resource in every authorization check. */
      readonly nodeName: string;
      /** `--enable-debugging-handlers` (default true). */
      readonly enableDebuggingHandlers: boolean;
      /** Releases what the authenticators/authorizer hold (the apiserver connections of the webhooks). */
      readonly close?: () => void;
    }
  /** The read-only port: no authentication, an allow-list of GETs (the kubelet's 10255). */
  | { readonly kind: 'readOnly' };

/** Anonymous + AlwaysAllow: the loopback development posture, and what tests get by default. */
export function developmentSecurity(nodeName: string): SecurityOptions {
  return { kind: 'authenticated', authenticator: new UnionAuthenticator([], true), authorizer: alwaysAllow, nodeName, enableDebuggingHandlers: true };
}
