import type { Config } from '../config/types.js';
import { UnionAuthenticator } from './authenticator.js';
import type { SecurityOptions } from './options.js';
import { loadKubeconfig } from '../config/kubeconfig.js';
import { ApiserverClient } from './apiserver.js';
import type { KubeClient } from '../apiserver/client.js';
import { PolicyAuthorizer, alwaysAllow, privilegedGroup } from './policy.js';
import { TokenFileAuthenticator } from './token-file.js';
import { PRIVILEGED_GROUP, type Authenticator, type Authorizer, type UserInfo } from './types.js';
import type { WebhookLog } from './cached-reviews.js';
import { WebhookTokenAuthenticator } from './webhook-authn.js';
import { WebhookAuthorizer } from './webhook-authz.js';
import { X509Authenticator } from './x509.js';

export { developmentSecurity, type SecurityOptions } from './options.js';
export type { Authenticator, Authorizer } from './types.js';

/** Who the embedded default's generated admin token authenticates as. */
export const ADMIN_USER: UserInfo = Object.freeze({ name: 'nodelet-admin', uid: '', groups: Object.freeze([PRIVILEGED_GROUP]) });

/**
 * The main port's authenticators and authorizer from the resolved Config (see
 * src/config/security.ts). Reads the token, policy and kubeconfig files once, at start-up; a bad
 * file stops nodelet. `warnings` never contain a token. The chain is the kubelet's: x509, the
 * token file, then the TokenReview webhook (tokens the file does not know); the webhooks use
 * `webhookClient` when given (closed with the rest), else a client of the kubeconfig's. With
 * `generatedCredentials`, `adminToken` (src/server/embedded.ts) is the one credential: it
 * authenticates as `ADMIN_USER`, whom the authorizer always allows (`system:masters`).
 */
export function securityFromConfig(config: Config, warnings: string[] = [], log?: WebhookLog, adminToken?: string, webhookClient?: KubeClient): SecurityOptions {
  const webhooks = config.authenticationTokenWebhook || config.authorizationMode === 'Webhook';
  // buildConfig refuses the webhooks without --kubeconfig; fail closed should a Config be built some other way.
  if (webhooks && config.kubeconfig === '') throw new Error('the webhooks need --kubeconfig (the apiserver)');
  if (config.generatedCredentials !== (adminToken !== undefined)) throw new Error('the generated admin token goes with generatedCredentials, and only with it');
  // `webhookClient`: nodelet's, whose client certificate follows rotation (src/certificate/).
  const client = webhooks ? new ApiserverClient(webhookClient ?? loadKubeconfig(config.kubeconfig)) : undefined;
  const chain: Authenticator[] = [];
  if (adminToken !== undefined) chain.push(TokenFileAuthenticator.fromEntries([{ token: adminToken, user: ADMIN_USER }]));
  if (config.clientCAFile !== '') chain.push(new X509Authenticator());
  if (config.tokenAuthFile !== '') chain.push(TokenFileAuthenticator.fromFile(config.tokenAuthFile, warnings));
  if (config.authenticationTokenWebhook && client) {
    chain.push(new WebhookTokenAuthenticator({ client, cacheTTLMs: config.authenticationTokenWebhookCacheTTLMs, ...(log ? { log } : {}) }));
  }
  let authorizer: Authorizer = alwaysAllow;
  if (config.authorizationMode === 'Policy') authorizer = PolicyAuthorizer.fromFile(config.authorizationPolicyFile);
  else if (config.authorizationMode === 'Webhook' && client) {
    authorizer = new WebhookAuthorizer({
      client,
      authorizedTTLMs: config.authorizationWebhookCacheAuthorizedTTLMs,
      unauthorizedTTLMs: config.authorizationWebhookCacheUnauthorizedTTLMs,
      ...(log ? { log } : {}),
    });
  }
  if (adminToken !== undefined) authorizer = privilegedGroup(PRIVILEGED_GROUP, authorizer);
  return {
    kind: 'authenticated',
    authenticator: new UnionAuthenticator(chain, config.anonymousAuth),
    authorizer,
    nodeName: config.nodeName,
    enableDebuggingHandlers: config.enableDebuggingHandlers,
    ...(client ? { close: () => client.close() } : {}),
  };
}
