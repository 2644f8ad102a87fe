import type { Config } from '../config/types.js';
import { UnionAuthenticator } from './authenticator.js';
import type { SecurityOptions } from './filter.js';
import { PolicyAuthorizer, alwaysAllow } from './policy.js';
import { TokenFileAuthenticator } from './token-file.js';
import type { Authenticator } from './types.js';
import { X509Authenticator } from './x509.js';

export { developmentSecurity, installSecurity, type SecurityOptions } from './filter.js';
export type { Attributes, Authenticator, Authorizer, UserInfo } from './types.js';

/**
 * The main port's authenticators and authorizer from the resolved Config (see
 * src/config/security.ts). Reads the token and policy files once, at start-up; a bad file stops
 * nodelet. `warnings` never contain a token.
 */
export function securityFromConfig(config: Config, warnings: string[] = []): SecurityOptions {
  const chain: Authenticator[] = [];
  if (config.clientCAFile !== '') chain.push(new X509Authenticator());
  if (config.tokenAuthFile !== '') chain.push(TokenFileAuthenticator.fromFile(config.tokenAuthFile, warnings));
  // buildConfig refuses Webhook; fail closed should a Config be built some other way.
  if (config.authorizationMode === 'Webhook') throw new Error('--authorization-mode=Webhook needs cluster mode, which nodelet does not support');
  return {
    kind: 'authenticated',
    authenticator: new UnionAuthenticator(chain, config.anonymousAuth),
    authorizer: config.authorizationMode === 'Policy' ? PolicyAuthorizer.fromFile(config.authorizationPolicyFile) : alwaysAllow,
    nodeName: config.nodeName,
    enableDebuggingHandlers: config.enableDebuggingHandlers,
  };
}
