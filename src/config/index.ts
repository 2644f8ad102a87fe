import { hostname, networkInterfaces } from 'node:os';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { flagDefaults, type Settings } from './convert.js';
import { ConfigError, quote } from './errors.js';
import { loadConfigFile } from './file.js';
import { FLAGS, flagForTarget, type FlagTarget, type FlagValues } from './flags.js';
import { usage } from './help.js';
import { dns1123SubdomainError, firstExternalIPv4, isUnspecifiedAddress, type HostInfo } from './host.js';
import { parseFlags } from './parse.js';
import { resolveSecurity } from './security.js';
import { parseNodeLabels, parseTaints } from './node-flags.js';
import { parseContainerUlimits } from './ulimits.js';
import { checkContainerLogMaxSize } from './log-rotation.js';
import { validateVerificationConfig } from './image-credentials.js';
import type { Config } from './types.js';

export { ConfigError } from './errors.js';
export { FLAGS, type FlagSpec } from './flags.js';
export { usage } from './help.js';
export { flagzValues, goDuration, kubeletConfiguration } from './zpages.js';
export type { HostInfo } from './host.js';
export type { Config } from './types.js';

export type BuildResult = { config: Config; warnings: string[] } | { help: string };

/**
 * The default of one setting as the flag table gives it (durations in milliseconds): what a part
 * built without a `Config` (a test, the read-only server) falls back to, so `src/config/flags.ts`
 * stays the one place a default is written.
 */
export function configDefault<K extends FlagTarget>(target: K): FlagValues[K] {
  const value: FlagValues[K] | undefined = flagDefaults(FLAGS, {})[target];
  // Unreachable: flagDefaults covers every target (checked at compile time in flags.ts).
  if (value === undefined) throw new Error(`config: no default for ${target}`);
  return value;
}

/**
 * Builds the frozen Config from defaults ← `--config` file ← explicitly given flags (the kubelet's
 * documented precedence). Returns `{ help }` for `-h`/`--help`; throws ConfigError (exit 2).
 */
export function buildConfig(argv: readonly string[], env: NodeJS.ProcessEnv, hostInfo?: HostInfo): BuildResult {
  const flags = parseFlags(argv);
  if (flags.help === true) return { help: usage() };

  const configFile = flags.configFile ?? '';
  const file = configFile === '' ? { values: {}, warnings: [] } : loadConfigFile(configFile);
  const merged: Settings = { ...flagDefaults(FLAGS, env), ...file.values, ...flags };
  const host = (): HostInfo => hostInfo ?? { hostname: hostname(), interfaces: networkInterfaces() };

  /** Where a value came from, for error messages. */
  const origin = (target: FlagTarget): string => {
    const spec = flagForTarget(target);
    if (spec === undefined) return target;
    if (target in flags) return `--${spec.name}`;
    if (target in file.values) return `${spec.fileField ?? target} in ${quote(configFile)}`;
    if (spec.kind === 'string' && spec.envDefault !== undefined && (env[spec.envDefault] ?? '') !== '') return `$${spec.envDefault}`;
    return `default of --${spec.name}`;
  };
  const get = <K extends FlagTarget>(k: K): FlagValues[K] => {
    const v: FlagValues[K] | undefined = merged[k];
    // Unreachable: flagDefaults covers every target (checked at compile time in flags.ts).
    if (v === undefined) throw new Error(`config: no value for ${k}`);
    return v;
  };

  const address = get('address');
  if (isIP(address) === 0 && address.toLowerCase() !== 'localhost') {
    throw new ConfigError(`invalid address ${quote(address)} (from ${origin('address')}): not a valid IP address`);
  }
  const security = resolveSecurity(address, get, (k) => k in flags || k in file.values, origin);

  const dockerEndpoint = get('dockerEndpoint');
  if (!/^[a-z][a-z0-9+.-]*:\/\/./i.test(dockerEndpoint)) {
    throw new ConfigError(
      `invalid docker endpoint ${quote(dockerEndpoint)} (from ${origin('dockerEndpoint')}): expected unix:///path or tcp://host:port`,
    );
  }

  const readOnlyPort = get('readOnlyPort');
  if (readOnlyPort > 65535) throw new ConfigError(`invalid read-only port ${readOnlyPort} (from ${origin('readOnlyPort')}): must be between 0 and 65535`);
  if (readOnlyPort !== 0 && readOnlyPort === get('port')) throw new ConfigError(`--read-only-port ${readOnlyPort} is the same as --port`);

  // The kubelet's validation (pkg/kubelet/apis/config/validation): "containerLogMaxFiles must be greater than 1".
  const containerLogMaxFiles = get('containerLogMaxFiles');
  if (containerLogMaxFiles < 2) throw new ConfigError(`invalid container log max files ${containerLogMaxFiles} (from ${origin('containerLogMaxFiles')}): must be at least 2`);

  const cgroupRoot = get('cgroupRoot');
  if (!cgroupRoot.startsWith('/') || cgroupRoot.split('/').some((n) => n === '.' || n === '..')) {
    throw new ConfigError(`invalid cgroup root ${quote(cgroupRoot)} (from ${origin('cgroupRoot')}): must be an absolute path without "." or ".." elements`);
  }
  if (get('cgroupsPerQOS') && get('cgroupDriver') === 'systemd') {
    throw new ConfigError(`cgroup driver "systemd" (from ${origin('cgroupDriver')}) is not implemented for pod cgroups: use --cgroup-driver=cgroupfs with an engine on the cgroupfs driver, or --cgroups-per-qos=false`);
  }

  // pkg/kubelet/apis/config/validation/validation.go
  const imageGCHighThresholdPercent = get('imageGCHighThresholdPercent');
  const imageGCLowThresholdPercent = get('imageGCLowThresholdPercent');
  if (imageGCHighThresholdPercent > 100) throw new ConfigError(`invalid image GC high threshold ${imageGCHighThresholdPercent} (from ${origin('imageGCHighThresholdPercent')}): must be between 0 and 100`);
  if (imageGCLowThresholdPercent >= imageGCHighThresholdPercent) {
    throw new ConfigError(`invalid image GC low threshold ${imageGCLowThresholdPercent} (from ${origin('imageGCLowThresholdPercent')}): must be less than the high threshold ${imageGCHighThresholdPercent}`);
  }
  const imageMaximumGCAgeMs = get('imageMaximumGCAgeMs');
  if (imageMaximumGCAgeMs > 0 && imageMaximumGCAgeMs <= get('imageMinimumGCAgeMs')) {
    throw new ConfigError(`invalid image maximum GC age (from ${origin('imageMaximumGCAgeMs')}): must be greater than the minimum GC age`);
  }

  const imagePullCredentialsVerificationPolicy = get('imagePullCredentialsVerificationPolicy');
  const preloadedImagesVerificationAllowlist = get('preloadedImagesVerificationAllowlist');
  const verificationError = validateVerificationConfig(imagePullCredentialsVerificationPolicy, preloadedImagesVerificationAllowlist);
  if (verificationError) throw new ConfigError(verificationError);

  const shutdownGracePeriodMs = get('shutdownGracePeriodMs');
  const shutdownGracePeriodCriticalPodsMs = get('shutdownGracePeriodCriticalPodsMs');
  if (shutdownGracePeriodCriticalPodsMs > shutdownGracePeriodMs) {
    throw new ConfigError(`invalid shutdown grace period for critical pods (from ${origin('shutdownGracePeriodCriticalPodsMs')}): must not be greater than the shutdown grace period`);
  }
  if (shutdownGracePeriodMs % 1000 !== 0 || shutdownGracePeriodCriticalPodsMs % 1000 !== 0) {
    throw new ConfigError('invalid shutdown grace periods: must be whole seconds');
  }

  // TLS bootstrap writes --kubeconfig; the certificate managers talk to the apiserver through it.
  if (get('bootstrapKubeconfig') !== '' && get('kubeconfig') === '') {
    throw new ConfigError('--bootstrap-kubeconfig needs --kubeconfig: the path the kubeconfig with the issued client certificate is written to');
  }
  if (get('rotateCertificates') && get('kubeconfig') === '') throw new ConfigError(`rotateCertificates (from ${origin('rotateCertificates')}) needs --kubeconfig (cluster mode)`);
  if (get('serverTLSBootstrap')) {
    if (get('kubeconfig') === '') throw new ConfigError(`serverTLSBootstrap (from ${origin('serverTLSBootstrap')}) needs --kubeconfig (cluster mode)`);
    if (get('tlsCertFile') !== '') throw new ConfigError(`serverTLSBootstrap (from ${origin('serverTLSBootstrap')}) and --tls-cert-file are mutually exclusive: the serving certificate comes from the CSR`);
  }

  const clusterDNS = get('clusterDNS');
  for (const ip of clusterDNS) {
    if (isIP(ip) === 0) throw new ConfigError(`invalid cluster DNS address ${quote(ip)} (from ${origin('clusterDNS')}): not a valid IP address`);
  }

  const config: Config = {
    address,
    port: get('port'),
    staticPodPath: get('staticPodPath'),
    fileCheckFrequencyMs: get('fileCheckFrequencyMs'),
    syncFrequencyMs: get('syncFrequencyMs'),
    nodeName: resolveNodeName(get('nodeName'), host),
    nodeIP: resolveNodeIP(get('nodeIP'), host),
    dockerEndpoint,
    podInfraContainerImage: get('podInfraContainerImage'),
    rootDir: get('rootDir'),
    verbosity: get('verbosity'),
    loggingFormat: get('loggingFormat'),
    podNetwork: get('podNetwork'),
    networkPlugin: get('networkPlugin'),
    cniBinDirs: Object.freeze([...get('cniBinDirs')]),
    cniConfDir: get('cniConfDir'),
    cniCacheDir: get('cniCacheDir'),
    containerUlimits: checked(get('containerUlimits'), parseContainerUlimits, '--container-ulimits'),
    containerLogMaxSize: checked(get('containerLogMaxSize'), checkContainerLogMaxSize, '--container-log-max-size'),
    containerLogMaxFiles,
    cgroupsPerQOS: get('cgroupsPerQOS'),
    cgroupsPerQOSRequired: 'cgroupsPerQOS' in flags || 'cgroupsPerQOS' in file.values,
    cgroupRoot,
    cgroupDriver: get('cgroupDriver'),
    podPidsLimit: get('podPidsLimit'),
    imageGCHighThresholdPercent,
    imageGCLowThresholdPercent,
    imageMinimumGCAgeMs: get('imageMinimumGCAgeMs'),
    imageMaximumGCAgeMs,
    imagePullCredentialsVerificationPolicy,
    preloadedImagesVerificationAllowlist: Object.freeze([...preloadedImagesVerificationAllowlist]),
    maxPerPodContainerCount: get('maxPerPodContainerCount'),
    maxContainerCount: get('maxContainerCount'),
    minimumGCAgeMs: get('minimumGCAgeMs'),
    containerGCPeriodMs: get('containerGCPeriodMs'),
    shutdownGracePeriodMs,
    shutdownGracePeriodCriticalPodsMs,
    evictionHard: Object.freeze({ ...get('evictionHard') }),
    evictionSoft: Object.freeze({ ...get('evictionSoft') }),
    evictionSoftGracePeriod: Object.freeze({ ...get('evictionSoftGracePeriod') }),
    evictionMinimumReclaim: Object.freeze({ ...get('evictionMinimumReclaim') }),
    evictionPressureTransitionPeriodMs: get('evictionPressureTransitionPeriodMs'),
    evictionMaxPodGracePeriod: get('evictionMaxPodGracePeriod'),
    streamingConnectionIdleTimeoutMs: get('streamingConnectionIdleTimeoutMs'),
    maxStreamingSessions: get('maxStreamingSessions'),
    maxPortForwardConnectionsPerSession: get('maxPortForwardConnectionsPerSession'),
    maxPortForwardConnections: get('maxPortForwardConnections'),
    maxContainerLogStreams: get('maxContainerLogStreams'),
    maxWatches: get('maxWatches'),
    maxWatchesPerUser: get('maxWatchesPerUser'),
    execDisconnectGracePeriodMs: get('execDisconnectGracePeriodMs'),
    certDir: get('certDir') === '' ? join(get('rootDir'), 'pki') : get('certDir'),
    clientCAFile: get('clientCAFile'),
    tokenAuthFile: get('tokenAuthFile'),
    kubeconfig: get('kubeconfig'),
    bootstrapKubeconfig: get('bootstrapKubeconfig'),
    rotateCertificates: get('rotateCertificates'),
    serverTLSBootstrap: get('serverTLSBootstrap'),
    registerNode: get('registerNode'),
    nodeLabels: checked(get('nodeLabels'), parseNodeLabels, '--node-labels'),
    registerWithTaints: checked(get('registerWithTaints'), parseTaints, '--register-with-taints'),
    nodeStatusUpdateFrequencyMs: get('nodeStatusUpdateFrequencyMs'),
    nodeStatusReportFrequencyMs: get('nodeStatusReportFrequencyMs'),
    nodeLeaseDurationSeconds: get('nodeLeaseDurationSeconds'),
    maxPods: get('maxPods'),
    authenticationTokenWebhookCacheTTLMs: get('authenticationTokenWebhookCacheTTLMs'),
    authorizationPolicyFile: get('authorizationPolicyFile'),
    authorizationWebhookCacheAuthorizedTTLMs: get('authorizationWebhookCacheAuthorizedTTLMs'),
    authorizationWebhookCacheUnauthorizedTTLMs: get('authorizationWebhookCacheUnauthorizedTTLMs'),
    readOnlyPort,
    enableDebuggingHandlers: get('enableDebuggingHandlers'),
    clusterDNS: Object.freeze([...clusterDNS]),
    clusterDomain: get('clusterDomain'),
    resolvConf: get('resolvConf'),
    ...security,
  };
  const warnings = [...file.warnings];
  if (config.insecureDev) {
    warnings.push('INSECURE: --insecure-dev serves plain HTTP with anonymous requests allowed (AlwaysAllow): any local user of this machine can read every pod and exec into every container. For development only; drop the flag for HTTPS with a generated admin kubeconfig');
  }
  if (config.kubeconfig !== '' && config.clientCAFile === '') {
    warnings.push('cluster mode without --client-ca-file: the apiserver\'s client certificate cannot be authenticated, so kubectl logs/exec/port-forward through the apiserver will get 401');
  }
  return { config: Object.freeze(config), warnings };
}

/** Returns `text` after checking it parses with `parse`; a failure is a ConfigError naming `flag`. */
function checked(text: string, parse: (text: string) => unknown, flag: string): string {
  try {
    parse(text);
  } catch (err) {
    throw new ConfigError(`invalid argument ${quote(text)} for "${flag}" flag: ${(err as Error).message}`);
  }
  return text;
}

/** Like the kubelet's GetHostname: override or host name, trimmed and lower-cased. */
function resolveNodeName(override: string, host: () => HostInfo): string {
  const fromFlag = override.trim() !== '';
  const name = (fromFlag ? override : host().hostname).trim().toLowerCase();
  const source = fromFlag ? '--hostname-override' : 'the host name; set --hostname-override';
  if (name === '') throw new ConfigError(`empty node name is invalid (from ${source})`);
  const why = dns1123SubdomainError(name);
  if (why !== undefined) throw new ConfigError(`invalid node name ${quote(name)} (from ${source}): ${why}`);
  return name;
}

function resolveNodeIP(given: string, host: () => HostInfo): string {
  if (given === '') return firstExternalIPv4(host().interfaces) ?? '127.0.0.1';
  if (isIP(given) === 0) throw new ConfigError(`invalid argument ${quote(given)} for "--node-ip" flag: not a valid IP address`);
  if (isUnspecifiedAddress(given)) {
    throw new ConfigError(`invalid argument ${quote(given)} for "--node-ip" flag: must not be an unspecified address`);
  }
  return given;
}
