import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { buildConfig, configDefault, ConfigError, type Config, type HostInfo } from '../../../src/config/index.js';

const HOST: HostInfo = {
  hostname: 'Worker-1.Example.COM',
  interfaces: {
    lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true }],
    eth0: [
      { address: 'fe80::1', family: 'IPv6', internal: false },
      { address: '192.168.1.20', family: 'IPv4', internal: false },
    ],
    eth1: [{ address: '10.0.0.7', family: 'IPv4', internal: false }],
  },
};

function build(argv: string[], env: NodeJS.ProcessEnv = {}, host: HostInfo = HOST): Config {
  const r = buildConfig(argv, env, host);
  if ('help' in r) throw new Error('unexpected help');
  return r.config;
}

function fails(t: Test, fn: () => unknown, message: string | RegExp): void {
  const err = t.throws(fn, String(message));
  t.ok(err instanceof ConfigError, 'ConfigError');
  if (!(err instanceof ConfigError)) return;
  t.equal(err.exitCode, 2);
  if (typeof message === 'string') t.equal(err.message, message);
  else t.match(err.message, message);
  t.notMatch(err.message, /\n/);
}

const FILE_HEAD = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';

t.test('defaults', async (t) => {
  t.same(build([]), {
    address: '127.0.0.1',
    port: 10250,
    staticPodPath: '',
    fileCheckFrequencyMs: 20_000,
    syncFrequencyMs: 60_000,
    nodeName: 'worker-1.example.com',
    nodeIP: '192.168.1.20',
    dockerEndpoint: 'unix:///var/run/docker.sock',
    podInfraContainerImage: 'registry.k8s.io/pause:3.10',
    rootDir: '/var/lib/nodelet',
    verbosity: 2,
    loggingFormat: 'text',
    podNetwork: 'none',
    networkPlugin: '',
    cniBinDirs: ['/opt/cni/bin', '/usr/lib/cni'],
    cniConfDir: '/etc/cni/net.d',
    cniCacheDir: '/var/lib/cni/cache',
    containerUlimits: 'auto',
    containerLogMaxSize: '10Mi',
    containerLogMaxFiles: 5,
    cgroupsPerQOS: true,
    cgroupsPerQOSRequired: false,
    cgroupRoot: '/',
    cgroupDriver: 'cgroupfs',
    podPidsLimit: -1,
    imageGCHighThresholdPercent: 85,
    imageGCLowThresholdPercent: 80,
    imageMinimumGCAgeMs: 120_000,
    imageMaximumGCAgeMs: 0,
    imagePullCredentialsVerificationPolicy: 'NeverVerifyPreloadedImages',
    preloadedImagesVerificationAllowlist: [],
    maxPerPodContainerCount: 1,
    maxContainerCount: -1,
    minimumGCAgeMs: 0,
    containerGCPeriodMs: 60_000,
    shutdownGracePeriodMs: 0,
    shutdownGracePeriodCriticalPodsMs: 0,
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%', 'imagefs.inodesFree': '5%' },
    evictionSoft: {},
    evictionSoftGracePeriod: {},
    evictionMinimumReclaim: {},
    evictionPressureTransitionPeriodMs: 300_000,
    evictionMaxPodGracePeriod: 0,
    streamingConnectionIdleTimeoutMs: 4 * 3600_000,
    maxStreamingSessions: 1000,
    maxPortForwardConnectionsPerSession: 128,
    maxPortForwardConnections: 256,
    maxContainerLogStreams: 256,
    maxWatches: 1000,
    maxWatchesPerUser: 100,
    execDisconnectGracePeriodMs: 10_000,
    tlsCertFile: '',
    tlsPrivateKeyFile: '',
    certDir: '/var/lib/nodelet/pki',
    clientCAFile: '',
    tokenAuthFile: '',
    anonymousAuth: false,
    insecureDev: false,
    generatedCredentials: true,
    kubeconfig: '',
    bootstrapKubeconfig: '',
    rotateCertificates: false,
    serverTLSBootstrap: false,
    registerNode: true,
    nodeLabels: '',
    registerWithTaints: '',
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 300_000,
    nodeLeaseDurationSeconds: 40,
    maxPods: 110,
    authenticationTokenWebhook: false,
    authenticationTokenWebhookCacheTTLMs: 120_000,
    authorizationMode: 'AlwaysAllow',
    authorizationPolicyFile: '',
    authorizationWebhookCacheAuthorizedTTLMs: 300_000,
    authorizationWebhookCacheUnauthorizedTTLMs: 30_000,
    readOnlyPort: 0,
    enableDebuggingHandlers: true,
    clusterDNS: [],
    clusterDomain: '',
    resolvConf: '/etc/resolv.conf',
  });
});

t.test('streaming timeouts may be 0 (off); polling periods may not', async (t) => {
  t.equal(build(['--streaming-connection-idle-timeout=0']).streamingConnectionIdleTimeoutMs, 0);
  t.equal(build(['--exec-disconnect-grace-period', '0s']).execDisconnectGracePeriodMs, 0);
  t.throws(() => build(['--file-check-frequency=0']), /greater than zero/);
});

t.test('result is frozen and warnings empty without a file', async (t) => {
  const r = buildConfig([], {}, HOST);
  if ('help' in r) throw new Error('unexpected help');
  t.ok(Object.isFrozen(r.config));
  t.same(r.warnings, []);
});

t.test('--help returns usage instead of a config', async (t) => {
  const r = buildConfig(['--port=1', '-h'], {}, HOST);
  t.ok('help' in r);
  if ('help' in r) t.match(r.help, /Usage:/);
  t.notOk('help' in buildConfig(['--help=false'], {}, HOST));
  fails(t, () => buildConfig(['--help', '--nope'], {}, HOST), 'unknown flag: --nope');
});

t.test('--container-ulimits: auto, none or name=soft[:hard] pairs, checked at start-up', async (t) => {
  t.equal(build(['--container-ulimits=none']).containerUlimits, 'none');
  t.equal(build(['--container-ulimits', 'nofile=1024:4096,nproc=unlimited']).containerUlimits, 'nofile=1024:4096,nproc=unlimited');
  fails(t, () => build(['--container-ulimits=nofile=4096:1024']), /invalid argument "nofile=4096:1024" for "--container-ulimits" flag: nofile: soft limit 4096 is above hard limit 1024/);
  fails(t, () => build(['--container-ulimits=files=1']), /unknown ulimit "files"/);
  fails(t, () => build(['--container-ulimits=nofile=many']), /nofile soft limit "many" is not a non-negative integer/);
  fails(t, () => build(['--container-ulimits=nofile=1,nofile=2']), /given twice/);
  fails(t, () => build(['--container-ulimits=']), /--container-ulimits/);
});

t.test('container log rotation: a quantity and at least 2 files, from flags or the config file', async (t) => {
  const c = build(['--container-log-max-size=1Mi', '--container-log-max-files', '3']);
  t.same([c.containerLogMaxSize, c.containerLogMaxFiles], ['1Mi', 3]);
  fails(t, () => build(['--container-log-max-size=ten megs']), 'invalid argument "ten megs" for "--container-log-max-size" flag: not a quantity (e.g. 10Mi)');
  fails(t, () => build(['--container-log-max-size=-1Mi']), /not a quantity/);
  fails(t, () => build(['--container-log-max-files=1']), /invalid container log max files 1 \(from --container-log-max-files\): must be at least 2/);
});

t.test('pod cgroups: cgroupsPerQOS required once given, an absolute cgroupRoot, systemd refused, podPidsLimit from -1', async (t) => {
  const c = build(['--cgroups-per-qos=false', '--cgroup-root=/nodes/n1', '--pod-max-pids=64']);
  t.same([c.cgroupsPerQOS, c.cgroupsPerQOSRequired, c.cgroupRoot, c.podPidsLimit], [false, true, '/nodes/n1', 64]);
  t.same([build(['--cgroups-per-qos']).cgroupsPerQOSRequired, build([]).cgroupsPerQOSRequired], [true, false], 'given (even as the default) means required');
  const dir = t.testdir();
  const path = join(dir, 'kubelet.yaml');
  writeFileSync(path, FILE_HEAD + 'cgroupsPerQOS: true\ncgroupRoot: /k\npodPidsLimit: 100\n');
  const f = build([`--config=${path}`]);
  t.same([f.cgroupsPerQOSRequired, f.cgroupRoot, f.podPidsLimit], [true, '/k', 100], 'from the config file');
  fails(t, () => build(['--cgroup-root=kubepods']), /invalid cgroup root "kubepods" \(from --cgroup-root\): must be an absolute path/);
  fails(t, () => build(['--cgroup-root=/a/../b']), /without "\." or "\.\." elements/);
  fails(t, () => build(['--cgroup-driver=systemd']), /cgroup driver "systemd" \(from --cgroup-driver\) is not implemented for pod cgroups/);
  t.equal(build(['--cgroup-driver=systemd', '--cgroups-per-qos=false']).cgroupDriver, 'systemd', 'accepted with pod cgroups off');
  fails(t, () => build(['--pod-max-pids=-2']), /must be at least -1/);
});

t.test('image GC: thresholds between 0 and 100, low below high, maximum age above minimum', async (t) => {
  const c = build(['--image-gc-high-threshold=90', '--image-gc-low-threshold=50', '--minimum-image-ttl-duration=30s', '--image-maximum-gc-age=1h']);
  t.same([c.imageGCHighThresholdPercent, c.imageGCLowThresholdPercent, c.imageMinimumGCAgeMs, c.imageMaximumGCAgeMs], [90, 50, 30_000, 3600_000]);
  const dir = t.testdir();
  const path = join(dir, 'kubelet.yaml');
  writeFileSync(path, FILE_HEAD + 'imageGCHighThresholdPercent: 100\nimageMinimumGCAge: 5m\nimageMaximumGCAge: 168h\n');
  const f = build([`--config=${path}`]);
  t.same([f.imageGCHighThresholdPercent, f.imageMinimumGCAgeMs, f.imageMaximumGCAgeMs], [100, 300_000, 168 * 3600_000], 'KubeletConfiguration names');
  fails(t, () => build(['--image-gc-high-threshold=101']), /invalid image GC high threshold 101 \(from --image-gc-high-threshold\): must be between 0 and 100/);
  fails(t, () => build(['--image-gc-low-threshold=85']), /invalid image GC low threshold 85 \(from --image-gc-low-threshold\): must be less than the high threshold 85/);
  fails(t, () => build(['--image-maximum-gc-age=1m']), /invalid image maximum GC age \(from --image-maximum-gc-age\): must be greater than the minimum GC age/);
});

t.test('container GC: the kubelet\'s flags and defaults (1 dead instance per container, no global limit, no minimum age), -1 the least', async (t) => {
  const d = build([]);
  t.same([d.maxPerPodContainerCount, d.maxContainerCount, d.minimumGCAgeMs, d.containerGCPeriodMs], [1, -1, 0, 60_000]);
  const c = build(['--maximum-dead-containers-per-container=3', '--maximum-dead-containers=100', '--minimum-container-ttl-duration=1m30s', '--container-gc-period=2s']);
  t.same([c.maxPerPodContainerCount, c.maxContainerCount, c.minimumGCAgeMs, c.containerGCPeriodMs], [3, 100, 90_000, 2000]);
  t.same([build(['--maximum-dead-containers-per-container=-1']).maxPerPodContainerCount, build(['--maximum-dead-containers-per-container=0']).maxPerPodContainerCount], [-1, 0]);
  fails(t, () => build(['--maximum-dead-containers-per-container=-2']), /invalid argument "-2" for "--maximum-dead-containers-per-container" flag: must be at least -1/);
  fails(t, () => build(['--maximum-dead-containers=-5']), /invalid argument "-5" for "--maximum-dead-containers" flag: must be at least -1/);
  fails(t, () => build(['--minimum-container-ttl-duration=-1s']), /invalid argument "-1s" for "--minimum-container-ttl-duration" flag: must not be negative/);
  fails(t, () => build(['--container-gc-period=0s']), /invalid argument "0s" for "--container-gc-period" flag: must be greater than zero/);
});

t.test('graceful node shutdown: whole seconds, the critical part no longer than the whole', async (t) => {
  const c = build(['--shutdown-grace-period=30s', '--shutdown-grace-period-critical-pods=10s']);
  t.same([c.shutdownGracePeriodMs, c.shutdownGracePeriodCriticalPodsMs], [30_000, 10_000]);
  fails(t, () => build(['--shutdown-grace-period=5s', '--shutdown-grace-period-critical-pods=10s']), /must not be greater than the shutdown grace period/);
  fails(t, () => build(['--shutdown-grace-period=1500ms']), /must be whole seconds/);
  const { shutdownGroups } = await import('../../../src/nodelet.js');
  t.same(shutdownGroups(30_000, 10_000), [{ priority: 0, graceSeconds: 20 }, { priority: 2_000_000_000, graceSeconds: 10 }], 'migrateConfig\'s two groups');
  t.same(shutdownGroups(0, 0), [], 'off');
});

t.test('eviction: map flags as cliflag\'s (first use replaces the default, later ones add), a file mapping replaces it whole', async (t) => {
  const c = build(['--eviction-hard=memory.available<1Gi, nodefs.available < 5%', '--eviction-hard', 'pid.available<10%,', '--eviction-soft-grace-period=memory.available=1m30s', '--eviction-pressure-transition-period=30s', '--eviction-max-pod-grace-period=-1']);
  t.same(c.evictionHard, { 'memory.available': '1Gi', 'nodefs.available': '5%', 'pid.available': '10%' }, 'defaults replaced, pairs trimmed, a second use adds');
  t.same([c.evictionSoftGracePeriod, c.evictionPressureTransitionPeriodMs, c.evictionMaxPodGracePeriod], [{ 'memory.available': '1m30s' }, 30_000, -1]);
  t.same(build(['--eviction-hard=']).evictionHard, {}, 'an empty value turns every hard threshold off');
  fails(t, () => build(['--eviction-hard=memory.available=1Gi']), 'invalid argument "memory.available=1Gi" for "--eviction-hard" flag: malformed pair, expect string<string');
  fails(t, () => build(['--eviction-minimum-reclaim=memory.available<1Gi']), 'invalid argument "memory.available<1Gi" for "--eviction-minimum-reclaim" flag: malformed pair, expect string=string');
  const dir = t.testdir();
  const path = join(dir, 'kubelet.yaml');
  writeFileSync(path, FILE_HEAD + 'evictionHard:\n  memory.available: "200Mi"\nevictionSoft:\n  nodefs.available: "15%"\nevictionSoftGracePeriod:\n  nodefs.available: "2m"\nevictionMinimumReclaim:\n  nodefs.available: "1Gi"\nevictionPressureTransitionPeriod: 1m\n');
  const f = build([`--config=${path}`]);
  t.same([f.evictionHard, f.evictionSoft, f.evictionSoftGracePeriod, f.evictionMinimumReclaim, f.evictionPressureTransitionPeriodMs],
    [{ 'memory.available': '200Mi' }, { 'nodefs.available': '15%' }, { 'nodefs.available': '2m' }, { 'nodefs.available': '1Gi' }, 60_000], 'KubeletConfiguration names; the file\'s evictionHard replaces the default');
  t.same(build([`--config=${path}`, '--eviction-hard=imagefs.available<20%']).evictionHard, { 'imagefs.available': '20%' }, 'a flag replaces the file\'s map');
  writeFileSync(path, FILE_HEAD + 'evictionHard:\n  memory.available: 100\n');
  fails(t, () => build([`--config=${path}`]), /invalid value for evictionHard: expected a string for "memory.available", got number 100/);
  writeFileSync(path, FILE_HEAD + 'evictionHard: ["memory.available<1Gi"]\n');
  fails(t, () => build([`--config=${path}`]), /invalid value for evictionHard: expected a mapping of strings, got list/);
});

t.test('image credential verification: the kubelet\'s policy names and default, the allowlist only with NeverVerifyAllowlistedImages', async (t) => {
  t.equal(build([]).imagePullCredentialsVerificationPolicy, 'NeverVerifyPreloadedImages');
  const dir = t.testdir();
  const path = join(dir, 'kubelet.yaml');
  writeFileSync(path, FILE_HEAD + 'imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist:\n- reg.example/base\n- mirror.example/team/*\n');
  const f = build([`--config=${path}`]);
  t.same([f.imagePullCredentialsVerificationPolicy, f.preloadedImagesVerificationAllowlist], ['NeverVerifyAllowlistedImages', ['reg.example/base', 'mirror.example/team/*']]);
  t.equal(build(['--image-pull-credentials-verification-policy=AlwaysVerify']).imagePullCredentialsVerificationPolicy, 'AlwaysVerify');
  fails(t, () => build(['--image-pull-credentials-verification-policy=Sometimes']), /--image-pull-credentials-verification-policy/);
  fails(t, () => build(['--preloaded-images-verification-allowlist=reg.example/base']), /can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not "NeverVerifyAllowlistedImages"/);
  fails(t, () => build(['--image-pull-credentials-verification-policy=NeverVerifyAllowlistedImages', '--preloaded-images-verification-allowlist=reg.example/base:1']), /invalid image pattern in `preloadedImagesVerificationAllowlist`: neither tag nor digest is accepted in an image reference: reg.example\/base:1/);
});

t.test('DOCKER_HOST is the default endpoint; --docker-endpoint overrides it', async (t) => {
  t.equal(build([], { DOCKER_HOST: 'tcp://127.0.0.1:2375' }).dockerEndpoint, 'tcp://127.0.0.1:2375');
  t.equal(build([], { DOCKER_HOST: '' }).dockerEndpoint, 'unix:///var/run/docker.sock');
  t.equal(build(['--docker-endpoint=unix:///d.sock'], { DOCKER_HOST: 'tcp://h:1' }).dockerEndpoint, 'unix:///d.sock');
  fails(t, () => build([], { DOCKER_HOST: '/var/run/docker.sock' }), /invalid docker endpoint "\/var\/run\/docker\.sock" \(from \$DOCKER_HOST\)/);
  fails(t, () => build(['--docker-endpoint=docker.sock']), /\(from --docker-endpoint\)/);
});

t.test('precedence: defaults <- config file <- flags given explicitly', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'kubelet.yaml');
  writeFileSync(
    path,
    FILE_HEAD + 'port: 10260\nsyncFrequency: 30s\nstaticPodPath: /etc/m\nlogging:\n  format: json\n  verbosity: 5\ncpuManagerPolicy: static\n',
  );
  const fromFile = buildConfig([`--config=${path}`], {}, HOST);
  if ('help' in fromFile) throw new Error('unexpected help');
  t.equal(fromFile.config.port, 10260, 'file beats default');
  t.equal(fromFile.config.syncFrequencyMs, 30_000);
  t.equal(fromFile.config.staticPodPath, '/etc/m');
  t.equal(fromFile.config.loggingFormat, 'json');
  t.equal(fromFile.config.verbosity, 5);
  t.equal(fromFile.config.fileCheckFrequencyMs, 20_000, 'default kept where the file is silent');
  t.equal(fromFile.warnings.length, 1);
  t.match(fromFile.warnings[0], /cpuManagerPolicy/);

  const both = build(['--port', '10270', '--config', path, '-v=1', '--logging-format=text', '--pod-manifest-path='], {});
  t.equal(both.port, 10270, 'flag beats file regardless of order');
  t.equal(both.verbosity, 1);
  t.equal(both.loggingFormat, 'text');
  t.equal(both.staticPodPath, '', 'an explicitly empty flag still overrides');
  t.equal(both.syncFrequencyMs, 30_000, 'file value kept where no flag is given');
});

t.test('config file errors surface as ConfigError', async (t) => {
  const missing = join(t.testdir(), 'nope.yaml');
  fails(t, () => build([`--config=${missing}`]), /failed to load kubelet config file ".*nope\.yaml"/);
});

t.test('non-loopback --address needs authentication and a non-AlwaysAllow authorizer; loopback forms are accepted', async (t) => {
  for (const address of ['127.0.0.1', '127.1.2.3', '::1', '0:0:0:0:0:0:0:1', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1']) {
    t.equal(build([`--address=${address}`]).address, address, address);
  }
  for (const address of ['0.0.0.0', '::', '10.0.0.1', '192.168.1.20', 'fe80::1']) {
    fails(t, () => build(['--address', address]), new RegExp(`^refusing --authorization-mode=AlwaysAllow on non-loopback address "${address.replace(/\./g, '\\.')}"`));
    fails(t, () => build(['--address', address, '--authorization-mode=AlwaysAllow', '--token-auth-file=/t']), /refusing --authorization-mode=AlwaysAllow/);
    fails(t, () => build(['--address', address, '--authorization-policy-file=/p']), `serving on non-loopback address "${address}" needs --client-ca-file, --token-auth-file or --authentication-token-webhook`);
    const ok = build(['--address', address, '--authorization-policy-file=/p', '--token-auth-file=/t']);
    t.equal(ok.authorizationMode, 'Policy', 'a policy file selects Policy mode');
    t.equal(ok.anonymousAuth, false, 'anonymous stays off');
  }
  fails(t, () => build(['--address=example.com']), 'invalid address "example.com" (from --address): not a valid IP address');
});

t.test('a non-loopback address from the config file is refused too', async (t) => {
  const path = join(t.testdir(), 'k.yaml');
  writeFileSync(path, FILE_HEAD + 'address: 0.0.0.0\n');
  fails(t, () => build([`--config=${path}`]), /non-loopback address "0\.0\.0\.0"/);
  t.equal(build([`--config=${path}`, '--address=127.0.0.1']).address, '127.0.0.1', 'a flag can fix it');
});

t.test('security posture: generated credentials by default, --insecure-dev only when asked for', async (t) => {
  const secure = build([]);
  t.same(
    [secure.generatedCredentials, secure.insecureDev, secure.anonymousAuth, secure.authorizationMode],
    [true, false, false, 'AlwaysAllow'],
    'no certificate, no authenticator: nodelet generates its CA, serving certificate and admin token; anonymous is refused',
  );
  t.equal(build(['--anonymous-auth=true']).anonymousAuth, true, 'an explicit --anonymous-auth still wins');
  t.equal(build(['--anonymous-auth=true']).generatedCredentials, true, 'anonymous auth is no authenticator: the admin token is still made');
  t.equal(build(['--authorization-policy-file=/p']).generatedCredentials, true, 'a policy file alone: the generated admin is allowed in front of it');
  t.equal(build(['--address=::1', '--port=1']).generatedCredentials, true);
  for (const given of [['--tls-cert-file=/c', '--tls-private-key-file=/k'], ['--token-auth-file=/t'], ['--client-ca-file=/ca'], ['--kubeconfig=/kc'], ['--insecure-dev']]) {
    t.equal(build(given).generatedCredentials, false, `nothing generated with ${given.join(' ')}`);
  }
  const tlsOnly = build(['--tls-cert-file=/c', '--tls-private-key-file=/k']);
  t.equal(tlsOnly.anonymousAuth, true, 'a serving certificate alone keeps the loopback development posture, over TLS, as before');

  const dev = build(['--insecure-dev']);
  t.same([dev.insecureDev, dev.anonymousAuth, dev.authorizationMode], [true, true, 'AlwaysAllow'], '--insecure-dev: anonymous + AlwaysAllow (plain HTTP)');
  t.equal(build(['--insecure-dev', '--anonymous-auth=false']).anonymousAuth, false, 'an explicit --anonymous-auth wins');
  t.equal(build(['--insecure-dev', '--authorization-policy-file=/p']).anonymousAuth, false, 'Policy mode: anonymous off by default');
  const r = buildConfig(['--insecure-dev'], {}, HOST);
  if ('help' in r) throw new Error('unexpected help');
  t.equal(r.warnings.length, 1, 'a warning to log at start');
  t.match(r.warnings[0], /^INSECURE: --insecure-dev serves plain HTTP with anonymous requests allowed/);
  const quiet = buildConfig([], {}, HOST);
  t.same('help' in quiet ? undefined : quiet.warnings, [], 'no warning on the secure default');

  fails(t, () => build(['--insecure-dev', '--address=0.0.0.0']), '--insecure-dev (from --insecure-dev) serves plain HTTP without authentication and is only allowed on a loopback address, not "0.0.0.0"');
  fails(t, () => build(['--insecure-dev', '--address=10.0.0.1', '--authorization-policy-file=/p', '--token-auth-file=/t']), /only allowed on a loopback address, not "10\.0\.0\.1"/);
  fails(
    t,
    () => build(['--insecure-dev', '--token-auth-file=/t', '--tls-cert-file=/c', '--tls-private-key-file=/k']),
    '--insecure-dev (plain HTTP, anonymous requests) cannot be combined with --tls-cert-file, --token-auth-file; drop --insecure-dev to serve HTTPS with those',
  );
  fails(t, () => build(['--insecure-dev', '--client-ca-file=/ca']), /cannot be combined with --client-ca-file;/);
  fails(t, () => build(['--insecure-dev', '--kubeconfig=/kc']), /cannot be combined with --kubeconfig;/);
  fails(t, () => build(['--insecure-dev=maybe']), /invalid argument "maybe" for "--insecure-dev" flag/);
});

t.test('security posture: authentication with given credentials', async (t) => {
  t.equal(build(['--anonymous-auth=false']).anonymousAuth, false, 'an explicit --anonymous-auth wins');
  t.equal(build(['--token-auth-file=/t']).anonymousAuth, false, 'an authenticator turns anonymous off');
  t.equal(build(['--client-ca-file=/ca']).anonymousAuth, false);
  t.equal(build(['--token-auth-file=/t', '--anonymous-auth']).anonymousAuth, true);
  t.equal(build(['--authorization-policy-file=/p']).anonymousAuth, false, 'Policy mode: anonymous off by default');
  t.equal(build(['--authorization-mode=Policy', '--authorization-policy-file=/p']).authorizationMode, 'Policy');
  t.equal(build(['--cert-dir=/c']).certDir, '/c');
  t.equal(build(['--root-dir=/r']).certDir, '/r/pki', 'cert dir defaults to <root-dir>/pki');
  fails(t, () => build(['--authorization-mode=Policy']), '--authorization-mode=Policy needs --authorization-policy-file');
  fails(t, () => build(['--authorization-mode=AlwaysAllow', '--authorization-policy-file=/p']), /only used with --authorization-mode=Policy/);
  fails(t, () => build(['--authorization-mode=Webhook']), /^--authorization-mode=Webhook \(from --authorization-mode\) needs the apiserver \(--kubeconfig, cluster mode\)/);
  fails(t, () => build(['--authentication-token-webhook']), /^--authentication-token-webhook .*needs the apiserver/);
  const hooked = build(['--kubeconfig=/kc', '--authentication-token-webhook', '--authorization-mode=Webhook']);
  t.same(
    [hooked.kubeconfig, hooked.authenticationTokenWebhook, hooked.authorizationMode, hooked.anonymousAuth],
    ['/kc', true, 'Webhook', false],
    'with --kubeconfig both webhooks are accepted; the token webhook is an authenticator (anonymous off)',
  );
  t.same(
    [hooked.authenticationTokenWebhookCacheTTLMs, hooked.authorizationWebhookCacheAuthorizedTTLMs, hooked.authorizationWebhookCacheUnauthorizedTTLMs],
    [120_000, 300_000, 30_000],
    'kubelet cache TTL defaults: 2m, 5m, 30s',
  );
  const ttl = build(['--kubeconfig=/kc', '--authorization-mode=Webhook', '--authorization-webhook-cache-authorized-ttl=1m', '--authorization-webhook-cache-unauthorized-ttl=0', '--authentication-token-webhook-cache-ttl=10s']);
  t.same([ttl.authorizationWebhookCacheAuthorizedTTLMs, ttl.authorizationWebhookCacheUnauthorizedTTLMs, ttl.authenticationTokenWebhookCacheTTLMs], [60_000, 0, 10_000]);
  t.equal(build(['--address=10.0.0.1', '--kubeconfig=/kc', '--authentication-token-webhook', '--authorization-mode=Webhook']).authorizationMode, 'Webhook', 'webhooks are enough for a non-loopback address');
  const cluster = buildConfig(['--kubeconfig=/kc'], {}, HOST);
  if ('help' in cluster) throw new Error('unexpected help');
  t.same(
    [cluster.config.authenticationTokenWebhook, cluster.config.authorizationMode, cluster.config.anonymousAuth],
    [true, 'Webhook', false],
    'cluster mode defaults to the kubelet\'s recommended posture: both webhooks, no anonymous requests',
  );
  t.match(cluster.warnings, [/cluster mode without --client-ca-file: .* will get 401/]);
  const explicit = build(['--kubeconfig=/kc', '--client-ca-file=/ca', '--authentication-token-webhook=false', '--authorization-mode=AlwaysAllow']);
  t.same([explicit.authenticationTokenWebhook, explicit.authorizationMode], [false, 'AlwaysAllow'], 'explicit flags win over the cluster-mode defaults');
  t.same(buildConfig(['--kubeconfig=/kc', '--client-ca-file=/ca'], {}, HOST), { config: build(['--kubeconfig=/kc', '--client-ca-file=/ca']), warnings: [] }, 'no warning with a client CA');
  fails(t, () => build(['--authorization-mode=Nope']), /supported values: "AlwaysAllow", "Webhook", "Policy"/);
  fails(t, () => build(['--tls-cert-file=/c']), '--tls-cert-file and --tls-private-key-file must be given together');
  t.equal(build(['--tls-cert-file=/c', '--tls-private-key-file=/k']).tlsCertFile, '/c');
});

t.test('security fields from the config file', async (t) => {
  const path = join(t.testdir(), 'k.yaml');
  writeFileSync(
    path,
    FILE_HEAD +
      'tlsCertFile: /c\ntlsPrivateKeyFile: /k\nreadOnlyPort: 10255\nenableDebuggingHandlers: false\n' +
      'authentication:\n  x509:\n    clientCAFile: /ca\n  anonymous:\n    enabled: false\nauthorization:\n  mode: AlwaysAllow\n',
  );
  const c = build([`--config=${path}`]);
  t.same(
    [c.tlsCertFile, c.tlsPrivateKeyFile, c.readOnlyPort, c.enableDebuggingHandlers, c.clientCAFile, c.anonymousAuth, c.authorizationMode],
    ['/c', '/k', 10255, false, '/ca', false, 'AlwaysAllow'],
  );
  writeFileSync(path, FILE_HEAD + 'authorization:\n  mode: Webhook\n');
  fails(t, () => build([`--config=${path}`]), /Webhook \(from authorization\.mode in ".*k\.yaml"\) needs the apiserver/);
  writeFileSync(
    path,
    FILE_HEAD +
      'authentication:\n  webhook:\n    enabled: true\n    cacheTTL: 1m\nauthorization:\n  mode: Webhook\n  webhook:\n    cacheAuthorizedTTL: 2m\n    cacheUnauthorizedTTL: 5s\n',
  );
  const w = build([`--config=${path}`, '--kubeconfig=/kc']);
  t.same(
    [w.authenticationTokenWebhook, w.authenticationTokenWebhookCacheTTLMs, w.authorizationMode, w.authorizationWebhookCacheAuthorizedTTLMs, w.authorizationWebhookCacheUnauthorizedTTLMs],
    [true, 60_000, 'Webhook', 120_000, 5_000],
  );
});

t.test('--read-only-port: 0 (off) to 65535, not the main port', async (t) => {
  t.equal(build([]).readOnlyPort, 0);
  t.equal(build(['--read-only-port=10255']).readOnlyPort, 10255);
  fails(t, () => build(['--read-only-port=70000']), /invalid read-only port 70000 \(from --read-only-port\)/);
  fails(t, () => build(['--read-only-port=10250']), '--read-only-port 10250 is the same as --port');
  t.equal(build(['--enable-debugging-handlers=false']).enableDebuggingHandlers, false);
});

t.test('nodeName: override else lower-cased host name, must be DNS-1123', async (t) => {
  t.equal(build([]).nodeName, 'worker-1.example.com');
  t.equal(build(['--hostname-override=node-a']).nodeName, 'node-a');
  t.equal(build(['--hostname-override=Node-A ']).nodeName, 'node-a', 'trimmed and lower-cased like the kubelet');
  fails(t, () => build(['--hostname-override=bad_name']), /^invalid node name "bad_name" \(from --hostname-override\): a lowercase RFC 1123 subdomain/);
  fails(t, () => build([], {}, { ...HOST, hostname: 'my_laptop' }), /^invalid node name "my_laptop" \(from the host name; set --hostname-override\)/);
  fails(t, () => build([], {}, { ...HOST, hostname: '' }), /empty node name/);
  fails(t, () => build([`--hostname-override=${'a'.repeat(254)}`]), /no more than 253 characters/);
  t.equal(build([`--hostname-override=${'a.'.repeat(126)}a`]).nodeName.length, 253);
});

t.test('nodeIP: --node-ip else first non-internal IPv4 else 127.0.0.1', async (t) => {
  t.equal(build([]).nodeIP, '192.168.1.20');
  t.equal(build(['--node-ip=10.9.9.9']).nodeIP, '10.9.9.9');
  t.equal(build(['--node-ip=fd00::5']).nodeIP, 'fd00::5');
  const onlyLoopback: HostInfo = { hostname: 'h', interfaces: { lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true }], eth0: [{ address: 'fd00::1', family: 'IPv6', internal: false }] } };
  t.equal(build([], {}, onlyLoopback).nodeIP, '127.0.0.1');
  t.equal(build([], {}, { hostname: 'h', interfaces: {} }).nodeIP, '127.0.0.1');
  fails(t, () => build(['--node-ip=1.2.3']), 'invalid argument "1.2.3" for "--node-ip" flag: not a valid IP address');
  fails(t, () => build(['--node-ip=0.0.0.0']), /must not be an unspecified address/);
});

t.test('host info is only consulted when needed', async (t) => {
  const explode: HostInfo = {
    get hostname(): string {
      throw new Error('hostname read');
    },
    get interfaces(): HostInfo['interfaces'] {
      throw new Error('interfaces read');
    },
  };
  t.same(build(['--hostname-override=n', '--node-ip=10.0.0.1'], {}, explode).nodeName, 'n');
});

t.test('without injected host info the real host is used', async (t) => {
  const r = buildConfig(['--hostname-override=n'], {});
  if ('help' in r) throw new Error('unexpected help');
  t.ok(r.config.nodeIP.length > 0);
});

t.test('DNS: --cluster-dns (pflag StringSlice), --cluster-domain, --resolv-conf, and their config fields', async (t) => {
  t.same(build(['--cluster-dns=10.96.0.10']).clusterDNS, ['10.96.0.10']);
  t.same(build(['--cluster-dns=10.96.0.10,fd00::a']).clusterDNS, ['10.96.0.10', 'fd00::a']);
  t.same(build(['--cluster-dns', '10.0.0.1', '--cluster-dns=10.0.0.2']).clusterDNS, ['10.0.0.1', '10.0.0.2'], 'a repeated flag appends');
  t.same(build(['--cluster-dns=']).clusterDNS, [], 'empty: none');
  t.ok(Object.isFrozen(build(['--cluster-dns=10.0.0.1']).clusterDNS));
  fails(t, () => build(['--cluster-dns=10.0.0.1,dns.example']), 'invalid cluster DNS address "dns.example" (from --cluster-dns): not a valid IP address');
  fails(t, () => build(['--cluster-dns="10.0.0.1']), /^invalid argument .* for "--cluster-dns" flag: unterminated quoted field$/);
  t.equal(build(['--cluster-domain=cluster.local']).clusterDomain, 'cluster.local');
  t.equal(build(['--resolv-conf=']).resolvConf, '', 'empty: no host resolver file');
  t.equal(build(['--resolv-conf=/run/systemd/resolve/resolv.conf']).resolvConf, '/run/systemd/resolve/resolv.conf');

  const path = join(t.testdir(), 'k.yaml');
  writeFileSync(path, FILE_HEAD + 'clusterDNS:\n  - 10.96.0.10\n  - 10.96.0.11\nclusterDomain: cluster.local\nresolvConf: ""\n');
  const c = build([`--config=${path}`]);
  t.same([c.clusterDNS, c.clusterDomain, c.resolvConf], [['10.96.0.10', '10.96.0.11'], 'cluster.local', '']);
  t.same(build([`--config=${path}`, '--cluster-dns=10.0.0.9']).clusterDNS, ['10.0.0.9'], 'a flag replaces the file\'s list');
  writeFileSync(path, FILE_HEAD + 'clusterDNS: 10.96.0.10\n');
  fails(t, () => build([`--config=${path}`]), /invalid value for clusterDNS: expected a list of strings, got string "10.96.0.10"$/);
  writeFileSync(path, FILE_HEAD + 'clusterDNS: [bad]\n');
  fails(t, () => build([`--config=${path}`]), /^invalid cluster DNS address "bad" \(from clusterDNS in ".*k\.yaml"\): not a valid IP address$/);
});

t.test('--network-plugin=cni with the CNI directories; an unknown plugin is refused', async (t) => {
  const c = build(['--network-plugin=cni', '--cni-bin-dir=/a,/b', '--cni-conf-dir=/etc/x', '--cni-cache-dir=/var/c']);
  t.equal(c.networkPlugin, 'cni');
  t.same(c.cniBinDirs, ['/a', '/b']);
  t.equal(c.cniConfDir, '/etc/x');
  t.equal(c.cniCacheDir, '/var/c');
  t.throws(() => build(['--network-plugin=kubenet']), /kubenet/);
});

t.test('TLS bootstrap and certificate rotation: flags and config fields, off by default, only in cluster mode', async (t) => {
  const d = build([]);
  t.same([d.bootstrapKubeconfig, d.rotateCertificates, d.serverTLSBootstrap], ['', false, false], 'the kubelet\'s v1beta1 defaults');
  const c = build(['--kubeconfig=/k', '--bootstrap-kubeconfig=/b', '--rotate-certificates', '--server-tls-bootstrap', '--cert-dir=/pki']);
  t.same([c.kubeconfig, c.bootstrapKubeconfig, c.rotateCertificates, c.serverTLSBootstrap, c.certDir], ['/k', '/b', true, true, '/pki']);
  fails(t, () => build(['--bootstrap-kubeconfig=/b']), '--bootstrap-kubeconfig needs --kubeconfig: the path the kubeconfig with the issued client certificate is written to');
  fails(t, () => build(['--rotate-certificates']), 'rotateCertificates (from --rotate-certificates) needs --kubeconfig (cluster mode)');
  fails(t, () => build(['--kubeconfig=/k', '--server-tls-bootstrap', '--tls-cert-file=/c', '--tls-private-key-file=/k']), /serverTLSBootstrap \(from --server-tls-bootstrap\) and --tls-cert-file are mutually exclusive/);
  const file = join(t.testdir(), 'config.yaml');
  writeFileSync(file, `${FILE_HEAD}rotateCertificates: true\nserverTLSBootstrap: true\n`);
  const f = build(['--config', file, '--kubeconfig=/k']);
  t.same([f.rotateCertificates, f.serverTLSBootstrap], [true, true], 'from the KubeletConfiguration fields');
  fails(t, () => build(['--config', file]), `rotateCertificates (from rotateCertificates in "${file}") needs --kubeconfig (cluster mode)`);
});

t.test('configDefault: each default as the built Config has it without flags (durations in ms), for parts made without a Config', async (t) => {
  const r = buildConfig([], {}, HOST);
  if ('help' in r) throw new Error('help');
  for (const key of ['maxWatches', 'maxWatchesPerUser', 'maxStreamingSessions', 'maxPortForwardConnections', 'maxPortForwardConnectionsPerSession', 'maxContainerLogStreams', 'streamingConnectionIdleTimeoutMs'] as const) {
    t.equal(configDefault(key), r.config[key], key);
  }
  t.equal(configDefault('streamingConnectionIdleTimeoutMs'), 4 * 3600_000, 'the duration 4h0m0s in ms');
});
