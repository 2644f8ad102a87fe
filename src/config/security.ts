import { ConfigError, quote } from './errors.js';
import type { FlagTarget, FlagValues } from './flags.js';
import { isLoopbackAddress } from './host.js';
import type { Config } from './types.js';

type Get = <K extends FlagTarget>(k: K) => FlagValues[K];

/**
 * The security posture, decided once at start-up (nodelet refuses to start rather than serve an
 * insecure configuration):
 *  - The embedded default — no serving certificate, no authenticator, no `--kubeconfig`, no
 *    `--insecure-dev` — is secure on loopback too: HTTPS with a generated CA and serving
 *    certificate, a generated admin token as the only credential, anonymous requests 401 unless
 *    `--anonymous-auth=true` (`generatedCredentials`, see src/server/embedded.ts).
 *  - `--insecure-dev` is the development posture of a kubelet run with its legacy CLI defaults:
 *    plain HTTP, anonymous requests allowed (unless `--anonymous-auth` is given explicitly),
 *    AlwaysAllow. Loopback only, and never together with certificates or authenticators.
 *  - Given flags keep their meaning: with an authenticator, anonymous requests get 401 unless
 *    `--anonymous-auth=true`; a serving certificate alone on loopback with AlwaysAllow keeps the
 *    development posture over TLS.
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
): Pick<Config, 'anonymousAuth' | 'authorizationMode' | 'authenticationTokenWebhook' | 'tlsCertFile' | 'tlsPrivateKeyFile' | 'insecureDev' | 'generatedCredentials'> {
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
  const insecureDev = get('insecureDev');
  if (insecureDev) {
    if (!loopback) {
      throw new ConfigError(`--insecure-dev (from ${origin('insecureDev')}) serves plain HTTP without authentication and is only allowed on a loopback address, not ${quote(address)}`);
    }
    const conflicts = [
      ...(tlsCertFile !== '' ? ['--tls-cert-file'] : []),
      ...(get('clientCAFile') !== '' ? ['--client-ca-file'] : []),
      ...(get('tokenAuthFile') !== '' ? ['--token-auth-file'] : []),
      ...(hasKubeconfig ? ['--kubeconfig'] : []),
    ];
    if (conflicts.length > 0) {
      throw new ConfigError(`--insecure-dev (plain HTTP, anonymous requests) cannot be combined with ${conflicts.join(', ')}; drop --insecure-dev to serve HTTPS with those`);
    }
  }
  // Nothing given to serve or authenticate with: nodelet makes its own (CA, serving certificate,
  // admin token, kubeconfig). Cluster mode has its own credentials (the apiserver's).
  const generatedCredentials = !insecureDev && tlsCertFile === '' && !authenticators && !hasKubeconfig;
  let anonymousAuth = get('anonymousAuth');
  if (loopback && !authenticators && !generatedCredentials && mode === 'AlwaysAllow' && !given('anonymousAuth')) anonymousAuth = true;

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
  return { anonymousAuth, authorizationMode: mode, authenticationTokenWebhook: tokenWebhook, tlsCertFile, tlsPrivateKeyFile, insecureDev, generatedCredentials };
}
