import { ConfigError, quote } from './errors.js';
import type { FlagTarget, FlagValues } from './flags.js';
import { isLoopbackAddress } from './host.js';
import type { Config } from './types.js';

type Get = <K extends FlagTarget>(k: K) => FlagValues[K];

/**
 * The security posture, decided once at start-up (nodelet refuses to start rather than serve an
 * insecure configuration):
 *  - Loopback with no authenticator and AlwaysAllow is the development posture of a kubelet run
 *    with its legacy CLI defaults: anonymous requests are allowed (unless `--anonymous-auth` is
 *    given explicitly), so `npm start`, curl and kubectl work without credentials.
 *  - Anything else authenticates; anonymous requests get 401 unless `--anonymous-auth=true`.
 *  - A non-loopback address needs an authenticator (or explicit anonymous auth) and a
 *    non-AlwaysAllow authorizer: the CIS benchmarks' kubelet checks, enforced instead of audited.
 *  - `--authentication-token-webhook` and `--authorization-mode=Webhook` need `--kubeconfig`.
 * Whether TLS is served follows from these fields (`servesTLS` in src/server/tls.ts; the token
 * webhook also turns TLS on, see src/nodelet.ts).
 */
export function resolveSecurity(
  address: string,
  get: Get,
  given: (k: FlagTarget) => boolean,
  origin: (k: FlagTarget) => string,
): Pick<Config, 'anonymousAuth' | 'authorizationMode' | 'authenticationTokenWebhook' | 'tlsCertFile' | 'tlsPrivateKeyFile'> {
  const tlsCertFile = get('tlsCertFile');
  const tlsPrivateKeyFile = get('tlsPrivateKeyFile');
  if ((tlsCertFile === '') !== (tlsPrivateKeyFile === '')) {
    throw new ConfigError('--tls-cert-file and --tls-private-key-file must be given together');
  }
  // The webhooks ask the apiserver, so they need --kubeconfig (cluster mode).
  const hasKubeconfig = get('kubeconfig') !== '';
  const needsApiserver = (what: string) =>
    new ConfigError(`${what} needs the apiserver (--kubeconfig, cluster mode); give --kubeconfig, or use --client-ca-file or --token-auth-file, and --authorization-mode=Policy`);
  // Cluster mode defaults to the kubelet's recommended posture: TokenReview for bearer tokens and
  // SubjectAccessReview for every request (what the apiserver's proxied requests go through).
  const tokenWebhook = given('authenticationTokenWebhook') ? get('authenticationTokenWebhook') : hasKubeconfig;
  if (tokenWebhook && !hasKubeconfig) throw needsApiserver(`--authentication-token-webhook (from ${origin('authenticationTokenWebhook')})`);

  const policyFile = get('authorizationPolicyFile');
  let mode = get('authorizationMode');
  if (mode === 'Webhook' && !hasKubeconfig) throw needsApiserver(`--authorization-mode=Webhook (from ${origin('authorizationMode')})`);
  if (policyFile !== '' && !given('authorizationMode')) mode = 'Policy';
  else if (hasKubeconfig && !given('authorizationMode')) mode = 'Webhook';
  if (mode === 'Policy' && policyFile === '') {
    throw new ConfigError('--authorization-mode=Policy needs --authorization-policy-file');
  }
  if (mode !== 'Policy' && policyFile !== '') {
    throw new ConfigError(`--authorization-policy-file is only used with --authorization-mode=Policy, not ${mode} (from ${origin('authorizationMode')})`);
  }

  const authenticators = get('clientCAFile') !== '' || get('tokenAuthFile') !== '' || tokenWebhook;
  const loopback = isLoopbackAddress(address);
  let anonymousAuth = get('anonymousAuth');
  if (loopback && !authenticators && mode === 'AlwaysAllow' && !given('anonymousAuth')) anonymousAuth = true;

  if (!loopback) {
    if (mode === 'AlwaysAllow') {
      throw new ConfigError(
        `refusing --authorization-mode=AlwaysAllow on non-loopback address ${quote(address)}: anyone reaching it could exec into every container; use --authorization-mode=Policy with --authorization-policy-file, or --address=127.0.0.1`,
      );
    }
    if (!authenticators && !anonymousAuth) {
      throw new ConfigError(`serving on non-loopback address ${quote(address)} needs --client-ca-file, --token-auth-file or --authentication-token-webhook`);
    }
  }
  return { anonymousAuth, authorizationMode: mode, authenticationTokenWebhook: tokenWebhook, tlsCertFile, tlsPrivateKeyFile };
}
